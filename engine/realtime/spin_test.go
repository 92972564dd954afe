package realtime

import (
	"math/rand/v2"
	"testing"
	"time"
)

// The spin window starts at the configured one, settles at the p99 of the sleeps' lateness plus
// the margin, follows the lateness up when sleeps end later, and stays within [spinMin, limit].
func TestSpinWindowFollowsSleepLateness(t *testing.T) {
	const limit = 150 * time.Microsecond
	var c spinCal
	if w := c.window(limit); w != limit {
		t.Fatalf("initial window %v, want the configured %v", w, limit)
	}
	r := rand.New(rand.NewPCG(1, 2))
	// Lateness uniform in [5, 45) µs: p99 44.6 µs, window ≈ 55 µs; the estimate runs above the p99
	// by part of an up-step (99 × 0.25 µs) after each sleep later than it — towards spinning more.
	uniform := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo))) }
	var sum time.Duration
	for i := range 20000 {
		c.observe(uniform(5*time.Microsecond, 45*time.Microsecond))
		if i >= 10000 {
			sum += c.window(limit)
		}
	}
	if w := sum / 10000; w < 50*time.Microsecond || w > 70*time.Microsecond {
		t.Fatalf("window %v on average after sleeps 5–45 µs late, want 55–70 µs (p99 44.6 + margin 10, + the estimate's overshoot)", w)
	}
	// Sleeps end later (a busier CPU): the window grows with them, up to the limit.
	for range 20000 {
		c.observe(uniform(100*time.Microsecond, 300*time.Microsecond))
	}
	if w := c.window(limit); w != limit {
		t.Fatalf("window %v after sleeps 100–300 µs late, want the limit %v", w, limit)
	}
	// Sleeps on time: never below spinMin.
	for range 20000 {
		c.observe(0)
	}
	if w := c.window(limit); w != spinMin {
		t.Fatalf("window %v after punctual sleeps, want spinMin %v", w, spinMin)
	}
	// A configured window below spinMin is kept.
	var small spinCal
	if w := small.window(5 * time.Microsecond); w != 5*time.Microsecond {
		t.Fatalf("window %v with a 5 µs limit", w)
	}
}
