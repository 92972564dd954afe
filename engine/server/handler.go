package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"golang.org/x/net/http/httpguts"

	"github.com/wirelab/wirelab/engine/page"
)

// Record is one request the server answered.
type Record struct {
	Start    time.Time     `json:"start"`     // when the handler started
	Duration time.Duration `json:"duration"`  // until the last body byte was handed to the connection
	Protocol Protocol      `json:"protocol"`  // h1, h1s, h2, h2c, h3 or spdy3
	Origin   int           `json:"origin"`    // origin index (0 = s1)
	Conn     uint64        `json:"conn"`      // server-assigned connection id (1, 2, …)
	Stream   uint64        `json:"stream_id"` // h2/h2c/h3 stream id; 0 for HTTP/1.1
	Remote   string        `json:"remote"`
	Method   string        `json:"method"`
	Path     string        `json:"path"`
	Token    string        `json:"token"`  // the load token ("" when the path had none)
	Object   string        `json:"object"` // object id ("" when not found)
	Status   int           `json:"status"`
	Bytes    int64         `json:"bytes"` // body bytes written
	Error    string        `json:"error,omitempty"`
	// Pushed marks a response the server pushed (h2, h2c, spdy3: a stream it opened, even id).
	Pushed bool `json:"pushed,omitempty"`
	// Pushes is, for a root document, how many objects were pushed with it (Config.Push).
	Pushes int `json:"pushes,omitempty"`
	// Priority is the priority the request signalled: its priority header field (h2, h2c, h3;
	// RFC 9218) or "u=N" for SPDY priority N (spdy3); "" when it signalled none.
	Priority string `json:"priority,omitempty"`
	// Sent is the stream's response data in its connection's send order (h2, h2c, h3, spdy3;
	// nil for HTTP/1.x and for responses without body bytes).
	Sent *StreamSend `json:"sent,omitempty"`
}

// connInfo is one transport connection.
type connInfo struct {
	id     uint64
	origin int
	proto  Protocol
	remote string
	opened time.Time
	h2     *h2Observer  // h2/h2c only
	sched  *h2Scheduler // h2/h2c only
	sends  *sendLog     // h2, h2c, h3, spdy3: the order response data was sent in

	mu         sync.Mutex
	registered bool
	requests   int
	active     int
	maxActive  int
}

// ConnStats describes one connection the server served.
type ConnStats struct {
	ID        uint64    `json:"id"`
	Protocol  Protocol  `json:"protocol"`
	Origin    int       `json:"origin"`
	Remote    string    `json:"remote"`
	Opened    time.Time `json:"opened"`
	Requests  int       `json:"requests"`
	MaxActive int       `json:"max_active_handlers"` // most requests in a handler at once
	H2        *H2Stats  `json:"h2,omitempty"`        // frame-level view (h2, h2c)
	// Sends is the send-order log (h2, h2c, h3, spdy3): each stream's data, in the order the
	// streams finished (by LastSeq).
	Sends []StreamSend `json:"sends,omitempty"`
	// SendRuns is the connection's data in send order, consecutive units of one stream merged
	// (at most 100 000 runs; SendRunsLost counts the runs after those).
	SendRuns     []SendRun `json:"send_runs,omitempty"`
	SendRunsLost int       `json:"send_runs_lost,omitempty"`
}

type connKey struct{}

func withConn(ctx context.Context, c *connInfo) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

func (s *Server) newConn(origin int, proto Protocol, remote net.Addr) *connInfo {
	r := ""
	if remote != nil {
		r = remote.String()
	}
	return &connInfo{id: s.connSeq.Add(1), origin: origin, proto: proto, remote: r, opened: time.Now()}
}

// register lists the connection in Conns (once).
func (s *Server) register(c *connInfo) {
	c.mu.Lock()
	done := c.registered
	c.registered = true
	c.mu.Unlock()
	if done {
		return
	}
	s.mu.Lock()
	s.conns = append(s.conns, c)
	s.mu.Unlock()
}

