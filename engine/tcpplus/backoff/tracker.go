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

// A flow has two losses. The first, once cwnd has reached the arming threshold, is the
// measurement of the backoff. The second is injected as soon as the first is recovered, so it
// comes before cwnd has regained the first loss's window: that is when cubic's fast
// convergence lowers W_max, which wl_cubicp does with β' instead of β.
type phase int

const (
	waitingForCwnd  phase = iota // until cwnd reaches the arming threshold
	armed                        // the dropper will drop the next segment; waiting for the reduction
	recovering                   // in recovery from the first loss
	armedAgain                   // the second drop is armed
	recoveringAgain              // in recovery from the second loss
	finished
)

// action is what the tracker asks of the I/O loop after a sample, in this order.
type action struct {
	ReadWmax bool // read cubic's W_max now and hand it to setWmax
	Arm      bool // arm the dropper
	Done     bool // the measurement is complete
}

// lossEvent is what the tracker keeps of one loss.
type lossEvent struct {
	Before    Sample // the last sample before the reduction (cwnd at the loss)
	Reduction Sample // the first sample of the reduction (ssthresh just set)
	After     Sample // the first sample in Open after the reduction
	Wmax      uint32 // cubic's W_max read after the recovery
	sawRTO    bool
}

// tracker follows one flow's samples: it says when to arm the dropper, when to read W_max and
// when the measurement is complete, and keeps the samples that matter. It does no I/O
// (sans-IO), so it is tested on recorded sequences.
type tracker struct {
	armCwnd uint32
	phase   phase

	prev     Sample // the previous sample, whatever its value
	readings int    // samples observed
	samples  int    // samples that differed from their predecessor
	Armed    Sample // the sample at which the first drop was armed
	Loss     [2]lossEvent
}

func (t *tracker) current() *lossEvent {
	if t.phase <= recovering {
		return &t.Loss[0]
	}
	return &t.Loss[1]
}

// observe takes the next sample and says what to do.
func (t *tracker) observe(s Sample) action {
	t.readings++
	if t.samples == 0 || !s.sameAs(t.prev) {
		t.samples++
	}
	defer func() { t.prev = s }()
	switch t.phase {
	case waitingForCwnd:
		if s.CAState == caOpen && s.Cwnd >= t.armCwnd {
			t.Armed, t.phase = s, armed
			return action{Arm: true}
		}
	case armed, armedAgain:
		if s.CAState >= caCWR {
			l := t.current()
			l.Before, l.Reduction, l.sawRTO = t.prev, s, s.CAState == caLoss
			t.phase++
		}
	case recovering, recoveringAgain:
		l := t.current()
		if s.CAState == caLoss {
			l.sawRTO = true
		}
		if s.CAState == caOpen {
			l.After = s
			if t.phase == recovering {
				t.phase = armedAgain
				return action{ReadWmax: true, Arm: true}
			}
			t.phase = finished
			return action{ReadWmax: true, Done: true}
		}
	case finished:
		return action{Done: true}
	}
	return action{}
}

// setWmax records W_max as read after the recovery that observe just reported.
func (t *tracker) setWmax(v uint32) {
	if t.phase == armedAgain {
		t.Loss[0].Wmax = v
	} else {
		t.Loss[1].Wmax = v
	}
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
// loss, what its fast convergence did at a second one, and whether both are what its β says.
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

	FastConvergence FastConvergence `json:"fast_convergence"`

	TotalRetrans   uint32 `json:"total_retrans"`
	RecoveryMicros int64  `json:"recovery_us"` // of the first loss
	Readings       int    `json:"readings"`    // TCP_INFO readings
	Samples        int    `json:"samples"`     // readings that differed from the previous one
	// MeanReadingMicros is the sampler's mean interval: how finely the losses were observed.
	MeanReadingMicros float64   `json:"mean_reading_us"`
	Drop              DropStats `json:"drop"`

	Pass     bool     `json:"pass"`
	Problems []string `json:"problems,omitempty"`
}

// FastConvergence is the second loss, which comes before cwnd has regained the first loss's
// window, so cubic lowers W_max to ⌊cwnd·(1 + β)/2⌋ (read from the socket's cubic state).
type FastConvergence struct {
	WmaxAfterFirst      uint32 `json:"wmax_after_first"` // the first loss's cwnd: there was no earlier maximum
	CwndBefore          uint32 `json:"cwnd_before"`      // cwnd at the second loss
	StateBefore         string `json:"state_before"`
	SsthreshAfter       uint32 `json:"ssthresh_after"`
	Wmax                uint32 `json:"wmax"` // W_max after the second loss
	ExpectedWmaxMin     uint32 `json:"expected_wmax_min"`
	ExpectedWmaxMax     uint32 `json:"expected_wmax_max"`
	ExpectedSsthreshMin uint32 `json:"expected_ssthresh_min"`
	ExpectedSsthreshMax uint32 `json:"expected_ssthresh_max"`
}

// slack is the growth of cwnd that a loss's Before sample may have missed.
func slack(before Sample) uint32 {
	if before.CAState == caDisorder {
		return 0
	}
	return SlackOpen
}

