package client

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/wirelab/wirelab/engine/spdy"
)

// The HTTP/2 client is written on x/net/http2's Framer rather than its Transport so that the
// loader controls the stream level: exactly one connection per origin, stream ids, the instant
// each frame arrives, flow-control windows, priorities (RFC 9218) and server push. One goroutine reads
// frames and completes streams; requests write their HEADERS under a write lock that also assigns
// stream ids, so ids increase in write order as RFC 9113 requires.

// h2Pool is one origin's HTTP/2 connection.
type h2Pool struct {
	s      *session
	o      origin
	single singleConn[*h2Conn]
	// pending (a Tab's pool): requests handed to the pool (expect) that have neither written
	// their HEADERS nor given up. A HEADERS frame written while others are pending is left in
	// the connection's buffer for the last of them to flush, so the requests a load issues
	// together (a page's 50 images) leave in one write, as a browser's do, instead of one write —
	// one TLS record, one system call, one wake-up of the server — each.
	pending atomic.Int32
	// unflushed (a Tab's pool; the load loop's alone, set by submit, read by flushBatch): the
	// connection submit last left HEADERS on, unflushed — flushBatch flushes that one, not
	// whichever connection is current by then (a GOAWAY naming a high last stream id lets the
	// next request of the batch start the connection's replacement).
	unflushed *h2Conn
}

var (
	_ originPool = (*h2Pool)(nil)
	_ submitter  = (*h2Pool)(nil)
	_ batcher    = (*h2Pool)(nil)
)

// expect counts r as on its way to the pool (a Tab's: see pending).
func (p *h2Pool) expect(r *request) {
	if p.s.keep {
		r.expected = true
		p.pending.Add(1)
	}
}

// arrive marks r as no longer on its way (it writes its HEADERS now, or gives up) and reports
// whether no other request is.
func (p *h2Pool) arrive(r *request) bool {
	if r.expected {
		r.expected = false
		return p.pending.Add(-1) == 0
	}
	return p.pending.Load() == 0
}

// leave: r ends without having written (it failed before, or waits for a stream); if it was the
// last request on its way, it flushes what the others left in the buffer.
func (p *h2Pool) leave(r *request) {
	if r.expected && p.arrive(r) {
		if c, ok := p.single.current(); ok {
			c.flushLeft()
		}
	}
}

func newH2Pool(s *session, o origin) *h2Pool { return &h2Pool{s: s, o: o} }

// errRefusedStream: the server refused a stream before processing it; it is safe to send again.
var errRefusedStream = errors.New("stream refused by the server (REFUSED_STREAM)")

// errGoAway: the server sent GOAWAY before it processed the request (the request was not sent, or
// its stream id is above the GOAWAY's last stream id: RFC 9113 §6.8) — it is safe to send again,
// on a new connection, as browsers do (a server closing connections after N requests, like nginx's
// keepalive_requests, does this mid-page).
var errGoAway = errors.New("h2: server sent GOAWAY before processing the request")

// maxGoAwayRetries bounds how often one request follows a GOAWAY that ended a connection on
// which the server processed no stream at all (its last stream id 0): a server making no progress.
// A GOAWAY after the server processed streams (nginx's keepalive_requests: N requests, then GOAWAY)
// is followed without a bound — each such connection completes at least one request, so a page's
// requests run out — and the page's timeout bounds the whole.
const maxGoAwayRetries = 3

func (p *h2Pool) do(ctx context.Context, r *request) {
	defer p.leave(r)
	for {
		var first *h2Stream // the opener's stream, sent before the connection is shared
		var firstErr error
		c, _, err := p.single.get(ctx, func() (*h2Conn, error) {
			c, err := p.dial(ctx, r)
			if err == nil {
				// The opener's request goes first, whatever the stream limit, and its HEADERS
				// are written before any other request can use the connection (a Tab's submit
				// would as soon as it is shared): stream 1, which a server that sends GOAWAY after
				// N requests has processed — so the connection's setup stays with the request
				// that carries its phases.
				c.reserve()
				first, firstErr = c.send(ctx, r, true)
			}
			return c, err
		}, p.renewal())
		if err != nil {
			r.finish(p.s.now(), err)
			return
		}
		if !p.carry(ctx, c, r, first, firstErr) {
			return
		}
		r.retries++
		r.reset()
	}
}

// carry sends r on c until it finishes there — true: it is to be sent again on a new connection
// (r not finished). st/sendErr: the first attempt's stream, already sent by the connection's
// opener (nil, nil: send it now).
func (p *h2Pool) carry(ctx context.Context, c *h2Conn, r *request, st *h2Stream, sendErr error) bool {
	for {
		end, err := c.roundTrip(ctx, r, st, sendErr)
		st, sendErr = nil, nil
		switch p.next(ctx, c, r, err) {
		case againHere:
			continue
		case againElsewhere:
			return true
		}
		r.finish(end, err)
		return false
	}
}