// Conns describes every connection that negotiated h2/h2c/h3 or carried an HTTP/1.1 request.
func (s *Server) Conns() []ConnStats {
	s.mu.Lock()
	conns := append([]*connInfo(nil), s.conns...)
	s.mu.Unlock()
	out := make([]ConnStats, 0, len(conns))
	for _, c := range conns {
		c.mu.Lock()
		st := ConnStats{ID: c.id, Protocol: c.proto, Origin: c.origin, Remote: c.remote, Opened: c.opened,
			Requests: c.requests, MaxActive: c.maxActive}
		c.mu.Unlock()
		if c.h2 != nil {
			h := c.h2.snapshot()
			st.H2 = &h
		}
		if c.sends != nil {
			st.Sends, st.SendRuns, st.SendRunsLost = c.sends.snapshot()
		}
		out = append(out, st)
	}
	return out
}

// Records returns the requests recorded so far, in completion order, and how many were dropped
// because MaxRecords was reached. Each record's Sent is read from its connection's send log now
// (an h2 stream's last DATA frame may leave after its handler returned).
func (s *Server) Records() ([]Record, int64) {
	s.mu.Lock()
	out := append([]Record(nil), s.records...)
	dropped := s.dropped
	logs := make(map[uint64]*sendLog, len(s.conns))
	for _, c := range s.conns {
		if c.sends != nil {
			logs[c.id] = c.sends
		}
	}
	s.mu.Unlock()
	for i := range out {
		if l := logs[out[i].Conn]; l != nil {
			if st, ok := l.stream(out[i].Stream); ok {
				out[i].Sent = &st
			}
		}
	}
	return out, dropped
}

// ResetRecords forgets the records and connections seen so far (between loads).
func (s *Server) ResetRecords() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records, s.dropped, s.conns = nil, 0, nil
}

func (s *Server) record(r Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.records) >= s.cfg.MaxRecords {
		s.dropped++
		return
	}
	s.records = append(s.records, r)
}

// defaultWrite is the write size when WriteChunkBytes is 0. It is large because a multiplexing
// write scheduler can only choose among the streams that have data queued: x/net's HTTP/2 handler
// writes (and quic-go's stream writes) return only once their data has been sent, so a stream is
// "not ready" between one write returning and the handler's next write, and a less urgent stream
// gets the link meanwhile. One write per 256 KiB keeps that to one gap per 256 KiB (none for
// smaller objects) instead of one per 32 KiB.
const defaultWrite = 256 << 10

