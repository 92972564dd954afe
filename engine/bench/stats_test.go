package bench

import (
	"math"
	"testing"
)

// TestPercentile: linear interpolation between order statistics (numpy.quantile's default), on
// unsorted input, which it leaves as it was.
func TestPercentile(t *testing.T) {
	v := []float64{4, 1, 3, 2}
	for _, tc := range []struct{ q, want float64 }{
		{0, 1}, {0.5, 2.5}, {0.8, 3.4}, {0.99, 3.97}, {1, 4},
	} {
		if got := percentile(v, tc.q); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("percentile(%v, %v) = %v, want %v", v, tc.q, got, tc.want)
		}
	}
	if v[0] != 4 || v[3] != 2 {
		t.Errorf("percentile sorted its input: %v", v)
	}
	if got := percentile([]float64{7}, 0.99); got != 7 {
		t.Errorf("one value: %v", got)
	}
	if !math.IsNaN(percentile(nil, 0.5)) {
		t.Error("no values: want NaN")
	}
	if median(nil) != 0 || median([]float64{3, 1, 2}) != 2 {
		t.Error("median")
	}
}