// What becomes of a request after an attempt on a connection (h2Pool.next).
const (
	attemptFinal   = iota // it finishes with the attempt's outcome
	againHere             // sent again on the same connection (REFUSED_STREAM)
	againElsewhere        // sent again on a new connection (GOAWAY, a kept connection that died)
)

// next decides what becomes of r after an attempt on c that ended with err, counting the retry.
func (p *h2Pool) next(ctx context.Context, c *h2Conn, r *request, err error) int {
	if errors.Is(err, errRefusedStream) && r.retries < spdy.MaxRefusedRetries && ctx.Err() == nil {
		r.retries++
		r.resetExchange()
		return againHere
	}
	if errors.Is(err, errGoAway) && ctx.Err() == nil {
		if c.processedAny() {
			return againElsewhere // on the connection that replaces this one
		}
		if r.idleGoAways < maxGoAwayRetries {
			r.idleGoAways++
			return againElsewhere
		}
	}
	if err != nil && p.s.resend(ctx, c.rec, r, c.broken()) {
		return againElsewhere // once more, on a new connection
	}
	return attemptFinal
}

// submit (a Tab's pool) writes r's HEADERS at once, on the caller's goroutine, when the pool's
// connection is open and has a stream free with nobody queued for one: the HEADERS stay in the
// connection's buffer until flushBatch (the load loop calls it once it has issued the requests
// that became due together), and the read loop completes r and calls done — no goroutine, no
// channel, no hand-off per request (a load generator's hot path: docs/loadtest.md). Every other
// request (the connection's opener, one waiting for a stream, a pool outside a Tab) is carried
// by do on a goroutine of its own, as before; so is a request whose attempt failed (next).
func (p *h2Pool) submit(ctx context.Context, r *request, done func(*request)) {
	if c, ok := p.single.current(); ok && c.coalesce && c.sendNow(ctx, r, done) {
		if p.unflushed != nil && p.unflushed != c {
			p.unflushed.flushLeft() // an earlier connection of the same batch: its HEADERS go now
		}
		p.unflushed = c
		return
	}
	p.expect(r)
	go func() {
		p.do(ctx, r)
		done(r)
	}()
}

// flushBatch writes out the HEADERS submit left in the connection's buffer (unless a request
// queued for the write lock will: flushLeft).
func (p *h2Pool) flushBatch() {
	if c := p.unflushed; c != nil {
		p.unflushed = nil
		c.flushLeft()
	}
}

// again carries on a request submitted to c (sendNow) whose attempt ended with err at end: as do
// would after roundTrip. It runs on a goroutine of its own.
func (p *h2Pool) again(ctx context.Context, c *h2Conn, r *request, end time.Duration, err error) {
	switch p.next(ctx, c, r, err) {
	case attemptFinal:
		r.finish(end, err)
		return
	case againHere:
		if !p.carry(ctx, c, r, nil, nil) {
			return
		}
	}
	r.retries++
	r.reset()
	p.do(ctx, r)
}

// renewal is how the pool replaces its connection: after the server's GOAWAY (the streams it
// still processes finish on the old connection, which the server closes), and in a Tab, a dead
// connection kept from an earlier load.
func (p *h2Pool) renewal() *renewal[*h2Conn] {
	return &renewal[*h2Conn]{
		stale: func(c *h2Conn) bool {
			return c.goneAway() || (p.s.keep && c.rec.load < p.s.load && c.broken())
		},
		retire: func(c *h2Conn) {
			if !c.goneAway() {
				c.conn.Close()
			}
		},
	}
}

func (p *h2Pool) usable() bool { return p.single.usable((*h2Conn).broken) }

func (p *h2Pool) dial(ctx context.Context, r *request) (*h2Conn, error) {
	alpn := ""
	if p.s.tcpProtocol() == H2 { // h3: before HTTP/3 is discovered
		alpn = "h2"
	}
	conn, rec, err := p.s.dialTCP(ctx, p.o, r, alpn)
	if err != nil {
		return nil, err
	}
	c := newH2Conn(p.s, rec, conn, p.o)
	c.pool = p
	if err := c.start(); err != nil {
		conn.Close()
		rec.update(func(ci *Conn) { ci.Error = err.Error() })
		return nil, err
	}
	return c, nil
}

func (p *h2Pool) close() {
	if c, ok := p.single.current(); ok {
		c.conn.Close()
		<-c.readDone
	}
}

