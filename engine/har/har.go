// Package har holds HAR 1.2 types (http://www.softwareishard.com/blog/har-12-spec/) and a writer,
// with wirelab's extensions on entries: _connection (connection id), _protocol (HTTP/1.1, h2, h3)
// and _stream_id, and Chrome's _initiator, _priority, _resourceType and _transferSize. Loaders fill Entries from their timings; Write emits the file.
package har

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"
)

// Version is the HAR version written.
const Version = "1.2"

// File is a HAR document: {"log": …}.
type File struct {
	Log *Log `json:"log"`
}

// Log is the root of the data.
type Log struct {
	Version string   `json:"version"` // "1.2"; Write fills it when empty
	Creator Creator  `json:"creator"`
	Browser *Creator `json:"browser,omitempty"`
	Pages   []Page   `json:"pages,omitempty"`
	Entries []Entry  `json:"entries"`
	Comment string   `json:"comment,omitempty"`
}

// Creator names the application that wrote the log (or the browser).
type Creator struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Comment string `json:"comment,omitempty"`
}

// Page is one page load.
type Page struct {
	StartedDateTime time.Time   `json:"startedDateTime"`
	ID              string      `json:"id"`
	Title           string      `json:"title"`
	PageTimings     PageTimings `json:"pageTimings"`
	Comment         string      `json:"comment,omitempty"`
}

// PageTimings in milliseconds since StartedDateTime; -1 when not known.
type PageTimings struct {
	OnContentLoad float64 `json:"onContentLoad"`
	OnLoad        float64 `json:"onLoad"`
	Comment       string  `json:"comment,omitempty"`
}

// Entry is one request/response.
type Entry struct {
	Pageref         string    `json:"pageref,omitempty"`
	StartedDateTime time.Time `json:"startedDateTime"`
	// Time is the total time of the request in ms: the sum of the non-negative timings
	// (ssl excluded, as it is part of connect). Write computes it when it is 0.
	Time            float64  `json:"time"`
	Request         Request  `json:"request"`
	Response        Response `json:"response"`
	Cache           Cache    `json:"cache"`
	Timings         Timings  `json:"timings"`
	ServerIPAddress string   `json:"serverIPAddress,omitempty"`
	// Connection is HAR's own field: the id of the transport connection (string).
	Connection string `json:"connection,omitempty"`
	Comment    string `json:"comment,omitempty"`

	// wirelab extensions
	ConnectionID string  `json:"_connection"`          // the connection id (same as Connection)
	Protocol     string  `json:"_protocol"`            // "HTTP/1.1", "h2", "h3" or "spdy/3.1"
	StreamID     *uint64 `json:"_stream_id,omitempty"` // h2/h3/spdy stream id; absent for HTTP/1.1 and when unknown (Chromium)
	// WasPushed is 1 for a response the server pushed (no request was sent), as Chrome's HAR
	// export writes it; absent otherwise.
	WasPushed int `json:"_was_pushed,omitempty"`
	// PrioritySignal is the priority the engine's loader signalled for the request: RFC 9218's
	// field value such as "u=1" (for SPDY its 0–7 priority written the same way); absent when none.
	PrioritySignal string `json:"_priority_signal,omitempty"`

	// Chrome's extensions (DevTools' HAR export), set by the browser loader.
	Initiator    *Initiator `json:"_initiator,omitempty"`    // what caused the request
	Priority     string     `json:"_priority,omitempty"`     // Chromium's final priority: VeryHigh, High, Medium, Low, VeryLow
	ResourceType string     `json:"_resourceType,omitempty"` // document, stylesheet, script, image, font, fetch, …
	TransferSize *int64     `json:"_transferSize,omitempty"` // bytes received for the entry: headers, framing and body
}

// Initiator is Chrome's _initiator: what caused a request.
type Initiator struct {
	Type       string `json:"type"`                 // parser, script, preload, other, …
	URL        string `json:"url,omitempty"`        // the document or stylesheet that referenced it
	LineNumber *int   `json:"lineNumber,omitempty"` // 0-based line in URL (parser)
}

// Stream returns a stream id for Entry.StreamID.
func Stream(id uint64) *uint64 { return &id }

// Request is the request sent.
type Request struct {
	Method      string      `json:"method"`
	URL         string      `json:"url"`
	HTTPVersion string      `json:"httpVersion"`
	Cookies     []Cookie    `json:"cookies"`
	Headers     []NameValue `json:"headers"`
	QueryString []NameValue `json:"queryString"`
	PostData    *PostData   `json:"postData,omitempty"`
	HeadersSize int64       `json:"headersSize"` // -1 when unknown
	BodySize    int64       `json:"bodySize"`    // -1 when unknown
	Comment     string      `json:"comment,omitempty"`
}

// Response is the response received.
type Response struct {
	Status      int         `json:"status"`
	StatusText  string      `json:"statusText"`
	HTTPVersion string      `json:"httpVersion"`
	Cookies     []Cookie    `json:"cookies"`
	Headers     []NameValue `json:"headers"`
	Content     Content     `json:"content"`
	RedirectURL string      `json:"redirectURL"`
	HeadersSize int64       `json:"headersSize"` // -1 when unknown
	BodySize    int64       `json:"bodySize"`    // -1 when unknown
	Comment     string      `json:"comment,omitempty"`
}

