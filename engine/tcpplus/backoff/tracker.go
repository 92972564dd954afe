package backoff

import (
	"fmt"

	"github.com/wirelab/wirelab/engine/tcpplus"
)

// TCP congestion-avoidance states as TCP_INFO reports them (tcpi_ca_state).
const (
	caOpen     = 0
	caDisorder = 1 // duplicate ACKs/SACKs seen, loss not yet declared: cwnd is frozen
	caCWR      = 2
	caRecovery = 3 // fast recovery: ssthresh was just set by the congestion control
	caLoss     = 4 // retransmission timeout
)

func caStateName(s uint8) string {
	switch s {
	case caOpen:
		return "open"
	case caDisorder:
		return "disorder"
	case caCWR:
		return "cwr"
	case caRecovery:
		return "recovery"
	case caLoss:
		return "loss"
	}
	return fmt.Sprintf("state-%d", s)
}

// Sample is one reading of the sender's TCP_INFO.
type Sample struct {
	AtMicros     int64  `json:"t_us"` // since the connection was established
	CAState      uint8  `json:"ca_state"`
	Cwnd         uint32 `json:"cwnd"`     // segments
	Ssthresh     uint32 `json:"ssthresh"` // segments; 2147483647 = not yet set
	TotalRetrans uint32 `json:"total_retrans"`
}

func (s Sample) sameAs(o Sample) bool {
	return s.CAState == o.CAState && s.Cwnd == o.Cwnd && s.Ssthresh == o.Ssthresh && s.TotalRetrans == o.TotalRetrans
}

type phase int

const (
	waitingForCwnd phase = iota // until cwnd reaches the arming threshold
	armed                       // the dropper will drop the next segment; waiting for the reduction
	recovering                  // in recovery; waiting for it to end
	finished
)

// tracker follows one flow's samples: it says when to arm the dropper and when the loss has
// been recovered, and keeps the samples that matter. It does no I/O (sans-IO), so it is tested
// on recorded sequences.
type tracker struct {
	armCwnd uint32
	phase   phase

	prev     Sample // the previous sample, whatever its value
	readings int    // samples observed
	samples  int    // samples that differed from their predecessor
	Armed    Sample // the sample at which the dropper was armed
	Before   Sample // the last sample before the reduction (cwnd at the loss)
	Recovery Sample // the first sample of the reduction (ssthresh just set)
	After    Sample // the first sample in Open after the reduction (cwnd after the loss)
	sawRTO   bool
}

// observe takes the next sample and reports whether to arm the dropper now and whether the
// measurement is complete.
func (t *tracker) observe(s Sample) (arm, done bool) {
	t.readings++
	if t.samples == 0 || !s.sameAs(t.prev) {
		t.samples++
	}
	defer func() { t.prev = s }()
	switch t.phase {
	case waitingForCwnd:
		if s.CAState == caOpen && s.Cwnd >= t.armCwnd {
			t.Armed, t.phase = s, armed
			return true, false
		}
	case armed:
		if s.CAState >= caCWR {
			t.Before, t.Recovery, t.phase = t.prev, s, recovering
			t.sawRTO = s.CAState == caLoss
		}
	case recovering:
		if s.CAState == caLoss {
			t.sawRTO = true
		}
		if s.CAState == caOpen {
			t.After, t.phase = s, finished
			return false, true
		}
	case finished:
		return false, true
	}
	return false, false
}

// Tolerances of the check, in segments.
const (
	// SlackOpen is how much cwnd may have grown between the last sample before the loss was
	// declared and the declaration, when that sample was taken in Open. In Disorder (duplicate
	// ACKs only) cwnd cannot grow, so a Disorder sample is the cwnd the congestion control saw
	// and the slack is 0; in Open, congestion avoidance grows cwnd by about one segment per
	// round trip (cubic before its first loss: at most one per 20 ACKs), and a busy sampler
	// reads TCP_INFO many times per round trip.
	SlackOpen = 2
	// SlackAfter is how far above ssthresh cwnd may be at the first sample after recovery:
	// recovery (PRR) ends with cwnd = ssthresh, then each ACK may add a fraction of a segment
	// before the sampler reads it.
	SlackAfter = 3
)

