package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"

	"github.com/wirelab/wirelab/engine/spdy"
)

// spdyPool is one origin's SPDY/3.1 connection (engine/spdy's ClientConn over TLS with ALPN
// spdy/3.1): one per origin, as Chromium did. Requests beyond the server's MAX_CONCURRENT_STREAMS
// wait in the ClientConn (blocked); the StreamTrace hooks give send (SYN_STREAM handed to the
// session → its last byte written), wait (→ SYN_REPLY) and receive (→ the body's end).
type spdyPool struct {
	s      *session
	o      origin
	single singleConn[*spdyConn]
}

var _ originPool = (*spdyPool)(nil)

type spdyConn struct {
	rec     *connRecord
	conn    net.Conn // beneath the session: goodbye before its GOAWAY
	cc      *spdy.ClientConn
	ctx     context.Context // bounds the readers of pushed streams
	cancel  context.CancelFunc
	pushers sync.WaitGroup // readers of pushed streams
}

// Session settings the loader announces: room for every push of a page, and the loader's windows.
const spdyMaxConcurrentStreams = 1000

func newSPDYPool(s *session, o origin) *spdyPool { return &spdyPool{s: s, o: o} }

func (p *spdyPool) do(ctx context.Context, r *request) {
	for {
		c, _, err := p.single.get(ctx, func() (*spdyConn, error) { return p.dial(ctx, r) }, p.renewal())
		if err != nil {
			r.finish(p.s.now(), err)
			return
		}
		r.conn = c.rec.info.ID
		err = c.roundTrip(ctx, p.s, r)
		if err != nil && p.s.resend(ctx, c.rec, r, c.broken()) {
			r.retries++
			r.reset()
			continue
		}
		r.finish(p.s.now(), err)
		return
	}
}

// renewal is how a Tab's pool replaces a dead connection kept from an earlier load.
func (p *spdyPool) renewal() *renewal[*spdyConn] {
	if !p.s.keep {
		return nil
	}
	return &renewal[*spdyConn]{
		stale:  func(c *spdyConn) bool { return c.rec.load < p.s.load && c.broken() },
		retire: func(c *spdyConn) { goodbye(c.conn); c.cc.Close(); c.cancel(); c.pushers.Wait() },
	}
}

func (p *spdyPool) usable() bool { return p.single.usable((*spdyConn).broken) }

// broken reports whether the session has ended or is ending.
func (c *spdyConn) broken() bool { return c.cc.Closed() }

// dial opens the TLS connection (dns, connect and ssl are the opening request's) and starts the
// SPDY session on it.
func (p *spdyPool) dial(ctx context.Context, r *request) (*spdyConn, error) {
	conn, rec, err := p.s.dialTCP(ctx, p.o, r, spdy.NextProtoTLS)
	if err != nil {
		return nil, err
	}
	c := &spdyConn{rec: rec, conn: conn}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	cfg := spdy.ClientConfig{Config: spdy.Config{
		MaxConcurrentStreams: spdyMaxConcurrentStreams,
		InitialWindowSize:    uint32(p.s.cfg.StreamReceiveWindow),
		SessionWindowSize:    uint32(p.s.cfg.ConnReceiveWindow),
	}}
	if p.s.cfg.AcceptPush {
		cfg.AcceptPush = c.acceptPush(p)
	}
	cfg.OnGoAway = func() { serverSaidGoodbye(conn) }
	cc, err := spdy.NewClientConn(conn, cfg)
	if err != nil {
		c.cancel()
		conn.Close()
		rec.update(func(ci *Conn) { ci.Error = err.Error() })
		return nil, err
	}
	c.cc = cc
	return c, nil
}

func (p *spdyPool) close() {
	if c, ok := p.single.current(); ok {
		goodbye(c.conn)
		c.cc.Close()
		c.cancel()
		c.pushers.Wait()
	}
}

// roundTrip sends r with its SPDY priority and reads the whole response.
func (c *spdyConn) roundTrip(ctx context.Context, s *session, r *request) error {
	c.rec.update(func(ci *Conn) { ci.Requests++ })
	req := (&http.Request{
		Method: http.MethodGet,
		URL:    &url.URL{Scheme: r.origin.scheme, Host: r.origin.authority(), Path: r.url.Path, RawPath: r.url.RawPath, RawQuery: r.url.RawQuery},
		Host:   r.origin.authority(),
		Header: http.Header{
			"User-Agent":      {s.cfg.UserAgent},
			"Accept":          {"*/*"},
			"Accept-Encoding": {"identity"},
		},
	}).WithContext(ctx)
	setConditional(req.Header, r)
	// The hooks run on the session's goroutines with the session locked; the ones used here all
	// fire before Do returns (Do waits for the SYN_REPLY under the same lock).
	trace := &spdy.StreamTrace{
		StreamOpened:    func(id uint32) { r.streamID, r.sendStart = int64(id), s.now() },
		RequestWritten:  func() { r.sendEnd = s.now() },
		ResponseHeaders: func() { r.firstByte = s.now() },
	}
	resp, err := c.cc.Do(req, spdy.RequestOptions{Priority: spdyPriority(r.prio, r.signal), Trace: trace})
	if err != nil {
		return fmt.Errorf("spdy: %w", err)
	}
	defer resp.Body.Close()
	r.gotHeaders(resp.StatusCode, resp.Header.Get("Content-Type"), resp.ContentLength)
	if s.profile.http != nil {
		r.cacheResp.fromHeader(resp.Header)
	}
	return readBody(r, resp.Body)
}

// readBody reads a response body whole into r.
func readBody(r *request, body io.Reader) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			r.gotBody(buf[:n])
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("spdy body: %w", err)
		}
	}
}

// acceptPush is the ClientConn's AcceptPush: a push of this origin that the loader has not
// requested yet is registered in the load's push cache and read by a goroutine of its own; others
// are refused.
func (c *spdyConn) acceptPush(p *spdyPool) func(spdy.PushPromise) (*spdy.StreamTrace, bool) {
	return func(pp spdy.PushPromise) (*spdy.StreamTrace, bool) {
		s := p.s
		u := *pp.URL
		u.Fragment, u.RawFragment = "", ""
		if o, err := originOf(&u); err != nil || o != p.o {
			return nil, false
		}
		push := s.pushes.promise(&u, p.o, c.rec.info.ID, int64(pp.StreamID), s.now())
		if push == nil {
			return nil, false
		}
		c.rec.update(func(ci *Conn) { ci.Pushes++ })
		c.pushers.Go(func() { c.readPush(s, push, pp.StreamID) })
		return &spdy.StreamTrace{ResponseHeaders: func() { push.r.firstByte = s.now() }}, true
	}
}

// readPush reads a pushed response into its push-cache entry.
func (c *spdyConn) readPush(s *session, push *pushed, id uint32) {
	resp, err := c.cc.Pushed(c.ctx, id)
	if err != nil {
		push.finish(s.now(), fmt.Errorf("spdy push: %w", err))
		return
	}
	defer resp.Body.Close()
	push.r.gotHeaders(resp.StatusCode, resp.Header.Get("Content-Type"), resp.ContentLength)
	err = readBody(push.r, resp.Body)
	push.finish(s.now(), err)
}
