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

// A release gets a spin when the spin is at most a sparseGap-th of the time since the previous
// release.
func TestSparseReleasesSpin(t *testing.T) {
	const us = time.Microsecond
	for _, c := range []struct {
		target, last, spin time.Duration
		want               bool
	}{
		{10 * time.Millisecond, 0, 150 * us, true}, // a handshake after a pause
		{600 * us, 0, 150 * us, true},              // exactly a quarter
		{599 * us, 0, 150 * us, false},
		{1200 * us, 0, 150 * us, true},                              // a 10 Mbit/s stream, a loaded machine's window
		{5120 * us, 5000 * us, 150 * us, false},                     // 100 Mbit/s: 120 µs apart
		{5120 * us, 5000 * us, 50 * us, false},                      // the same with a quiet machine's window
		{5120 * us, 5000 * us, 30 * us, true},                       // a deadline 30 µs off after a 120 µs gap
		{5200 * us, 5000 * us, 50 * us, true},                       // 60 Mbit/s with a quiet machine's window
		{time.Duration(1 << 40), time.Duration(1<<40 - 1), 0, true}, // no spin needed
	} {
		if got := sparse(c.target, c.last, c.spin); got != c.want {
			t.Errorf("sparse(target %v, last %v, spin %v) = %v, want %v", c.target, c.last, c.spin, got, c.want)
		}
	}
}

// Outside a stream every release is spun for; in one, only a sparse release or a deadline at most
// spinMin off.
func TestWorthSpinOnlyOutsideStreams(t *testing.T) {
	const us = time.Microsecond
	win := 150 * us
	// 100 Mbit/s: the next release 120 µs after the last, 100 µs from now.
	if !worthSpin(100*us, win, 5120*us, 5000*us, streamRun-1) {
		t.Error("a close release before a stream was established was not spun for")
	}
	if worthSpin(100*us, win, 5120*us, 5000*us, streamRun) {
		t.Error("a stream's close release was spun for")
	}
	if !worthSpin(spinMin, win, 5120*us, 5000*us, streamRun) {
		t.Error("a deadline spinMin off was not spun for")
	}
	if !worthSpin(100*us, win, 10*time.Millisecond, 5000*us, streamRun) {
		t.Error("a sparse release in a stream was not spun for")
	}
}