// h2Conn is one HTTP/2 client connection.
type h2Conn struct {
	s            *session
	o            origin
	authority    string // o.authority(), every request's :authority
	pool         *h2Pool
	rec          *connRecord
	conn         net.Conn
	bw           *pooledWriter // its buffer is held only until the flush (memory per VU)
	fr           *http2.Framer
	streamWindow uint32
	connWindow   uint32
	readDone     chan struct{}

	wmu    sync.Mutex // the write side: frames, the HPACK encoder, stream id assignment
	henc   *hpack.Encoder
	hbuf   bytes.Buffer
	nextID uint32
	// coalesce (a Tab's connections): a request's HEADERS are flushed only by the last of the
	// requests on their way to the pool (h2Pool.pending) and queued for wmu (waiting counts
	// them), so a page's requests issued together leave in one write, as a browser's do.
	// Loader.Load flushes every HEADERS frame at once.
	coalesce bool
	waiting  atomic.Int32

	mu           sync.Mutex // after wmu when both are held
	streams      map[uint32]*h2Stream
	limit        int             // streams the server allows at once (assumed until its SETTINGS)
	open         int             // streams opened (or reserved) and not yet closed
	waiters      []chan struct{} // requests waiting for a stream, FIFO
	peerMaxFrame uint32
	seenSettings bool
	goAway       bool
	goAwayLastID uint32
	dead         error

	connUnacked uint32         // read loop only
	hb          *h2HeaderBlock // read loop only: the response header block being decoded
}

// h2Stream is a request in flight. The read loop writes the response fields of r (status, body,
// firstByte) and end/err, then closes done; the requester reads them after done.
type h2Stream struct {
	id   uint32
	r    *request
	push *pushed // a pushed stream: its end finishes the push (done is nil)
	done chan struct{}
	// deliver (a request sent by h2Pool.submit; done is nil): its end finishes r and hands it
	// over, or, failed, passes it to h2Pool.again; ctx is its load's.
	deliver func(*request)
	ctx     context.Context
	headers bool // final response headers seen
	info    int  // informational (1xx) header blocks seen
	unacked uint32
	end     time.Duration
	err     error
}

func newH2Conn(s *session, rec *connRecord, conn net.Conn, o origin) *h2Conn {
	c := &h2Conn{
		s: s, o: o, authority: o.authority(), rec: rec, conn: conn,
		bw:           &pooledWriter{w: conn},
		limit:        s.cfg.H2AssumedMaxStreams,
		streamWindow: uint32(s.cfg.StreamReceiveWindow),
		connWindow:   uint32(s.cfg.ConnReceiveWindow),
		readDone:     make(chan struct{}),
		nextID:       1,
		coalesce:     s.keep,
		streams:      map[uint32]*h2Stream{},
		peerMaxFrame: 16384,
	}
	c.fr = http2.NewFramer(c.bw, frameReader(conn, s.bufSize(64<<10)))
	c.fr.SetReuseFrames() // a DATA frame is done with once handle returns (gotBody counts or copies)
	c.fr.MaxHeaderListSize = 256 << 10
	c.hb = newH2HeaderBlock(c.fr.MaxHeaderListSize, s.profile.http != nil)
	c.henc = hpack.NewEncoder(&c.hbuf)
	return c
}

// frameReader is what the framer reads conn through: a TLS connection itself — it holds a whole
// decrypted record, and the framer's reads of a frame's header and payload take from it without a
// system call, so a buffer over it only copies again (and costs a load generator size bytes per
// connection) — and a cleartext one through a buffer of size bytes.
func frameReader(conn net.Conn, size int) io.Reader {
	switch conn.(type) {
	case *tlsTracked, *tls.Conn:
		return conn
	}
	return bufio.NewReaderSize(conn, size)
}

// start writes the connection preface (magic, SETTINGS, connection WINDOW_UPDATE) and starts the
// read loop.
func (c *h2Conn) start() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.bw.WriteString(http2.ClientPreface); err != nil {
		return err
	}
	push := uint32(0)
	if c.s.cfg.AcceptPush {
		push = 1
	}
	settings := []http2.Setting{
		{ID: http2.SettingEnablePush, Val: push},
		{ID: http2.SettingInitialWindowSize, Val: c.streamWindow},
		{ID: http2.SettingMaxHeaderListSize, Val: c.fr.MaxHeaderListSize},
	}
	if c.s.cfg.Priority != PriorityNone {
		// RFC 9218 §2.1: this client signals priorities with the priority header and
		// PRIORITY_UPDATE only, never with RFC 7540's.
		settings = append(settings, http2.Setting{ID: http2.SettingNoRFC7540Priorities, Val: 1})
	}
	err := c.fr.WriteSettings(settings...)
	if err == nil && c.connWindow > 65535 {
		err = c.fr.WriteWindowUpdate(0, c.connWindow-65535)
	}
	if err == nil {
		err = c.bw.Flush()
	}
	if err != nil {
		return fmt.Errorf("h2 preface: %w", err)
	}
	go c.readLoop()
	return nil
}

// reserve takes a stream slot for the opening request before the connection is shared.
func (c *h2Conn) reserve() {
	c.mu.Lock()
	c.open++
	c.mu.Unlock()
}

// roundTrip sends r once a stream may be opened — unless st or sendErr is the outcome of sending
// it already (the opener's, see do) — and waits for the response. It returns the instant the
// stream ended or failed.
func (c *h2Conn) roundTrip(ctx context.Context, r *request, st *h2Stream, sendErr error) (time.Duration, error) {
	if st == nil && sendErr == nil {
		st, sendErr = c.send(ctx, r, false)
	}
	if sendErr != nil {
		return c.s.now(), sendErr
	}
	<-st.done // a failed write fails the connection, which ends the stream
	if r.firstByte != unset && r.sendEnd > r.firstByte {
		r.sendEnd = r.firstByte // the read loop saw the response before the writer took its timestamp
	}
	return st.end, st.err
}

