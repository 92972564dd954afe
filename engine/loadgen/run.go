package loadgen

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wirelab/wirelab/engine/client"
)

// Sample is what a user measured in one page load. The runner gives each VU one Sample, reset
// before every load.
type Sample struct {
	Failed bool // the page failed: a request failed or answered other than 200, or the page timed out
	// Interrupted: the run was stopped during the load (its context was cancelled): the page is
	// not counted.
	Interrupted bool
	Exchanges   []time.Duration // each response's exchange time (its first byte sent → complete)
	HitsUntimed int64           // responses without an exchange (server push)
	Bytes       int64           // response body bytes
	Errors      [numKinds]int64
	// Limit: a request failed on a limit of the generator's own machine (open files, local ports,
	// socket memory): the run stops at once with it (LimitError).
	Limit *LimitError
}

// Fail counts a failed request's error (status 0 without a response) into the sample, and notes a
// limit of the generator's machine if the error is one.
func (s *Sample) Fail(err error, status int) {
	s.Failed = true
	s.Errors[Classify(err, status)]++
	if s.Limit == nil {
		s.Limit = machineLimit(err)
	}
}

func (s *Sample) reset() {
	ex := s.Exchanges[:0]
	*s = Sample{Exchanges: ex}
}

// A User is one virtual user's page loader: engine/client's Tab (NewTabUsers) or a test double.
type User interface {
	// Load loads the page once and fills s. ctx is cancelled when the run is interrupted.
	Load(ctx context.Context, s *Sample)
	// Close releases the user's connections.
	Close()
}

// Config is one run.
type Config struct {
	Spec *Spec
	// NewUser makes VU i's user (i from 0, in the order VUs are started).
	NewUser func(i int) User
	// Start is the run's t = 0: stages and interval boundaries count from it. If it lies ahead,
	// Run waits for it.
	Start time.Time
	// Interval, if set, receives each interval's record as it ends (from one goroutine).
	Interval func(Interval)
	// Conns, if set, counts the VUs' connections (the gauge TabUsers' tabs share): the interval
	// records' open and closed-by-server counts, the totals' opened and closed-by-server.
	Conns *client.ConnGauge
	// Probe, if set, measures the generator's own cost (NewProbe); nil reports zeros.
	Probe *Probe
	// Part is this generator's share of a run spread over several (zero: the whole run).
	Part Part
	// Histograms adds each interval's HDR histograms, encoded, to its record (page_hist,
	// request_hist), so that the intervals of several generators merge exactly (Merge).
	Histograms bool
}

// ErrInterrupted is returned with the summary when ctx ended the run early.
var ErrInterrupted = errors.New("load test interrupted")

// Run runs the scenario and returns its summary. The run ends when the last stage has ended and
// the pages then in flight have finished (each within client.timeout_s), or when ctx is cancelled
// (ErrInterrupted: pages in flight are abandoned, the last partial interval is still reported), or
// at once when a request fails on a limit of the generator's machine (a *LimitError, with the
// summary of what was measured until then).
func Run(parent context.Context, cfg Config) (*Summary, error) {
	r := &runner{cfg: cfg, spec: cfg.Spec, rec: newRecorder(), interval: cfg.Spec.Interval()}
	if m := cfg.Spec.Limits.MaxRPS; m > 0 {
		if !cfg.Part.Whole() {
			// each generator of several caps its share, so that together they never pass the cap
			m /= float64(cfg.Part.N)
		}
		r.rate = &rateCap{max: m, start: cfg.Start}
	}
	r.firstError.Store(-1)
	if d := time.Until(cfg.Start); d > 0 {
		select {
		case <-time.After(d):
		case <-parent.Done():
			return nil, ErrInterrupted
		}
	}
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	r.stop = cancel
	r.probe0 = cfg.Probe.sample()
	r.last = r.probe0
	done := make(chan struct{})
	go func() {
		defer close(done)
		if cfg.Spec.Scenario.Model == "open" {
			r.runOpen(ctx)
		} else {
			r.runClosed(ctx)
		}
	}()
	r.tick(ctx, done)
	if le := r.limit.Load(); le != nil {
		return r.summary(false), le
	}
	if re := r.capped.Load(); re != nil {
		return r.summary(false), re
	}
	sum := r.summary(parent.Err() != nil)
	if parent.Err() != nil {
		return sum, ErrInterrupted
	}
	return sum, nil
}

