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
	"syscall"
	"time"
)

// h1Pool is one origin's HTTP/1.1 connections, as a browser keeps them: at most max per origin,
// persistent, one request at a time each (no pipelining). A request takes an idle connection if
// there is one (the most recently used, as Chromium does), else opens a new one while fewer than
// max are open or opening, else waits in FIFO order. A request that opens a connection uses it
// (no late binding to a connection that happens to free up first). A connection the server closes
// (Connection: close, or a broken keep-alive connection) frees its place for the next waiter.
//
// Each connection (or place of one being opened) has a worker goroutine while it has work: it
// carries the request that took the connection, then the origin's queued requests one after
// another in FIFO order, and ends when the queue is empty, leaving its connection idle. A request
// thus costs no goroutine and no hand-off of its own when it waits in the queue (a page's images
// on six connections), and an idle connection has no goroutine (memory per VU).
type h1Pool struct {
	s    *session
	o    origin
	alpn string // "" for cleartext h1
	max  int
	ua   string // Config.UserAgent, line breaks replaced (appendH1Request)
	host string // the Host header: o.authority()

	mu    sync.Mutex
	open  int // connections open or being opened: places held by workers or idle connections
	idle  []*h1Conn
	all   []*h1Conn // open connections
	queue []h1Job   // requests waiting for a connection, FIFO from qhead
	qhead int
}

// h1Job is a request submitted to the pool: done is called once it has completed.
type h1Job struct {
	ctx  context.Context
	r    *request
	done func(*request)
}

type h1Conn struct {
	rec  *connRecord
	conn net.Conn
	// raw is the TCP socket under conn (nil if there is none): send waits on it for the response,
	// with writeFn (made once: a closure per request would cost allocations) writing the request
	// of sending under it.
	raw     syscall.RawConn
	writeFn func(uintptr) bool
	sending struct {
		s    *session
		r    *request
		sent bool
		err  error
	}
	// bufs are the connection's read buffers while a worker carries requests on it; an idle
	// connection gives them back to the pool (memory per VU: a load generator's VUs keep their
	// connections through the think time).
	bufs   *h1Bufs
	pool   *sync.Pool // where bufs come from and go back to (h1BufPool of the session's size)
	served int
	load   int // the session load it last carried a request of (guarded by the pool's mu)
	// doneAt is when c's last response ended (its dial, before the first): send waits first only
	// on a connection that has not idled since (h1WaitFirstIdle).
	doneAt time.Duration
}

// h1WaitFirstIdle is how long a connection may have idled since its last response for send to
// still wait for the next response before it reads (a load generator's VU that asks again at
// once, a queued request). Waiting first resets the poller's readiness, and with it a FIN (or TLS
// close_notify, or a 408) that came while the connection idled: if the server only half-closed
// and goes on reading (Apache's lingering close), nothing would wake the wait and the request
// would hang until the load's timeout instead of meeting the closed connection and being sent
// again on a new one. Servers close idle connections after seconds, not within this.
const h1WaitFirstIdle = 2 * time.Millisecond

// h1Bufs are an HTTP/1.1 connection's buffers: the response reader, the body buffer and the
// request head.
type h1Bufs struct {
	br   *bufio.Reader
	buf  []byte
	wbuf []byte
}

// h1BufPools hold h1Bufs by size (Loader.Load's and a Tab's: session.bufSize).
var h1BufPools sync.Map // int → *sync.Pool

func h1BufPool(size int) *sync.Pool {
	if p, ok := h1BufPools.Load(size); ok {
		return p.(*sync.Pool)
	}
	p, _ := h1BufPools.LoadOrStore(size, &sync.Pool{New: func() any {
		return &h1Bufs{br: bufio.NewReaderSize(nil, size), buf: make([]byte, size)}
	}})
	return p.(*sync.Pool)
}

// attach gives c its buffers for the requests a worker carries on it.
func (c *h1Conn) attach() {
	if c.bufs == nil {
		c.bufs = c.pool.Get().(*h1Bufs)
		c.bufs.br.Reset(c.conn)
	}
}