// send waits until a stream may be opened (fewer open streams than the server's limit, FIFO
// among waiters), then assigns the next stream id and writes r's HEADERS (with CONTINUATION if
// needed). The limit is checked under the write lock, the lock under which applySettings
// changes it and acknowledges the SETTINGS frame: every HEADERS written after the ACK honours
// the server's limit. The time spent waiting here is the request's blocked phase.
func (c *h2Conn) send(ctx context.Context, r *request, reserved bool) (*h2Stream, error) {
	var turn chan struct{} // our place in the queue, once we had to wait
	for {
		if c.coalesce {
			c.waiting.Add(1)
		}
		c.wmu.Lock()
		if c.coalesce {
			c.waiting.Add(-1)
		}
		c.mu.Lock()
		if c.dead != nil || c.goAway {
			err, alive := c.dead, c.dead == nil
			if alive {
				err = errGoAway // not sent: no new streams on this connection
			}
			c.dropWaiterLocked(turn)
			c.mu.Unlock()
			// HEADERS others left for the last writer to flush (flushLeft) still go out when the
			// connection lives: a GOAWAY whose last stream id covers them lets the server answer.
			var flushErr error
			if alive && c.coalesce && c.waiting.Load() == 0 && c.bw.Buffered() > 0 {
				flushErr = c.bw.Flush()
			}
			c.wmu.Unlock()
			if flushErr != nil {
				c.fail(fmt.Errorf("h2 write: %w", flushErr))
			}
			return nil, err
		}
		first := len(c.waiters) == 0 || c.waiters[0] == turn
		if reserved || (c.open < c.limit && first) {
			if turn != nil {
				c.waiters = c.waiters[1:]
			}
			if !reserved {
				c.open++
			}
			c.wakeLocked()
			st := &h2Stream{id: c.nextID, r: r, done: make(chan struct{})}
			c.nextID += 2
			c.streams[st.id] = st
			maxFrame := c.peerMaxFrame
			c.mu.Unlock()
			flush := !c.coalesce
			if c.coalesce {
				last := c.pool.arrive(r)
				flush = last && c.waiting.Load() == 0
			}
			err := c.writeHeaders(st, r, maxFrame, flush)
			c.wmu.Unlock()
			if err != nil {
				c.fail(fmt.Errorf("h2 write: %w", err))
			}
			return st, nil
		}
		if turn == nil {
			turn = make(chan struct{}, 1)
			c.waiters = append(c.waiters, turn)
		}
		c.mu.Unlock()
		var flushErr error
		if c.coalesce && c.pool.arrive(r) && c.waiting.Load() == 0 && c.bw.Buffered() > 0 { // what others left for us to flush
			flushErr = c.bw.Flush()
		}
		c.wmu.Unlock()
		if flushErr != nil {
			c.fail(fmt.Errorf("h2 write: %w", flushErr))
		}
		select {
		case <-turn:
		case <-ctx.Done():
			c.mu.Lock()
			c.dropWaiterLocked(turn)
			c.mu.Unlock()
			return nil, ctx.Err()
		}
	}
}

// sendNow (h2Pool.submit) writes r's HEADERS into the connection's buffer, unflushed, if a
// stream may be opened at once and no request waits for one; false: nothing done. mu is held
// only to take the stream and, once the header block is encoded and r stamped, to publish the
// stream (the read loop finds it under mu, so it sees every field set before); the frames are
// written after that, under wmu alone — a write that fills the buffer flushes it (a system call)
// without holding up the read loop's stream lookups.
func (c *h2Conn) sendNow(ctx context.Context, r *request, deliver func(*request)) bool {
	c.wmu.Lock()
	c.mu.Lock()
	if c.dead != nil || c.goAway || len(c.waiters) > 0 || c.open >= c.limit {
		c.mu.Unlock()
		c.wmu.Unlock()
		return false
	}
	c.open++
	st := &h2Stream{id: c.nextID, r: r, deliver: deliver, ctx: ctx}
	c.nextID += 2
	maxFrame := c.peerMaxFrame
	c.mu.Unlock()
	start := c.s.now()
	block := c.encodeHeaders(r)
	c.mu.Lock()
	if c.dead != nil || c.goAway {
		// It failed or went away meanwhile: the read loop has ended (or is ending) the streams it
		// had, and no header block follows on this connection (so the encoder's state is moot).
		c.open--
		c.wakeLocked()
		c.mu.Unlock()
		c.wmu.Unlock()
		return false
	}
	c.stamp(st, r, start)
	r.sendEnd = c.s.now() // handed to the connection's buffer: the flush comes with the batch's
	c.streams[st.id] = st
	c.mu.Unlock()
	err := c.writeBlock(st.id, block, maxFrame)
	// wmu released before fail, as every other writer does: fail closes the connection, and a TLS
	// close sends close_notify (up to seconds), which must not hold up the read loop's own writes
	c.wmu.Unlock()
	if err != nil {
		c.fail(fmt.Errorf("h2 write: %w", err)) // the read loop ends the stream: delivered through h2Pool.again
	}
	return true
}

