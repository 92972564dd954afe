package spdy

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Server serves an http.Handler over SPDY/3.1 connections.
type Server struct {
	// Handler answers requests. Required.
	Handler http.Handler
	// Config is the session configuration (windows, concurrency, limits); zero means defaults.
	Config Config
	// DataChunkSize is the largest DATA frame sent, bytes. Default 4096 (mod_spdy's).
	DataChunkSize int
	// TLSConfig, if set, makes Serve wrap its listener in TLS with "spdy/3.1" offered by ALPN.
	// Nil: connections are served as they come (those of a TLS listener must have negotiated
	// "spdy/3.1"; plain ones are taken as speaking SPDY).
	TLSConfig *tls.Config
	// Plain makes Serve ignore TLSConfig and serve cleartext SPDY (tests, h2c-like setups).
	// Default false.
	Plain bool
	// DataSent, if set, is called for every DATA frame handed to a session, in send order, with
	// the stream, its priority and the payload size. It runs with the session locked: keep it short.
	DataSent func(streamID uint32, priority uint8, n int)
	// BaseContext, if set, returns the context requests on connection c derive from (as
	// http.Server.ConnContext); nil means context.Background().
	BaseContext func(c net.Conn) context.Context
	// ErrorLog receives connection errors; nil means the standard logger.
	ErrorLog *log.Logger

	mu       sync.Mutex
	sessions map[*session]struct{}
	lns      map[net.Listener]struct{}
	shut     bool
}

