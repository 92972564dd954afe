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
	AtMicros     int64  `json:"t_us"`     // since the connection was established, before the reading
	EndMicros    int64  `json:"t_end_us"` // after the reading (the thread may be descheduled in between)
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
	ReadKernel bool // read the socket's KernelState now and hand it to setKernel
	Arm        bool // arm the dropper
	Done       bool // the measurement is complete
}

// lossEvent is what the tracker keeps of one loss.
type lossEvent struct {
	Before    Sample // the last sample before the reduction was seen
	Reduction Sample // the first sample showing the reduction
	After     Sample // the first sample in Open after it
	// AfterGapMicros is the time from the start of the reading before After to the end of
	// After's: an upper bound on how long the recovery had been over when After was read.
	AfterGapMicros int64
	Kernel         KernelState // read right after the recovery
	sawRTO         bool
}

// tracker follows one flow's samples: it says when to arm the dropper, when to read the
// socket's kernel state and when the measurement is complete, and keeps what matters. It does
// no I/O (sans-IO), so it is tested on recorded sequences.
type tracker struct {
	armCwnd uint32
	phase   phase

	prev     Sample // the previous sample, whatever its value
	readings int    // samples observed
	samples  int    // samples that differed from their predecessor
	Armed    Sample // the sample at which the first drop was armed
	armedAt  Sample // the sample at which the current drop was armed
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
			t.Armed, t.armedAt, t.phase = s, s, armed
			return action{Arm: true}
		}
	case armed, armedAgain:
		// A reduction shows as a CWR/Recovery/Loss state or — when the sampler was descheduled
		// for the whole recovery — as a retransmission with a new ssthresh.
		missed := s.TotalRetrans > t.armedAt.TotalRetrans && s.Ssthresh != t.armedAt.Ssthresh
		if s.CAState >= caCWR || missed {
			t.phase++
			l := t.current()
			l.Before, l.Reduction, l.sawRTO = t.prev, s, s.CAState == caLoss
			if s.CAState == caOpen {
				return t.recovered(s)
			}
		}
	case recovering, recoveringAgain:
		if s.CAState == caLoss {
			t.current().sawRTO = true
		}
		if s.CAState == caOpen {
			return t.recovered(s)
		}
	case finished:
		return action{Done: true}
	}
	return action{}
}

// recovered ends the current loss at sample s, which is in Open.
func (t *tracker) recovered(s Sample) action {
	l := t.current()
	l.After, l.AfterGapMicros = s, max(s.EndMicros, s.AtMicros)-t.prev.AtMicros
	if t.phase == recovering {
		t.phase, t.armedAt = armedAgain, s
		return action{ReadKernel: true, Arm: true}
	}
	t.phase = finished
	return action{ReadKernel: true, Done: true}
}

// setKernel records the kernel state read after the recovery that observe just reported.
func (t *tracker) setKernel(k KernelState) {
	if t.phase == armedAgain {
		t.Loss[0].Kernel = k
	} else {
		t.Loss[1].Kernel = k
	}
}

// How exact the check is. The congestion control computes ssthresh from the cwnd at the moment
// the loss is detected, which the kernel keeps as prior_cwnd, so the check uses that value:
// ssthresh and W_max must equal the formulas exactly, with cwnd's whole-segment granularity as
// the only rounding (⌊cwnd·β⌋, as cubic computes it). TCP_INFO's own view of cwnd before the
// loss is a sample taken up to one reading earlier: in Disorder (duplicate ACKs only, cwnd
// frozen) it must equal prior_cwnd; in Open it may be lower by the growth since the reading.
const (
	// AfterGapLimitMicros: cwnd after recovery is checked only when the sampler read it within
	// this long of the previous reading, so that little can have happened since recovery
	// ended (which sets cwnd = ssthresh).
	AfterGapLimitMicros = 1000
	// SlackAfter is how far above ssthresh cwnd may then be: each ACK in that interval may add
	// a fraction of a segment.
	SlackAfter = 2
)