// complete ends a request sent by sendNow: finished and handed over, or, failed, passed to
// h2Pool.again on a goroutine of its own (a retry may wait for a new connection).
func (c *h2Conn) complete(st *h2Stream) {
	r := st.r
	if r.firstByte != unset && r.sendEnd > r.firstByte {
		r.sendEnd = r.firstByte
	}
	if st.err == nil {
		r.finish(st.end, nil)
		st.deliver(r)
		return
	}
	go func() {
		c.pool.again(st.ctx, c, r, st.end, st.err)
		st.deliver(r)
	}()
}

// wakeLocked lets the first waiter try again if a stream may be opened.
func (c *h2Conn) wakeLocked() {
	if len(c.waiters) > 0 && (c.open < c.limit || c.dead != nil || c.goAway) {
		select {
		case c.waiters[0] <- struct{}{}:
		default:
		}
	}
}

// dropWaiterLocked removes a waiter that gives up, passing on a wake-up it may have consumed.
func (c *h2Conn) dropWaiterLocked(turn chan struct{}) {
	if i := slices.Index(c.waiters, turn); turn != nil && i >= 0 {
		c.waiters = slices.Delete(c.waiters, i, i+1)
	}
	c.wakeLocked()
}

// writeHeaders writes the request's header block, and flushes it if flush; the caller holds wmu.
// Unflushed (coalesce), the block leaves with the flush of a request queued behind it: sendEnd is
// then when it was handed to the connection's buffer.
func (c *h2Conn) writeHeaders(st *h2Stream, r *request, maxFrame uint32, flush bool) error {
	c.stamp(st, r, c.s.now())
	err := c.writeBlock(st.id, c.encodeHeaders(r), maxFrame)
	if err == nil && flush {
		err = c.bw.Flush()
	}
	r.sendEnd = c.s.now()
	return err
}

// stamp records that r is sent on st at start (its send phase begins).
func (c *h2Conn) stamp(st *h2Stream, r *request, start time.Duration) {
	r.sendStart = start
	r.conn = c.rec.info.ID
	r.streamID = int64(st.id)
	c.rec.update(func(ci *Conn) { ci.Requests++ })
}

// encodeHeaders HPACK-encodes r's header block into hbuf and returns it (valid until the next
// call); the caller holds wmu, and the block must be written next (the encoder's state counts it
// as sent).
func (c *h2Conn) encodeHeaders(r *request) []byte {
	c.hbuf.Reset()
	for _, f := range [...]hpack.HeaderField{
		{Name: ":method", Value: "GET"},
		{Name: ":scheme", Value: r.origin.scheme},
		{Name: ":authority", Value: c.authority},
		{Name: ":path", Value: requestPath(r.url)},
		{Name: "user-agent", Value: c.s.cfg.UserAgent},
		{Name: "accept", Value: "*/*"},
		{Name: "accept-encoding", Value: "identity"},
	} {
		c.henc.WriteField(f)
	}
	if r.signal {
		c.henc.WriteField(hpack.HeaderField{Name: "priority", Value: r.prio.String()})
	}
	if inm, ims := r.conditional(); inm != "" || ims != "" {
		if inm != "" {
			c.henc.WriteField(hpack.HeaderField{Name: "if-none-match", Value: inm})
		}
		if ims != "" {
			c.henc.WriteField(hpack.HeaderField{Name: "if-modified-since", Value: ims})
		}
	}
	return c.hbuf.Bytes()
}

// writeBlock writes a header block as a HEADERS frame and the CONTINUATION frames that
// maxFrame needs; the caller holds wmu.
func (c *h2Conn) writeBlock(id uint32, block []byte, maxFrame uint32) error {
	var err error
	for first := true; err == nil && (first || len(block) > 0); first = false {
		n := min(len(block), int(maxFrame))
		frag := block[:n]
		block = block[n:]
		if first {
			err = c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: frag, EndStream: true, EndHeaders: len(block) == 0})
		} else {
			err = c.fr.WriteContinuation(id, len(block) == 0, frag)
		}
	}
	return err
}

// flushLeft flushes HEADERS frames left in the buffer for a request that will not write after
// all (coalesce), unless a request queued for the write lock will.
func (c *h2Conn) flushLeft() {
	c.waiting.Add(1) // not counted by a writer that holds the lock now: it may leave them to us
	c.wmu.Lock()
	var err error
	if c.waiting.Add(-1) == 0 && c.bw.Buffered() > 0 {
		err = c.bw.Flush()
	}
	c.wmu.Unlock()
	if err != nil {
		c.fail(fmt.Errorf("h2 write: %w", err))
	}
}