// ServeConn serves one connection until it ends. A *tls.Conn is handshaken first and must have
// negotiated ALPN "spdy/3.1"; any other net.Conn (e.g. net.Pipe in tests) is taken as already
// speaking SPDY.
func (srv *Server) ServeConn(nc net.Conn) error {
	if srv.Handler == nil {
		nc.Close()
		return errors.New("spdy: Server.Handler is nil")
	}
	if tc, ok := nc.(*tls.Conn); ok {
		if err := tc.Handshake(); err != nil {
			nc.Close()
			return fmt.Errorf("spdy: TLS handshake: %w", err)
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != NextProtoTLS {
			nc.Close()
			return fmt.Errorf("spdy: ALPN negotiated %q, want %q", p, NextProtoTLS)
		}
	}
	conn, err := NewConn(RoleServer, srv.Config)
	if err != nil {
		nc.Close()
		return err
	}
	s := newSession(nc, conn, srv.DataChunkSize)
	sc := &serverConn{srv: srv, s: s, streams: make(map[uint32]*serverStream), base: context.Background()}
	if srv.BaseContext != nil {
		sc.base = srv.BaseContext(nc)
	}
	s.handle = sc.handle
	s.onClosed = sc.closed
	if srv.DataSent != nil {
		s.dataSent = func(id uint32, n int) {
			p, _ := conn.StreamPriority(id)
			srv.DataSent(id, p, n)
		}
	}
	srv.mu.Lock()
	if srv.shut {
		srv.mu.Unlock()
		nc.Close()
		return http.ErrServerClosed
	}
	if srv.sessions == nil {
		srv.sessions = make(map[*session]struct{})
	}
	srv.sessions[s] = struct{}{}
	srv.mu.Unlock()
	defer func() {
		srv.mu.Lock()
		delete(srv.sessions, s)
		srv.mu.Unlock()
	}()
	return s.run()
}

// Serve accepts connections on l and serves each in its own goroutine until l fails or Close is
// called. A non-TLS listener is wrapped with TLSConfig unless Plain is set.
func (srv *Server) Serve(l net.Listener) error {
	if srv.TLSConfig != nil && !srv.Plain {
		l = tls.NewListener(l, ConfigureTLS(srv.TLSConfig))
	}
	srv.mu.Lock()
	if srv.shut {
		srv.mu.Unlock()
		return http.ErrServerClosed
	}
	if srv.lns == nil {
		srv.lns = make(map[net.Listener]struct{})
	}
	srv.lns[l] = struct{}{}
	srv.mu.Unlock()
	for {
		nc, err := l.Accept()
		if err != nil {
			srv.mu.Lock()
			shut := srv.shut
			srv.mu.Unlock()
			if shut {
				return http.ErrServerClosed
			}
			return err
		}
		go func() {
			if err := srv.ServeConn(nc); err != nil {
				srv.logf("spdy: %s: %v", nc.RemoteAddr(), err)
			}
		}()
	}
}

// Close stops the listeners and ends every session with GOAWAY(OK).
func (srv *Server) Close() error {
	srv.mu.Lock()
	srv.shut = true
	for l := range srv.lns {
		l.Close()
	}
	sessions := make([]*session, 0, len(srv.sessions))
	for s := range srv.sessions {
		sessions = append(sessions, s)
	}
	srv.mu.Unlock()
	for _, s := range sessions {
		s.mu.Lock()
		s.conn.GoAway(GoAwayOK)
		s.shutdownLocked(http.ErrServerClosed)
		s.mu.Unlock()
	}
	return nil
}

func (srv *Server) logf(format string, args ...any) {
	if srv.ErrorLog != nil {
		srv.ErrorLog.Printf(format, args...)
	} else {
		log.Printf(format, args...)
	}
}

// ConfigureTLS returns a copy of cfg that offers ALPN "spdy/3.1" first.
func ConfigureTLS(cfg *tls.Config) *tls.Config {
	c := cfg.Clone()
	if !slices.Contains(c.NextProtos, NextProtoTLS) {
		c.NextProtos = append([]string{NextProtoTLS}, c.NextProtos...)
	}
	return c
}

// serverConn is the HTTP layer of one server session.
type serverConn struct {
	srv     *Server
	s       *session
	streams map[uint32]*serverStream
	base    context.Context // requests' parent context
}

// serverStream is one request being served.
type serverStream struct {
	id       uint32
	priority uint8
	body     bytes.Buffer // request body received, not yet read
	bodyEOF  bool
	reset    bool // RST_STREAM either way
	cancel   context.CancelFunc
}

func (sc *serverConn) handle(events []Event) {
	for _, e := range events {
		switch e := e.(type) {
		case *StreamOpened:
			sc.open(e)
		case *DataReceived:
			if st, ok := sc.streams[e.StreamID]; ok {
				st.body.Write(e.Data)
			} else {
				sc.s.conn.Consumed(e.StreamID, len(e.Data))
			}
		case *StreamEnded:
			if st, ok := sc.streams[e.StreamID]; ok {
				st.bodyEOF = true
			}
		case *StreamReset:
			if st, ok := sc.streams[e.StreamID]; ok {
				st.reset = true
				st.cancel()
				sc.s.dropLocked(e.StreamID)
			}
		case *GoAway:
			// The client will open nothing more; streams in progress finish.
		}
	}
	sc.s.cond.Broadcast()
}

// requestFromHeader builds the http.Request of a SYN_STREAM (SPDY/3 section 3.2.1).
func requestFromHeader(h Header) (*http.Request, error) {
	method, path, version, host, scheme := h.Get(":method"), h.Get(":path"), h.Get(":version"), h.Get(":host"), h.Get(":scheme")
	if method == "" || path == "" || version == "" || host == "" || scheme == "" {
		return nil, fmt.Errorf("request lacks one of :method :path :version :host :scheme")
	}
	major, minor, ok := http.ParseHTTPVersion(version)
	if !ok {
		return nil, fmt.Errorf("bad :version %q", version)
	}
	u, err := url.ParseRequestURI(path)
	if err != nil {
		return nil, fmt.Errorf("bad :path %q: %w", path, err)
	}
	u.Scheme, u.Host = scheme, host
	r := &http.Request{
		Method: method, URL: u, Proto: version, ProtoMajor: major, ProtoMinor: minor,
		Header: make(http.Header), Host: host, RequestURI: path,
	}
	r.ContentLength = h.httpHeader(r.Header, r.ContentLength)
	return r, nil
}

func (sc *serverConn) open(e *StreamOpened) {
	if e.Unidirectional {
		sc.s.conn.ResetStream(e.StreamID, RefusedStream)
		return
	}
	req, err := requestFromHeader(e.Header)
	if err != nil {
		sc.s.conn.ResetStream(e.StreamID, ProtocolError)
		return
	}
	st := &serverStream{id: e.StreamID, priority: e.Priority}
	sc.start(st, req, false)
}

// start runs the handler for a request on stream st (pushed: a stream this server pushed, whose
// request it made up); called with the session locked.
func (sc *serverConn) start(st *serverStream, req *http.Request, pushed bool) {
	ctx, cancel := context.WithCancel(sc.base)
	st.cancel = cancel
	sc.streams[st.id] = st
	req = req.WithContext(ctx)
	req.RemoteAddr = sc.s.nc.RemoteAddr().String()
	if tc, ok := sc.s.nc.(*tls.Conn); ok {
		cs := tc.ConnectionState()
		req.TLS = &cs
	}
	if pushed {
		st.bodyEOF = true
		req.Body = http.NoBody
	} else {
		req.Body = &requestBody{sc: sc, st: st}
	}
	w := &responseWriter{sc: sc, st: st, header: make(http.Header), req: req, pushed: pushed}
	go sc.serve(w, req)
}

func (sc *serverConn) serve(w *responseWriter, req *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler {
				sc.srv.logf("spdy: panic serving %s: %v", req.URL, p)
			}
			sc.s.mu.Lock()
			if !w.st.reset {
				sc.s.conn.ResetStream(w.st.id, InternalError)
			}
			sc.finishLocked(w.st)
			sc.s.flushLocked()
			sc.s.mu.Unlock()
			return
		}
		w.finish()
	}()
	sc.srv.Handler.ServeHTTP(w, req)
}