// release gives c's buffers back to the pool — unless the server sent bytes beyond the last
// response, which stay with the connection (the next request finds them, as before).
func (c *h1Conn) release() {
	if b := c.bufs; b != nil && b.br.Buffered() == 0 {
		b.br.Reset(nil)
		c.bufs = nil
		c.pool.Put(b)
	}
}

var (
	_ originPool = (*h1Pool)(nil)
	_ submitter  = (*h1Pool)(nil)
)

func newH1Pool(s *session, o origin) *h1Pool {
	p := &h1Pool{s: s, o: o, max: s.cfg.MaxConnectionsPerOrigin, ua: strings.ReplaceAll(s.cfg.UserAgent, "\r\n", " "), host: o.authority()}
	if s.cfg.Protocol == H1S {
		p.alpn = "http/1.1"
	}
	return p
}

// do performs r and returns when it has completed.
func (p *h1Pool) do(ctx context.Context, r *request) {
	ch := make(chan struct{})
	p.submit(ctx, r, func(*request) { close(ch) })
	<-ch
}

// submit hands r to the pool without blocking: an idle connection's new worker carries it, or a
// new connection's (opened on r's behalf, r then carries dns, connect and ssl), or it waits in the
// queue for the first worker to finish. done(r) is called once r has completed, after its
// connection was handed on.
func (p *h1Pool) submit(ctx context.Context, r *request, done func(*request)) {
	j := h1Job{ctx: ctx, r: r, done: done}
	p.mu.Lock()
	for n := len(p.idle); n > 0; n = len(p.idle) {
		c := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		if p.ended(c) {
			p.open--
			p.mu.Unlock()
			p.drop(c)
			p.mu.Lock()
			continue
		}
		c.load = p.s.load
		p.mu.Unlock()
		go p.work(c, j)
		return
	}
	if p.open < p.max {
		p.open++
		p.mu.Unlock()
		go p.work(nil, j)
		return
	}
	p.queue = append(p.queue, j)
	p.mu.Unlock()
}

// work is the worker of one place in the pool: c its connection, nil to open one for the next
// request. It carries j, then the queued requests in FIFO order, and returns when the queue is
// empty, leaving c idle (or, without a connection, freeing the place).
func (p *h1Pool) work(c *h1Conn, j h1Job) {
	for {
		var retry bool
		c, retry = p.carry(c, j)
		p.mu.Lock()
		if retry {
			// j's kept connection died under it: the place goes to the longest waiter, as a new
			// request would. With nobody waiting j opens a new connection in it; else j waits at the
			// back of the queue (and is sent on a new connection: carry).
			if p.qhead == len(p.queue) {
				p.mu.Unlock()
				continue
			}
			p.queue = append(p.queue, j)
		}
		next, more := h1Job{}, p.qhead < len(p.queue)
		switch {
		case more:
			next = p.queue[p.qhead]
			p.queue[p.qhead] = h1Job{}
			if p.qhead++; p.qhead == len(p.queue) {
				p.queue, p.qhead = p.queue[:0], 0
			}
		case c != nil:
			c.release()
			p.idle = append(p.idle, c)
		default:
			p.open--
		}
		p.mu.Unlock()
		if !retry {
			j.done(j.r)
		}
		if !more {
			return
		}
		j = next
	}
}

