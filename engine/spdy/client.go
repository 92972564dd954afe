package spdy

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ClientConfig configures a ClientConn.
type ClientConfig struct {
	// Config is the session configuration (windows, concurrency, limits); zero means defaults.
	// The session window is credited back only as response bodies are read: an application that
	// reads bodies one at a time needs a SessionWindowSize that holds every body it leaves unread
	// meanwhile, or one unread body can stop the others (SPDY/3.1's initial 64 KB is small).
	Config Config
	// DataChunkSize is the largest DATA frame sent for request bodies, bytes. Default 4096.
	DataChunkSize int
	// DefaultPriority is the priority RoundTrip gives requests whose context carries no
	// RequestOptions: 0 (highest) … 7 (lowest). Default 0.
	DefaultPriority uint8
	// AcceptPush decides about each stream the server pushes, as its SYN_STREAM arrives. nil (the
	// default) refuses every push with RST_STREAM CANCEL. It runs with the session locked: keep it
	// short and never call the ClientConn from it (start a goroutine that calls Pushed instead).
	// Accepting returns the trace that receives the pushed stream's ResponseHeaders,
	// FirstDataByte and ResponseDone (nil: none); the response is read with Pushed. A push whose
	// SYN_STREAM lacks :scheme, :host or :path is refused with PROTOCOL_ERROR before AcceptPush.
	AcceptPush func(p PushPromise) (trace *StreamTrace, accept bool)
	// OnGoAway, if set, is called when the server's GOAWAY arrives (with the session locked: keep
	// it short and never call the ClientConn from it).
	OnGoAway func()
}

// PushPromise is a stream the server pushed (SPDY/3 §3.3): a unidirectional SYN_STREAM
// associated with one of the client's streams.
type PushPromise struct {
	StreamID           uint32   // the pushed stream (even)
	AssociatedStreamID uint32   // the client's stream it belongs to
	Priority           uint8    // 0 (highest) … 7
	URL                *url.URL // from :scheme, :host and :path
	Header             Header   // the SYN_STREAM's header block
}

// StreamTrace receives the moments of one request's life, for the page loader's send/wait/receive
// timings. Each hook is optional and is called at most once, from a session goroutine; the hook
// reads its own clock. Hooks run with the session locked: keep them short and never call the
// ClientConn from one. HAR mapping: send = StreamOpened→RequestWritten, wait =
// RequestWritten→ResponseHeaders, receive = ResponseHeaders→ResponseDone.
type StreamTrace struct {
	// Queued: the request must wait for a free stream (MAX_CONCURRENT_STREAMS).
	Queued func()
	// StreamOpened: the SYN_STREAM was handed to the session with this stream id.
	StreamOpened func(streamID uint32)
	// RequestWritten: the request's last byte (SYN_STREAM with FIN, or the body's final DATA) was
	// written to the transport.
	RequestWritten func()
	// ResponseHeaders: the SYN_REPLY arrived.
	ResponseHeaders func()
	// FirstDataByte: the response's first DATA frame arrived.
	FirstDataByte func()
	// ResponseDone: the response's FIN arrived (the body may still be unread).
	ResponseDone func()
}

// RequestOptions are per-request SPDY settings.
type RequestOptions struct {
	// Priority is the stream priority, 0 (highest) … 7 (lowest).
	Priority uint8
	// Trace, if set, receives the request's timing hooks.
	Trace *StreamTrace
}

type optionsKey struct{}

// WithRequestOptions attaches options to ctx for RoundTrip.
func WithRequestOptions(ctx context.Context, o RequestOptions) context.Context {
	return context.WithValue(ctx, optionsKey{}, o)
}

// ClientConn issues requests on one SPDY/3.1 session. It is safe for concurrent use.
type ClientConn struct {
	cfg     ClientConfig
	s       *session
	streams map[uint32]*clientStream
	pings   map[uint32]chan struct{}
	runErr  chan error

	closeOnce sync.Once
	closeErr  error
}

var _ http.RoundTripper = (*ClientConn)(nil)

// clientStream is one request in flight.
type clientStream struct {
	id       uint32
	trace    StreamTrace
	header   Header // response headers (SYN_REPLY plus HEADERS)
	replied  bool
	body     bytes.Buffer
	bodyEOF  bool
	resetErr error
	gotData  bool
	unproc   bool // GOAWAY: never processed
	pushed   bool // a stream the server pushed: its response headers come in HEADERS
	taken    bool // a pushed stream whose response Pushed returned
}

// ClientTLSConfig returns a copy of cfg that offers only ALPN "spdy/3.1".
func ClientTLSConfig(cfg *tls.Config) *tls.Config {
	c := cfg.Clone()
	c.NextProtos = []string{NextProtoTLS}
	return c
}