func (sc *serverConn) finishLocked(st *serverStream) {
	st.cancel()
	if cur, ok := sc.streams[st.id]; ok && cur == st {
		delete(sc.streams, st.id)
	}
	// Request bytes the handler never read still count against the session window.
	if n := st.body.Len(); n > 0 {
		sc.s.conn.Consumed(st.id, n)
		st.body.Reset()
	}
}

func (sc *serverConn) closed() {
	sc.s.mu.Lock()
	defer sc.s.mu.Unlock()
	for _, st := range sc.streams {
		st.reset = true
		st.cancel()
	}
}

// requestBody is the handler's view of the request's DATA.
type requestBody struct {
	sc *serverConn
	st *serverStream
}

func (b *requestBody) Read(p []byte) (int, error) {
	s := b.sc.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.readBodyLocked(b.st.id, &b.st.body, p, func() bool { return b.st.bodyEOF || b.st.reset }); ok {
		return n, nil
	}
	if b.st.bodyEOF {
		return 0, io.EOF
	}
	return 0, errors.New("spdy: stream reset")
}

func (b *requestBody) Close() error { return nil }

// responseWriter is the handler's http.ResponseWriter (and http.Flusher, http.Pusher).
type responseWriter struct {
	sc          *serverConn
	st          *serverStream
	req         *http.Request
	header      http.Header
	status      int
	replied     bool
	wroteHeader bool
	finished    bool
	pushed      bool // the response of a pushed stream: headers go in HEADERS, not SYN_REPLY
}

var (
	_ http.Flusher = (*responseWriter)(nil)
	_ http.Pusher  = (*responseWriter)(nil)
)

// StreamID is the response's stream: the client's request stream (odd) or a pushed stream (even).
func (w *responseWriter) StreamID() uint32 { return w.st.id }

// Priority is the stream's SPDY priority, 0 (highest) … 7: the request's, or for a pushed stream
// its associated stream's.
func (w *responseWriter) Priority() uint8 { return w.st.priority }

// ErrRecursivePush: a pushed response cannot push (SPDY/3 §3.3.1: pushes are associated with a
// stream the client opened).
var ErrRecursivePush = errors.New("spdy: a pushed response cannot push")

