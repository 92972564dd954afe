package client

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Loader loads pages. It holds only configuration: every Load starts from fresh state (new
// connections, no TLS session cache, an empty name cache), so loads are independent. A Loader may
// be used by several goroutines.
type Loader struct {
	cfg    Config
	tabDoc *discoveryCache // the Tabs' documents already parsed
}

// New validates cfg and fills in its defaults.
func New(cfg Config) (*Loader, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Loader{cfg: cfg, tabDoc: newDiscoveryCache()}, nil
}

// Config returns the resolved configuration.
func (l *Loader) Config() Config { return l.cfg }

// Load loads one page and returns its measurements. In flat and replay mode root is the page's
// document and objects must be empty (replay requests Config.Page's objects below root's token); in objects mode objects lists the URLs to fetch (relative ones resolved
// against root) and root itself is fetched only if listed. The error is for input that prevents
// the load from starting (a bad URL, a refused target); failures during the load are in
// Result.Err, with the partial measurements.
func (l *Loader) Load(ctx context.Context, root string, objects []string) (*Result, error) {
	p, err := l.plan(root, objects, nil)
	if err != nil {
		return nil, err
	}
	s := newSession(l.cfg)
	ctx, cancel := context.WithDeadline(ctx, s.t0.Add(l.cfg.Timeout))
	defer cancel()
	run := &loadRun{l: l, s: s, pools: map[origin]originPool{}, res: l.newResult(root, p)}
	run.res.StartedAt = s.wall0
	run.run(ctx, p)
	res := run.res
	res.Conns = s.snapshot(nil)
	s.abort()
	for _, pool := range run.pools {
		pool.close() // connections closed, their goroutines (pushes included) stopped
	}
	s.recordedArrivals(res.Conns)
	res.Pushes = s.pushes.stats()
	l.summarise(res, s, run.all)
	l.replayEnd(res, p, run.all)
	return res, nil
}

// newResult is a load's Result before it starts.
func (l *Loader) newResult(root string, p planner) *Result {
	res := &Result{URL: root, Protocol: l.cfg.Protocol, Mode: l.cfg.Mode, userAgent: l.cfg.UserAgent, priority: l.cfg.Priority}
	if _, ok := p.(*replayPlanner); ok {
		res.ComputeScale = &l.cfg.ComputeScale
	}
	return res
}

// replayEnd: a replay ends when the last activity has finished, a trailing computation included
// (with compute_scale 0 that is the last response's end).
func (l *Loader) replayEnd(res *Result, p planner, all []*request) {
	if rp, ok := p.(*replayPlanner); ok && len(all) > 0 {
		if end, complete := rp.end(); complete {
			res.PLT = max(res.PLT, end-all[0].issued)
		}
	}
}

// loadRun is one load's loop: it issues the planner's requests through the pools and hands each
// completed request back to the planner until nothing is in flight and the planner has no
// deadline. Every request is kept in all for the summary, or with lean only counted into res as
// it completes (and then dropped).
type loadRun struct {
	l     *Loader
	s     *session
	pools map[origin]originPool
	res   *Result
	lean  bool
	// completed, if set, sees every request as it completes, one at a time, always under mu: on
	// the loop's goroutine, or — a quiet flat load's completions (quietFlat) — on the goroutine
	// that completed it (an h2 read loop, an h1 worker); it must be quick and must not block or
	// call into the Tab. aborted says the load had been aborted (timeout, cancellation) when it
	// did.
	completed func(r *request, aborted bool)

	all     []*request // issue order (not with lean)
	first   time.Duration
	last    time.Duration
	started bool

	// mu guards what a request's completion touches — inflight, aborted, res's totals, last and
	// completed's callee — when requests are completed off the loop (quiet, below); the loop's
	// own reads and writes of them take it too.
	mu       sync.Mutex
	inflight int  // requests issued and not yet completed
	aborted  bool // the load was aborted: timeout or ctx cancelled
}

// quietFlat reports whether the load's completions may be counted where they happen (a pool's
// worker, an h2 read loop) instead of on the loop's goroutine: a lean load in flat mode without an
// HTTP cache or first-chunk events, whose requests that keep no body (images, failures) make the
// planner issue nothing (flatPlanner.completed). Each such completion then costs no hand-off to the
// loop and no wake-up of it — a load generator's VU spends its CPU on the page's images, one
// wake-up each before. The loop is woken only when nothing is left in flight.
func (run *loadRun) quietFlat(p planner) bool {
	_, flat := p.(flatPlanner)
	return flat && run.lean && run.s.profile.http == nil && !p.wantsChunks()
}

// finishLocked counts a completed request into the load (the caller holds mu): what the loop did
// with every request before quiet completions.
func (run *loadRun) finishLocked(r *request) {
	run.inflight--
	if r.err != nil && run.res.Err == nil && !run.aborted {
		run.res.Err = r.err
	}
	if run.lean {
		run.count(r)
	}
	if run.completed != nil {
		run.completed(r, run.aborted)
	}
}

func (run *loadRun) run(ctx context.Context, p planner) {
	s, res := run.s, run.res
	if rp, ok := p.(*replayPlanner); ok {
		rp.now = s.now
	}
	seen := map[string]bool{}
	admitted := map[origin]bool{}
	// done is buffered so that a pool's worker hands a completed request over and goes on to its
	// next one without waiting for the loop; when the loop is that far behind, the hand-over waits
	// on a goroutine of its own, never in the caller — an h2 read loop completes a Tab's requests
	// itself (h2Pool.submit) and must not stop reading while the loop parses a page.
	done := make(chan *request, 64)
	quiet, wake := run.quietFlat(p), make(chan struct{}, 1)
	deliver := func(r *request) {
		if quiet && (r.err != nil || !r.keep) { // nothing to discover (flatPlanner.completed)
			run.mu.Lock()
			run.finishLocked(r)
			last := run.inflight == 0
			run.mu.Unlock()
			if last {
				select {
				case wake <- struct{}{}:
				default:
				}
			}
			return
		}
		select {
		case done <- r:
		default:
			go func() { done <- r }()
		}
	}
	chunks := make(chan *request)
	wantChunks := p.wantsChunks()
	var batch []batcher // the pools that may hold requests' first bytes until issue ends
	issue := func(planned []plannedRequest) {
		defer func() {
			for i, b := range batch {
				b.flushBatch()
				batch[i] = nil
			}
			batch = batch[:0]
		}()
		for _, pr := range planned {
			key := pr.key
			if key == "" {
				key = pr.url.String()
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			r, err := newRequest(pr)
			r.issued = s.now()
			if wantChunks {
				r.onFirstChunk = func(r *request) { chunks <- r }
			}
			if !run.started {
				run.started, run.first, run.last = true, r.issued, r.issued
			}
			if !run.lean {
				run.all = append(run.all, r)
			}
			run.mu.Lock()
			run.inflight++
			run.mu.Unlock()
			if err == nil && !admitted[r.origin] { // the check depends on the origin alone
				if err = run.l.admit(r); err == nil {
					admitted[r.origin] = true
				}
			}
			if err != nil {
				go func() { r.finish(s.now(), err); done <- r }()
				continue
			}
			if cache := s.profile.http; cache != nil {
				if e, fresh, before := cache.lookup(key, time.Now()); fresh {
					r.fromCache(e, before, s.now())
					go func() { done <- r }()
					continue
				} else if e != nil {
					r.validate = e
				}
			}
			r.prio, r.signal = s.pri.of(r.url, r.kind)
			pool := run.pools[r.origin]
			if pool == nil {
				pool = newPool(s, r.origin)
				run.pools[r.origin] = pool
			}
			push := s.pushes.claim(key)
			if sub, ok := pool.(submitter); ok && push == nil {
				sub.submit(ctx, r, deliver)
				if b, ok := pool.(batcher); ok && !slices.Contains(batch, b) {
					batch = append(batch, b)
				}
				continue
			}
			go func() {
				if push == nil || !push.adopt(ctx, r, s) { // not pushed, or the push failed
					pool.do(ctx, r)
				}
				done <- r
			}()
		}
	}

	issue(p.start())
	expired := ctx.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		var timerC <-chan time.Time
		run.mu.Lock()
		aborted, inflight := run.aborted, run.inflight
		run.mu.Unlock()
		if !aborted {
			if at, ok := p.nextDeadline(); ok {
				timer.Reset(max(at-s.now(), 0))
				timerC = timer.C
			}
		}
		if inflight == 0 && timerC == nil {
			break
		}
		select {
		case r := <-done:
			if cache := s.profile.http; cache != nil {
				cache.completed(r, r.protocol(s), time.Now())
			}
			run.mu.Lock()
			run.finishLocked(r)
			aborted = run.aborted
			run.mu.Unlock()
			if !aborted {
				issue(p.completed(r))
			}
		case <-wake: // a quiet completion left nothing in flight
		case r := <-chunks:
			if !aborted {
				issue(p.firstChunk(r))
			}
		case <-timerC:
			issue(p.timer(s.now()))
		case <-expired:
			expired = nil
			run.mu.Lock()
			run.aborted = true
			res.Err = loadAbortError(ctx, run.l.cfg)
			run.mu.Unlock()
			s.abort() // in-flight requests now fail fast; drain them
		}
	}
}

// count adds a completed request to the lean totals (what summarise computes from all).
func (run *loadRun) count(r *request) {
	res := run.res
	run.last = max(run.last, r.end)
	if r.err == nil {
		res.Objects++
	}
	res.BodyBytes += r.bodyBytes
	res.Retries += r.retries
}

func loadAbortError(ctx context.Context, cfg Config) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return timeoutError{cfg.Timeout}
	}
	return fmt.Errorf("load cancelled: %w", context.Cause(ctx))
}

