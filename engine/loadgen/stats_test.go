package loadgen

import (
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"
)

// Think times: fixed is exact; exponential has the mean and the shape (P(X > m) = 1/e, P(X > 3m)
// = e⁻³) of the distribution, and is reproducible per (seed, VU) but differs between VUs.
func TestThinkDistributions(t *testing.T) {
	fixed := NewThinker(Think{Distribution: "fixed", MeanS: 5}, 1, 0)
	for range 3 {
		if d := fixed.Next(); d != 5*time.Second {
			t.Fatalf("fixed: %v", d)
		}
	}
	const n = 200000
	exp := NewThinker(Think{Distribution: "exponential", MeanS: 2}, 7, 3)
	var sum float64
	over1, over3 := 0, 0
	for range n {
		d := exp.Next().Seconds()
		if d < 0 {
			t.Fatalf("negative think time %v", d)
		}
		sum += d
		if d > 2 {
			over1++
		}
		if d > 6 {
			over3++
		}
	}
	// Standard errors: mean 2/√n ≈ 0.0045 s; tail fractions √(p(1−p)/n) ≈ 0.001 and 0.0004.
	if mean := sum / n; math.Abs(mean-2) > 0.03 {
		t.Errorf("exponential mean %v s, want 2 ± 0.03", mean)
	}
	if f := float64(over1) / n; math.Abs(f-math.Exp(-1)) > 0.006 {
		t.Errorf("P(X > mean) = %v, want %v", f, math.Exp(-1))
	}
	if f := float64(over3) / n; math.Abs(f-math.Exp(-3)) > 0.003 {
		t.Errorf("P(X > 3·mean) = %v, want %v", f, math.Exp(-3))
	}
	a, b, c := NewThinker(Think{Distribution: "exponential", MeanS: 1}, 1, 5), NewThinker(Think{Distribution: "exponential", MeanS: 1}, 1, 5), NewThinker(Think{Distribution: "exponential", MeanS: 1}, 1, 6)
	same, differ := true, false
	for range 10 {
		x, y, z := a.Next(), b.Next(), c.Next()
		same = same && x == y
		differ = differ || x != z
	}
	if !same || !differ {
		t.Errorf("same seed and VU reproduce: %v; another VU differs: %v", same, differ)
	}
	if d := NewThinker(Think{Distribution: "exponential", MeanS: 0}, 1, 0).Next(); d != 0 {
		t.Errorf("exponential with mean 0: %v", d)
	}
}

// HDR percentiles against a known distribution: uniform page times of 1 µs … 10 s and an
// exponential sample, compared with exact order statistics, within the histogram's 0.1 %.
func TestHistogramPercentiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for name, draw := range map[string]func() time.Duration{
		"uniform": func() time.Duration {
			return time.Duration(1+rng.Int64N(int64(10*time.Second/time.Microsecond))) * time.Microsecond
		},
		"exponential": func() time.Duration { return time.Duration(rng.ExpFloat64() * float64(200*time.Millisecond)) },
	} {
		w := newWindow()
		var exact []float64
		for range 100000 {
			d := draw()
			w.add(&Sample{}, d)
			us := min(max(d.Microseconds(), 1), histHighestUS)
			exact = append(exact, float64(us)/1000)
		}
		sort.Float64s(exact)
		l := latencyOf(w.page)
		for _, c := range []struct {
			q   float64
			got float64
		}{{0.5, l.P50}, {0.9, l.P90}, {0.95, l.P95}, {0.99, l.P99}, {1, l.Max}} {
			want := exact[int(math.Ceil(c.q*float64(len(exact))))-1]
			if math.Abs(c.got-want) > 0.001*want+0.001 {
				t.Errorf("%s p%g: %v ms, exact %v ms", name, 100*c.q, c.got, want)
			}
		}
		var sum float64
		for _, v := range exact {
			sum += v
		}
		if mean := sum / float64(len(exact)); math.Abs(l.Mean-mean) > 0.001*mean {
			t.Errorf("%s mean %v ms, exact %v", name, l.Mean, mean)
		}
	}
	if latencyOf(newHist()) != nil {
		t.Error("an empty histogram has percentiles")
	}
	w := newWindow()
	w.add(&Sample{}, time.Hour) // above the range: clamped to 10 minutes
	if l := latencyOf(w.page); math.Abs(l.Max-600000) > 600 {
		t.Errorf("an hour recorded as %v ms", l.Max)
	}
}

// The recorder counts every page exactly once across intervals while VUs record concurrently
// with the rotations, and failed pages and requests land in their counters.
func TestRecorderRotation(t *testing.T) {
	r := newRecorder()
	const vus, pages = 8, 5000
	var wg sync.WaitGroup
	for range vus {
		wg.Go(func() {
			s := &Sample{Exchanges: []time.Duration{time.Millisecond, 2 * time.Millisecond}, Bytes: 100}
			for i := range pages {
				s.Failed = i%10 == 0
				if s.Failed {
					s.Errors[Reset] = 1
				} else {
					s.Errors[Reset] = 0
				}
				r.page(s, time.Duration(i)*time.Microsecond)
			}
		})
	}
	total := newWindow()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		total.merge(r.rotate())
	}
	total.merge(r.rotate())
	if total.pages+total.pagesFailed != vus*pages || total.pagesFailed != vus*pages/10 {
		t.Errorf("%d pages, %d failed; want %d and %d", total.pages, total.pagesFailed, vus*pages, vus*pages/10)
	}
	if total.hits != 2*vus*pages || total.request.TotalCount() != 2*vus*pages || total.bytes != 100*vus*pages || total.errors[Reset] != vus*pages/10 {
		t.Errorf("hits %d, request samples %d, bytes %d, resets %d", total.hits, total.request.TotalCount(), total.bytes, total.errors[Reset])
	}
	if total.page.TotalCount() != total.pages {
		t.Errorf("%d page times for %d successful pages", total.page.TotalCount(), total.pages)
	}
}