// readLoop reads and handles the connection's frames until it fails; then it ends every stream
// left (fail only marks the connection dead and closes it: a writer that fails it never ends a
// stream the read loop may be handling).
func (c *h2Conn) readLoop() {
	defer close(c.readDone)
	defer c.endAll()
	for {
		f, err := c.fr.ReadFrame()
		now := c.s.now()
		if err != nil {
			var se http2.StreamError
			if errors.As(err, &se) {
				c.endStream(se.StreamID, now, fmt.Errorf("h2 stream error: %w", err))
				c.write(func() error { return c.fr.WriteRSTStream(se.StreamID, se.Code) })
				continue
			}
			c.fail(fmt.Errorf("h2 connection: %w", err))
			return
		}
		if err := c.handle(f, now); err != nil {
			// The error's own code if it has one (an HPACK error: COMPRESSION_ERROR, RFC 9113 §4.3).
			code := http2.ErrCodeProtocol
			if ce := http2.ConnectionError(0); errors.As(err, &ce) {
				code = http2.ErrCode(ce)
			}
			c.write(func() error { return c.fr.WriteGoAway(0, code, nil) })
			c.fail(err)
			return
		}
	}
}

// handle processes one frame; an error is a connection error.
func (c *h2Conn) handle(f http2.Frame, now time.Duration) error {
	switch f := f.(type) {
	case *http2.HeadersFrame:
		c.hb.begin(f)
		return c.headerFragment(f.HeaderBlockFragment(), f.HeadersEnded(), now)
	case *http2.ContinuationFrame:
		if !c.hb.active || f.StreamID != c.hb.streamID { // the Framer's frame order check rules it out
			return fmt.Errorf("h2: CONTINUATION on stream %d outside a header block", f.StreamID)
		}
		return c.headerFragment(f.HeaderBlockFragment(), f.HeadersEnded(), now)
	case *http2.DataFrame:
		c.connUnacked += f.Length
		st := c.stream(f.StreamID)
		if st != nil {
			if !st.headers {
				c.resetStream(st, now, http2.ErrCodeProtocol, errors.New("h2: DATA before response headers"))
			} else {
				st.r.gotBody(f.Data())
				st.unacked += f.Length
				if f.StreamEnded() {
					c.endStream(st.id, now, nil)
					st.unacked = 0
				}
			}
		}
		c.returnCredit(st)
	case *http2.SettingsFrame:
		if f.IsAck() {
			return nil
		}
		return c.applySettings(f)
	case *http2.PingFrame:
		if !f.IsAck() {
			c.write(func() error { return c.fr.WritePing(true, f.Data) })
		}
	case *http2.RSTStreamFrame:
		err := fmt.Errorf("h2: stream reset by the server (%v)", f.ErrCode)
		if f.ErrCode == http2.ErrCodeRefusedStream {
			err = errRefusedStream
		}
		c.endStream(f.StreamID, now, err)
	case *http2.GoAwayFrame:
		serverSaidGoodbye(c.conn)
		c.mu.Lock()
		c.goAway, c.goAwayLastID = true, f.LastStreamID
		c.wakeLocked() // waiters give up
		var gone []uint32
		for id := range c.streams {
			if id%2 == 1 && id > f.LastStreamID { // pushed streams (even) are the server's own
				gone = append(gone, id)
			}
		}
		c.mu.Unlock()
		for _, id := range gone {
			c.endStream(id, now, fmt.Errorf("%w (%v, last stream %d)", errGoAway, f.ErrCode, f.LastStreamID))
		}
	case *http2.PushPromiseFrame:
		return c.pushPromise(f, now)
	}
	// WINDOW_UPDATE (the client sends no DATA), PRIORITY and unknown frames need nothing.
	return nil
}

// h2Max1xx is how many informational (1xx) responses a stream may have before its final one,
// x/net's limit: more reset the stream.
const h2Max1xx = 5

