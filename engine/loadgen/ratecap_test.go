package loadgen

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// limits.max_rps is a hard cap: 10 VUs each loading a 3-request page every second (100 ms page,
// 900 ms think) get exactly 30 responses in every second; a cap of 30 lets the run finish, a cap
// of 29 stops it the instant the first second's responses exceed it.
func TestRateCapStopsTheRun(t *testing.T) {
	const spec = `{"protocol":"h2","interval_s":1,"think":{"mean_s":0.9},"scenario":{"start":10,"stages":[{"duration_s":5,"target":10}]},"limits":{"max_rps":%s}}`
	pageTime := func(time.Duration) time.Duration { return 100 * time.Millisecond }

	fr := runFake(t, mustDecode(t, strings.Replace(spec, "%s", "30", 1)), pageTime, nil, 0)
	if fr.err != nil || fr.sum.Totals.Hits < 5*30 {
		t.Fatalf("cap 30: err %v, %d hits; want the run complete with at least 150 hits", fr.err, fr.sum.Totals.Hits)
	}
	checkConsistent(t, fr)

	fr = runFake(t, mustDecode(t, strings.Replace(spec, "%s", "29", 1)), pageTime, nil, 0)
	var re *RateCapError
	if !errors.As(fr.err, &re) {
		t.Fatalf("cap 29: err %v; want a *RateCapError", fr.err)
	}
	if re.Got != 30 || re.MaxRPS != 29 || re.ActiveVUs != 10 || re.AtS > 0.11 || !strings.Contains(re.Error(), "limits.max_rps (29)") {
		t.Errorf("cap 29: %+v (%v); want 30 responses at t = 0.1 s, 10 VUs", re, re)
	}
	if fr.sum == nil || fr.sum.Interrupted || fr.sum.DurationS > 0.11 || fr.sum.Totals.Pages != 10 {
		t.Errorf("cap 29: summary %+v; want the 10 first pages, the run ended at 0.1 s, not interrupted", fr.sum)
	}
	if fr.users.Load() != fr.closed.Load() {
		t.Errorf("%d users made, %d closed", fr.users.Load(), fr.closed.Load())
	}
}

// The window slides: responses leave it a second after the 100 ms slot they were counted in (the
// 6 at 0 ms are out of it at 1000 ms).
func TestRateCapWindow(t *testing.T) {
	t0 := time.Unix(0, 0)
	c := &rateCap{max: 10, start: t0}
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, s := range []struct {
		ms   int
		hits int64
		over int64
	}{{0, 6, 0}, {950, 4, 0}, {990, 1, 11}, {1000, 1, 0}, {1950, 0, 0}, {2100, 10, 0}, {2150, 1, 11}, {5000, 10, 0}} {
		if got := c.add(at(s.ms), s.hits); got != s.over {
			t.Errorf("at %d ms +%d: %d above the cap; want %d", s.ms, s.hits, got, s.over)
		}
	}
}

// A generator of several caps its share of limits.max_rps, so that together they never pass it:
// part 0/2 of the run above holds 5 VUs, 15 responses/s — under 30's share (15), over 29's (14.5).
func TestRateCapShareOfAPart(t *testing.T) {
	const spec = `{"protocol":"h2","interval_s":1,"think":{"mean_s":0.9},"scenario":{"start":10,"stages":[{"duration_s":5,"target":10}]},"limits":{"max_rps":%s}}`
	pageTime := func(time.Duration) time.Duration { return 100 * time.Millisecond }
	half := func(c *Config) { c.Part = Part{K: 0, N: 2} }
	fr := runFake(t, mustDecode(t, strings.Replace(spec, "%s", "30", 1)), pageTime, nil, 0, half)
	if fr.err != nil || fr.sum.Totals.Hits < 5*15 {
		t.Fatalf("cap 30, part 0/2: err %v, %d hits; want the part complete", fr.err, fr.sum.Totals.Hits)
	}
	fr = runFake(t, mustDecode(t, strings.Replace(spec, "%s", "29", 1)), pageTime, nil, 0, half)
	var re *RateCapError
	if !errors.As(fr.err, &re) || re.Got != 15 || !strings.Contains(re.Error(), "generator 0/2's share of limits.max_rps (14.5 of 29)") {
		t.Fatalf("cap 29, part 0/2: err %v; want a *RateCapError at 15 responses naming the share", fr.err)
	}
}
