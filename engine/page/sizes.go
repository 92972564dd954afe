package page

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
)

// Size units accepted in synthetic names and wherever sizes are written as text.
var sizeUnits = map[string]int64{"B": 1, "kB": 1000, "KiB": 1024, "MB": 1000 * 1000, "MiB": 1024 * 1024}

var sizeRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(B|kB|KiB|MB|MiB)$`)

// ParseSize parses a size such as 100B, 10kB, 1.5KiB or 1MB (kB = 1000 bytes, KiB = 1024) into a
// whole number of bytes.
func ParseSize(s string) (int64, error) {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not a size: want a number and a unit B, kB, KiB, MB or MiB (e.g. 10kB)", s)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size: %v", s, err)
	}
	bytes := v * float64(sizeUnits[m[2]])
	if bytes > float64(MaxObjectBytes) {
		return 0, fmt.Errorf("%q is larger than %d bytes", s, int64(MaxObjectBytes))
	}
	if bytes != math.Trunc(bytes) {
		return 0, fmt.Errorf("%q is not a whole number of bytes", s)
	}
	return int64(bytes), nil
}

// FormatSize writes n in the largest decimal or binary unit that divides it exactly.
func FormatSize(n int64) string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"MB", 1000 * 1000}, {"MiB", 1024 * 1024}, {"kB", 1000}, {"KiB", 1024}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

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
