package bench

import (
	"math"
	"slices"
)

// percentile is the q-quantile (0 ≤ q ≤ 1) of v with linear interpolation between order statistics
// — the definition of numpy.quantile's default, which the control plane's analysis uses — so a
// figure here and the same figure computed in Python from the same values agree. Every percentile,
// median and spread the benchmarks print is this one; NaN for no values.
func percentile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (pos-float64(lo))*(s[hi]-s[lo])
}

// median is percentile(v, 0.5), or 0 for no values (every load failed: the error count says so).
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return percentile(v, 0.5)
}
