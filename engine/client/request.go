package client

import (
	"errors"
	"fmt"
	"mime"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/har"
	"github.com/wirelab/wirelab/engine/internal/priority"
	"github.com/wirelab/wirelab/engine/page"
)

// unset marks a phase boundary that was not reached.
const unset time.Duration = -1

// maxParseBytes caps how much of an HTML or CSS body is kept for discovery (everything is counted).
const maxParseBytes = 8 << 20

// request is one object's life in the loader. The goroutine that executes it owns it until it is
// handed back to the load loop.
type request struct {
	url       *url.URL
	origin    origin
	initiator string
	document  bool // a document (root, iframe): parsed if the response is HTML
	parse     bool // flat mode: keep HTML/CSS bodies for discovery

	// Phase boundaries on the load clock; unset when not reached. See timings().
	issued       time.Duration
	dnsStart     time.Duration
	connectStart time.Duration
	sslStart     time.Duration
	sslIsConnect bool // h3: the TLS handshake is the QUIC handshake, ssl = connect
	connectEnd   time.Duration
	sendStart    time.Duration
	sendEnd      time.Duration
	firstByte    time.Duration
	end          time.Duration

	conn          int             // connection id, 0 = none
	proto         Protocol        // what carried it when it differs from the load's (an h3 load's HTTP/2 requests); "" = the load's
	altSvc        string          // the response's Alt-Svc field (HTTP/2 responses of an h3 load that discovers h3)
	cacheResp     cacheFields     // the response fields the HTTP cache reads (a load with a Profile)
	validate      *cacheEntry     // the stored response this request revalidates (conditional request); nil = none
	cache         string          // Entry.Cache: cacheHit, cacheRevalidated or ""
	cacheBefore   *har.CacheState // the stored entry's state before the request (the HAR's cache)
	streamID      int64           // -1 = none
	status        int
	contentType   string
	contentLength int64 // -1 = not announced
	bodyBytes     int64
	body          []byte // kept when keepBody said so
	keep          bool
	retries       int
	idleGoAways   int // GOAWAYs followed from connections on which the server processed nothing (pool_h2.go)
	err           error

	kind   page.Type         // what the referrer says the object is ("" unknown)
	prio   priority.Priority // its priority under the load's policy
	signal bool              // the policy signals prio (false: PriorityNone)
	pushed bool              // the response came by server push: no request was sent
	// expected: counted by its pool as on its way (h2Pool.expect) and not arrived yet.
	expected bool

	// onFirstChunk, when set, is called (from the pool's goroutine) when the first body bytes
	// arrive: replay's partial dependencies. It hands the request to the load loop.
	onFirstChunk func(*request)
	chunkSent    bool
}

// newRequest makes the request for pr. With an error (an unusable URL) the request is still
// returned, to be recorded as failed.
func newRequest(pr plannedRequest) (*request, error) {
	r := &request{url: pr.url, initiator: pr.initiator, document: pr.document, parse: pr.parse, kind: pr.kind}
	r.reset()
	var err error
	r.origin, err = originOf(pr.url)
	return r, err
}

// reset clears everything but the identity and issue time, before a first attempt or a retry.
func (r *request) reset() {
	r.dnsStart, r.connectStart, r.sslStart, r.connectEnd, r.sslIsConnect = unset, unset, unset, unset, false
	r.sendStart, r.sendEnd, r.firstByte, r.end = unset, unset, unset, unset
	r.conn, r.streamID, r.status, r.contentType = 0, -1, 0, ""
	r.contentLength, r.bodyBytes, r.body, r.keep, r.err = -1, 0, nil, false, nil
	r.altSvc, r.cacheResp = "", cacheFields{}
}

// resetExchange clears the exchange (send onwards) but keeps the connection phases, before a
// request is sent again on the same connection.
func (r *request) resetExchange() {
	r.sendStart, r.sendEnd, r.firstByte, r.end = unset, unset, unset, unset
	r.streamID, r.status, r.contentType = -1, 0, ""
	r.contentLength, r.bodyBytes, r.body, r.keep, r.err = -1, 0, nil, false, nil
	r.altSvc, r.cacheResp = "", cacheFields{}
}

// gotHeaders records the response head: status, content type and length, and decides whether the
// body is kept for discovery.
func (r *request) gotHeaders(status int, contentType string, contentLength int64) {
	r.status, r.contentType, r.contentLength = status, contentType, contentLength
	if r.parse && textMedia(contentType) {
		switch mediaType(contentType) {
		case "text/html":
			r.keep = r.document
		case "text/css":
			r.keep = true
		}
	}
}

// gotBody counts (and keeps, if asked) a chunk of response body.
func (r *request) gotBody(p []byte) {
	if len(p) > 0 && r.onFirstChunk != nil && !r.chunkSent {
		r.chunkSent = true
		r.onFirstChunk(r)
	}
	r.bodyBytes += int64(len(p))
	if r.keep && len(r.body) < maxParseBytes {
		r.body = append(r.body, p[:min(len(p), maxParseBytes-len(r.body))]...)
	}
}

