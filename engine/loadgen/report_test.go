package loadgen

import (
	"testing"
)

// TestOutcomesPeakOverScenarioFullIntervals: the peak rates leave out the short interval of the
// pages in flight after the last stage (its rate is high because it is short) and any interval that
// starts after the scenario, and fall back on the partial intervals only when there is no full one.
func TestOutcomesPeakOverScenarioFullIntervals(t *testing.T) {
	target := 10
	spec := &Spec{
		IntervalS: 2,
		Scenario:  Scenario{Model: "closed", Start: 1, Stages: []Stage{{DurationS: 5, Target: &target}}},
		SLA:       SLA{PageMs: 3000, Statistic: "p90"},
	}
	ivs := []Interval{
		{Index: 0, TStartS: 0, TEndS: 2, PagesPerS: 3, HitsPerS: 30},
		{Index: 1, TStartS: 2, TEndS: 4, PagesPerS: 7, HitsPerS: 70},
		{Index: 2, TStartS: 4, TEndS: 6, PagesPerS: 8, HitsPerS: 80},   // straddles the end at 5 s: full, counted
		{Index: 3, TStartS: 6, TEndS: 8, PagesPerS: 20, HitsPerS: 200}, // after the scenario: pages in flight
		{Index: 4, TStartS: 8, TEndS: 8.1, PagesPerS: 50, HitsPerS: 500, partial: true},
	}
	o := outcomes(spec, ivs, -1)
	if o.MaxPagesPerS != 8 || o.MaxHitsPerS != 80 {
		t.Errorf("max pages/s %v, hits/s %v; want 8 and 80 (the scenario's full intervals)", o.MaxPagesPerS, o.MaxHitsPerS)
	}

	// the short last interval within the scenario (a run interrupted at 4.3 s) is left out too
	cut := []Interval{ivs[0], ivs[1], {Index: 2, TStartS: 4, TEndS: 4.3, PagesPerS: 40, HitsPerS: 400, partial: true}}
	if o := outcomes(spec, cut, -1); o.MaxPagesPerS != 7 || o.MaxHitsPerS != 70 {
		t.Errorf("interrupted: max pages/s %v, hits/s %v; want 7 and 70", o.MaxPagesPerS, o.MaxHitsPerS)
	}

	// a run stopped within its first interval has only a partial one: it is rated over it
	first := []Interval{{Index: 0, TStartS: 0, TEndS: 1.5, PagesPerS: 2, HitsPerS: 20, partial: true}}
	if o := outcomes(spec, first, -1); o.MaxPagesPerS != 2 || o.MaxHitsPerS != 20 {
		t.Errorf("one partial interval: max pages/s %v, hits/s %v; want 2 and 20", o.MaxPagesPerS, o.MaxHitsPerS)
	}
}