// headerFragment decodes a fragment of a response header block (c.hb) and, at its end, applies
// the block to its stream. An error is a connection error; a stream error resets the stream.
func (c *h2Conn) headerFragment(frag []byte, endHeaders bool, now time.Duration) error {
	done, err := c.hb.fragment(frag, endHeaders)
	if err != nil {
		return fmt.Errorf("h2 connection: %w", err)
	}
	if !done {
		return nil
	}
	b := c.hb
	if serr := b.streamError(); serr != nil {
		id := b.streamID
		c.endStream(id, now, fmt.Errorf("h2 stream error: %w", serr))
		c.write(func() error { return c.fr.WriteRSTStream(id, http2.ErrCodeProtocol) })
		return nil
	}
	st := c.stream(b.streamID)
	if st == nil {
		return nil // a stream we already closed or reset
	}
	if st.headers { // trailers
		if b.statusCount > 0 { // RFC 9113 §8.1: no pseudo-header (another is invalid already)
			c.resetStream(st, now, http2.ErrCodeProtocol, errors.New("h2: pseudo-header field in trailers"))
			return nil
		}
		if !b.endStream {
			c.resetStream(st, now, http2.ErrCodeProtocol, errors.New("h2: trailers without END_STREAM"))
			return nil
		}
		c.endStream(st.id, now, nil)
		return nil
	}
	if b.truncated {
		c.resetStream(st, now, http2.ErrCodeProtocol, errors.New("h2: response headers too large"))
		return nil
	}
	status, ok := b.statusCode()
	if !ok {
		c.resetStream(st, now, http2.ErrCodeProtocol, fmt.Errorf("h2: bad :status %q", b.status))
		return nil
	}
	r := st.r
	if r.firstByte == unset {
		r.firstByte = now
	}
	if status < 200 { // informational; the final response follows (x/net's checks)
		switch st.info++; {
		case b.endStream:
			c.resetStream(st, now, http2.ErrCodeProtocol, errors.New("h2: 1xx informational response with END_STREAM"))
		case st.info > h2Max1xx:
			c.resetStream(st, now, http2.ErrCodeProtocol, fmt.Errorf("h2: more than %d 1xx informational responses", h2Max1xx))
		}
		return nil
	}
	st.headers = true
	if b.altSvc != "" {
		r.altSvc = b.altSvc
	}
	if c.s.profile.http != nil {
		for _, hf := range b.rest {
			r.cacheResp.set(hf.Name, hf.Value)
		}
	}
	r.gotHeaders(status, b.contentType, b.contentLength())
	if b.endStream {
		c.endStream(st.id, now, nil)
	}
	return nil
}

// applySettings applies the server's SETTINGS and acknowledges them. The first SETTINGS frame
// replaces the assumed stream limit (absent = unlimited, RFC 9113 §6.5.2).
func (c *h2Conn) applySettings(f *http2.SettingsFrame) error {
	limit, hasLimit := -1, false
	err := f.ForeachSetting(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			return err
		}
		switch s.ID {
		case http2.SettingMaxConcurrentStreams:
			limit, hasLimit = int(min(s.Val, math.MaxInt32)), true
			c.rec.update(func(ci *Conn) { ci.MaxStreams = s.Val })
		case http2.SettingMaxFrameSize:
			c.mu.Lock()
			c.peerMaxFrame = s.Val
			c.mu.Unlock()
		case http2.SettingHeaderTableSize:
			c.write(func() error { c.henc.SetMaxDynamicTableSizeLimit(s.Val); return nil })
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.write(func() error {
		c.mu.Lock()
		switch {
		case hasLimit:
			c.limit = limit
		case !c.seenSettings:
			c.limit = math.MaxInt32
		}
		c.seenSettings = true
		c.wakeLocked()
		c.mu.Unlock()
		return c.fr.WriteSettingsAck()
	})
	return nil
}

// returnCredit sends WINDOW_UPDATEs once half of a window has been consumed (the loader consumes
// data as it arrives).
func (c *h2Conn) returnCredit(st *h2Stream) {
	var connIncr, streamIncr uint32
	if c.connUnacked >= c.connWindow/2 {
		connIncr, c.connUnacked = c.connUnacked, 0
	}
	if st != nil && st.unacked >= c.streamWindow/2 {
		streamIncr, st.unacked = st.unacked, 0
	}
	if connIncr == 0 && streamIncr == 0 {
		return
	}
	c.write(func() error {
		if connIncr > 0 {
			if err := c.fr.WriteWindowUpdate(0, connIncr); err != nil {
				return err
			}
		}
		if streamIncr > 0 {
			return c.fr.WriteWindowUpdate(st.id, streamIncr)
		}
		return nil
	})
}

// write runs w under the write lock and flushes. A failure fails the connection (the read loop
// then ends on the closed socket).
func (c *h2Conn) write(w func() error) {
	c.wmu.Lock()
	err := w()
	if err == nil {
		err = c.bw.Flush()
	}
	c.wmu.Unlock()
	if err != nil {
		c.fail(fmt.Errorf("h2 write: %w", err))
	}
}

func (c *h2Conn) stream(id uint32) *h2Stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.streams[id]
}

func (c *h2Conn) resetStream(st *h2Stream, now time.Duration, code http2.ErrCode, err error) {
	c.endStream(st.id, now, err)
	c.write(func() error { return c.fr.WriteRSTStream(st.id, code) })
}

// endStream closes a stream: it frees its slot and completes its request (or its push).
func (c *h2Conn) endStream(id uint32, now time.Duration, err error) {
	c.mu.Lock()
	st := c.streams[id]
	if st != nil {
		delete(c.streams, id)
		if st.push == nil { // pushed streams take no slot of the server's stream limit
			c.open--
			c.wakeLocked()
		}
	}
	c.mu.Unlock()
	if st == nil {
		return
	}
	if st.push != nil {
		st.push.finish(now, err)
		return
	}
	st.end, st.err = now, err
	if st.deliver != nil {
		c.complete(st)
		return
	}
	close(st.done)
}

