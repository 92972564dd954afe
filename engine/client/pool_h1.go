package client

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// h1Pool is one origin's HTTP/1.1 connections, as a browser keeps them: at most max per origin,
// persistent, one request at a time each (no pipelining). A request takes an idle connection if
// there is one (the most recently used, as Chromium does), else opens a new one while fewer than
// max are open or opening, else waits in FIFO order. A request that opens a connection uses it
// (no late binding to a connection that happens to free up first). A connection the server closes
// (Connection: close, or a broken keep-alive connection) frees its place for the next waiter.
type h1Pool struct {
	s    *session
	o    origin
	alpn string // "" for cleartext h1
	max  int
	ua   string // Config.UserAgent, line breaks replaced (appendH1Request)

	mu      sync.Mutex
	open    int // connections open or being opened
	idle    []*h1Conn
	all     []*h1Conn // open connections
	waiters []chan h1Grant
}

// h1Grant hands a waiter a connection, or (conn nil) the right to open one.
type h1Grant struct{ conn *h1Conn }

type h1Conn struct {
	rec    *connRecord
	conn   net.Conn
	br     *bufio.Reader
	buf    []byte
	wbuf   []byte
	served int
}

var _ originPool = (*h1Pool)(nil)

func newH1Pool(s *session, o origin) *h1Pool {
	p := &h1Pool{s: s, o: o, max: s.cfg.MaxConnectionsPerOrigin, ua: strings.ReplaceAll(s.cfg.UserAgent, "\r\n", " ")}
	if s.cfg.Protocol == H1S {
		p.alpn = "http/1.1"
	}
	return p
}

func (p *h1Pool) do(ctx context.Context, r *request) {
	for {
		c, err := p.acquire(ctx, r, r.retries > 0)
		if err != nil {
			r.finish(p.s.now(), err)
			return
		}
		r.conn = c.rec.info.ID
		r.sendStart = p.s.now()
		reused := c.served > 0
		keep, err := c.roundTrip(p.s, r, p.ua)
		now := p.s.now()
		if err == nil {
			r.finish(now, nil)
			if keep {
				p.release(c)
			} else {
				p.discard(c)
			}
			return
		}
		p.discard(c)
		// A keep-alive connection the server closed before answering: send again on a new one,
		// once, as browsers do for idempotent requests.
		if reused && r.firstByte == unset && r.retries == 0 && ctx.Err() == nil {
			r.retries++
			r.reset()
			continue
		}
		r.finish(now, err)
		return
	}
}

// acquire returns a connection for r, opening it (r then carries dns, connect and ssl) if the
// pool has room. With fresh (a retry after a broken keep-alive connection) it opens a new one,
// closing an idle or granted connection to make room if need be.
func (p *h1Pool) acquire(ctx context.Context, r *request, fresh bool) (*h1Conn, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		if fresh {
			p.drop(c) // its place is ours
			return p.dial(ctx, r)
		}
		return c, nil
	}
	if p.open < p.max {
		p.open++
		p.mu.Unlock()
		return p.dial(ctx, r)
	}
	ch := make(chan h1Grant, 1)
	p.waiters = append(p.waiters, ch)
	p.mu.Unlock()
	select {
	case g := <-ch:
		if g.conn != nil && !fresh {
			return g.conn, nil
		}
		if g.conn != nil {
			p.drop(g.conn) // its place is ours
		}
		return p.dial(ctx, r)
	case <-ctx.Done():
		p.mu.Lock()
		if i := slices.Index(p.waiters, ch); i >= 0 {
			p.waiters = slices.Delete(p.waiters, i, i+1)
			p.mu.Unlock()
			return nil, ctx.Err()
		}
		p.mu.Unlock()
		if g := <-ch; g.conn != nil { // granted while giving up: hand it on
			p.release(g.conn)
		} else {
			p.forget()
		}
		return nil, ctx.Err()
	}
}

func (p *h1Pool) dial(ctx context.Context, r *request) (*h1Conn, error) {
	conn, rec, err := p.s.dialTCP(ctx, p.o, r, p.alpn)
	if err != nil {
		p.forget()
		return nil, err
	}
	c := &h1Conn{rec: rec, conn: conn, br: bufio.NewReaderSize(conn, p.s.bufSize(32<<10)), buf: make([]byte, p.s.bufSize(32<<10))}
	p.mu.Lock()
	p.all = append(p.all, c)
	p.mu.Unlock()
	return c, nil
}