// ErrTimeout is what a load that did not complete within Config.Timeout fails with (errors.Is).
var ErrTimeout = errors.New("load timeout")

type timeoutError struct{ limit time.Duration }

func (e timeoutError) Error() string {
	return fmt.Sprintf("timeout: the load did not complete within %v (client.timeout_s)", e.limit)
}

func (e timeoutError) Is(target error) bool { return target == ErrTimeout }

// plan validates the URLs and builds the mode's planner; a Tab's flat planner uses cache.
func (l *Loader) plan(root string, objects []string, cache *discoveryCache) (planner, error) {
	base, err := url.Parse(root)
	if err != nil {
		return nil, fmt.Errorf("url %q: %w", root, err)
	}
	if err := l.checkURL(base); err != nil {
		return nil, fmt.Errorf("url %q: %w", root, err)
	}
	switch l.cfg.Mode {
	case ModeFlat:
		if len(objects) > 0 {
			return nil, errors.New("objects: a list of objects is for mode objects; flat mode discovers them")
		}
		base.Fragment, base.RawFragment = "", ""
		return flatPlanner{root: base, cache: cache}, nil
	case ModeReplay:
		if len(objects) > 0 {
			return nil, errors.New("objects: a list of objects is for mode objects; replay follows the page's dependency graph")
		}
		base.Fragment, base.RawFragment = "", ""
		return newReplayPlanner(l.cfg.Page, base, l.cfg.ComputeScale, nil)
	case ModeObjects:
		if len(objects) == 0 {
			return nil, errors.New("objects: mode objects needs a list of object URLs")
		}
		p := objectsPlanner{}
		for _, raw := range objects {
			u, err := base.Parse(strings.TrimSpace(raw))
			if err != nil {
				return nil, fmt.Errorf("object %q: %w", raw, err)
			}
			if err := l.checkURL(u); err != nil {
				return nil, fmt.Errorf("object %q: %w", raw, err)
			}
			u.Fragment, u.RawFragment = "", ""
			p.objects = append(p.objects, u)
		}
		return p, nil
	}
	return nil, fmt.Errorf("mode %q: not implemented", l.cfg.Mode)
}

