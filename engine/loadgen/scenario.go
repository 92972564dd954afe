package loadgen

import (
	"math"
	"time"
)

// The scenario's plan as pure functions of the run's time t (from its start): tested in virtual
// time, followed by the runner in real time.

// segment is one stage: the value moves linearly from `from` at `start` to `to` at `end`.
type segment struct {
	start, end time.Duration
	from, to   float64
}

func segments(sc Scenario) []segment {
	var out []segment
	t, v := time.Duration(0), sc.Start
	for _, st := range sc.Stages {
		to := 0.0
		if st.Target != nil {
			to = float64(*st.Target)
		} else if st.Rate != nil {
			to = *st.Rate
		}
		end := t + st.Duration()
		out = append(out, segment{t, end, v, to})
		t, v = end, to
	}
	return out
}

// value is the scenario's value (VUs or pages/s) at t; after the last stage, its end value.
func value(segs []segment, t time.Duration) float64 {
	for _, s := range segs {
		if t < s.end {
			if t <= s.start {
				return s.from
			}
			return s.from + (s.to-s.from)*float64(t-s.start)/float64(s.end-s.start)
		}
	}
	return segs[len(segs)-1].to
}

// ClosedPlan is the closed model's VU count over time: the linear value rounded half up.
type ClosedPlan struct{ segs []segment }

// NewClosedPlan plans a closed scenario.
func NewClosedPlan(sc Scenario) ClosedPlan { return ClosedPlan{segments(sc)} }

// End is when the last stage ends.
func (p ClosedPlan) End() time.Duration { return p.segs[len(p.segs)-1].end }

// VUsAt is the planned VU count at t (0 ≤ t < End).
func (p ClosedPlan) VUsAt(t time.Duration) int { return int(math.Floor(value(p.segs, t) + 0.5)) }

// NextChange is the first instant after t at which VUsAt differs from VUsAt(t), if one comes
// before End. The value is continuous (each stage starts where the previous one ended), so the
// count changes only where the value crosses a half: rising, it reaches cur+1 at cur+0.5;
// falling, it drops below cur just after cur−0.5.
func (p ClosedPlan) NextChange(t time.Duration) (time.Duration, bool) {
	cur := p.VUsAt(t)
	for _, s := range p.segs {
		if s.end <= t || s.from == s.to {
			continue
		}
		level := float64(cur) + 0.5
		if s.to < s.from {
			level = float64(cur) - 0.5
		}
		frac := (level - s.from) / (s.to - s.from)
		if frac > 1 {
			continue // not within this stage
		}
		at := s.start + time.Duration(math.Ceil(max(frac, 0)*float64(s.end-s.start)))
		at = max(at, t+1)
		for n := 0; n < 1000 && at < s.end && p.VUsAt(at) == cur; n++ { // floating-point rounding: a few ns
			at++
		}
		if at < s.end && p.VUsAt(at) != cur {
			return at, true
		}
	}
	return 0, false
}

// OpenPlan is the open model's arrivals: arrival k (from 0) is intended at the instant the
// cumulative planned arrivals ∫ rate dt reach k + 0.5, so a constant rate r over T seconds plans
// round(r·T) arrivals, evenly spaced.
type OpenPlan struct{ segs []segment }

// NewOpenPlan plans an open scenario.
func NewOpenPlan(sc Scenario) OpenPlan { return OpenPlan{segments(sc)} }

// End is when the last stage ends; no arrival is planned from then on.
func (p OpenPlan) End() time.Duration { return p.segs[len(p.segs)-1].end }

// Arrivals iterates over the planned arrivals in order.
func (p OpenPlan) Arrivals() *Arrivals { return &Arrivals{segs: p.segs} }

// Arrivals walks the open plan's arrivals.
type Arrivals struct {
	segs []segment
	i    int     // current segment
	done float64 // cumulative arrivals at the start of segment i
	k    int64   // next arrival's number
}

// Next returns the intended instant of the next arrival, or false when no more are planned.
func (a *Arrivals) Next() (time.Duration, bool) {
	want := float64(a.k) + 0.5
	for a.i < len(a.segs) {
		s := a.segs[a.i]
		T := (s.end - s.start).Seconds()
		area := (s.from + s.to) / 2 * T
		if a.done+area >= want && area > 0 {
			// Solve from·x + (to−from)/(2T)·x² = want − done for x in [0, T].
			need := want - a.done
			slope := (s.to - s.from) / T
			var x float64
			if math.Abs(slope) < 1e-12 {
				x = need / s.from
			} else {
				x = (-s.from + math.Sqrt(max(s.from*s.from+2*slope*need, 0))) / slope
			}
			x = min(max(x, 0), T)
			a.k++
			return s.start + time.Duration(x*float64(time.Second)), true
		}
		a.done += area
		a.i++
	}
	return 0, false
}