type runner struct {
	cfg      Config
	spec     *Spec
	rec      *recorder
	interval time.Duration

	active atomic.Int64 // VUs running a page or thinking (closed) / busy (open)
	peak   atomic.Int64 // most active since the last interval boundary
	nextVU atomic.Int64

	firstError atomic.Int64 // active VUs when the first page failed; -1 none yet
	wg         sync.WaitGroup
	// limit is the first limit of the generator's machine a request met; stop ends the run then.
	limit atomic.Pointer[LimitError]
	stop  context.CancelFunc
	// rate is limits.max_rps's count (nil: no cap); capped the cap's breach, which stops the run.
	rate   *rateCap
	capped atomic.Pointer[RateCapError]

	// the interval loop's state
	intervals []Interval
	total     *window
	probe0    probeSample
	last      probeSample
	// closedByServer is the gauge's ClosedByServer at the last interval's end.
	closedByServer int64
	end            time.Time
}

// now is the run's time.
func (r *runner) now() time.Duration { return time.Since(r.cfg.Start) }

func (r *runner) activate(n int64) {
	a := r.active.Add(n)
	for {
		p := r.peak.Load()
		if a <= p || r.peak.CompareAndSwap(p, a) {
			return
		}
	}
}

// record adds a finished page of VU vu, timed from start (open model: its intended start).
func (r *runner) record(vu int, s *Sample, start time.Time) {
	if s.Limit != nil {
		le := *s.Limit
		le.ActiveVUs, le.OpenConnections = r.active.Load(), -1
		if r.cfg.Conns != nil {
			le.OpenConnections = r.cfg.Conns.Open()
		}
		if r.limit.CompareAndSwap(nil, &le) {
			r.stop()
		}
		return // a page that met the generator's limit says nothing of the server
	}
	if s.Interrupted {
		return
	}
	if s.Failed {
		r.firstError.CompareAndSwap(-1, r.active.Load())
	}
	r.rec.page(s, time.Since(start))
	if got := r.rate.add(time.Now(), int64(len(s.Exchanges))+s.HitsUntimed); got > 0 {
		re := &RateCapError{MaxRPS: r.spec.Limits.MaxRPS, Part: r.cfg.Part, Got: got, AtS: r.now().Seconds(), ActiveVUs: r.active.Load()}
		if r.capped.CompareAndSwap(nil, re) {
			r.stop()
		}
	}
}

// tick cuts the run into intervals until done is closed, then reports the last partial one.
func (r *runner) tick(ctx context.Context, done <-chan struct{}) {
	r.total = newWindow()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for k := 1; ; k++ {
		boundary := r.cfg.Start.Add(time.Duration(k) * r.interval)
		timer.Reset(time.Until(boundary))
		select {
		case <-timer.C:
			r.emit(k-1, boundary, false)
			continue
		case <-done:
		case <-ctx.Done():
			<-done // VUs abandon their pages at once
		}
		r.end = time.Now()
		if r.end.After(r.cfg.Start.Add(time.Duration(k-1) * r.interval)) {
			r.emit(k-1, r.end, true)
		}
		return
	}
}

// emit closes interval k at end; partial: before its boundary (the run ended or was interrupted).
func (r *runner) emit(k int, end time.Time, partial bool) {
	w := r.rec.rotate()
	r.total.merge(w)
	vus := r.active.Load()
	peak := r.peak.Swap(vus)
	start := r.cfg.Start.Add(time.Duration(k) * r.interval)
	secs := end.Sub(start).Seconds()
	iv := Interval{
		Event: "interval", Index: k, TStartS: start.Sub(r.cfg.Start).Seconds(), TEndS: end.Sub(r.cfg.Start).Seconds(),
		VUs: int(vus), VUsMax: int(max(peak, vus)), partial: partial, Part: r.cfg.Part.String(),
	}
	iv.measured(w, secs, r.cfg.Histograms)
	iv.OpenConnections = r.cfg.Conns.Open()
	byServer := r.cfg.Conns.ClosedByServer()
	iv.ConnectionsClosedByServer, r.closedByServer = byServer-r.closedByServer, byServer
	cur := r.cfg.Probe.sample()
	iv.Generator = r.cfg.Probe.generator(r.last, cur, secs)
	r.last = cur
	r.intervals = append(r.intervals, iv)
	if r.cfg.Interval != nil {
		r.cfg.Interval(iv)
	}
}