// checkURL accepts a URL the load may request: an origin, the protocol's scheme, a lab host.
func (l *Loader) checkURL(u *url.URL) error {
	o, err := originOf(u)
	if err != nil {
		return err
	}
	if want := l.cfg.Protocol.Scheme(); o.scheme != want {
		return fmt.Errorf("scheme %s does not match protocol %s (which needs %s URLs)", o.scheme, l.cfg.Protocol, want)
	}
	if l.cfg.Target != nil {
		return checkTargetHost(*l.cfg.Target, o.host)
	}
	if l.cfg.LoopbackOnly && !l.cfg.AllowAnyTarget {
		return checkLoopbackHost(o.host)
	}
	return TargetCheck(l.cfg.AllowAnyTarget, l.cfg.Internet)(o.host)
}

// admit checks a discovered request before it is sent: its origin (checkURL reads nothing else).
func (l *Loader) admit(r *request) error { return l.checkURL(r.url) }

func (l *Loader) summarise(res *Result, s *session, all []*request) {
	res.Entries = make([]Entry, len(all)) // all is in issue order
	res.Protocols = map[string]int{}
	first, last := unset, unset
	if len(all) > 0 {
		first = all[0].issued
	}
	for i, r := range all {
		e := r.entry(s, first)
		res.Entries[i] = e
		switch r.cache {
		case cacheHit:
			res.CacheHits++ // not carried by any protocol
		case cacheRevalidated:
			res.CacheRevalidated++
		}
		if r.cache != cacheHit {
			res.Protocols[e.Protocol]++
		}
		last = max(last, r.end)
		if r.err == nil {
			res.Objects++
		}
		res.BodyBytes += r.bodyBytes
		res.Retries += r.retries
		res.Phases.Add(e.Timings)
	}
	if first != unset {
		res.PLT = last - first
		res.StartedAt = s.wall0.Add(first)
	}
	res.Connections = 0
	for _, c := range res.Conns {
		res.QUICPacketsLost += int64(c.PacketsLost)
	}
	for i := range res.Conns {
		res.Conns[i].OpenedMS -= ms(first)
	}
	for _, c := range res.Conns {
		if c.Kept {
			continue // a Tab's connection from an earlier load: not opened by this one
		}
		res.Connections++
		if c.TLSVersion == "" {
			continue
		}
		if c.TLSResumed {
			res.TLSResumed++
		} else {
			res.TLSHandshakes++
		}
		if c.ZeroRTT {
			res.ZeroRTT++
		}
	}
	if l.cfg.Protocol == H3 {
		res.H3Discovery = "none"
		if res.Protocols[H3.wireName()] > 0 {
			res.H3Discovery = string(l.cfg.H3)
		}
	}
	res.DNSQueries = s.dns.count()
	if !s.keep && len(all) > 0 { // a single load (fetch): its timeline for the trial's decomposition
		res.tl = res.timeline(all, first)
	}
}