// finish ends the request at now with err (nil = the response completed). A complete response is
// still an error when its status is ≥ 400 or its body disagrees with Content-Length.
func (r *request) finish(now time.Duration, err error) {
	r.end = now
	// A 304's Content-Length is the stored representation's (RFC 9110 §8.6): it has no body.
	if err == nil && r.contentLength >= 0 && r.bodyBytes != r.contentLength && r.status != 304 {
		err = fmt.Errorf("body has %d bytes, Content-Length said %d", r.bodyBytes, r.contentLength)
	}
	if err == nil && r.status >= 400 {
		err = fmt.Errorf("status %d", r.status)
	}
	if err != nil {
		r.err = fmt.Errorf("%s: %w", r.url, err)
	}
}

// timings converts the boundaries into HAR phases. Phases are contiguous: each one runs from its
// start boundary to the next reached boundary (the last to end), so their sum is end − issued.
// A failed request's phases stop where it failed; phases it never reached are 0 (send, wait,
// receive) or -1 (dns, connect, ssl).
func (r *request) timings() Timings {
	t := Timings{DNS: -1, Connect: -1, SSL: -1}
	type mark struct {
		at  time.Duration
		dst *float64
	}
	marks := []mark{{r.issued, &t.Blocked}}
	if r.dnsStart != unset {
		marks = append(marks, mark{r.dnsStart, &t.DNS})
	}
	if r.connectStart != unset {
		marks = append(marks, mark{r.connectStart, &t.Connect})
	}
	if r.sendStart != unset {
		marks = append(marks, mark{r.sendStart, &t.Send})
	}
	if r.sendEnd != unset {
		marks = append(marks, mark{r.sendEnd, &t.Wait})
	}
	if r.firstByte != unset {
		marks = append(marks, mark{r.firstByte, &t.Receive})
	}
	for i, m := range marks {
		next := r.end
		if i+1 < len(marks) {
			next = marks[i+1].at
		}
		*m.dst = ms(next - m.at)
	}
	if r.sslStart != unset {
		sslEnd := r.connectEnd
		if sslEnd == unset {
			sslEnd = r.end
		}
		t.SSL = ms(sslEnd - r.sslStart)
		if r.sslIsConnect {
			t.SSL = t.Connect
		}
	}
	return t
}

// entry describes r; first is the load clock's reading when the load's first request was issued,
// the origin of Entry.Start.
func (r *request) entry(s *session, first time.Duration) Entry {
	e := Entry{
		URL: r.url.String(), Initiator: r.initiator, Protocol: r.protocol(s).wireName(),
		Connection: r.conn, StreamID: r.streamID, Status: r.status, ContentType: r.contentType,
		BodyBytes: r.bodyBytes, StartedAt: s.wall0.Add(r.issued), Start: r.issued - first,
		Time: ms(r.end - r.issued), Timings: r.timings(), Retries: r.retries, Pushed: r.pushed,
		Cache: r.cache, cacheBefore: r.cacheBefore,
	}
	e.ifNoneMatch, e.ifModifiedSince = r.conditional()
	if r.signal {
		e.Priority = r.prio.String()
	}
	if r.err != nil {
		e.Error = r.err.Error()
	}
	return e
}

// protocol is what carried r.
func (r *request) protocol(s *session) Protocol {
	if r.proto != "" {
		return r.proto
	}
	return s.cfg.Protocol
}

// origin is scheme://host:port of a URL.
type origin struct {
	scheme string
	host   string // lower case, no brackets, no port
	port   string
}

func (o origin) String() string { return o.scheme + "://" + net.JoinHostPort(o.host, o.port) }

// authority is the Host header / :authority value: the port only when it is not the default.
func (o origin) authority() string {
	if (o.scheme == "http" && o.port == "80") || (o.scheme == "https" && o.port == "443") {
		if strings.Contains(o.host, ":") {
			return "[" + o.host + "]"
		}
		return o.host
	}
	return net.JoinHostPort(o.host, o.port)
}

var errNoHost = errors.New("URL has no host")

func originOf(u *url.URL) (origin, error) {
	o := origin{scheme: strings.ToLower(u.Scheme), host: strings.ToLower(u.Hostname()), port: u.Port()}
	if o.host == "" {
		return o, errNoHost
	}
	if o.scheme != "http" && o.scheme != "https" {
		return o, fmt.Errorf("scheme %q: want http or https", u.Scheme)
	}
	if o.port == "" {
		o.port = "80"
		if o.scheme == "https" {
			o.port = "443"
		}
	} else if p, err := strconv.Atoi(o.port); err != nil || p < 1 || p > 65535 {
		return o, fmt.Errorf("port %q", o.port)
	}
	return o, nil
}

// mediaType is the lower-case media type of a Content-Type value ("" if unparsable).
func mediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	return mt
}

// textMedia reports whether a Content-Type value may have a text/* media type: mediaType (lower
// case, trimmed) can only be text/html or text/css if it does. An image's value is then not
// parsed: mime.ParseMediaType cost a load generator's page loop about 7 % of its CPU.
func textMedia(contentType string) bool {
	v := strings.TrimSpace(contentType)
	return len(v) >= 5 && strings.EqualFold(v[:5], "text/")
}

// requestPath is the request target of u: path and query, never empty.
func requestPath(u *url.URL) string {
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	return p
}