// NewClientConn starts a session on nc. A *tls.Conn is handshaken and must have negotiated
// "spdy/3.1". The session runs until Close, a GOAWAY-ended teardown or a transport error.
func NewClientConn(nc net.Conn, cfg ClientConfig) (*ClientConn, error) {
	if tc, ok := nc.(*tls.Conn); ok {
		if err := tc.Handshake(); err != nil {
			return nil, fmt.Errorf("spdy: TLS handshake: %w", err)
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != NextProtoTLS {
			return nil, fmt.Errorf("spdy: ALPN negotiated %q, want %q", p, NextProtoTLS)
		}
	}
	if cfg.DefaultPriority > MaxPriority {
		return nil, fmt.Errorf("spdy: DefaultPriority %d: allowed 0 … %d", cfg.DefaultPriority, MaxPriority)
	}
	conn, err := NewConn(RoleClient, cfg.Config)
	if err != nil {
		return nil, err
	}
	cc := &ClientConn{
		cfg: cfg, s: newSession(nc, conn, cfg.DataChunkSize),
		streams: make(map[uint32]*clientStream), pings: make(map[uint32]chan struct{}),
		runErr: make(chan error, 1),
	}
	cc.s.handle = cc.handle
	go func() { cc.runErr <- cc.s.run() }()
	return cc, nil
}

func (cc *ClientConn) handle(events []Event) {
	for _, e := range events {
		switch e := e.(type) {
		case *StreamOpened:
			cc.pushOpened(e)
		case *HeadersReceived:
			st, ok := cc.streams[e.StreamID]
			if !ok {
				continue
			}
			st.header = append(st.header, e.Header...)
			if e.Reply {
				st.replied = true
				cc.s.firePendingLocked(e.StreamID)
				call(st.trace.ResponseHeaders)
			} else if st.pushed && !st.replied && e.Header.Has(":status") {
				st.replied = true
				call(st.trace.ResponseHeaders)
			}
		case *DataReceived:
			st, ok := cc.streams[e.StreamID]
			if !ok {
				cc.s.conn.Consumed(e.StreamID, len(e.Data))
				continue
			}
			if !st.gotData {
				st.gotData = true
				call(st.trace.FirstDataByte)
			}
			st.body.Write(e.Data)
		case *StreamEnded:
			if st, ok := cc.streams[e.StreamID]; ok {
				st.bodyEOF = true
				call(st.trace.ResponseDone)
			}
		case *StreamReset:
			if st, ok := cc.streams[e.StreamID]; ok {
				st.resetErr = &StreamError{StreamID: e.StreamID, Status: e.Status, Reason: "reset"}
				cc.s.dropLocked(e.StreamID)
			}
		case *PingAcknowledged:
			if ch, ok := cc.pings[e.ID]; ok {
				close(ch)
				delete(cc.pings, e.ID)
			}
		case *GoAway:
			if cc.cfg.OnGoAway != nil {
				cc.cfg.OnGoAway()
			}
			for _, id := range e.Unprocessed {
				if st, ok := cc.streams[id]; ok {
					st.unproc = true
					st.resetErr = fmt.Errorf("spdy: stream %d not processed before GOAWAY: %w", id, ErrGoingAway)
					cc.s.dropLocked(id)
				}
			}
		}
	}
	cc.s.cond.Broadcast()
}

// pushOpened handles a SYN_STREAM from the server: a push, kept if AcceptPush accepts it.
func (cc *ClientConn) pushOpened(e *StreamOpened) {
	if cc.cfg.AcceptPush == nil || !e.Unidirectional || e.AssociatedStreamID == 0 {
		cc.s.conn.ResetStream(e.StreamID, Cancel)
		return
	}
	scheme, host, path := e.Header.Get(":scheme"), e.Header.Get(":host"), e.Header.Get(":path")
	u, err := url.Parse(path)
	if scheme == "" || host == "" || path == "" || err != nil || !strings.HasPrefix(path, "/") {
		cc.s.conn.ResetStream(e.StreamID, ProtocolError)
		return
	}
	u.Scheme, u.Host = scheme, host
	trace, ok := cc.cfg.AcceptPush(PushPromise{StreamID: e.StreamID, AssociatedStreamID: e.AssociatedStreamID,
		Priority: e.Priority, URL: u, Header: e.Header})
	if !ok {
		cc.s.conn.ResetStream(e.StreamID, Cancel)
		return
	}
	st := &clientStream{id: e.StreamID, pushed: true, header: append(Header(nil), e.Header...)}
	if trace != nil {
		st.trace = *trace
	}
	cc.streams[e.StreamID] = st
	if e.Header.Has(":status") {
		st.replied = true
		call(st.trace.ResponseHeaders)
	}
}

// Pushed waits for the response of pushed stream id (accepted by AcceptPush) and returns it once
// its headers have arrived; the body streams in as it is read. Each pushed stream can be taken
// once; ctx bounds the wait and the body's reads.
func (cc *ClientConn) Pushed(ctx context.Context, id uint32) (*http.Response, error) {
	s := cc.s
	stop := context.AfterFunc(ctx, func() { s.mu.Lock(); s.cond.Broadcast(); s.mu.Unlock() })
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := cc.streams[id]
	if !ok || !st.pushed || st.taken {
		return nil, fmt.Errorf("spdy: no pushed stream %d to take", id)
	}
	st.taken = true
	for !st.replied && !st.bodyEOF && st.resetErr == nil && !s.closed && ctx.Err() == nil {
		s.cond.Wait()
	}
	switch {
	case st.replied:
	case st.bodyEOF:
		delete(cc.streams, id)
		return nil, fmt.Errorf("spdy: pushed stream %d ended without :status", id)
	case st.resetErr != nil:
		delete(cc.streams, id)
		return nil, st.resetErr
	case ctx.Err() != nil:
		cc.cancelLocked(st, Cancel)
		return nil, ctx.Err()
	default:
		delete(cc.streams, id)
		return nil, fmt.Errorf("spdy: session closed: %w", s.err)
	}
	resp, err := responseFromHeader(st.header)
	if err != nil {
		cc.cancelLocked(st, ProtocolError)
		return nil, err
	}
	resp.Request = &http.Request{Method: http.MethodGet, URL: pushURL(st.header), Header: http.Header{}}
	resp.Body = &responseBody{cc: cc, st: st, ctx: ctx}
	return resp, nil
}

// pushURL is the URL of a pushed stream's SYN_STREAM header.
func pushURL(h Header) *url.URL {
	u, err := url.Parse(h.Get(":path"))
	if err != nil {
		return &url.URL{}
	}
	u.Scheme, u.Host = h.Get(":scheme"), h.Get(":host")
	return u
}

func call(f func()) {
	if f != nil {
		f()
	}
}

// RoundTrip implements http.RoundTripper; options come from WithRequestOptions, else
// DefaultPriority and no trace.
func (cc *ClientConn) RoundTrip(req *http.Request) (*http.Response, error) {
	o, ok := req.Context().Value(optionsKey{}).(RequestOptions)
	if !ok {
		o = RequestOptions{Priority: cc.cfg.DefaultPriority}
	}
	return cc.Do(req, o)
}

// requestHeader builds the SYN_STREAM block of req (SPDY/3 section 3.2.1).
func requestHeader(req *http.Request) (Header, error) {
	if req.URL == nil {
		return nil, errors.New("spdy: request without URL")
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	scheme := req.URL.Scheme
	if scheme == "" {
		scheme = "https"
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	h := Header{{":method", method}, {":path", req.URL.RequestURI()}, {":version", "HTTP/1.1"}, {":host", host}, {":scheme", scheme}}
	extra := fieldsFromHTTPHeader(req.Header)
	if req.ContentLength > 0 && !extra.Has("content-length") {
		extra = append(extra, HeaderField{"content-length", strconv.FormatInt(req.ContentLength, 10)})
	}
	return append(h, extra...), nil
}

// MaxRefusedRetries bounds how often a request the server refused before processing it
// (REFUSED_STREAM) is sent again; the engine's loader uses the same bound for every multiplexed
// protocol.
const MaxRefusedRetries = 10

// Do sends req with the given options and returns the response once its SYN_REPLY has arrived;
// the body streams in as it is read. A request the server refused (REFUSED_STREAM) before
// processing is retried when its body can be replayed.
func (cc *ClientConn) Do(req *http.Request, o RequestOptions) (*http.Response, error) {
	if o.Priority > MaxPriority {
		return nil, fmt.Errorf("spdy: priority %d: allowed 0 … %d", o.Priority, MaxPriority)
	}
	for attempt := 0; ; attempt++ {
		resp, retry, err := cc.do(req, o)
		if !retry || attempt >= MaxRefusedRetries {
			return resp, err
		}
		if req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return nil, err
			}
			body, gerr := req.GetBody()
			if gerr != nil {
				return nil, err
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
		o.Trace = nil // hooks fire once
	}
}

func (cc *ClientConn) do(req *http.Request, o RequestOptions) (*http.Response, bool, error) {
	h, err := requestHeader(req)
	if err != nil {
		return nil, false, err
	}
	var trace StreamTrace
	if o.Trace != nil {
		trace = *o.Trace
	}
	hasBody := req.Body != nil && req.Body != http.NoBody
	ctx := req.Context()
	s := cc.s
	stop := context.AfterFunc(ctx, func() { s.mu.Lock(); s.cond.Broadcast(); s.mu.Unlock() })
	defer stop()

	s.mu.Lock()
	queued := false
	var id uint32
	for {
		if err := ctx.Err(); err != nil {
			s.mu.Unlock()
			return nil, false, err
		}
		if s.closed {
			err := s.err
			s.mu.Unlock()
			return nil, false, fmt.Errorf("spdy: session closed: %w", err)
		}
		cerr := s.conn.CanOpenStream()
		if cerr == nil {
			id, err = s.conn.OpenStream(h, o.Priority, !hasBody)
			if err != nil {
				s.mu.Unlock()
				return nil, false, err
			}
			break
		}
		if !errors.Is(cerr, ErrTooManyStreams) {
			s.mu.Unlock()
			return nil, false, cerr
		}
		if !queued {
			queued = true
			call(trace.Queued)
		}
		s.cond.Wait()
	}
	st := &clientStream{id: id, trace: trace}
	cc.streams[id] = st
	call1(trace.StreamOpened, id)
	if !hasBody {
		if trace.RequestWritten != nil {
			s.afterWrittenLocked(id, trace.RequestWritten)
		}
	}
	s.flushLocked()
	s.mu.Unlock()

	if hasBody {
		go cc.sendBody(st, o.Priority, req.Body)
	}

	s.mu.Lock()
	for !st.replied && st.resetErr == nil && !s.closed && ctx.Err() == nil {
		s.cond.Wait()
	}
	switch {
	case st.replied:
	case st.resetErr != nil:
		err := st.resetErr
		delete(cc.streams, id)
		var se *StreamError
		retry := st.unproc || (errors.As(err, &se) && se.Status == RefusedStream)
		s.mu.Unlock()
		return nil, retry, err
	case ctx.Err() != nil:
		cc.cancelLocked(st, Cancel)
		s.mu.Unlock()
		return nil, false, ctx.Err()
	default:
		err := s.err
		delete(cc.streams, id)
		s.mu.Unlock()
		return nil, false, fmt.Errorf("spdy: session closed: %w", err)
	}
	resp, err := responseFromHeader(st.header)
	if err != nil {
		cc.cancelLocked(st, ProtocolError)
		s.mu.Unlock()
		return nil, false, err
	}
	s.mu.Unlock()
	resp.Request = req
	resp.Body = &responseBody{cc: cc, st: st, ctx: ctx}
	if req.Method == http.MethodHead {
		resp.ContentLength = -1
		if cl := resp.Header.Get("Content-Length"); cl != "" {
			resp.ContentLength, _ = strconv.ParseInt(cl, 10, 64)
		}
	}
	return resp, false, nil
}

func call1(f func(uint32), id uint32) {
	if f != nil {
		f(id)
	}
}

func (cc *ClientConn) cancelLocked(st *clientStream, status RstStatus) {
	if cc.s.conn.IsOpen(st.id) {
		cc.s.conn.ResetStream(st.id, status)
	}
	if st.resetErr == nil {
		st.resetErr = &StreamError{StreamID: st.id, Status: status, Reason: "cancelled"}
	}
	cc.s.dropLocked(st.id)
	if n := st.body.Len(); n > 0 {
		cc.s.conn.Consumed(st.id, n)
		st.body.Reset()
	}
	delete(cc.streams, st.id)
	cc.s.flushLocked()
}

func (cc *ClientConn) sendBody(st *clientStream, priority uint8, body io.ReadCloser) {
	defer body.Close()
	s := cc.s
	gone := func() error {
		if st.resetErr != nil {
			return st.resetErr
		}
		if s.closed {
			return errors.New("spdy: session closed")
		}
		return nil
	}
	buf := make([]byte, 32<<10)
	for {
		n, rerr := body.Read(buf)
		s.mu.Lock()
		if n > 0 {
			if _, err := s.queueDataLocked(st.id, priority, buf[:n], gone); err != nil {
				s.mu.Unlock()
				return
			}
		}
		if rerr != nil {
			if rerr == io.EOF && gone() == nil {
				var onFin func()
				if st.trace.RequestWritten != nil {
					onFin = func() { s.afterWrittenLocked(st.id, st.trace.RequestWritten) }
				}
				s.finishLocked(st.id, priority, onFin)
			} else if gone() == nil {
				cc.cancelLocked(st, Cancel)
			}
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
	}
}

// responseFromHeader builds the http.Response of a SYN_REPLY (SPDY/3 section 3.2.2).
func responseFromHeader(h Header) (*http.Response, error) {
	status, version := h.Get(":status"), h.Get(":version")
	if status == "" || version == "" {
		return nil, errors.New("spdy: response lacks :status or :version")
	}
	code, err := strconv.Atoi(strings.SplitN(status, " ", 2)[0])
	if err != nil || code < 100 || code > 999 {
		return nil, fmt.Errorf("spdy: bad :status %q", status)
	}
	major, minor, ok := http.ParseHTTPVersion(version)
	if !ok {
		return nil, fmt.Errorf("spdy: bad :version %q", version)
	}
	resp := &http.Response{
		Status: status, StatusCode: code, Proto: version, ProtoMajor: major, ProtoMinor: minor,
		Header: make(http.Header), ContentLength: -1,
	}
	if !strings.Contains(status, " ") {
		resp.Status = status + " " + http.StatusText(code)
	}
	resp.ContentLength = h.httpHeader(resp.Header, resp.ContentLength)
	return resp, nil
}

// responseBody reads a response's DATA; closing it early resets the stream (CANCEL).
type responseBody struct {
	cc     *ClientConn
	st     *clientStream
	ctx    context.Context
	closed bool
}

func (b *responseBody) Read(p []byte) (int, error) {
	s := b.cc.s
	stop := context.AfterFunc(b.ctx, func() { s.mu.Lock(); s.cond.Broadcast(); s.mu.Unlock() })
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.readBodyLocked(b.st.id, &b.st.body, p, func() bool {
		return b.st.bodyEOF || b.st.resetErr != nil || b.ctx.Err() != nil || b.closed
	}); ok {
		return n, nil
	}
	switch {
	case b.st.bodyEOF:
		delete(b.cc.streams, b.st.id)
		return 0, io.EOF
	case b.closed:
		return 0, errors.New("spdy: read on closed body")
	case b.st.resetErr != nil:
		return 0, b.st.resetErr
	case b.ctx.Err() != nil:
		b.cc.cancelLocked(b.st, Cancel)
		return 0, b.ctx.Err()
	}
	return 0, fmt.Errorf("spdy: session closed: %w", s.err)
}

func (b *responseBody) Close() error {
	s := b.cc.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	if !b.st.bodyEOF && b.st.resetErr == nil {
		b.cc.cancelLocked(b.st, Cancel)
	} else {
		if n := b.st.body.Len(); n > 0 {
			s.conn.Consumed(b.st.id, n)
			b.st.body.Reset()
			s.flushLocked()
		}
		delete(b.cc.streams, b.st.id)
	}
	s.cond.Broadcast()
	return nil
}

// Ping sends a PING and waits for its echo; it returns the round-trip time measured with the
// wall clock around the wait.
func (cc *ClientConn) Ping(ctx context.Context) (time.Duration, error) {
	s := cc.s
	s.mu.Lock()
	id, err := s.conn.Ping()
	if err != nil {
		s.mu.Unlock()
		return 0, err
	}
	ch := make(chan struct{})
	cc.pings[id] = ch
	start := time.Now()
	s.flushLocked()
	s.mu.Unlock()
	select {
	case <-ch:
		return time.Since(start), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-s.done:
		return 0, errors.New("spdy: session closed")
	}
}

// ActiveStreams is the number of requests in flight on the session.
func (cc *ClientConn) ActiveStreams() int {
	cc.s.mu.Lock()
	defer cc.s.mu.Unlock()
	l, _ := cc.s.conn.ActiveStreams()
	return l
}

// Close sends GOAWAY(OK), writes what is queued and closes the transport; requests in flight fail.
// It returns the session's error, if it ended badly.
func (cc *ClientConn) Close() error {
	s := cc.s
	s.mu.Lock()
	if !s.closed && s.conn.Err() == nil {
		s.conn.GoAway(GoAwayOK)
	}
	s.shutdownLocked(net.ErrClosed)
	s.mu.Unlock()
	cc.closeOnce.Do(func() { cc.closeErr = <-cc.runErr })
	return cc.closeErr
}

// Closed reports whether the session has ended or is ending (closed by either side, a transport
// error): no new request can be sent on it. Done closes a little later, when the session's
// goroutines have finished.
func (cc *ClientConn) Closed() bool {
	s := cc.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed || s.closing
}

// Done is closed when the session has ended.
func (cc *ClientConn) Done() <-chan struct{} { return cc.s.done }