// Flow is the result of one flow: the backoff that one congestion control applied to a single
// loss, what its fast convergence did at a second one, and whether both are what its β says.
type Flow struct {
	CC         string  `json:"cc"`
	BetaScaled uint32  `json:"beta_scaled"` // the multiplicative decrease it should apply, × 1024
	Beta       float64 `json:"beta"`

	ArmedAtCwnd uint32 `json:"armed_at_cwnd"`
	// CwndBefore is the cwnd at the moment the loss was detected (the kernel's prior_cwnd).
	CwndBefore uint32 `json:"cwnd_before"`
	// SampledCwndBefore is TCP_INFO's last cwnd before the reduction, in SampledStateBefore.
	SampledCwndBefore  uint32 `json:"sampled_cwnd_before"`
	SampledStateBefore string `json:"sampled_state_before"`
	// SsthreshAfter is TCP_INFO's ssthresh once the reduction began.
	SsthreshAfter    uint32 `json:"ssthresh_after"`
	ExpectedSsthresh uint32 `json:"expected_ssthresh"` // ⌊CwndBefore·β⌋ (at least 2)
	// CwndAfter is TCP_INFO's cwnd at the first reading after recovery.
	CwndAfter        uint32  `json:"cwnd_after"`
	CwndAfterChecked bool    `json:"cwnd_after_checked"` // read within AfterGapLimitMicros
	SsthreshRatio    float64 `json:"ssthresh_ratio"`     // SsthreshAfter / CwndBefore
	CwndRatio        float64 `json:"cwnd_ratio"`         // CwndAfter / CwndBefore

	FastConvergence FastConvergence `json:"fast_convergence"`

	TotalRetrans   uint32 `json:"total_retrans"`
	RecoveryMicros int64  `json:"recovery_us"` // of the first loss, as sampled
	Readings       int    `json:"readings"`    // TCP_INFO readings
	Samples        int    `json:"samples"`     // readings that differed from the previous one
	// MinRTTMicros is the connection's minimum round trip (TCP_INFO, µs): the path's with an
	// empty queue. RACK's reordering window would be a quarter of it.
	MinRTTMicros uint32 `json:"min_rtt_us"`
	// MeanReadingMicros is the sampler's mean interval.
	MeanReadingMicros float64   `json:"mean_reading_us"`
	Drop              DropStats `json:"drop"`
	// Undos counts the reductions the kernel took back during the flow (see undoCounters).
	Undos Undos `json:"undos,omitempty"`
	// Discarded says why each flow Run measured for this congestion control before this one (at
	// most MaxAttempts−1) was not kept.
	Discarded []string `json:"discarded,omitempty"`

	Pass     bool     `json:"pass"`
	Problems []string `json:"problems,omitempty"`
}

// FastConvergence is the second loss, which comes before cwnd has regained the first loss's
// window, so cubic lowers W_max to ⌊cwnd·(1 + β)/2⌋ (read from the socket's cubic state).
type FastConvergence struct {
	WmaxAfterFirst   uint32 `json:"wmax_after_first"` // must be the first loss's cwnd: there was no earlier maximum
	CwndBefore       uint32 `json:"cwnd_before"`      // cwnd when the second loss was detected
	SsthreshAfter    uint32 `json:"ssthresh_after"`
	ExpectedSsthresh uint32 `json:"expected_ssthresh"`
	Wmax             uint32 `json:"wmax"` // W_max after the second loss
	ExpectedWmax     uint32 `json:"expected_wmax"`
}