// pushPromise handles a PUSH_PROMISE (RFC 9113 §6.6, §8.4): a GET of this connection's origin
// that the loader has not requested yet becomes a pushed stream whose response fills a push-cache
// entry; any other promise is reset (CANCEL: already requested; PROTOCOL_ERROR: not a GET of this
// origin). With a prioritisation policy the client tells the server the pushed response's
// priority at once in a PRIORITY_UPDATE (RFC 9218 §7.1). An error is a connection error.
func (c *h2Conn) pushPromise(f *http2.PushPromiseFrame, now time.Duration) error {
	if !c.s.cfg.AcceptPush {
		return errors.New("h2: PUSH_PROMISE received although SETTINGS_ENABLE_PUSH is 0")
	}
	if f.PromiseID == 0 || f.PromiseID%2 != 0 {
		return fmt.Errorf("h2: PUSH_PROMISE promising stream %d (must be even)", f.PromiseID)
	}
	if !f.HeadersEnded() {
		// x/net's Framer refuses the CONTINUATION that would follow (it tracks header blocks of
		// HEADERS frames only); the built-in server's promises are a few dozen bytes.
		return errors.New("h2: PUSH_PROMISE continued in CONTINUATION frames (not supported)")
	}
	dec := c.hb.dec
	dec.SetEmitEnabled(true)
	fields, err := dec.DecodeFull(f.HeaderBlockFragment()) // keeps the HPACK context in step
	if err != nil {
		return fmt.Errorf("h2: PUSH_PROMISE header block: %w", err)
	}
	var method, scheme, authority, path string
	for _, hf := range fields {
		switch hf.Name {
		case ":method":
			method = hf.Value
		case ":scheme":
			scheme = hf.Value
		case ":authority":
			authority = hf.Value
		case ":path":
			path = hf.Value
		}
	}
	reset := func(code http2.ErrCode) error {
		c.write(func() error { return c.fr.WriteRSTStream(f.PromiseID, code) })
		return nil
	}
	u, err := url.Parse(scheme + "://" + authority + path)
	if err != nil || method != "GET" || authority == "" || !strings.HasPrefix(path, "/") {
		return reset(http2.ErrCodeProtocol)
	}
	if o, err := originOf(u); err != nil || o != c.o {
		return reset(http2.ErrCodeProtocol) // only this connection's origin is accepted
	}
	u.Fragment, u.RawFragment = "", ""
	if c.stream(f.StreamID) == nil {
		return reset(http2.ErrCodeCancel) // its request is over: nobody would use the push
	}
	p := c.s.pushes.promise(u, c.o, c.rec.info.ID, int64(f.PromiseID), now)
	if p == nil {
		return reset(http2.ErrCodeCancel)
	}
	c.mu.Lock()
	c.streams[f.PromiseID] = &h2Stream{id: f.PromiseID, r: p.r, push: p}
	c.mu.Unlock()
	c.rec.update(func(ci *Conn) { ci.Pushes++ })
	if prio, ok := c.s.pri.of(u, ""); ok {
		c.write(func() error { return c.fr.WritePriorityUpdate(f.PromiseID, prio.String()) })
		c.rec.update(func(ci *Conn) { ci.PriorityUpdates++ })
	}
	return nil
}

// processedAny reports whether the server's GOAWAY on c says it processed at least one stream
// (its last stream id is above 0).
func (c *h2Conn) processedAny() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.goAwayLastID > 0
}

// goneAway reports whether the server sent GOAWAY on a connection that has not failed: the
// streams it still processes finish on it; new ones go to a new connection.
func (c *h2Conn) goneAway() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.goAway && c.dead == nil
}

// broken reports whether the connection can carry no new stream: it failed, or the server sent
// GOAWAY.
func (c *h2Conn) broken() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dead != nil || c.goAway
}

// fail ends the connection: it is marked dead with err (every request that would open a stream
// on it gives up), the waiting requests are woken and the socket is closed — which ends the read
// loop, which then ends every open stream with err (endAll). Any goroutine may call it.
func (c *h2Conn) fail(err error) {
	c.mu.Lock()
	if c.dead != nil {
		c.mu.Unlock()
		return
	}
	c.dead = err
	for _, w := range c.waiters { // each retries, sees dead and gives up
		select {
		case w <- struct{}{}:
		default:
		}
	}
	c.mu.Unlock()
	if !c.s.closing() {
		c.rec.update(func(ci *Conn) {
			if ci.Error == "" {
				ci.Error = err.Error()
			}
		})
	}
	c.conn.Close()
}

// endAll ends every stream still open with the connection's failure (the read loop's last act:
// the connection is dead by then, so no stream is added after).
func (c *h2Conn) endAll() {
	c.mu.Lock()
	err := c.dead
	if err == nil { // not reached: the read loop returns only after fail
		err = errors.New("h2: connection ended")
		c.dead = err
	}
	ids := make([]uint32, 0, len(c.streams))
	for id := range c.streams {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	now := c.s.now()
	for _, id := range ids {
		c.endStream(id, now, err)
	}
}
