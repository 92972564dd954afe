package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/qlogwriter"

	"github.com/wirelab/wirelab/engine/internal/quicloss"
)

// h3Pool is one origin's QUIC connection, with quic-go's HTTP/3 client on it. Each connection has
// its own UDP socket. The stream limit is the server's initial_max_streams_bidi and MAX_STREAMS
// credit: opening a request stream waits for it (blocked).
type h3Pool struct {
	s      *session
	o      origin
	single singleConn[*h3Conn]
}

var _ originPool = (*h3Pool)(nil)

type h3Conn struct {
	rec    *connRecord
	closer *quicCloser
	qconn  *quic.Conn
	cc     *http3.ClientConn
}

func newH3Pool(s *session, o origin) *h3Pool { return &h3Pool{s: s, o: o} }

func (p *h3Pool) do(ctx context.Context, r *request) {
	for {
		var str *http3.RequestStream
		c, opened, err := p.single.get(ctx, func() (*h3Conn, error) {
			c, err := p.dial(ctx, r)
			if err != nil {
				return nil, err
			}
			// The opening request's stream is opened before anyone else can ask for one.
			str, err = c.cc.OpenRequestStream(ctx)
			return c, err
		}, p.renewal())
		if err != nil {
			r.finish(p.s.now(), err)
			return
		}
		if !opened {
			if str, err = c.cc.OpenRequestStream(ctx); err != nil {
				if p.s.resend(ctx, c.rec, r, c.endedBy(err)) {
					r.retries++
					r.reset()
					continue
				}
				r.finish(p.s.now(), fmt.Errorf("h3: open stream: %w", err))
				return
			}
		}
		r.conn = c.rec.info.ID
		r.sendStart = p.s.now()
		err = c.roundTrip(p.s, r, str)
		if err != nil && p.s.resend(ctx, c.rec, r, c.endedBy(err)) {
			r.retries++
			r.reset()
			continue
		}
		r.finish(p.s.now(), err)
		return
	}
}

// renewal is how a Tab's pool replaces a dead connection kept from an earlier load.
func (p *h3Pool) renewal() *renewal[*h3Conn] {
	if !p.s.keep {
		return nil
	}
	return &renewal[*h3Conn]{
		stale:  func(c *h3Conn) bool { return c.rec.load < p.s.load && c.broken() },
		retire: func(c *h3Conn) { c.closer.Close() },
	}
}

func (p *h3Pool) usable() bool { return p.single.usable((*h3Conn).broken) }

// broken reports whether the QUIC connection has ended (closed by either side, idle timeout), as
// its context says or a request has seen (endedBy).
func (c *h3Conn) broken() bool { return c.closer.ended.Load() || c.qconn.Context().Err() != nil }

// endedBy reports whether a request's error err is the end of its whole QUIC connection, and if so
// marks the connection broken. quic-go fails the connection's streams with the close error before
// it cancels the connection's context, so a request can meet the server's CONNECTION_CLOSE while
// the context is still live: an error that wraps a connection close (CONNECTION_CLOSE of either
// kind, idle timeout, stateless reset) says so by itself. A stream's own reset (quic.StreamError)
// leaves the connection alive.
func (c *h3Conn) endedBy(err error) bool {
	if c.broken() {
		return true
	}
	_, app := errors.AsType[*quic.ApplicationError](err)
	_, transport := errors.AsType[*quic.TransportError](err)
	_, idle := errors.AsType[*quic.IdleTimeoutError](err)
	_, reset := errors.AsType[*quic.StatelessResetError](err)
	if app || transport || idle || reset {
		c.closer.ended.Store(true)
		return true
	}
	return false
}

