package bench

import (
	"math"
	"testing"
)

// A case's medians and ratios are over its pairs; the ratio is the median of the pairs' on ÷ off,
// not the ratio of the medians.
func TestSummarizeCase(t *testing.T) {
	c := VisualCase{WallOnOff: [][2]float64{{100, 110}, {200, 180}, {300, 390}}, pltPairs: [][2]float64{{10, 10}, {20, 30}, {30, 30}}}
	summarizeCase(&c)
	if c.Pairs != 3 || c.WallOffMs != 200 || c.WallOnMs != 180 || c.PLTOffMs != 20 || c.PLTOnMs != 30 {
		t.Errorf("medians %+v", c)
	}
	if math.Abs(c.WallRatio-1.1) > 1e-9 || c.PLTRatio != 1 {
		t.Errorf("ratios %v %v; want 1.1, 1", c.WallRatio, c.PLTRatio)
	}
}

// The comparison's summary: |wirelab − Lighthouse| and the FCP baseline's, over the loads both
// measured; a load speedline failed on is left out.
func TestSummarizeChecks(t *testing.T) {
	r := &VisualResult{Checks: []SpeedIndexCheck{
		{SpeedIndexMs: 1000, LighthouseSIMs: 1000, FCPMs: 800},
		{SpeedIndexMs: 508, LighthouseSIMs: 500, FCPMs: 450},
		{SpeedIndexMs: 2000, LighthouseSIMs: 2010, FCPMs: 1000},
		{SpeedIndexMs: 700, Error: "speedline: no screenshots"},
	}}
	summarizeChecks(r)
	if r.Compared != 3 || r.SIErrMedianMs != 8 || r.SIErrMaxMs != 10 || r.BaselineErrMedianMs != 200 || r.BaselineErrMaxMs != 1010 {
		t.Errorf("%+v", r)
	}
	if math.Abs(r.SIErrMedianPct-0.4975124378109453) > 1e-9 {
		t.Errorf("median %% error %v", r.SIErrMedianPct)
	}
}

func TestPaintPagesAreKnown(t *testing.T) {
	for _, p := range PaintPages {
		if !IsPaintPage(p) {
			t.Errorf("%s", p)
		}
	}
	if _, err := BuildPaintPage("true", t.TempDir(), "paint:nope", 1); err == nil {
		t.Error("an unknown paint page was built")
	}
}