// measured fills the interval's figures from what was measured in it, over secs seconds; hist
// adds the encoded histograms.
func (iv *Interval) measured(w *window, secs float64, hist bool) {
	iv.Pages, iv.PagesFailed, iv.Hits, iv.Bytes, iv.Dropped = w.pages, w.pagesFailed, w.hits, w.bytes, w.dropped
	iv.PagesPerS, iv.HitsPerS, iv.BytesPerS = rate(w.pages, secs), rate(w.hits, secs), rate(w.bytes, secs)
	iv.PageMs, iv.RequestMs, iv.Errors = latencyOf(w.page), latencyOf(w.request), errorsOf(&w.errors)
	if hist {
		iv.PageHist, iv.RequestHist = encodeHist(w.page), encodeHist(w.request)
	}
}

func rate(n int64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(n) / secs
}

func (r *runner) summary(interrupted bool) *Summary {
	w := r.total
	secs := r.end.Sub(r.cfg.Start).Seconds()
	t := w.totals(secs, r.intervals, r.cfg.Conns.Opened(), r.cfg.Conns.ClosedByServer())
	sum := &Summary{Event: "summary", Contract: Contract, LoadtestID: r.spec.LoadtestID, Spec: r.spec, DurationS: secs, Part: r.cfg.Part.String(),
		Interrupted: interrupted, Intervals: len(r.intervals), Totals: t,
		Outcomes: outcomes(r.spec, r.intervals, int(r.firstError.Load()))}
	sum.Thresholds, sum.ThresholdsPassed = EvaluateAll(r.spec.Thresholds, &Measures{Totals: t, Outcomes: sum.Outcomes})
	g := GeneratorTotals{SaturatedIntervals: []int{}}
	g.CPUMs = r.cfg.Probe.generator(r.probe0, r.last, secs).CPUMs
	if w.hits > 0 {
		g.CPUUsPerRequest = g.CPUMs * 1000 / float64(w.hits)
	}
	for _, iv := range r.intervals {
		g.RSSPeakBytes = max(g.RSSPeakBytes, iv.Generator.RSSBytes)
		if iv.Generator.Saturated {
			g.SaturatedIntervals = append(g.SaturatedIntervals, iv.Index)
		}
	}
	sum.Generator, sum.GeneratorSaturated = g, len(g.SaturatedIntervals) > 0
	return sum
}

// --- closed model ---

// closedVU is one VU of the closed model. It has a goroutine only while it loads a page: its think
// time is a timer whose expiry starts the next page on a goroutine of its own, so a thinking VU
// holds no stack (docs/loadtest.md: memory per VU).
type closedVU struct {
	r     *runner
	ctx   context.Context
	i     int
	user  User
	think *Thinker
	s     Sample
	timer *time.Timer // the think time; fires loop

	mu      sync.Mutex
	stopped bool // halt was called: finish the current page, then leave
	asleep  bool // thinking: the timer is set and loop is not running
}

func (r *runner) runClosed(ctx context.Context) {
	plan := NewClosedPlan(r.spec.Scenario)
	var vus []*closedVU
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		t := r.now()
		if t >= plan.End() || ctx.Err() != nil {
			break
		}
		want := r.cfg.Part.share(plan.VUsAt(t))
		for len(vus) < want {
			vus = append(vus, r.startVU(ctx))
		}
		for len(vus) > want { // the most recently started VU leaves first
			vus[len(vus)-1].halt()
			vus = vus[:len(vus)-1]
		}
		next, ok := plan.NextChange(t)
		if !ok {
			next = plan.End()
		}
		timer.Reset(min(next-r.now(), time.Second)) // at most a second: the plan is followed even if a change was missed
		select {
		case <-timer.C:
		case <-ctx.Done():
		}
	}
	for _, vu := range vus {
		vu.halt()
	}
	r.wg.Wait()
}

func (r *runner) startVU(ctx context.Context) *closedVU {
	i := r.cfg.Part.global(int(r.nextVU.Add(1) - 1))
	vu := &closedVU{r: r, ctx: ctx, i: i}
	r.activate(1)
	r.wg.Add(1)
	go func() {
		vu.user = r.cfg.NewUser(i)
		vu.think = NewThinker(r.spec.Think, r.spec.Seed, i)
		vu.loop()
	}()
	return vu
}

