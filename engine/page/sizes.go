package page

import (
	"fmt"
	"math"
	"sort"
)

// fitTotal returns whole sizes proportional to weights, each at least its minimum, summing to
// exactly total. Weights below their minimum after scaling are pinned to it and the rest rescaled;
// the rounding remainder goes to the largest fractional parts (ties to the lower index), so the
// result is deterministic.
func fitTotal(weights []float64, mins []int64, total int64) ([]int64, error) {
	n := len(weights)
	var minSum int64
	for _, m := range mins {
		minSum += m
	}
	if total < minSum {
		return nil, fmt.Errorf("total %d bytes cannot hold the minimum sizes (%d bytes)", total, minSum)
	}
	pinned := make([]bool, n)
	sizes := make([]float64, n)
	for {
		free, rest := 0.0, total
		for i := range n {
			if pinned[i] {
				rest -= mins[i]
			} else {
				free += weights[i]
			}
		}
		changed := false
		for i := range n {
			if pinned[i] || free == 0 {
				sizes[i] = float64(mins[i])
				continue
			}
			sizes[i] = weights[i] / free * float64(rest)
			if sizes[i] < float64(mins[i]) {
				pinned[i], changed = true, true
			}
		}
		if !changed {
			break
		}
	}
	out := make([]int64, n)
	var sum int64
	frac := make([]int, 0, n)
	for i, s := range sizes {
		out[i] = int64(math.Floor(s))
		if out[i] < mins[i] {
			out[i] = mins[i]
		}
		sum += out[i]
		if !pinned[i] {
			frac = append(frac, i)
		}
	}
	if len(frac) == 0 {
		for i := range n {
			frac = append(frac, i)
		}
	}
	sort.SliceStable(frac, func(a, b int) bool {
		fa, fb := sizes[frac[a]]-math.Floor(sizes[frac[a]]), sizes[frac[b]]-math.Floor(sizes[frac[b]])
		return fa > fb
	})
	for k := 0; sum < total; k++ {
		out[frac[k%len(frac)]]++
		sum++
	}
	for k := len(frac) - 1; sum > total; k-- { // only after float error; never below a minimum
		i := frac[(k%len(frac)+len(frac))%len(frac)]
		if out[i] > mins[i] {
			out[i]--
			sum--
		}
	}
	return out, nil
}