// carry performs j's request on c (nil: on a connection it opens for it) and returns the
// connection if it may carry another request (nil: closed, the place still held). retry: the
// request met a kept connection the server had closed before answering and must be sent again on
// a new one (once, as browsers do for idempotent requests); it is reset and not finished.
func (p *h1Pool) carry(c *h1Conn, j h1Job) (_ *h1Conn, retry bool) {
	r := j.r
	if err := j.ctx.Err(); err != nil { // the load ended while r waited
		r.finish(p.s.now(), err)
		return c, false
	}
	if c != nil && r.retries > 0 {
		p.drop(c) // a request sent again uses a new connection: its place is r's
		c = nil
	}
	if c == nil {
		var err error
		if c, err = p.dial(j.ctx, r); err != nil {
			r.finish(p.s.now(), err)
			return nil, false
		}
	}
	r.conn = c.rec.info.ID
	r.sendStart = p.s.now()
	reused := c.served > 0
	keep, err := c.roundTrip(p.s, r, p.host, p.ua)
	now := p.s.now()
	c.doneAt = now
	if err == nil {
		r.finish(now, nil)
		if !keep {
			p.drop(c)
			return nil, false
		}
		return c, false
	}
	p.drop(c)
	if reused && r.firstByte == unset && r.retries == 0 && j.ctx.Err() == nil {
		r.retries++
		r.reset()
		return nil, true
	}
	r.finish(now, err)
	return nil, false
}

// dial opens a connection on behalf of r; the caller holds its place.
func (p *h1Pool) dial(ctx context.Context, r *request) (*h1Conn, error) {
	conn, rec, err := p.s.dialTCP(ctx, p.o, r, p.alpn)
	if err != nil {
		return nil, err
	}
	c := &h1Conn{rec: rec, conn: conn, pool: h1BufPool(p.s.bufSize(32 << 10)), load: p.s.load}
	if t := trackedOf(conn); t != nil {
		if sc, ok := t.Conn.(syscall.Conn); ok {
			c.raw, _ = sc.SyscallConn()
		}
	}
	c.writeFn = c.writeThenWait
	c.doneAt = p.s.now()
	p.mu.Lock()
	p.all = append(p.all, c)
	p.mu.Unlock()
	return c, nil
}

// ended reports whether c, idle, is a Tab's connection kept from an earlier load that the server
// has closed meanwhile (its FIN or RST has come: serverEnded). Chromium looks at an idle socket the
// same way before it reuses it (IsConnectedAndIdle); a request is not sent on it, so no
// request meets the dead connection and has to be sent again. It looks once per load (one system
// call at the connection's first use in the load, not one per request): within a load, and for a
// connection that dies while a request is on its way, the request finds it (carry's retry).
func (p *h1Pool) ended(c *h1Conn) bool {
	return c.load < p.s.load && serverEnded(c.conn)
}

// drop closes a connection and removes it from the pool's list (its place is not freed).
func (p *h1Pool) drop(c *h1Conn) {
	c.conn.Close()
	if c.bufs != nil { // nothing more is read from it
		c.bufs.br.Reset(nil)
		c.pool.Put(c.bufs)
		c.bufs = nil
	}
	p.mu.Lock()
	if i := slices.Index(p.all, c); i >= 0 {
		p.all = slices.Delete(p.all, i, i+1)
	}
	p.mu.Unlock()
}

// usable: an HTTP/1.1 pool always is; a kept connection the server has closed meanwhile is
// replaced when a request finds it broken (carry).
func (p *h1Pool) usable() bool { return true }

