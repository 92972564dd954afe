package client

import (
	"context"
	"sync"
)

// originPool carries one origin's requests over the load's protocol.
type originPool interface {
	// do performs r to completion: it fills r's phase boundaries and response, and calls
	// r.finish exactly once. It returns when r has completed or failed.
	do(ctx context.Context, r *request)
	// close closes the pool's connections and waits for their goroutines.
	close()
	// usable reports whether the pool can carry a Tab's next load: false once its connection
	// failed to open, failed, or was ended by the server (the Tab then closes it and starts a new
	// pool for the origin).
	usable() bool
}

// submitter is a pool that carries requests on goroutines of its own (HTTP/1.x: a worker per
// connection): submit hands r over without blocking, and the pool calls done(r) once r has
// completed (r.finish called). The load loop then starts no goroutine for r.
type submitter interface {
	submit(ctx context.Context, r *request, done func(*request))
}

// batcher is a submitter that may leave what submit wrote in a buffer (h2: a page's HEADERS, to
// leave in one write as a browser's do): the load loop calls flushBatch once it has submitted the
// requests that became due together.
type batcher interface{ flushBatch() }

func newPool(s *session, o origin) originPool {
	switch s.cfg.Protocol {
	case H1, H1S:
		return newH1Pool(s, o)
	case H2, H2C:
		return newH2Pool(s, o)
	case SPDY3:
		return newSPDYPool(s, o)
	default:
		if s.cfg.H3 != H3Forced {
			return newDiscoverPool(s, o)
		}
		return newH3Pool(s, o)
	}
}

// singleConn holds an origin's one multiplexed connection (h2, h2c, h3). The first request opens
// it and carries dns, connect and ssl; requests arriving meanwhile wait (blocked) until it is
// ready. A connection that failed to open fails every request of the origin: the loader never
// opens a second one within a load.
type singleConn[C any] struct {
	mu    sync.Mutex
	state int // 0 none, 1 opening, 2 done (conn or err set)
	ready chan struct{}
	conn  C
	err   error
}

// renewal lets a pool replace its connection: an HTTP/2 connection the server sent GOAWAY on, or
// (a Tab's pools) one kept from an earlier load that has died since (the server closed it while
// the tab was idle): stale reports that, retire closes it.
type renewal[C any] struct {
	stale  func(C) bool
	retire func(C)
}

// get returns the connection, opening it with open (on behalf of the caller) if it is the first.
// opened reports whether this call opened it. With rn (nil: never renewed) a stale
// connection is retired and a new one opened in its place.
func (p *singleConn[C]) get(ctx context.Context, open func() (C, error), rn *renewal[C]) (c C, opened bool, err error) {
	p.mu.Lock()
	var retired C
	renewed := false
	if p.state == 2 && p.err == nil && rn != nil && rn.stale(p.conn) {
		retired, renewed, p.state = p.conn, true, 0
	}
	switch p.state {
	case 0:
		p.state = 1
		p.ready = make(chan struct{})
		p.mu.Unlock()
		if renewed {
			rn.retire(retired)
		}
		c, err := open()
		p.mu.Lock()
		p.conn, p.err, p.state = c, err, 2
		close(p.ready)
		p.mu.Unlock()
		return c, true, err
	case 1:
		ready := p.ready
		p.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return c, false, ctx.Err()
		}
		p.mu.Lock()
	}
	defer p.mu.Unlock()
	return p.conn, false, p.err
}

// usable reports whether the connection (if any) may carry another load: none was opened yet, or
// it is open and not broken.
func (p *singleConn[C]) usable(broken func(C) bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.state {
	case 0:
		return true
	case 2:
		return p.err == nil && !broken(p.conn)
	}
	return false
}

// resend decides whether a request that failed on a connection opened by an earlier load of a
// Tab is sent again on a new connection: once, when no response had begun and the connection has
// died meanwhile (the server closed it while the tab was idle), as browsers do for idempotent
// requests.
func (s *session) resend(ctx context.Context, rec *connRecord, r *request, broken bool) bool {
	return s.keep && broken && rec.load < s.load && r.firstByte == unset && r.retries == 0 && ctx.Err() == nil
}

// current is the connection if one was opened successfully.
func (p *singleConn[C]) current() (C, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conn, p.state == 2 && p.err == nil
}
