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
}

func newPool(s *session, o origin) originPool {
	switch s.cfg.Protocol {
	case H1, H1S:
		return newH1Pool(s, o)
	case H2, H2C:
		return newH2Pool(s, o)
	case SPDY3:
		return newSPDYPool(s, o)
	default:
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

// get returns the connection, opening it with open (on behalf of the caller) if it is the first.
// opened reports whether this call opened it.
func (p *singleConn[C]) get(ctx context.Context, open func() (C, error)) (c C, opened bool, err error) {
	p.mu.Lock()
	switch p.state {
	case 0:
		p.state = 1
		p.ready = make(chan struct{})
		p.mu.Unlock()
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

// current is the connection if one was opened successfully.
func (p *singleConn[C]) current() (C, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conn, p.state == 2 && p.err == nil
}
