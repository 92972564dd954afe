package realtime

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

func TestBuckets(t *testing.T) {
	prev := -1
	for _, v := range []uint64{0, 1, 15, 16, 17, 31, 32, 33, 1000, 1 << 20, 1<<40 + 12345, 1<<63 - 1} {
		b := bucketOf(v)
		if b < prev {
			t.Fatalf("bucketOf not monotone at %d", v)
		}
		prev = b
		if up := bucketUpper(b); up < v || (v >= 16 && float64(up-v) > float64(v)/16) {
			t.Errorf("value %d → bucket %d with upper bound %d", v, b, up)
		}
	}
}

func TestPercentiles(t *testing.T) {
	var h Histogram
	r := rand.New(rand.NewPCG(1, 2))
	var vals []time.Duration
	for i := 0; i < 100000; i++ {
		v := time.Duration(r.ExpFloat64() * 20e3)
		vals = append(vals, v)
		h.Record(v)
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
	s := h.Summary()
	check := func(name string, got, want time.Duration) {
		if got < want || float64(got-want) > float64(want)/16+1 {
			t.Errorf("%s = %v, exact %v", name, got, want)
		}
	}
	check("p50", s.P50, vals[len(vals)/2])
	check("p99", s.P99, vals[len(vals)*99/100])
	if s.Max != vals[len(vals)-1] || s.Count != 100000 {
		t.Errorf("max %v count %d", s.Max, s.Count)
	}
	var m Histogram
	m.Merge(&h)
	m.Record(-5)
	if m.Summary().Count != 100001 {
		t.Error("merge")
	}
	var empty Histogram
	if (empty.Summary() != Percentiles{}) {
		t.Error("empty histogram")
	}
}