// handler serves the page's objects for one origin and protocol.
func (s *Server) handler(origin int, proto Protocol) http.Handler {
	port := s.ports.Port(proto)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if proto == H1 && s.cfg.H2CUpgrade && isH2CUpgrade(r.Header) {
			s.upgradeH2C(origin, w, r)
			return
		}
		// Close waits for handlers; a request arriving once it has begun is not one to wait for
		// (Add concurrent with Wait is a race): it is aborted, its connection is closing anyway.
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			panic(http.ErrAbortHandler)
		}
		s.handlers.Add(1)
		s.mu.Unlock()
		defer s.handlers.Done()
		rec := Record{Start: time.Now(), Protocol: proto, Origin: origin, Remote: r.RemoteAddr,
			Method: r.Method, Path: r.URL.Path}
		info, _ := r.Context().Value(connKey{}).(*connInfo)
		if info != nil {
			s.register(info)
			rec.Conn = info.id
			info.mu.Lock()
			info.requests++
			info.active++
			info.maxActive = max(info.maxActive, info.active)
			info.mu.Unlock()
			defer func() {
				info.mu.Lock()
				info.active--
				info.mu.Unlock()
			}()
		}
		rec.Stream = streamID(w, r, proto)
		rec.Priority = s.applyPriority(w, r, proto, info, rec.Stream)
		rec.Pushed = proto.pushes() && rec.Stream != 0 && rec.Stream%2 == 0
		defer func() {
			rec.Duration = time.Since(rec.Start)
			s.record(rec)
		}()
		h := w.Header()
		h.Set("Cache-Control", page.CacheNone) // a page object gets its own policy below
		if s.cfg.AltSvc != "" {
			h.Set("Alt-Svc", s.cfg.AltSvc)
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			// Read the request body before answering, so that a malformed body (e.g. an h2
			// content-length that disagrees with the DATA frames) is always detected and reset by
			// the protocol layer rather than racing with the 405 (h2spec 8.1.2.6).
			_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
			h.Set("Allow", "GET, HEAD")
			rec.Status = http.StatusMethodNotAllowed
			http.Error(w, "method not allowed", rec.Status)
			return
		}
		token, objPath, ok := page.SplitPath(r.URL.Path)
		rec.Token = token
		idx, found := -1, false
		if ok {
			if objPath == "/" {
				idx, found = 0, true
			} else {
				idx, found = s.index[objPath]
			}
		}
		if !found || s.page.Objects[idx].Origin != origin {
			rec.Status = http.StatusNotFound
			http.Error(w, "not found", rec.Status)
			return
		}
		obj := s.page.Objects[idx]
		rec.Object = obj.ID
		if idx == 0 && r.Method == http.MethodGet && proto.pushes() && !rec.Pushed {
			rec.Pushes = s.pushObjects(w, token) // before the HTML that references them
		}
		base := page.Base{Scheme: proto.Scheme(), Port: port, Token: token, Host: s.cfg.Host}
		// A validator, as a file server sends one: the body is a function of the object and the
		// load's base, so they name it. A no-cache document is revalidated with 304 (RFC 9110
		// §13.1.2), as nginx, Apache and Caddy answer for the same page.
		etag := entityTag(obj, base)
		if r.Method == http.MethodGet && httpguts.HeaderValuesContainsToken(r.Header.Values("If-None-Match"), etag) {
			h.Set("ETag", etag)
			h.Set("Cache-Control", obj.CachePolicy())
			rec.Status = http.StatusNotModified
			w.WriteHeader(rec.Status)
			return
		}
		body, err := s.page.Body(idx, base)
		if errors.Is(err, page.ErrOutsideRoot) { // a file swapped for a link out of root_dir: not served
			rec.Status, rec.Error = http.StatusNotFound, err.Error()
			http.Error(w, "not found", rec.Status)
			return
		}
		if err != nil {
			rec.Status, rec.Error = http.StatusInternalServerError, err.Error()
			http.Error(w, "internal error", rec.Status)
			return
		}
		h.Set("Content-Type", obj.ContentType)
		h.Set("Cache-Control", obj.CachePolicy())
		h.Set("ETag", etag)
		h.Set("Content-Length", strconv.FormatInt(obj.Size, 10))
		h.Set("Access-Control-Allow-Origin", "*")
		rec.Status = http.StatusOK
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodHead {
			return
		}
		rec.Bytes, err = s.writeBody(w, body)
		if err != nil {
			rec.Error = err.Error()
		}
	})
}

// entityTag is the strong ETag of obj's body as served for base: the FNV-64a hash of its ID, size
// and base (NUL-separated, decimal numbers) in 16 hex digits. Computed on every response, so
// without fmt: one allocation, the string (entityTagFmt is the definition, which a test holds it to).
func entityTag(obj page.Object, base page.Base) string {
	var scratch [160]byte
	b := append(scratch[:0], obj.ID...)
	b = append(b, 0)
	b = strconv.AppendInt(b, obj.Size, 10)
	b = append(b, 0)
	b = append(b, base.Scheme...)
	b = append(b, 0)
	b = strconv.AppendInt(b, int64(base.Port), 10)
	b = append(b, 0)
	b = append(b, base.Token...)
	b = append(b, 0)
	b = append(b, base.Host...)
	const offset64, prime64 = 14695981039346656037, 1099511628211
	h := uint64(offset64)
	for _, c := range b {
		h ^= uint64(c)
		h *= prime64
	}
	var out [18]byte
	out[0], out[17] = '"', '"'
	const hexDigits = "0123456789abcdef"
	for i := 16; i >= 1; i-- {
		out[i] = hexDigits[h&0xf]
		h >>= 4
	}
	return string(out[:])
}

