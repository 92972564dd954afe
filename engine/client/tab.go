package client

import (
	"context"
	"time"
)

// A Tab loads pages one after another, as one browser tab does: each Load is Loader.Load's load
// (the same planner, pools and connection discipline: HTTP/1.x at most MaxConnectionsPerOrigin
// persistent connections per origin, h2/h2c/spdy3 one connection per origin, h3 one QUIC
// connection per origin), but the tab keeps its connections and its name cache from one load to
// the next unless TabOptions.Fresh asks for new ones every load. A load generator's virtual user
// is a Tab (engine/loadgen).
//
// A kept connection that the server closed while the tab was idle is replaced: HTTP/1.x sends the
// request again on a new connection (as Load does for a stale keep-alive connection); h2, h3 and
// spdy3 open a new connection for the origin, at the next load's start or when a request finds
// the kept one dead before its response began (that request is then sent once more). A load that
// is aborted (its timeout, or ctx) closes every connection: the next load starts fresh.
//
// A Tab is used by one goroutine at a time. Close it to close its connections.
type Tab struct {
	l     *Loader
	opts  TabOptions
	s     *session // nil before the first load and after a reset
	pools map[origin]originPool
}

// TabOptions shape a Tab.
type TabOptions struct {
	// Fresh: every load starts from fresh state (connections, names), as Loader.Load does.
	// Default false: connections and names are kept between loads.
	Fresh bool
	// Lean leaves out what a load generator does not need: Result.Entries, Conns, Phases,
	// TLSHandshakes, TLSResumed and DNSQueries stay empty, and requests are dropped as they
	// complete. Connections is the number of connections the load opened; PLT, Objects,
	// BodyBytes, Retries, Pushes and Err are as in a full Result. Discovery is the same.
	Lean bool
	// OnRequest, if set, sees every request as it completes, before Load returns and one request
	// at a time: on the goroutine that called Load, or — a Lean tab's request whose completion
	// issues nothing (loadRun.quietFlat) — on the goroutine that completed it (an h2 connection's
	// read loop, an h1 connection's worker), under the load's lock. It must therefore be quick:
	// not block, not wait on anything the load does, and not call into the Tab (its Load, its
	// Close) — a slow callee stalls every stream of that connection and every completion of the
	// load.
	OnRequest func(RequestStats)
	// Conns, if set, counts the tab's connections (several tabs may share one gauge).
	Conns *ConnGauge
}

// RequestStats is one completed request of a Tab's load.
type RequestStats struct {
	// Time runs from the instant the request was issued to its completion (HAR time: blocked,
	// connection setup, send, wait and receive).
	Time time.Duration
	// Exchange runs from the request's first byte sent to its completion (send, wait and
	// receive: the server's part); -1 when the request was never sent (it failed before, or the
	// response came by server push).
	Exchange  time.Duration
	Status    int   // 0 without a response
	BodyBytes int64 // response body bytes received
	Pushed    bool  // the response came by server push
	// Err is the request's failure (nil: complete with a status below 400).
	Err error
	// Aborted: the load had been aborted (timeout, cancellation) when the request ended, so Err
	// says so rather than what the request met.
	Aborted bool
}

// NewTab returns a Tab that loads with l's configuration.
func (l *Loader) NewTab(opts TabOptions) *Tab { return &Tab{l: l, opts: opts} }

// Load loads one page as Loader.Load does (same arguments, same errors), over the tab's kept
// connections.
func (t *Tab) Load(ctx context.Context, root string, objects []string) (*Result, error) {
	p, err := t.l.plan(root, objects, t.l.tabDoc)
	if err != nil {
		return nil, err
	}
	if t.s == nil {
		t.s = newSession(t.l.cfg)
		t.s.keep, t.s.gauge = true, t.opts.Conns
		t.pools = map[origin]originPool{}
	} else {
		t.s.nextLoad()
		for o, pool := range t.pools {
			if !pool.usable() {
				pool.close()
				delete(t.pools, o)
			}
		}
	}
	s := t.s
	ctx, cancel := context.WithTimeout(ctx, t.l.cfg.Timeout)
	defer cancel()
	run := &loadRun{l: t.l, s: s, pools: t.pools, res: t.l.newResult(root, p), lean: t.opts.Lean}
	run.res.StartedAt = s.wall0.Add(s.now())
	opened, queries := s.opened(), s.dns.count()
	if t.opts.OnRequest != nil {
		run.completed = func(r *request, aborted bool) { t.opts.OnRequest(r.stats(aborted)) }
	}
	run.run(ctx, p)
	res := run.res
	if !t.opts.Lean {
		used := map[int]bool{}
		for _, r := range run.all {
			used[r.conn] = true
		}
		res.Conns = s.snapshot(used)
	}
	if run.aborted || t.opts.Fresh {
		t.Close()
	}
	res.Pushes = s.pushes.stats()
	if t.opts.Lean {
		res.Connections = s.opened() - opened
		if run.started {
			res.PLT = run.last - run.first
			res.StartedAt = s.wall0.Add(run.first)
		}
		return res, nil
	}
	t.l.summarise(res, s, run.all)
	res.DNSQueries -= queries
	t.l.replayEnd(res, p, run.all)
	return res, nil
}

// Close closes the tab's connections and waits for their goroutines; the next Load starts fresh.
func (t *Tab) Close() {
	if t.s == nil {
		return
	}
	t.s.abort()
	for _, pool := range t.pools {
		pool.close()
	}
	t.s, t.pools = nil, nil
}

// stats describes a completed request for TabOptions.OnRequest.
func (r *request) stats(aborted bool) RequestStats {
	st := RequestStats{Time: r.end - r.issued, Exchange: -1, Status: r.status, BodyBytes: r.bodyBytes, Pushed: r.pushed,
		Err: r.err, Aborted: aborted}
	if r.sendStart != unset && !r.pushed {
		st.Exchange = r.end - r.sendStart
	}
	return st
}
