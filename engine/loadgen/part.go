package loadgen

import (
	"fmt"
	"strconv"
	"strings"
)

// Part is one generator's share of a run spread over N generators (docs/loadtest.md, "Generators
// on a Dask cluster"): generator K of N (K from 0) runs the scenario's VUs whose global index i has
// i mod N = K, and, in the open model, the arrivals whose number k has k mod N = K. So at every
// instant the parts' VU counts add up to the scenario's exactly (the VUs start in index order and
// the most recently started leaves first, as in one process), their max_vus add up to the spec's,
// and VU i keeps its think-time seed (seed, i) wherever it runs. The zero Part is the whole run.
type Part struct {
	K, N int
}

// Whole reports whether p is the whole run (one generator).
func (p Part) Whole() bool { return p.N <= 1 }

// String is "K/N" (the --part flag's form); "" for the whole run.
func (p Part) String() string {
	if p.Whole() {
		return ""
	}
	return fmt.Sprintf("%d/%d", p.K, p.N)
}

// ParsePart reads "K/N": 0 ≤ K < N, 1 ≤ N ≤ MaxParts.
func ParsePart(s string) (Part, error) {
	k, n, ok := strings.Cut(s, "/")
	K, err1 := strconv.Atoi(k)
	N, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil {
		return Part{}, fmt.Errorf("want K/N, this generator's number K (from 0) of N")
	}
	if N < 1 || N > MaxParts || K < 0 || K >= N {
		return Part{}, fmt.Errorf("want 0 ≤ K < N ≤ %d", MaxParts)
	}
	return Part{K: K, N: N}, nil
}

// MaxParts bounds the generators of one run.
const MaxParts = 1024

// share is how many of the first total items (VUs, max_vus) are this part's.
func (p Part) share(total int) int {
	if p.Whole() {
		return total
	}
	if total <= p.K {
		return 0
	}
	return (total - p.K + p.N - 1) / p.N
}

// global is the run-wide index of this part's local item j (a VU's index, for its seed).
func (p Part) global(j int) int {
	if p.Whole() {
		return j
	}
	return p.K + j*p.N
}

// owns reports whether arrival k (open model) is this part's.
func (p Part) owns(k int64) bool { return p.Whole() || k%int64(p.N) == int64(p.K) }