// isH2CUpgrade reports whether an HTTP/1.1 request asks to upgrade to h2c (RFC 7540 §3.2):
// Upgrade names h2c and Connection names HTTP2-Settings.
func isH2CUpgrade(h http.Header) bool {
	return httpguts.HeaderValuesContainsToken(h.Values("Upgrade"), "h2c") &&
		httpguts.HeaderValuesContainsToken(h.Values("Connection"), "HTTP2-Settings") &&
		len(h.Values("HTTP2-Settings")) == 1
}

// upgradeH2C takes over the connection of an HTTP/1.1 request that asks for h2c (H2CUpgrade):
// 101 Switching Protocols, then HTTP/2 on the same connection with the request as stream 1. A
// request whose HTTP2-Settings is not base64url gets 400 on HTTP/1.1.
func (s *Server) upgradeH2C(origin int, w http.ResponseWriter, r *http.Request) {
	settings, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(r.Header.Get("HTTP2-Settings"), "="))
	if err != nil || len(settings)%6 != 0 {
		http.Error(w, "bad HTTP2-Settings", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if !s.trackRaw(conn, true) { // the server is closing
		conn.Close()
		return
	}
	defer func() {
		conn.Close()
		s.trackRaw(conn, false)
	}()
	if _, err := rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"); err != nil {
		return
	}
	if err := rw.Flush(); err != nil {
		return
	}
	s.serveH2Upgraded(origin, H2C, &bufferedConn{Conn: conn, r: rw.Reader}, nil, r, settings)
}

// applyPriority returns the priority the request signalled (Record.Priority). On h2/h2c it also
// hands the priority header to the connection's write scheduler before anything of the response
// is queued; h3 (quic-go's HTTP/3 server) and spdy3 (the SYN_STREAM's priority) apply it themselves.
func (s *Server) applyPriority(w http.ResponseWriter, r *http.Request, proto Protocol, info *connInfo, stream uint64) string {
	if pw, ok := w.(interface{ Priority() uint8 }); ok && proto == SPDY3 {
		return "u=" + strconv.Itoa(int(pw.Priority()))
	}
	values := r.Header.Values("Priority")
	value := strings.Join(values, ", ")
	if info != nil && info.sched != nil && stream != 0 {
		info.sched.requestPriority(uint32(stream), value, len(values) > 0)
	}
	return value
}

// writeBody writes the body in WriteChunkBytes pieces, flushing each, or in defaultWrite pieces.
func (s *Server) writeBody(w http.ResponseWriter, body *page.Body) (int64, error) {
	chunk := s.cfg.WriteChunkBytes
	flush := chunk > 0
	if !flush {
		chunk = defaultWrite
	}
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, max(1, min(int64(chunk), body.Len())))
	var total int64
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			m, err := w.Write(buf[:n])
			total += int64(m)
			if err != nil {
				return total, err
			}
			if flush && flusher != nil {
				flusher.Flush()
			}
		}
		if rerr != nil {
			return total, nil // io.EOF: a Body has no other errors
		}
	}
}

// streamID finds the HTTP/2 or HTTP/3 stream id of a request (0 for HTTP/1.1). For h3 quic-go's
// request body exposes it. golang.org/x/net/http2 does not export it: it is read from the
// responseWriter's unexported state by reflection (read-only); TestStreamIDs fails if a new
// version moves it.
// The request of an h2c upgrade (H2CUpgrade) is served as stream 1 but keeps its HTTP/1.1
// version, so proto rather than the request's version says whether it is HTTP/2.
func streamID(w http.ResponseWriter, r *http.Request, proto Protocol) uint64 {
	if sw, ok := w.(interface{ StreamID() uint32 }); ok { // spdy3
		return uint64(sw.StreamID())
	}
	if r.ProtoMajor == 3 {
		if b, ok := r.Body.(interface{ StreamID() quic.StreamID }); ok {
			return uint64(b.StreamID())
		}
		return 0
	}
	if proto != H2 && proto != H2C {
		return 0
	}
	v := reflect.ValueOf(w)
	for _, field := range []string{"rws", "stream", "id"} {
		if v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			if v.IsNil() {
				return 0
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return 0
		}
		v = v.FieldByName(field)
		if !v.IsValid() {
			return 0
		}
	}
	if v.Kind() != reflect.Uint32 {
		return 0
	}
	return v.Uint()
}