// NameValue is a header or query parameter.
type NameValue struct {
	Name    string `json:"name"`
	Value   string `json:"value"`
	Comment string `json:"comment,omitempty"`
}

// Cookie is a cookie.
type Cookie struct {
	Name     string `json:"name"`
	Value    string `json:"value"`
	Path     string `json:"path,omitempty"`
	Domain   string `json:"domain,omitempty"`
	Expires  string `json:"expires,omitempty"`
	HTTPOnly bool   `json:"httpOnly,omitempty"`
	Secure   bool   `json:"secure,omitempty"`
	Comment  string `json:"comment,omitempty"`
}

// PostData is a request body.
type PostData struct {
	MimeType string `json:"mimeType"`
	Text     string `json:"text"`
	Comment  string `json:"comment,omitempty"`
}

// Content describes the response body.
type Content struct {
	Size     int64  `json:"size"`
	MimeType string `json:"mimeType"`
	Comment  string `json:"comment,omitempty"`
}

// Cache is HAR's cache object: empty ({}) unless the engine loader's repeat view found the object
// in its HTTP cache (docs/vitals.md, "Views"); then BeforeRequest is the stored entry's state.
type Cache struct {
	BeforeRequest *CacheState `json:"beforeRequest,omitempty"`
	Comment       string      `json:"comment,omitempty"`
}

// CacheState is a cache entry's state (HAR 1.2 "beforeRequest"): when it was last stored or
// refreshed, its validator, and how often it has been used.
type CacheState struct {
	LastAccess time.Time `json:"lastAccess"`
	ETag       string    `json:"eTag"`
	HitCount   int       `json:"hitCount"`
}

// Timings of one entry in milliseconds, with HAR semantics: -1 when a phase does not apply
// (blocked, dns, connect, ssl); send, wait and receive are always ≥ 0. ssl is included in
// connect (connect covers the TCP and the TLS handshake; for h3 the QUIC handshake).
type Timings struct {
	Blocked float64 `json:"blocked"`
	DNS     float64 `json:"dns"`
	Connect float64 `json:"connect"`
	Send    float64 `json:"send"`
	Wait    float64 `json:"wait"`
	Receive float64 `json:"receive"`
	SSL     float64 `json:"ssl"`
	Comment string  `json:"comment,omitempty"`
}

// NotApplicable marks a phase that did not happen.
const NotApplicable = -1

// NewTimings returns timings with every optional phase marked not applicable.
func NewTimings() Timings {
	return Timings{Blocked: NotApplicable, DNS: NotApplicable, Connect: NotApplicable, SSL: NotApplicable}
}

// Total is the entry time: the sum of the non-negative phases, ssl excluded (inside connect).
func (t Timings) Total() float64 {
	var sum float64
	for _, v := range []float64{t.Blocked, t.DNS, t.Connect, t.Send, t.Wait, t.Receive} {
		if v > 0 {
			sum += v
		}
	}
	return sum
}

// Validate checks the HAR rules the schema cannot express.
func (t Timings) Validate() error {
	for _, f := range []struct {
		name     string
		v        float64
		optional bool
	}{{"blocked", t.Blocked, true}, {"dns", t.DNS, true}, {"connect", t.Connect, true}, {"ssl", t.SSL, true},
		{"send", t.Send, false}, {"wait", t.Wait, false}, {"receive", t.Receive, false}} {
		switch {
		case math.IsNaN(f.v) || math.IsInf(f.v, 0):
			return fmt.Errorf("timings.%s: %v is not a number", f.name, f.v)
		case f.optional && f.v < 0 && f.v != NotApplicable:
			return fmt.Errorf("timings.%s: %v; must be ≥ 0 or -1 (not applicable)", f.name, f.v)
		case !f.optional && f.v < 0:
			return fmt.Errorf("timings.%s: %v; must be ≥ 0", f.name, f.v)
		}
	}
	if t.SSL > 0 && t.Connect < t.SSL {
		return fmt.Errorf("timings.ssl: %v exceeds connect (%v); ssl is part of connect", t.SSL, t.Connect)
	}
	return nil
}

// Write writes l as an indented HAR file. It fills Version, each entry's Time (when 0) and
// Connection (from ConnectionID), and rejects invalid timings.
func Write(w io.Writer, l *Log) error {
	if l.Version == "" {
		l.Version = Version
	}
	if l.Entries == nil {
		l.Entries = []Entry{}
	}
	for i := range l.Entries {
		e := &l.Entries[i]
		if err := e.Timings.Validate(); err != nil {
			return fmt.Errorf("har: entries[%d].%w", i, err)
		}
		if e.Time == 0 {
			e.Time = e.Timings.Total()
		}
		if e.Connection == "" {
			e.Connection = e.ConnectionID
		}
		if e.Request.Cookies == nil {
			e.Request.Cookies = []Cookie{}
		}
		if e.Request.Headers == nil {
			e.Request.Headers = []NameValue{}
		}
		if e.Request.QueryString == nil {
			e.Request.QueryString = []NameValue{}
		}
		if e.Response.Cookies == nil {
			e.Response.Cookies = []Cookie{}
		}
		if e.Response.Headers == nil {
			e.Response.Headers = []NameValue{}
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(File{Log: l})
}