// dial opens the QUIC connection: the whole handshake (which carries TLS 1.3) is both connect and
// ssl.
func (p *h3Pool) dial(ctx context.Context, r *request) (*h3Conn, error) {
	addr, err := p.s.resolve(ctx, p.o, r)
	if err != nil {
		return nil, err
	}
	r.connectStart = p.s.now()
	r.sslStart, r.sslIsConnect = r.connectStart, true
	network := "udp4"
	if !addr.Unmap().Is4() {
		network = "udp6"
	}
	udp, err := net.ListenUDP(network, nil)
	if err != nil {
		return nil, err
	}
	raddr := net.UDPAddrFromAddrPort(netipAddrPort(addr, p.o.port))
	closer := &quicCloser{udp: udp, gauge: p.s.gauge}
	p.s.gauge.count(1, 0)
	rec, err := p.s.register(p.o, H3, r.connectStart, closer, udp.LocalAddr(), raddr)
	if err != nil {
		return nil, err
	}
	r.conn = rec.info.ID
	var onStream func(stream, offset, length int64)
	if !p.s.keep {
		onStream = func(stream, offset, length int64) { rec.arrived(p.s.now(), stream, offset, length) }
	}
	rec.loss = quicloss.New(onStream)
	qconf := &quic.Config{
		Tracer:                         func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace { return rec.loss },
		HandshakeIdleTimeout:           p.s.cfg.Timeout,
		MaxIdleTimeout:                 p.s.cfg.Timeout,
		InitialStreamReceiveWindow:     uint64(p.s.cfg.StreamReceiveWindow),
		MaxStreamReceiveWindow:         uint64(p.s.cfg.StreamReceiveWindow),
		InitialConnectionReceiveWindow: uint64(p.s.cfg.ConnReceiveWindow),
		MaxConnectionReceiveWindow:     uint64(p.s.cfg.ConnReceiveWindow),
	}
	tlsConf := p.s.tlsConfig(p.o, "h3")
	dial := quic.Dial
	if tlsConf.ClientSessionCache != nil {
		// With a session ticket of the origin (a repeat view's profile), DialEarly returns as
		// soon as 0-RTT keys exist: the requests go out as early data in the first flight, as
		// Chromium sends them; without one it returns when the handshake completes, as Dial.
		dial = quic.DialEarly
	}
	qconn, err := dial(ctx, udp, raddr, tlsConf, qconf)
	if err != nil {
		closer.Close()
		err = fmt.Errorf("quic handshake: %w", err)
		rec.update(func(c *Conn) { c.Error = err.Error() })
		return nil, err
	}
	r.connectEnd = p.s.now()
	closer.set(qconn)
	noteHandshake := func() {
		st := qconn.ConnectionState()
		rec.update(func(c *Conn) {
			c.TLSVersion, c.ALPN, c.TLSResumed = tls.VersionName(st.TLS.Version), st.TLS.NegotiatedProtocol, st.TLS.DidResume
			c.ZeroRTT = st.Used0RTT
		})
	}
	select {
	case <-qconn.HandshakeComplete():
		noteHandshake()
	default: // 0-RTT: the handshake completes while the first requests are on their way
		noted := rec.handshakePending()
		go func() {
			defer close(noted)
			select {
			case <-qconn.HandshakeComplete():
				noteHandshake()
			case <-qconn.Context().Done():
			}
		}()
	}
	rec.mu.Lock()
	rec.lost = func() uint64 { return qconn.ConnectionStats().PacketsLost }
	rec.mu.Unlock()
	tr := &http3.Transport{DisableCompression: true}
	return &h3Conn{rec: rec, closer: closer, qconn: qconn, cc: tr.NewClientConn(qconn)}, nil
}

func (p *h3Pool) close() {
	if c, ok := p.single.current(); ok {
		c.closer.Close()
	}
}

// roundTrip sends r on the opened stream str and reads the whole response.
func (c *h3Conn) roundTrip(s *session, r *request, str *http3.RequestStream) error {
	r.streamID = int64(str.StreamID())
	c.rec.update(func(ci *Conn) { ci.Requests++ })
	req := &http.Request{
		Method: http.MethodGet,
		URL:    &url.URL{Scheme: "https", Host: r.origin.authority(), Path: r.url.Path, RawPath: r.url.RawPath, RawQuery: r.url.RawQuery},
		Host:   r.origin.authority(),
		Header: http.Header{
			"User-Agent":      {s.cfg.UserAgent},
			"Accept":          {"*/*"},
			"Accept-Encoding": {"identity"},
		},
	}
	if r.signal {
		// RFC 9218's header; quic-go's HTTP/3 server schedules its streams by it. (quic-go's
		// client has no way to send PRIORITY_UPDATE frames, and HTTP/3 here has no push.)
		req.Header.Set("Priority", r.prio.String())
	}
	setConditional(req.Header, r)
	if err := str.SendRequestHeader(req); err != nil {
		return fmt.Errorf("h3 send: %w", err)
	}
	// FIN: the request is complete. A server that has already answered may have stopped reading
	// (STOP_SENDING), which makes Close fail; the response tells whether the request was served,
	// so the error is ignored, as quic-go's own client does.
	_ = str.Close()
	r.sendEnd = s.now()
	var resp *http.Response
	for {
		var err error
		resp, err = str.ReadResponse()
		if err != nil {
			return fmt.Errorf("h3 response: %w", err)
		}
		if r.firstByte == unset {
			r.firstByte = s.now()
		}
		if resp.StatusCode >= 200 || resp.StatusCode < 100 {
			break
		}
	}
	r.gotHeaders(resp.StatusCode, resp.Header.Get("Content-Type"), resp.ContentLength)
	if s.profile.http != nil {
		r.cacheResp.fromHeader(resp.Header)
	}
	buf := make([]byte, s.bufSize(32<<10))
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			r.gotBody(buf[:n])
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("h3 body: %w", err)
		}
	}
}

// quicCloser closes a QUIC connection (CONNECTION_CLOSE, no error) and then its UDP socket; before
// the handshake has completed it closes the socket, which ends the handshake.
type quicCloser struct {
	mu     sync.Mutex
	udp    *net.UDPConn
	qconn  *quic.Conn
	closed atomic.Bool
	ended  atomic.Bool // a request met the connection's end before its context did (endedBy)
	gauge  *ConnGauge
}

func (q *quicCloser) set(c *quic.Conn) {
	q.mu.Lock()
	q.qconn = c
	q.mu.Unlock()
}

func (q *quicCloser) Close() error {
	q.mu.Lock()
	qconn := q.qconn
	q.mu.Unlock()
	// Ended before this close: by the server's CONNECTION_CLOSE (or an idle timeout, a reset).
	ended := q.ended.Load() || qconn != nil && qconn.Context().Err() != nil
	if qconn != nil {
		qconn.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "")
	}
	if q.closed.CompareAndSwap(false, true) {
		q.gauge.count(0, 1)
		if ended && q.gauge != nil {
			q.gauge.byPeer.Add(1)
		}
	}
	return q.udp.Close()
}

func (q *quicCloser) isClosed() bool { return q.closed.Load() }

// established reports whether the QUIC connection's handshake returned (set was called).
func (q *quicCloser) established() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.qconn != nil
}