// result turns a completed tracker into a checked Flow.
func (t *tracker) result(cc string, beta uint32, drop DropStats, undos Undos) Flow {
	first, second := t.Loss[0], t.Loss[1]
	f := Flow{
		CC:                 cc,
		BetaScaled:         beta,
		Beta:               float64(beta) / tcpplus.BetaScale,
		ArmedAtCwnd:        t.Armed.Cwnd,
		CwndBefore:         first.Kernel.PriorCwnd,
		SampledCwndBefore:  first.Before.Cwnd,
		SampledStateBefore: caStateName(first.Before.CAState),
		SsthreshAfter:      first.Reduction.Ssthresh,
		ExpectedSsthresh:   tcpplus.ExpectedSsthresh(first.Kernel.PriorCwnd, beta),
		CwndAfter:          first.After.Cwnd,
		CwndAfterChecked:   first.AfterGapMicros <= AfterGapLimitMicros,
		TotalRetrans:       t.prev.TotalRetrans,
		RecoveryMicros:     first.After.AtMicros - first.Reduction.AtMicros,
		Readings:           t.readings,
		Samples:            t.samples,
		Drop:               drop,
		Undos:              undos,
	}
	if t.readings > 1 {
		f.MeanReadingMicros = float64(t.prev.AtMicros) / float64(t.readings-1)
	}
	if f.CwndBefore > 0 {
		f.SsthreshRatio = float64(f.SsthreshAfter) / float64(f.CwndBefore)
		f.CwndRatio = float64(f.CwndAfter) / float64(f.CwndBefore)
	}
	w2 := second.Kernel.PriorCwnd
	f.FastConvergence = FastConvergence{
		WmaxAfterFirst:   first.Kernel.Wmax,
		CwndBefore:       w2,
		SsthreshAfter:    second.Reduction.Ssthresh,
		ExpectedSsthresh: tcpplus.ExpectedSsthresh(w2, beta),
		Wmax:             second.Kernel.Wmax,
		ExpectedWmax:     tcpplus.FastConvergenceWmax(w2, beta),
	}
	f.Problems = t.problems(f)
	f.Pass = len(f.Problems) == 0
	return f
}

func (t *tracker) problems(f Flow) []string {
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
	if len(f.Undos) > 0 {
		p = append(p, fmt.Sprintf("the kernel took a reduction back as spurious (%s): not a backoff", f.Undos))
	}
	for i, l := range t.Loss {
		if l.sawRTO {
			p = append(p, fmt.Sprintf("loss %d was repaired by a retransmission timeout, not fast recovery", i+1))
		}
	}
	if t.phase != finished {
		return p
	}
	first := t.Loss[0]
	if f.SsthreshAfter != f.ExpectedSsthresh {
		p = append(p, fmt.Sprintf("ssthresh after the loss is %d, want %d (β = %.4f × cwnd %d)", f.SsthreshAfter, f.ExpectedSsthresh, f.Beta, f.CwndBefore))
	}
	if f.SsthreshAfter != first.Kernel.Ssthresh {
		p = append(p, fmt.Sprintf("TCP_INFO's ssthresh %d differs from the socket's %d", f.SsthreshAfter, first.Kernel.Ssthresh))
	}
	if f.SampledCwndBefore > f.CwndBefore || (first.Before.CAState == caDisorder && f.SampledCwndBefore != f.CwndBefore) {
		p = append(p, fmt.Sprintf("TCP_INFO's cwnd before the loss (%d, %s) is inconsistent with the cwnd at the loss %d", f.SampledCwndBefore, f.SampledStateBefore, f.CwndBefore))
	}
	if f.CwndAfterChecked && (f.CwndAfter < f.SsthreshAfter || f.CwndAfter > f.SsthreshAfter+SlackAfter) {
		p = append(p, fmt.Sprintf("cwnd after recovery is %d, want ssthresh %d .. +%d", f.CwndAfter, f.SsthreshAfter, SlackAfter))
	}
	fc := f.FastConvergence
	if fc.WmaxAfterFirst != f.CwndBefore {
		p = append(p, fmt.Sprintf("W_max after the first loss is %d, want its cwnd %d", fc.WmaxAfterFirst, f.CwndBefore))
	}
	if fc.CwndBefore >= fc.WmaxAfterFirst {
		p = append(p, fmt.Sprintf("the second loss came at cwnd %d, not below W_max %d: fast convergence not exercised", fc.CwndBefore, fc.WmaxAfterFirst))
	}
	if fc.SsthreshAfter != fc.ExpectedSsthresh {
		p = append(p, fmt.Sprintf("ssthresh after the second loss is %d, want %d", fc.SsthreshAfter, fc.ExpectedSsthresh))
	}
	if fc.Wmax != fc.ExpectedWmax {
		p = append(p, fmt.Sprintf("W_max after the second loss is %d, want %d (cwnd %d × (1 + β)/2)", fc.Wmax, fc.ExpectedWmax, fc.CwndBefore))
	}
	return p
}
