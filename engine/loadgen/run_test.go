package loadgen

import (
	"context"
	"errors"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// fakeUser loads a "page" by waiting in virtual time (testing/synctest): the runner's scheduling
// is tested without sockets, exactly and in milliseconds of real time.
type fakeUser struct {
	start     time.Time
	pageTime  func(at time.Duration) time.Duration // at: the run's time when the page starts
	fail      func(at time.Duration) bool
	requests  int
	cancelled *atomic.Int64
	closed    *atomic.Int64
}

func (u *fakeUser) Load(ctx context.Context, s *Sample) {
	at := time.Since(u.start)
	d := u.pageTime(at)
	select {
	case <-time.After(d):
	case <-ctx.Done():
		u.cancelled.Add(1)
		s.Interrupted = true
		return
	}
	for range u.requests {
		s.Exchanges = append(s.Exchanges, d/2)
		s.Bytes += 1000
	}
	if u.fail != nil && u.fail(at) {
		s.Failed = true
		s.Errors[HTTPStatus]++
	}
}

func (u *fakeUser) Close() { u.closed.Add(1) }

type fakeRun struct {
	spec      *Spec
	intervals []Interval
	sum       *Summary
	err       error
	users     atomic.Int64
	cancelled atomic.Int64
	closed    atomic.Int64
}

// runFake runs spec against fake users inside a synctest bubble; stop, if set, cancels the run
// at that instant.
func runFake(t *testing.T, spec *Spec, pageTime func(time.Duration) time.Duration, fail func(time.Duration) bool, stop time.Duration, opts ...func(*Config)) *fakeRun {
	t.Helper()
	fr := &fakeRun{spec: spec}
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if stop > 0 {
			time.AfterFunc(stop, cancel)
		}
		start := time.Now()
		var mu sync.Mutex
		cfg := Config{
			Spec:  spec,
			Start: start,
			NewUser: func(int) User {
				fr.users.Add(1)
				return &fakeUser{start: start, pageTime: pageTime, fail: fail, requests: 3, cancelled: &fr.cancelled, closed: &fr.closed}
			},
			Interval: func(iv Interval) { mu.Lock(); fr.intervals = append(fr.intervals, iv); mu.Unlock() },
		}
		for _, o := range opts {
			o(&cfg)
		}
		fr.sum, fr.err = Run(ctx, cfg)
	})
	return fr
}

// near: equal within the histograms' resolution (3 significant digits).
func near(got, want float64) bool { return math.Abs(got-want) <= 0.001*want }

