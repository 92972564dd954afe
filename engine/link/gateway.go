package link

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// GatewayStats is what a direction's queue stage did: drops by cause, ECN marks, the sojourn time
// of the packets it passed to the rate stage and, for FQ-CoDel, its flow queues. JSON names follow
// the trial contract's emulator summary (docs/metrics.md, "Emulator summary").
type GatewayStats struct {
	Discipline    string       `json:"discipline"`
	DropsTail     uint64       `json:"drops_tail"`     // drop-tail queue full
	DropsAQM      uint64       `json:"drops_aqm"`      // the discipline's early drops (CoDel, PIE, RED)
	DropsOverflow uint64       `json:"drops_overflow"` // an AQM discipline's hard limit
	Marks         uint64       `json:"marks"`          // packets marked Congestion Experienced instead of dropped
	Sojourn       SojournStats `json:"sojourn_ms"`
	Flows         *FlowStats   `json:"flows,omitempty"` // FQ-CoDel only
}

// SojournStats summarises the time packets waited in the queue before the rate stage took them,
// in milliseconds (HDR histogram, 2 significant digits, 1 µs resolution).
type SojournStats struct {
	Count int64   `json:"count"` // packets passed to the rate stage
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
	Mean  float64 `json:"mean"`
}

// FlowStats describes FQ-CoDel's flow queues: how many exist, how many were ever active at once,
// and the drops (and marks) of the flows that had any — per flow queue, as Linux keeps them.
type FlowStats struct {
	Queues    int          `json:"queues"`     // fq_flows
	NewFlows  uint64       `json:"new_flows"`  // times a flow queue became active (Linux's new_flow_count)
	MaxActive int          `json:"max_active"` // most flow queues holding packets at once
	WithDrops int          `json:"with_drops"` // flow queues that dropped or marked at least one packet
	Top       []FlowCounts `json:"top"`        // up to TopFlows of them, most drops first
}

// FlowCounts is one FQ-CoDel flow queue's counters.
type FlowCounts struct {
	Queue   int    `json:"queue"`   // its index (the flow hash modulo fq_flows)
	Packets uint64 `json:"packets"` // packets it passed to the rate stage
	Drops   uint64 `json:"drops"`   // CoDel's drops and overflow drops
	Marks   uint64 `json:"marks"`
}

// TopFlows bounds FlowStats.Top.
const TopFlows = 8

// gateway keeps a direction's GatewayStats.
type gateway struct {
	discipline                 string
	tail, aqm, overflow, marks uint64
	hist                       *hdrhistogram.Histogram // sojourn in µs
}

func newGateway(discipline string) gateway {
	return gateway{discipline: discipline, hist: hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 2)}
}

func (g *gateway) drop(why Fate) {
	switch why {
	case DroppedQueue:
		g.tail++
	case DroppedAQM:
		g.aqm++
	case DroppedOverflow:
		g.overflow++
	}
}

func (g *gateway) sojourn(d time.Duration) {
	_ = g.hist.RecordValue(min(int64(d/time.Microsecond), g.hist.HighestTrackableValue())) // allocation-free
}

func (g *gateway) stats() GatewayStats {
	s := GatewayStats{Discipline: g.discipline, DropsTail: g.tail, DropsAQM: g.aqm, DropsOverflow: g.overflow, Marks: g.marks}
	if n := g.hist.TotalCount(); n > 0 {
		ms := func(us int64) float64 { return float64(us) / 1e3 }
		s.Sojourn = SojournStats{Count: n, P50: ms(g.hist.ValueAtQuantile(50)), P90: ms(g.hist.ValueAtQuantile(90)),
			P99: ms(g.hist.ValueAtQuantile(99)), Max: ms(g.hist.Max()), Mean: g.hist.Mean() / 1e3}
	}
	return s
}