// release returns a reusable connection: to the longest waiter, else to the idle stack.
func (p *h1Pool) release(c *h1Conn) {
	p.mu.Lock()
	if len(p.waiters) > 0 {
		ch := p.waiters[0]
		p.waiters = p.waiters[1:]
		p.mu.Unlock()
		ch <- h1Grant{conn: c}
		return
	}
	p.idle = append(p.idle, c)
	p.mu.Unlock()
}

// discard closes a connection that cannot be reused and frees its place.
func (p *h1Pool) discard(c *h1Conn) {
	p.drop(c)
	p.forget()
}

// drop closes a connection and removes it from the pool's list (its place is not freed).
func (p *h1Pool) drop(c *h1Conn) {
	c.conn.Close()
	p.mu.Lock()
	if i := slices.Index(p.all, c); i >= 0 {
		p.all = slices.Delete(p.all, i, i+1)
	}
	p.mu.Unlock()
}

// usable: an HTTP/1.1 pool always is; a kept connection the server has closed meanwhile is
// replaced when a request finds it broken (do).
func (p *h1Pool) usable() bool { return true }

// forget frees the place of a closed or never-opened connection: the longest waiter may open one.
func (p *h1Pool) forget() {
	p.mu.Lock()
	if len(p.waiters) > 0 {
		ch := p.waiters[0]
		p.waiters = p.waiters[1:]
		p.mu.Unlock()
		ch <- h1Grant{}
		return
	}
	p.open--
	p.mu.Unlock()
}

func (p *h1Pool) close() {
	p.mu.Lock()
	all := p.all
	p.mu.Unlock()
	for _, c := range all {
		c.conn.Close()
	}
}

// roundTrip sends r on c and reads the whole response. keep reports whether c may carry another
// request.
func (c *h1Conn) roundTrip(s *session, r *request, userAgent string) (keep bool, err error) {
	c.served++
	c.rec.update(func(ci *Conn) { ci.Requests++ })
	c.wbuf = appendH1Request(c.wbuf[:0], r, userAgent)
	if _, err := c.conn.Write(c.wbuf); err != nil {
		return false, err
	}
	r.sendEnd = s.now()
	if _, err := c.br.Peek(1); err != nil {
		return false, err
	}
	r.firstByte = s.now()
	if buffered, _ := c.br.Peek(c.br.Buffered()); len(buffered) > 0 {
		if h, n, ok := parseH1Head(buffered); ok {
			c.br.Discard(n)
			return c.readBody(r, h)
		}
	}
	var resp *http.Response
	for {
		resp, err = http.ReadResponse(c.br, nil)
		if err != nil {
			return false, err
		}
		// Informational responses (103 Early Hints …) precede the final one on the same exchange.
		if resp.StatusCode < 100 || resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
	}
	r.gotHeaders(resp.StatusCode, resp.Header.Get("Content-Type"), resp.ContentLength)
	for {
		n, err := resp.Body.Read(c.buf)
		if n > 0 {
			r.gotBody(c.buf[:n])
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return false, err
		}
	}
	return !resp.Close, nil
}

// readBody reads the body of a response whose head the lean path parsed: Content-Length bytes.
// It fails as net/http's body reader does when the connection ends first.
func (c *h1Conn) readBody(r *request, h h1Head) (keep bool, err error) {
	r.gotHeaders(h.status, h.contentType, h.contentLength)
	for left := h.contentLength; left > 0; {
		n, err := c.br.Read(c.buf[:min(int64(len(c.buf)), left)])
		if n > 0 {
			r.gotBody(c.buf[:n])
			left -= int64(n)
		}
		if errors.Is(err, io.EOF) && left > 0 {
			return false, io.ErrUnexpectedEOF
		}
		if err != nil && left > 0 {
			return false, err
		}
	}
	return !h.close, nil
}

// appendH1Request appends r's HTTP/1.1 request head: a GET without body, identity encoding so that
// body bytes are the object's size. userAgent has its line breaks replaced (h1Pool.ua).
func appendH1Request(b []byte, r *request, userAgent string) []byte {
	b = append(b, "GET "...)
	b = append(b, requestPath(r.url)...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, r.origin.authority()...)
	b = append(b, "\r\nUser-Agent: "...)
	b = append(b, userAgent...)
	b = append(b, "\r\nAccept: */*\r\nAccept-Encoding: identity\r\n\r\n"...)
	return b
}