// close closes the connections. It is called with no request in flight: no worker is left but
// one returning after its last done.
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
func (c *h1Conn) roundTrip(s *session, r *request, host, userAgent string) (keep bool, err error) {
	c.served++
	c.rec.update(func(ci *Conn) { ci.Requests++ })
	c.attach()
	b := c.bufs
	b.wbuf = appendH1Request(b.wbuf[:0], r, host, userAgent)
	if err := c.send(s, r); err != nil {
		return false, err
	}
	if _, err := b.br.Peek(1); err != nil {
		return false, err
	}
	r.firstByte = s.now()
	// The lean path reads no cache fields: a load with an HTTP cache reads its heads with net/http.
	if buffered, _ := b.br.Peek(b.br.Buffered()); len(buffered) > 0 && s.profile.http == nil {
		if h, n, ok := parseH1Head(buffered); ok {
			b.br.Discard(n)
			return c.readBody(r, h)
		}
	}
	var resp *http.Response
	for {
		resp, err = http.ReadResponse(b.br, nil)
		if err != nil {
			return false, err
		}
		// Informational responses (103 Early Hints …) precede the final one on the same exchange.
		if resp.StatusCode < 100 || resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
	}
	r.gotHeaders(resp.StatusCode, resp.Header.Get("Content-Type"), resp.ContentLength)
	if s.profile.http != nil {
		r.cacheResp.fromHeader(resp.Header)
	}
	for {
		n, err := resp.Body.Read(b.buf)
		if n > 0 {
			r.gotBody(b.buf[:n])
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

// send writes r's request head (c.bufs.wbuf) and, where it can, returns only once the socket is
// readable — the response has begun to arrive, or the server closed. A read right after the write
// would find nothing (Go's poller reads first and parks on EAGAIN): that is a system call per
// request for nothing. Waiting first is safe only if the poller's readiness was reset before the
// write (with edge-triggered epoll a readiness reset after it could swallow the response's
// event), so the write happens inside the socket's RawConn.Read: its readiness is reset, the
// callback writes and asks to wait, and the next call returns at once. Not used when bytes the
// server sent earlier are buffered (a read finds them), nor on a connection that idled longer than
// h1WaitFirstIdle since its last response (the reset would lose a close that came meanwhile).
// r.sendStart is now.
func (c *h1Conn) send(s *session, r *request) error {
	b := c.bufs
	if c.raw == nil || b.br.Buffered() > 0 || r.sendStart-c.doneAt > h1WaitFirstIdle {
		_, err := c.conn.Write(b.wbuf)
		r.sendEnd = s.now()
		return err
	}
	c.sending.s, c.sending.r, c.sending.sent, c.sending.err = s, r, false, nil
	rerr := c.raw.Read(c.writeFn)
	werr := c.sending.err
	c.sending.s, c.sending.r, c.sending.err = nil, nil, nil
	if werr != nil {
		return werr
	}
	return rerr
}

// writeThenWait is send's RawConn.Read callback: the first call writes and asks to wait until
// the socket is readable, the second returns.
func (c *h1Conn) writeThenWait(uintptr) bool {
	st := &c.sending
	if st.sent {
		return true
	}
	st.sent = true
	_, st.err = c.conn.Write(c.bufs.wbuf)
	st.r.sendEnd = st.s.now()
	return st.err != nil
}

// readBody reads the body of a response whose head the lean path parsed: Content-Length bytes.
// It fails as net/http's body reader does when the connection ends first.
func (c *h1Conn) readBody(r *request, h h1Head) (keep bool, err error) {
	r.gotHeaders(h.status, h.contentType, h.contentLength)
	b := c.bufs
	for left := h.contentLength; left > 0; {
		n, err := b.br.Read(b.buf[:min(int64(len(b.buf)), left)])
		if n > 0 {
			r.gotBody(b.buf[:n])
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
// body bytes are the object's size. host is r's origin's authority, userAgent has its line breaks
// replaced (h1Pool.host, h1Pool.ua).
func appendH1Request(b []byte, r *request, host, userAgent string) []byte {
	b = append(b, "GET "...)
	b = append(b, requestPath(r.url)...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\nUser-Agent: "...)
	b = append(b, userAgent...)
	b = append(b, "\r\nAccept: */*\r\nAccept-Encoding: identity\r\n"...)
	if inm, ims := r.conditional(); inm != "" || ims != "" {
		b = appendField(b, "If-None-Match", inm)
		b = appendField(b, "If-Modified-Since", ims)
	}
	return append(b, "\r\n"...)
}

// appendField appends "name: value\r\n" when value is not empty (a value as the server sent it).
func appendField(b []byte, name, value string) []byte {
	if value == "" || strings.ContainsAny(value, "\r\n") {
		return b
	}
	b = append(b, name...)
	b = append(b, ": "...)
	b = append(b, value...)
	return append(b, "\r\n"...)
}
