package emulator

import (
	"time"

	"github.com/wirelab/wirelab/engine/link"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/realtime"
)

// Summary is what the emulator reports at the end of a run (the "emulator" object of trial.json,
// and `shell --stats`).
type Summary struct {
	LatenessUS  LatenessUS                   `json:"lateness_us"`  // timer lateness: release − deadline
	DeviceDrops uint64                       `json:"device_drops"` // packets the TUN devices dropped (both, both ways)
	Up          DirSummary                   `json:"up"`
	Down        DirSummary                   `json:"down"`
	Devices     map[string]netns.DeviceStats `json:"devices"` // kernel counters of the client and server TUN
	DurationS   float64                      `json:"duration_s"`
	Runner      realtime.Stats               `json:"runner"` // the runner's own counters
	// HaltPoll is the machine's guest halt-polling window during the run and before it (nil: no
	// haltpoll cpuidle driver; docs/network.md, "Host latency").
	HaltPoll *netns.HaltPollFact `json:"halt_poll,omitempty"`
}

// LatenessUS are timer-lateness percentiles in microseconds.
type LatenessUS struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// LatenessLimit is the lab's fidelity bar for timer lateness: a run whose p99 lateness exceeds it
// released packets late often enough to distort what it measured. The trial warns; the control
// plane flags the trial (fidelity flag lateness_p99_over_1ms), reading this value from the
// engine's facts (wirelab-engine facts → wirelab/_engine_facts.json).
const LatenessLimit = time.Millisecond

// OverLimit reports whether the p99 lateness exceeds LatenessLimit.
func (l LatenessUS) OverLimit() bool { return l.P99 > us(LatenessLimit) }

// DirSummary counts one direction.
type DirSummary struct {
	Packets         int64 `json:"packets"`     // delivered
	Bytes           int64 `json:"bytes"`       // IP bytes delivered
	DropsQueue      int64 `json:"drops_queue"` // the gateway queue's drops, any cause (tail + AQM + overflow)
	DropsLoss       int64 `json:"drops_loss"`
	MaxQueuePackets int64 `json:"max_queue_packets"`
	Arrived         int64 `json:"arrived"` // packets that entered the link (after GSO splitting)
	// The gateway: its discipline, drops by cause, ECN marks, the sojourn times of the packets it
	// passed on and, for FQ-CoDel, its flow queues (docs/metrics.md, "Emulator summary").
	Discipline    string             `json:"discipline,omitempty"`
	DropsTail     int64              `json:"drops_tail"`
	DropsAQM      int64              `json:"drops_aqm"`
	DropsOverflow int64              `json:"drops_overflow"`
	Marks         int64              `json:"marks"`
	SojournMs     *link.SojournStats `json:"sojourn_ms,omitempty"`
	Flows         *link.FlowStats    `json:"flows,omitempty"`
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

func (e *Emulator) summarize(dev [2]netns.DeviceStats) Summary {
	rs := e.Runner.Stats()
	s := Summary{
		LatenessUS: LatenessUS{P50: us(rs.Lateness.P50), P99: us(rs.Lateness.P99), Max: us(rs.Lateness.Max), Mean: us(rs.Lateness.Mean)},
		Devices:    map[string]netns.DeviceStats{"client": dev[netns.Client], "server": dev[netns.Server]},
		DurationS:  e.Runner.Now().Seconds(),
		Runner:     rs,
		HaltPoll:   e.Topo.HaltPoll(),
	}
	s.DeviceDrops = dev[netns.Client].Dropped() + dev[netns.Server].Dropped()
	for _, d := range []link.Dir{link.Up, link.Down} {
		ds := rs.Up
		out := &s.Up
		if d == link.Down {
			ds, out = rs.Down, &s.Down
		}
		*out = DirSummary{Packets: ds.Delivered, Bytes: ds.DeliveredBytes, DropsQueue: ds.DropsQueue, DropsLoss: ds.DropsLoss, Arrived: ds.Packets,
			DropsTail: ds.DropsTail, DropsAQM: ds.DropsAQM, DropsOverflow: ds.DropsOverflow, Marks: ds.Marks}
		e.Runner.WithLink(d, func(l realtime.Link) {
			if m, ok := l.(ModelReporter); ok {
				out.MaxQueuePackets = int64(m.Stats().MaxQueuePackets)
				g := m.Gateway()
				out.Discipline, out.SojournMs, out.Flows = g.Discipline, &g.Sojourn, g.Flows
			}
		})
	}
	return s
}