func mustDecode(t *testing.T, s string) *Spec {
	t.Helper()
	spec, err := Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// checkConsistent: the intervals tile the run, and the totals are the intervals' sums
// (pages/s × interval = pages).
func checkConsistent(t *testing.T, fr *fakeRun) {
	t.Helper()
	var pages, failed, hits int64
	for i, iv := range fr.intervals {
		if iv.Index != i || (i > 0 && iv.TStartS != fr.intervals[i-1].TEndS) {
			t.Errorf("interval %d: index %d, [%v, %v)", i, iv.Index, iv.TStartS, iv.TEndS)
		}
		if got := iv.PagesPerS * (iv.TEndS - iv.TStartS); math.Abs(got-float64(iv.Pages)) > 1e-6 {
			t.Errorf("interval %d: pages/s × length = %v, pages %d", i, got, iv.Pages)
		}
		if iv.Hits != 3*(iv.Pages+iv.PagesFailed) || iv.Bytes != 1000*iv.Hits {
			t.Errorf("interval %d: %d hits, %d bytes for %d pages", i, iv.Hits, iv.Bytes, iv.Pages+iv.PagesFailed)
		}
		pages, failed, hits = pages+iv.Pages, failed+iv.PagesFailed, hits+iv.Hits
	}
	tot := fr.sum.Totals
	if tot.Pages != pages || tot.PagesFailed != failed || tot.Hits != hits || fr.sum.Intervals != len(fr.intervals) {
		t.Errorf("totals %d/%d/%d over %d intervals; the intervals sum to %d/%d/%d over %d", tot.Pages, tot.PagesFailed, tot.Hits,
			fr.sum.Intervals, pages, failed, hits, len(fr.intervals))
	}
	if last := fr.intervals[len(fr.intervals)-1]; math.Abs(last.TEndS-fr.sum.DurationS) > 1e-9 {
		t.Errorf("last interval ends at %v s, the run at %v s", last.TEndS, fr.sum.DurationS)
	}
	if fr.users.Load() != fr.closed.Load() {
		t.Errorf("%d users made, %d closed", fr.users.Load(), fr.closed.Load())
	}
	// only the last interval may be cut short, and the peak rates leave it out (unless it is the only one)
	var peakPages float64
	end := fr.spec.Scenario.Duration()
	for i, iv := range fr.intervals {
		full := math.Abs(iv.TEndS-iv.TStartS-fr.spec.IntervalS) < 1e-9
		if (!iv.partial && !full) || (iv.partial && i != len(fr.intervals)-1) {
			t.Errorf("interval %d of %d: [%v, %v) partial %v", i, len(fr.intervals), iv.TStartS, iv.TEndS, iv.partial)
		}
		if !iv.partial && time.Duration(iv.Index)*fr.spec.Interval() < end {
			peakPages = max(peakPages, iv.PagesPerS)
		}
	}
	if len(fr.intervals) > 1 && fr.sum.Outcomes.MaxPagesPerS != peakPages {
		t.Errorf("max_pages_per_s %v; the scenario's full intervals peak at %v", fr.sum.Outcomes.MaxPagesPerS, peakPages)
	}
}

// The closed model follows the stages: the active VUs at every interval boundary are the planned
// count; the VUs removed by the ramp-down finish their page (none is cut off); the hold stage's
// throughput is VUs ÷ (page time + think time).
func TestClosedRunFollowsStages(t *testing.T) {
	spec := mustDecode(t, `{"protocol":"h1","interval_s":1,"think":{"mean_s":1},
		"scenario":{"start":0,"stages":[{"duration_s":10,"target":10},{"duration_s":10,"target":10},{"duration_s":5,"target":0}]}}`)
	fr := runFake(t, spec, func(time.Duration) time.Duration { return 500 * time.Millisecond }, nil, 0)
	if fr.err != nil {
		t.Fatal(fr.err)
	}
	checkConsistent(t, fr)
	plan := NewClosedPlan(spec.Scenario)
	for _, iv := range fr.intervals[:20] { // ramp-up and hold: changes fall between boundaries
		if want := plan.VUsAt(time.Duration(iv.TEndS * float64(time.Second))); iv.VUs != want {
			t.Errorf("interval %d: %d VUs at its end, planned %d", iv.Index, iv.VUs, want)
		}
	}
	var hold int64
	for _, iv := range fr.intervals[10:20] {
		hold += iv.Pages
	}
	if want := 10 * 10 / 1.5; math.Abs(float64(hold)-want) > 10 { // ±1 page per VU at the stage's edges
		t.Errorf("hold stage: %d pages, want about %.0f", hold, want)
	}
	if fr.cancelled.Load() != 0 || fr.sum.Totals.PagesFailed != 0 {
		t.Errorf("%d pages cut off, %d failed; the ramp-down is graceful", fr.cancelled.Load(), fr.sum.Totals.PagesFailed)
	}
	if fr.users.Load() != 10 || fr.sum.Totals.VUsMax != 10 {
		t.Errorf("%d users, vus_max %d; want 10 and 10", fr.users.Load(), fr.sum.Totals.VUsMax)
	}
	if last := fr.intervals[len(fr.intervals)-1]; last.TEndS > 25 && last.VUs != 0 { // ended after the last page
		t.Errorf("%d VUs at the run's end", last.VUs)
	}
	if p := fr.sum.Totals.PageMs; p == nil || !near(p.P50, 500) || !near(p.Max, 500) {
		t.Errorf("page times %+v; every page took 500 ms", p)
	}
	if d := fr.sum.DurationS; d < 25 || d > 25.5 {
		t.Errorf("run lasted %v s; the stages last 25 s and a page 0.5 s", d)
	}
}

// The open model times pages from their intended start: a server that stalls for 2 s shows the
// queueing delay of the arrivals that waited (coordinated omission cannot hide it), arrivals beyond
// the FIFO's bound (max_vus) are dropped and counted, and unhindered pages take their own time.
func TestOpenRunCountsFromIntendedStart(t *testing.T) {
	spec := mustDecode(t, `{"protocol":"h2","interval_s":1,"scenario":{"model":"open","start":10,"max_vus":5,"stages":[{"duration_s":10,"rate":10}]}}`)
	stallFrom, stallTo := 2*time.Second, 4500*time.Millisecond
	pageTime := func(at time.Duration) time.Duration {
		if at >= stallFrom && at < stallTo {
			return stallTo - at // answered only when the stall ends
		}
		return 100 * time.Millisecond
	}
	fr := runFake(t, spec, pageTime, nil, 0)
	if fr.err != nil {
		t.Fatal(fr.err)
	}
	checkConsistent(t, fr)
	// Arrivals at 2.05 … 2.45 s take the 5 VUs until 4.5 s; the 20 arrivals at 2.55 … 4.45 s
	// queue, the queue holds 5: 15 are dropped, the last 5 start at 4.5 s.
	if fr.sum.Totals.Dropped != 15 {
		t.Errorf("%d arrivals dropped, want 15", fr.sum.Totals.Dropped)
	}
	if got := fr.sum.Totals.Pages; got != 100-15 {
		t.Errorf("%d pages, want 85 (100 arrivals, 15 dropped)", got)
	}
	stalled := fr.intervals[4] // [4 s, 5 s): the stalled pages end at 4.5 s and 4.6 s
	if stalled.PageMs == nil || !near(stalled.PageMs.Max, 2450) || stalled.Dropped != 5 {
		t.Errorf("interval 4: page times %+v, %d dropped; the first stalled arrival (intended 2.05 s) ends at 4.5 s: 2450 ms; 5 dropped", stalled.PageMs, stalled.Dropped)
	}
	if calm := fr.intervals[1]; calm.PageMs == nil || !near(calm.PageMs.Max, 100) || calm.Pages != 10 {
		t.Errorf("interval 1: %d pages, times %+v; want 10 of 100 ms", calm.Pages, calm.PageMs)
	}
	if fr.users.Load() != 5 || fr.sum.Totals.VUsMax != 5 {
		t.Errorf("%d users, vus_max %d; max_vus is 5", fr.users.Load(), fr.sum.Totals.VUsMax)
	}
}

// Outcomes: the VUs at the first failed page and at the first interval violating the SLA, the page
// time at a VU count; thresholds evaluated on them.
func TestRunOutcomes(t *testing.T) {
	spec := mustDecode(t, `{"protocol":"h2","interval_s":1,"think":{"mean_s":0},"sla":{"page_ms":1000,"statistic":"p90"},"at_vus":[3],
		"thresholds":["vus_at_first_error >= 5","vus_at_first_sla_violation < 8","errors == 0"],
		"scenario":{"start":0,"stages":[{"duration_s":10,"target":10}]}}`)
	pageTime := func(at time.Duration) time.Duration {
		if at >= 7*time.Second {
			return 1500 * time.Millisecond
		}
		return 300 * time.Millisecond
	}
	fail := func(at time.Duration) bool { return at >= 4800*time.Millisecond && at < 5500*time.Millisecond }
	fr := runFake(t, spec, pageTime, fail, 0)
	if fr.err != nil {
		t.Fatal(fr.err)
	}
	checkConsistent(t, fr)
	o := fr.sum.Outcomes
	if o.VUsAtFirstError == nil || *o.VUsAtFirstError != 5 {
		t.Errorf("vus_at_first_error %v; the first page to fail ends at 5.1 s with 5 VUs", o.VUsAtFirstError)
	}
	// Pages from 7 s take 1.5 s: the first interval whose p90 exceeds 1 s is [8, 9) (they end from
	// 8.5 s), with 9 VUs at its end.
	if o.VUsAtFirstSLAViolation == nil || *o.VUsAtFirstSLAViolation != 9 || *o.FirstSLAViolationInterval != 8 {
		t.Errorf("first SLA violation: %v VUs in interval %v; want 9 in 8", o.VUsAtFirstSLAViolation, o.FirstSLAViolationInterval)
	}
	if at := o.PageMsAt["3"]; at == nil || at.Index != 2 || at.VUs != 3 || at.PageMs == nil || !near(at.PageMs.P50, 300) {
		t.Errorf("page_ms_at 3 VUs: %+v; want interval 2 (VU 3 starts at 2.5 s), 300 ms", at)
	}
	pass := []bool{true, false, false}
	for i, r := range fr.sum.Thresholds {
		if r.Pass != pass[i] {
			t.Errorf("%s: pass %v, want %v", r.Expr, r.Pass, pass[i])
		}
	}
	if fr.sum.ThresholdsPassed {
		t.Error("thresholds passed")
	}
	if e := fr.sum.Totals.Errors; e.HTTPStatus != fr.sum.Totals.PagesFailed || e.HTTPStatus == 0 {
		t.Errorf("errors %+v for %d failed pages", e, fr.sum.Totals.PagesFailed)
	}
}

// An interrupted run stops its VUs at once, reports the partial interval and the summary, and
// counts no page that was cut off.
func TestRunInterrupted(t *testing.T) {
	spec := mustDecode(t, `{"protocol":"h2","interval_s":1,"think":{"mean_s":0.2},"scenario":{"start":4,"stages":[{"duration_s":60,"target":4}]}}`)
	fr := runFake(t, spec, func(time.Duration) time.Duration { return 300 * time.Millisecond }, nil, 2600*time.Millisecond)
	if !errors.Is(fr.err, ErrInterrupted) || fr.sum == nil || !fr.sum.Interrupted {
		t.Fatalf("err %v, summary %+v", fr.err, fr.sum)
	}
	checkConsistent(t, fr)
	if len(fr.intervals) != 3 || fr.intervals[2].TEndS != 2.6 {
		t.Errorf("%d intervals, the last ending at %v s; want 3, the last partial at 2.6 s", len(fr.intervals), fr.intervals[len(fr.intervals)-1].TEndS)
	}
	// Each VU: pages end at 0.3, 0.8, 1.3, 1.8, 2.3 s; the one started at 2.5 s is cut off at 2.6 s.
	if fr.sum.Totals.Pages != 4*5 || fr.cancelled.Load() != 4 {
		t.Errorf("%d pages, %d cut off; want 20 and 4", fr.sum.Totals.Pages, fr.cancelled.Load())
	}
}

// A thinking VU holds no goroutine (memory per VU: its think time is a timer), and a VU halted
// while it thinks leaves at once: 200 VUs with 0.1 s pages and 10 s think times have about one
// goroutine per VU in a page at any instant, not one per VU; the scenario's end at t = 20.05 s
// (mid-think) closes every user without waiting for the think time to end.
func TestThinkingVUsHoldNoGoroutine(t *testing.T) {
	spec := mustDecode(t, `{"protocol":"h2","interval_s":1,"think":{"mean_s":10},
		"scenario":{"start":200,"stages":[{"duration_s":20.05,"target":200}]}}`)
	synctest.Test(t, func(t *testing.T) {
		base := runtime.NumGoroutine()
		start := time.Now()
		var closed, cancelled atomic.Int64
		var most int
		sum, err := Run(context.Background(), Config{
			Spec:  spec,
			Start: start,
			NewUser: func(int) User {
				return &fakeUser{start: start, pageTime: func(time.Duration) time.Duration { return 100 * time.Millisecond }, requests: 1, cancelled: &cancelled, closed: &closed}
			},
			Interval: func(iv Interval) {
				if iv.TEndS >= 2 && iv.TEndS <= 20 {
					most = max(most, runtime.NumGoroutine()-base)
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if most > 10 {
			t.Errorf("%d goroutines beside the test's while 200 VUs think between 0.1 s pages; want a handful", most)
		}
		if sum.Totals.Pages != 2*200 {
			t.Errorf("%d pages; want 400 (pages at 0 and 10.1 s; the third would start at 20.2 s, after the end)", sum.Totals.Pages)
		}
		if closed.Load() != 200 || time.Since(start) != 20050*time.Millisecond {
			t.Errorf("%d users closed, the run over at %v; want 200 at 20.05 s (thinking VUs leave at once)", closed.Load(), time.Since(start))
		}
	})
}