// Flow is the result of one flow: the backoff that one congestion control applied to a single
// loss, and whether it is the one its β says.
type Flow struct {
	CC         string  `json:"cc"`
	BetaScaled uint32  `json:"beta_scaled"` // the multiplicative decrease it should apply, × 1024
	Beta       float64 `json:"beta"`

	ArmedAtCwnd   uint32  `json:"armed_at_cwnd"`
	CwndBefore    uint32  `json:"cwnd_before"`  // cwnd at the loss (last sample before the reduction)
	StateBefore   string  `json:"state_before"` // "disorder": exact; "open": within SlackOpen
	SsthreshAfter uint32  `json:"ssthresh_after"`
	CwndAfter     uint32  `json:"cwnd_after"` // first sample after recovery
	SsthreshRatio float64 `json:"ssthresh_ratio"`
	CwndRatio     float64 `json:"cwnd_ratio"`
	// The range of ssthresh the congestion control may have set: ExpectedSsthresh(cwnd, β) for
	// cwnd from CwndBefore to CwndBefore + slack.
	ExpectedSsthreshMin uint32 `json:"expected_ssthresh_min"`
	ExpectedSsthreshMax uint32 `json:"expected_ssthresh_max"`

	TotalRetrans   uint32 `json:"total_retrans"`
	RecoveryMicros int64  `json:"recovery_us"`
	Readings       int    `json:"readings"` // TCP_INFO readings
	Samples        int    `json:"samples"`  // readings that differed from the previous one
	// MeanReadingMicros is the sampler's mean interval: how finely the loss was observed.
	MeanReadingMicros float64   `json:"mean_reading_us"`
	Drop              DropStats `json:"drop"`

	Pass     bool     `json:"pass"`
	Problems []string `json:"problems,omitempty"`
}

// result turns a completed tracker into a checked Flow.
func (t *tracker) result(cc string, beta uint32, drop DropStats) Flow {
	f := Flow{
		CC:             cc,
		BetaScaled:     beta,
		Beta:           float64(beta) / tcpplus.BetaScale,
		ArmedAtCwnd:    t.Armed.Cwnd,
		CwndBefore:     t.Before.Cwnd,
		StateBefore:    caStateName(t.Before.CAState),
		SsthreshAfter:  t.Recovery.Ssthresh,
		CwndAfter:      t.After.Cwnd,
		TotalRetrans:   t.After.TotalRetrans,
		RecoveryMicros: t.After.AtMicros - t.Recovery.AtMicros,
		Readings:       t.readings,
		Samples:        t.samples,
		Drop:           drop,
	}
	if t.readings > 1 {
		f.MeanReadingMicros = float64(t.prev.AtMicros) / float64(t.readings-1)
	}
	if f.CwndBefore > 0 {
		f.SsthreshRatio = float64(f.SsthreshAfter) / float64(f.CwndBefore)
		f.CwndRatio = float64(f.CwndAfter) / float64(f.CwndBefore)
	}
	slack := uint32(SlackOpen)
	if t.Before.CAState == caDisorder {
		slack = 0
	}
	f.ExpectedSsthreshMin = tcpplus.ExpectedSsthresh(f.CwndBefore, beta)
	f.ExpectedSsthreshMax = tcpplus.ExpectedSsthresh(f.CwndBefore+slack, beta)
	f.Problems = t.problems(f)
	f.Pass = len(f.Problems) == 0
	return f
}

func (t *tracker) problems(f Flow) []string {
	var p []string
	if t.phase != finished {
		p = append(p, "the flow did not complete a loss recovery")
	}
	if f.Drop.Dropped != 1 {
		p = append(p, fmt.Sprintf("the router dropped %d segments, want exactly 1", f.Drop.Dropped))
	}
	if f.Drop.GSOSeen != 0 {
		p = append(p, fmt.Sprintf("%d multi-segment (GSO) packets crossed the router; want single segments", f.Drop.GSOSeen))
	}
	if t.sawRTO {
		p = append(p, "the loss was repaired by a retransmission timeout, not fast recovery")
	}
	if t.Before.CAState != caOpen && t.Before.CAState != caDisorder {
		p = append(p, fmt.Sprintf("the last sample before the reduction is in state %s", caStateName(t.Before.CAState)))
	}
	if f.SsthreshAfter < f.ExpectedSsthreshMin || f.SsthreshAfter > f.ExpectedSsthreshMax {
		p = append(p, fmt.Sprintf("ssthresh after the loss is %d, want %d..%d (β = %.4f × cwnd %d)",
			f.SsthreshAfter, f.ExpectedSsthreshMin, f.ExpectedSsthreshMax, f.Beta, f.CwndBefore))
	}
	if f.CwndAfter < f.SsthreshAfter || f.CwndAfter > f.SsthreshAfter+SlackAfter {
		p = append(p, fmt.Sprintf("cwnd after recovery is %d, want ssthresh %d .. +%d", f.CwndAfter, f.SsthreshAfter, SlackAfter))
	}
	return p
}
