package loadgen

import (
	"math"
	"testing"
	"time"
)

func closedScenario(start int, stages ...[2]float64) Scenario {
	sc := Scenario{Model: "closed", Start: float64(start)}
	for _, st := range stages {
		sc.Stages = append(sc.Stages, Stage{DurationS: st[0], Target: intp(int(st[1]))})
	}
	return sc
}

func openScenario(start float64, stages ...[2]float64) Scenario {
	sc := Scenario{Model: "open", Start: start}
	for _, st := range stages {
		sc.Stages = append(sc.Stages, Stage{DurationS: st[0], Rate: floatp(st[1])})
	}
	return sc
}

// Stages produce the planned VU counts: linear between stage ends, rounded half up.
func TestClosedPlanCounts(t *testing.T) {
	// Study N: 1 → 1000 over 1200 s; then hold 60 s; then ramp down to 0 over 10 s.
	p := NewClosedPlan(closedScenario(1, [2]float64{1200, 1000}, [2]float64{60, 1000}, [2]float64{10, 0}))
	for _, tc := range []struct {
		at   time.Duration
		want int
	}{
		{0, 1}, {600 * time.Second, 501}, // 1 + 999·0.5 = 500.5 → 501
		{1200 * time.Second, 1000}, {1230 * time.Second, 1000},
		{1265 * time.Second, 500}, {1269 * time.Second, 100}, {1270*time.Second - 1, 0},
	} {
		if got := p.VUsAt(tc.at); got != tc.want {
			t.Errorf("VUsAt(%v) = %d, want %d", tc.at, got, tc.want)
		}
	}
	if p.End() != 1270*time.Second {
		t.Errorf("End %v", p.End())
	}
}

// NextChange finds every change of VUsAt, exactly: walking from change to change visits each count
// once, and agrees with a fine scan.
func TestClosedPlanNextChange(t *testing.T) {
	for _, sc := range []Scenario{
		closedScenario(1, [2]float64{1200, 1000}),
		closedScenario(0, [2]float64{3, 7}, [2]float64{2, 7}, [2]float64{4, 2}, [2]float64{1, 9}),
		closedScenario(10, [2]float64{0.5, 0}),
		closedScenario(5, [2]float64{10, 5}),
	} {
		p := NewClosedPlan(sc)
		var walk []int
		at := time.Duration(0)
		walk = append(walk, p.VUsAt(0))
		for {
			next, ok := p.NextChange(at)
			if !ok {
				break
			}
			if next <= at || p.VUsAt(next) == p.VUsAt(next-1) {
				t.Fatalf("%+v: NextChange(%v) = %v is not a change", sc.Stages, at, next)
			}
			at = next
			walk = append(walk, p.VUsAt(at))
		}
		var scan []int
		step := p.End() / 200000
		for t := time.Duration(0); t < p.End(); t += step {
			if n := p.VUsAt(t); len(scan) == 0 || scan[len(scan)-1] != n {
				scan = append(scan, n)
			}
		}
		if len(walk) != len(scan) {
			t.Errorf("%+v: NextChange walks %d counts, a fine scan finds %d", sc.Stages, len(walk), len(scan))
			continue
		}
		for i := range walk {
			if walk[i] != scan[i] {
				t.Errorf("%+v: count %d: walk %d, scan %d", sc.Stages, i, walk[i], scan[i])
				break
			}
		}
	}
}

// Arrivals: as many as ∫ rate dt (rounded), in order, within the plan, per stretch of time.
func TestOpenPlanArrivals(t *testing.T) {
	for _, tc := range []struct {
		sc   Scenario
		want int
	}{
		{openScenario(10, [2]float64{10, 10}), 100},
		{openScenario(0, [2]float64{10, 20}), 100},                // ramp 0 → 20/s over 10 s
		{openScenario(5, [2]float64{2, 5}, [2]float64{4, 0}), 20}, // 10 + 10
		{openScenario(0, [2]float64{1, 0}, [2]float64{1, 3}), 2},  // idle stage, then 0 → 3: 1.5 → 2
		{openScenario(0.5, [2]float64{3, 0.5}), 2},                // 1.5 → 2 (k + ½ reached twice)
		{openScenario(1000, [2]float64{60, 1000}), 60000},
	} {
		plan := NewOpenPlan(tc.sc)
		a := plan.Arrivals()
		var times []time.Duration
		for {
			at, ok := a.Next()
			if !ok {
				break
			}
			times = append(times, at)
		}
		if len(times) != tc.want {
			t.Errorf("%+v: %d arrivals, want %d", tc.sc, len(times), tc.want)
		}
		for i, at := range times {
			if at < 0 || at > plan.End() || i > 0 && at < times[i-1] {
				t.Errorf("%+v: arrival %d at %v (previous %v, end %v)", tc.sc, i, at, times[max(i-1, 0)], plan.End())
				break
			}
		}
	}
	// Within a ramp the count per second follows the rate: 0 → 20/s over 10 s has about 2k+1
	// arrivals in second k.
	a := NewOpenPlan(openScenario(0, [2]float64{10, 20})).Arrivals()
	perSecond := make([]int, 10)
	for {
		at, ok := a.Next()
		if !ok {
			break
		}
		perSecond[int(at/time.Second)]++
	}
	for k, n := range perSecond {
		if want := 2*k + 1; math.Abs(float64(n-want)) > 1 {
			t.Errorf("second %d: %d arrivals, want %d ± 1", k, n, want)
		}
	}
}