// loop loads pages until the VU is halted, the run's context ends, or a think time comes: then
// it sets the timer, whose expiry runs loop again, and returns.
func (vu *closedVU) loop() {
	for {
		vu.mu.Lock()
		vu.asleep = false
		stop := vu.stopped || vu.ctx.Err() != nil
		vu.mu.Unlock()
		if stop {
			vu.leave()
			return
		}
		vu.s.reset()
		start := time.Now()
		vu.user.Load(vu.ctx, &vu.s)
		vu.r.record(vu.i, &vu.s, start)
		d := vu.think.Next()
		if d <= 0 {
			continue
		}
		vu.mu.Lock()
		if vu.stopped || vu.ctx.Err() != nil {
			vu.mu.Unlock()
			vu.leave()
			return
		}
		vu.asleep = true
		if vu.timer == nil {
			vu.timer = time.AfterFunc(d, vu.loop)
		} else {
			vu.timer.Reset(d)
		}
		vu.mu.Unlock()
		return
	}
}

// halt makes the VU leave: at once while it thinks, else after its current page (a cancelled
// context ends that page at once).
func (vu *closedVU) halt() {
	vu.mu.Lock()
	defer vu.mu.Unlock()
	if vu.stopped {
		return
	}
	vu.stopped = true
	if vu.asleep && vu.timer.Stop() {
		vu.asleep = false
		go vu.leave() // Close waits for the user's connections: not under mu, not on the plan's goroutine
	}
	// Otherwise loop is running, or its timer has fired and loop is about to run: it sees stopped.
}

func (vu *closedVU) leave() {
	vu.user.Close()
	vu.r.activate(-1)
	vu.r.wg.Done()
}

// --- open model ---

// openVU is one VU of the open model's pool: it loads a page for each arrival it is given.
type openVU struct {
	index int
	work  chan time.Time // intended starts
}

func (r *runner) runOpen(ctx context.Context) {
	plan := NewOpenPlan(r.spec.Scenario)
	arrivals := plan.Arrivals()
	maxVUs := r.cfg.Part.share(r.spec.Scenario.MaxVUs)
	idle := make(chan *openVU, max(maxVUs, 1))
	var free []*openVU
	var pool []*openVU
	var queue []time.Time // intended starts waiting for a VU, oldest first
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var k int64 // the arrival's number in the whole run
	nextOwn := func() (time.Duration, bool) {
		for {
			at, ok := arrivals.Next()
			k++
			if !ok || r.cfg.Part.owns(k-1) {
				return at, ok
			}
		}
	}
	next, more := nextOwn()
	dispatch := func() {
		for len(queue) > 0 {
			var vu *openVU
			switch {
			case len(free) > 0:
				vu, free = free[len(free)-1], free[:len(free)-1]
			case len(pool) < maxVUs:
				vu = r.startOpenVU(ctx, r.cfg.Part.global(len(pool)), idle)
				pool = append(pool, vu)
			default:
				// Every VU is busy: the queue waits, bounded by max_vus (an arrival still waiting
				// when the next max_vus arrivals are due is dropped).
				if n := len(queue) - maxVUs; n > 0 {
					r.rec.drop(int64(n))
					queue = queue[n:]
				}
				return
			}
			r.activate(1)
			vu.work <- queue[0]
			queue = queue[1:]
		}
	}
	for ctx.Err() == nil {
		// After the last arrival, what still waits may get a VU until the scenario ends.
		if !more && (len(queue) == 0 || r.now() >= plan.End()) {
			break
		}
		wake := plan.End()
		if more {
			wake = next
		}
		timer.Reset(wake - r.now())
		select {
		case <-timer.C:
			for more && next <= r.now() {
				queue = append(queue, r.cfg.Start.Add(next))
				next, more = nextOwn()
			}
		case vu := <-idle:
			free = append(free, vu)
		case <-ctx.Done():
		}
		dispatch()
	}
	if len(queue) > 0 {
		r.rec.drop(int64(len(queue)))
	}
	for _, vu := range pool {
		close(vu.work)
	}
	r.wg.Wait()
}

func (r *runner) startOpenVU(ctx context.Context, i int, idle chan<- *openVU) *openVU {
	vu := &openVU{index: i, work: make(chan time.Time, 1)}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		user := r.cfg.NewUser(i)
		defer user.Close()
		var s Sample
		for intended := range vu.work {
			if ctx.Err() == nil {
				s.reset()
				user.Load(ctx, &s)
				r.record(i, &s, intended)
			}
			r.activate(-1)
			idle <- vu
		}
	}()
	return vu
}