// result turns a completed tracker into a checked Flow.
func (t *tracker) result(cc string, beta uint32, drop DropStats) Flow {
	first, second := t.Loss[0], t.Loss[1]
	f := Flow{
		CC:             cc,
		BetaScaled:     beta,
		Beta:           float64(beta) / tcpplus.BetaScale,
		ArmedAtCwnd:    t.Armed.Cwnd,
		CwndBefore:     first.Before.Cwnd,
		StateBefore:    caStateName(first.Before.CAState),
		SsthreshAfter:  first.Reduction.Ssthresh,
		CwndAfter:      first.After.Cwnd,
		TotalRetrans:   t.prev.TotalRetrans,
		RecoveryMicros: first.After.AtMicros - first.Reduction.AtMicros,
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
	s1 := slack(first.Before)
	f.ExpectedSsthreshMin = tcpplus.ExpectedSsthresh(f.CwndBefore, beta)
	f.ExpectedSsthreshMax = tcpplus.ExpectedSsthresh(f.CwndBefore+s1, beta)

	w2, s2 := second.Before.Cwnd, slack(second.Before)
	f.FastConvergence = FastConvergence{
		WmaxAfterFirst:      first.Wmax,
		CwndBefore:          w2,
		StateBefore:         caStateName(second.Before.CAState),
		SsthreshAfter:       second.Reduction.Ssthresh,
		Wmax:                second.Wmax,
		ExpectedWmaxMin:     tcpplus.FastConvergenceWmax(w2, beta),
		ExpectedWmaxMax:     tcpplus.FastConvergenceWmax(w2+s2, beta),
		ExpectedSsthreshMin: tcpplus.ExpectedSsthresh(w2, beta),
		ExpectedSsthreshMax: tcpplus.ExpectedSsthresh(w2+s2, beta),
	}
	f.Problems = t.problems(f, s1)
	f.Pass = len(f.Problems) == 0
	return f
}

func (t *tracker) problems(f Flow, slack1 uint32) []string {
	var p []string
	if t.phase != finished {
		p = append(p, "the flow did not complete two loss recoveries")
	}
	if f.Drop.Dropped != 2 {
		p = append(p, fmt.Sprintf("the router dropped %d segments, want exactly 2 (one per loss)", f.Drop.Dropped))
	}
	if f.Drop.GSOSeen != 0 {
		p = append(p, fmt.Sprintf("%d multi-segment (GSO) packets crossed the router; want single segments", f.Drop.GSOSeen))
	}
	for i, l := range t.Loss {
		if l.sawRTO {
			p = append(p, fmt.Sprintf("loss %d was repaired by a retransmission timeout, not fast recovery", i+1))
		}
		if t.phase == finished && l.Before.CAState != caOpen && l.Before.CAState != caDisorder {
			p = append(p, fmt.Sprintf("the last sample before reduction %d is in state %s", i+1, caStateName(l.Before.CAState)))
		}
	}
	if f.SsthreshAfter < f.ExpectedSsthreshMin || f.SsthreshAfter > f.ExpectedSsthreshMax {
		p = append(p, fmt.Sprintf("ssthresh after the loss is %d, want %d..%d (β = %.4f × cwnd %d)",
			f.SsthreshAfter, f.ExpectedSsthreshMin, f.ExpectedSsthreshMax, f.Beta, f.CwndBefore))
	}
	if f.CwndAfter < f.SsthreshAfter || f.CwndAfter > f.SsthreshAfter+SlackAfter {
		p = append(p, fmt.Sprintf("cwnd after recovery is %d, want ssthresh %d .. +%d", f.CwndAfter, f.SsthreshAfter, SlackAfter))
	}
	if t.phase != finished {
		return p
	}
	fc := f.FastConvergence
	if fc.WmaxAfterFirst < f.CwndBefore || fc.WmaxAfterFirst > f.CwndBefore+slack1 {
		p = append(p, fmt.Sprintf("W_max after the first loss is %d, want its cwnd %d..%d", fc.WmaxAfterFirst, f.CwndBefore, f.CwndBefore+slack1))
	}
	if fc.CwndBefore >= fc.WmaxAfterFirst {
		p = append(p, fmt.Sprintf("the second loss came at cwnd %d, not below W_max %d: fast convergence not exercised", fc.CwndBefore, fc.WmaxAfterFirst))
	}
	if fc.SsthreshAfter < fc.ExpectedSsthreshMin || fc.SsthreshAfter > fc.ExpectedSsthreshMax {
		p = append(p, fmt.Sprintf("ssthresh after the second loss is %d, want %d..%d", fc.SsthreshAfter, fc.ExpectedSsthreshMin, fc.ExpectedSsthreshMax))
	}
	if fc.Wmax < fc.ExpectedWmaxMin || fc.Wmax > fc.ExpectedWmaxMax {
		p = append(p, fmt.Sprintf("W_max after the second loss is %d, want %d..%d (cwnd %d × (1 + β)/2)", fc.Wmax, fc.ExpectedWmaxMin, fc.ExpectedWmaxMax, fc.CwndBefore))
	}
	return p
}