// Push implements http.Pusher: it opens a unidirectional stream associated with the request's
// stream (SYN_STREAM carrying :scheme, :host and :path, with the request stream's priority, as
// mod_spdy did) and serves the pushed request with the Handler, whose response headers follow in a
// HEADERS frame. target is an absolute path (on the request's host) or an absolute URL of the
// request's scheme; opts may give the method (GET or HEAD) and request headers. Call it before
// writing anything that lets the client discover target (SPDY/3 §3.3.1). It fails when the client's
// MAX_CONCURRENT_STREAMS is reached (ErrTooManyStreams) or the stream or session is gone.
func (w *responseWriter) Push(target string, opts *http.PushOptions) error {
	if w.pushed {
		return ErrRecursivePush
	}
	if opts == nil {
		opts = &http.PushOptions{}
	}
	method := opts.Method
	if method == "" {
		method = http.MethodGet
	}
	if method != http.MethodGet && method != http.MethodHead {
		return fmt.Errorf("spdy: push method %q: must be GET or HEAD", method)
	}
	scheme := w.req.URL.Scheme // the request's :scheme
	u, err := url.Parse(target)
	if err != nil {
		return fmt.Errorf("spdy: push target %q: %w", target, err)
	}
	switch {
	case u.Scheme == "" && strings.HasPrefix(target, "/"):
		u.Scheme, u.Host = scheme, w.req.Host
	case u.Scheme != scheme || u.Host == "":
		return fmt.Errorf("spdy: push target %q: want an absolute path or a %s URL with a host", target, scheme)
	}
	req := &http.Request{
		Method: method, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: opts.Header.Clone(), Host: u.Host, RequestURI: u.RequestURI(),
	}
	if req.Header == nil {
		req.Header = make(http.Header)
	}
	h := Header{{":scheme", u.Scheme}, {":host", u.Host}, {":path", u.RequestURI()}}
	s := w.sc.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := w.gone(); err != nil {
		return err
	}
	id, err := s.conn.PushStream(w.st.id, h, w.st.priority, false)
	if err != nil {
		return err
	}
	w.sc.start(&serverStream{id: id, priority: w.st.priority}, req, true)
	s.flushLocked()
	return nil
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(code int) {
	if w.wroteHeader || code < 100 || code > 999 {
		return
	}
	if code < 200 {
		return // SPDY/3 has no interim responses
	}
	w.wroteHeader = true
	w.status = code
}

// responseHeader turns status and headers into a SYN_REPLY block (SPDY/3 section 3.2.2).
func responseHeader(status int, hdr http.Header) Header {
	h := Header{{":status", strconv.Itoa(status) + " " + http.StatusText(status)}, {":version", "HTTP/1.1"}}
	if http.StatusText(status) == "" {
		h[0].Value = strconv.Itoa(status)
	}
	return append(h, fieldsFromHTTPHeader(hdr)...)
}

// fieldsFromHTTPHeader lowercases names, joins repeated values with NUL and drops what SPDY forbids
// (connection-specific headers) in a stable order.
func fieldsFromHTTPHeader(hdr http.Header) Header {
	var h Header
	keys := make([]string, 0, len(hdr))
	for k := range hdr {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	seen := map[string]int{}
	for _, k := range keys {
		name := strings.ToLower(k)
		switch name {
		case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "host":
			continue
		}
		var vals []string
		for _, v := range hdr[k] {
			if v != "" && !strings.Contains(v, "\x00") {
				vals = append(vals, v)
			}
		}
		val := strings.Join(vals, "\x00")
		if i, dup := seen[name]; dup {
			if val != "" {
				h[i].Value = strings.Trim(h[i].Value+"\x00"+val, "\x00")
			}
			continue
		}
		if name == "" || strings.HasPrefix(name, ":") {
			continue
		}
		seen[name] = len(h)
		h = append(h, HeaderField{Name: name, Value: val})
	}
	return h
}

func (w *responseWriter) gone() error {
	if w.st.reset {
		return errors.New("spdy: stream reset by the client")
	}
	if w.sc.s.closed || w.sc.s.conn.Err() != nil {
		return errors.New("spdy: session closed")
	}
	return nil
}

// replyLocked sends the SYN_REPLY (with FIN if the response has no body).
func (w *responseWriter) replyLocked(fin bool) error {
	if w.replied {
		return nil
	}
	if err := w.gone(); err != nil {
		return err
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	w.replied = true
	if w.pushed {
		// A pushed stream is already open: its status and headers go in HEADERS (SPDY/3 §3.3.1).
		if err := w.sc.s.conn.SendHeaders(w.st.id, responseHeader(w.status, w.header), fin); err != nil {
			return err
		}
	} else if err := w.sc.s.conn.Reply(w.st.id, responseHeader(w.status, w.header), fin); err != nil {
		return err
	}
	w.sc.s.flushLocked()
	return nil
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		if w.header.Get("Content-Type") == "" && len(p) > 0 {
			w.header.Set("Content-Type", http.DetectContentType(p))
		}
		w.WriteHeader(http.StatusOK)
	}
	if w.req.Method == http.MethodHead || w.status == http.StatusNoContent || w.status == http.StatusNotModified {
		return len(p), nil
	}
	s := w.sc.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := w.replyLocked(false); err != nil {
		return 0, err
	}
	return s.queueDataLocked(w.st.id, w.st.priority, p, w.gone)
}

func (w *responseWriter) Flush() {
	s := w.sc.s
	s.mu.Lock()
	defer s.mu.Unlock()
	w.replyLocked(false)
}

// finish ends the response after the handler returns: SYN_REPLY with FIN, or FIN after the data.
func (w *responseWriter) finish() {
	s := w.sc.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.finished {
		return
	}
	w.finished = true
	if w.gone() == nil {
		if !w.replied {
			w.replyLocked(true)
		} else {
			s.finishLocked(w.st.id, w.st.priority, nil)
		}
	}
	w.sc.finishLocked(w.st)
	s.flushLocked()
}
