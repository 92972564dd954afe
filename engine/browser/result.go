package browser

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/client"
	"github.com/wirelab/wirelab/engine/har"
	"github.com/wirelab/wirelab/engine/internal/seam"
	"github.com/wirelab/wirelab/engine/why"
)

// Entry is one request of a browser load, converted from CDP events (docs/browser.md, "HAR
// mapping"). Times are milliseconds from the load's first request (the main document's
// Network.requestWillBeSent).
type Entry struct {
	RequestID    string         `json:"request_id"`
	URL          string         `json:"url"`
	Method       string         `json:"method"`
	ResourceType string         `json:"resource_type"` // CDP's type, lower case: document, stylesheet, script, image, font, …
	Initiator    *har.Initiator `json:"initiator"`
	Priority     string         `json:"priority"` // final priority (VeryHigh … VeryLow)
	Protocol     string         `json:"protocol"` // HTTP/1.1, h2, h3 (from the response; "" if none)
	RawProtocol  string         `json:"raw_protocol"`
	Connection   string         `json:"connection"` // Chromium's connection id ("" without a response)
	RemoteIP     string         `json:"remote_ip"`
	RemotePort   int            `json:"remote_port"`
	Status       int            `json:"status"`
	StatusText   string         `json:"status_text"`
	MimeType     string         `json:"mime_type"`
	BodyBytes    int64          `json:"body_bytes"`    // decoded body bytes (Network.dataReceived)
	TransferSize int64          `json:"transfer_size"` // bytes received: headers, framing, body (loadingFinished.encodedDataLength)
	StartedAt    time.Time      `json:"started_at"`
	StartMS      float64        `json:"start_ms"`       // issued
	FirstByteMS  float64        `json:"first_byte_ms"`  // response headers began to arrive (-1: none)
	FirstChunkMS float64        `json:"first_chunk_ms"` // first body bytes handed to the renderer (-1: none)
	EndMS        float64        `json:"end_ms"`         // loadingFinished / loadingFailed (-1: never)
	Timings      client.Timings `json:"timings"`
	Headers      []har.NameValue
	RespHeaders  []har.NameValue
	Error        string `json:"error,omitempty"`
}

// Result is one browser load.
type Result struct {
	URL       string
	Protocol  Protocol
	Version   string   // Chromium's product string (Chrome/156.…)
	Flags     []string // Chromium's command line (without the profile and the DevTools pipe)
	StartedAt time.Time
	// PLT: from the main document's request (issued) to the end of the last request to finish,
	// among every request the page made until it had loaded and the network was idle.
	PLT         time.Duration
	Connections int // distinct connection ids that carried a response
	// TLSHandshakes: full TLS handshakes (h1s, h2) and QUIC handshakes (h3) of the recorded view,
	// from the NetLog; TLSResumed the resumed ones among its TLS and QUIC connections, ZeroRTT its
	// QUIC sessions whose 0-RTT data the server accepted (netlog.go). Without the NetLog
	// (NetLogErr), TLSHandshakes counts the TLS or QUIC connections that carried a response.
	TLSHandshakes int
	TLSResumed    int
	ZeroRTT       int
	NetLogErr     string
	Objects       int
	BodyBytes     int64
	DNSQueries    int // entries whose timing shows a DNS lookup
	Phases        client.Phases
	// NavigationDelayMS is the time between the navigation's Network.requestWillBeSent and the
	// network stack's start of the document request (timing.requestTime): browser-internal
	// navigation set-up, outside the PLT.
	NavigationDelayMS float64
	// Browser events, ms from the first request; -1 when not observed.
	OnLoadMS               float64
	DOMContentLoadedMS     float64
	FirstPaintMS           float64
	FirstContentfulPaintMS float64
	Err                    error
	Entries                []Entry
	Trace                  []TraceEvent // devtools.timeline events (Config.Trace)
	// View is the view this result is (Config.View); FirstView, for a repeat view, is the load
	// before it (its measurements only: no visual metrics).
	View      View
	FirstView *Result
	// Visual holds LCP and CLS (every traced load: Config.Screenshots or Config.Trace) and, with
	// Config.Screenshots, the frames, Speed Index and visually-complete time.
	Visual Visual
	// VisualTrace are the trace events Visual was computed from (Config.KeepVisualTrace).
	VisualTrace []TraceEvent

	t0          float64 // CDP monotonic time of the first request (seconds)
	cpuSlowdown float64 // Config.CPUSlowdown
	h3          H3Mode  // Config.H3
	viewport    Viewport
}

// TraceEvent is one Chrome trace event (Trace Event Format); ts and dur in microseconds on the
// CDP monotonic clock.
type TraceEvent struct {
	Name string          `json:"name"`
	Cat  string          `json:"cat"`
	Ph   string          `json:"ph"`
	Ts   float64         `json:"ts"`
	Dur  float64         `json:"dur"`
	Pid  int             `json:"pid"`
	Tid  int             `json:"tid"`
	Args json.RawMessage `json:"args"`
}

// T0 is the CDP monotonic time (seconds) of the load's first request: trace timestamps minus
// T0·10⁶ are microseconds from the start of the load.
func (r *Result) T0() float64 { return r.t0 }

// Extras are the browser's own fields of the load record's `client` object.
type Extras struct {
	Impl                   string   `json:"impl"` // "chromium"
	Version                string   `json:"version"`
	OnLoadMS               *float64 `json:"on_load_ms"`
	DOMContentLoadedMS     *float64 `json:"dom_content_loaded_ms"`
	FirstPaintMS           *float64 `json:"first_paint_ms"`
	FirstContentfulPaintMS *float64 `json:"first_contentful_paint_ms"`
	Requests               int      `json:"requests"`
	NavigationDelayMS      float64  `json:"navigation_delay_ms"`
	// Protocols counts the entries per protocol as the responses name it (h2, h3, HTTP/1.1).
	Protocols map[string]int `json:"protocols"`
	// FirstViewPLTMs is a repeat view's first view's PLT (absent for a first view).
	FirstViewPLTMs *float64 `json:"first_view_plt_ms,omitempty"`
	CPUSlowdown    float64  `json:"cpu_slowdown"`
	Viewport       string   `json:"viewport"`
	// ZeroRTTConnections: QUIC sessions whose 0-RTT data the server accepted (from the NetLog).
	ZeroRTTConnections int `json:"zero_rtt_connections"`
	// NetLogError says why tls_handshakes and tls_resumed were not read from the NetLog (then
	// tls_resumed is 0 and tls_handshakes counts the TLS connections).
	NetLogError string `json:"netlog_error,omitempty"`
	// H3Discovery: for an h3 load, how HTTP/3 was found (client.h3: forced, alt-svc, https-rr)
	// when a response came over h3 or a QUIC session sent 0-RTT requests, "none" when neither.
	H3Discovery string `json:"h3_discovery,omitempty"`
}

// Summary is the load as the trial contract's load record names its fields; Client holds the
// browser's own.
type Summary struct {
	URL           string        `json:"url"`
	Protocol      Protocol      `json:"protocol"`
	Mode          string        `json:"mode"` // "browser"
	StartedAt     time.Time     `json:"started_at"`
	PLTms         float64       `json:"plt_ms"`
	Connections   int           `json:"connections"`
	TLSHandshakes int           `json:"tls_handshakes"`
	TLSResumed    int           `json:"tls_resumed"`
	Objects       int           `json:"objects"`
	BodyBytes     int64         `json:"body_bytes"`
	Phases        client.Phases `json:"phases_ms"`
	DNSQueries    int           `json:"dns_queries"`
	Retries       int           `json:"retries"`
	View          View          `json:"view"`
	// The visual metrics (docs/vitals.md); nil when not measured.
	seam.VisualMetrics
	Client Extras  `json:"client"`
	Error  *string `json:"error"`
	// Timeline is the requests' boundaries and connections for the trial's decomposition
	// (engine/why; not part of the load record).
	Timeline *why.Timeline `json:"timeline,omitempty"`
}

func opt(v float64) *float64 {
	if v < 0 {
		return nil
	}
	return &v
}

// Summary returns the load-record fields of r.
func (r *Result) Summary() Summary {
	s := Summary{URL: r.URL, Protocol: r.Protocol, Mode: "browser", StartedAt: r.StartedAt.UTC(),
		PLTms: ms(r.PLT), Connections: r.Connections, TLSHandshakes: r.TLSHandshakes, TLSResumed: r.TLSResumed, Objects: r.Objects,
		BodyBytes: r.BodyBytes, Phases: r.Phases, DNSQueries: r.DNSQueries,
		Client: Extras{Impl: "chromium", Version: r.Version, OnLoadMS: opt(r.OnLoadMS),
			DOMContentLoadedMS: opt(r.DOMContentLoadedMS), FirstPaintMS: opt(r.FirstPaintMS),
			FirstContentfulPaintMS: opt(r.FirstContentfulPaintMS), Requests: len(r.Entries),
			NavigationDelayMS: r.NavigationDelayMS, Protocols: map[string]int{}, CPUSlowdown: r.cpuSlowdown,
			Viewport: r.viewport.String(), ZeroRTTConnections: r.ZeroRTT, NetLogError: r.NetLogErr},
		View: r.View}
	if s.View == "" {
		s.View = FirstView
	}
	for _, e := range r.Entries {
		if e.Protocol != "" {
			s.Client.Protocols[e.Protocol]++
		}
	}
	if r.Protocol == H3 {
		// A response revalidated with 304 is reported (CDP, HAR) with the protocol of the cached
		// response it refreshed, so a repeat view whose only request went over QUIC may name h2
		// only: QUIC sessions that sent 0-RTT requests (NetLog) count as h3 used.
		s.Client.H3Discovery = "none"
		if s.Client.Protocols["h3"] > 0 || r.ZeroRTT > 0 {
			s.Client.H3Discovery = string(r.h3)
		}
	}
	if r.FirstView != nil {
		plt := ms(r.FirstView.PLT)
		s.Client.FirstViewPLTMs = &plt
	}
	v := r.Visual
	s.LCPMs, s.CLS, s.SpeedIndexMs, s.VisuallyCompleteMs = v.LCPMs, v.CLS, v.SpeedIndexMs, v.VisuallyCompleteMs
	if v.LCPMs != nil {
		size, kind := v.LCPSizePx, v.LCPType
		s.LCPSizePx, s.LCPType = &size, &kind
		if v.LCPURL != "" {
			u := v.LCPURL
			s.LCPURL = &u
		}
	}
	s.VisualProgress = v.Progress()
	if r.Err != nil {
		msg := r.Err.Error()
		s.Error = &msg
	}
	if len(r.Entries) > 0 {
		s.Timeline = r.timeline()
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// wireProtocol maps CDP's response.protocol to HAR's _protocol.
func wireProtocol(p string) string {
	switch p := strings.ToLower(p); {
	case p == "http/1.1" || p == "http/1.0":
		return "HTTP/1.1"
	case p == "h2" || p == "http/2" || p == "http/2.0":
		return "h2"
	case p == "h3" || strings.HasPrefix(p, "h3-") || strings.HasPrefix(p, "http/2+quic") || p == "quic":
		return "h3"
	}
	return p
}

// entry converts a request to an Entry, times relative to t0 (seconds). Phases are contiguous
// and follow the engine loader's definitions (docs/metrics.md): each runs from its boundary to
// the next boundary reached, so they sum to end − issued; ssl is inside connect.
func (q *request) entry(t0 float64) Entry {
	e := Entry{RequestID: q.id, URL: q.url, Method: q.method, ResourceType: strings.ToLower(q.rtype),
		Priority: q.priority, StartedAt: q.wall, StartMS: (q.issued - t0) * 1000, FirstByteMS: -1,
		FirstChunkMS: -1, EndMS: -1, BodyBytes: q.bodyBytes, TransferSize: int64(q.transfer), Error: q.failure}
	if q.initiator != nil {
		in := &har.Initiator{Type: string(q.initiator.Type), URL: q.initiator.URL}
		if q.initiator.Type == "parser" {
			ln := int(q.initiator.LineNumber)
			in.LineNumber = &ln
		}
		e.Initiator = in
	}
	for k, v := range q.headers {
		e.Headers = append(e.Headers, har.NameValue{Name: k, Value: fmt.Sprint(v)})
	}
	sort.Slice(e.Headers, func(i, j int) bool { return e.Headers[i].Name < e.Headers[j].Name })
	if q.done {
		e.EndMS = (q.end - t0) * 1000
	}
	if q.firstData > 0 {
		e.FirstChunkMS = (q.firstData - t0) * 1000
	}
	at := func(ts float64) float64 { return (ts - t0) * 1000 }
	issued := at(q.issued)
	end := issued
	if q.done {
		end = at(q.end)
	}
	t := client.Timings{DNS: -1, Connect: -1, SSL: -1}
	if resp := q.resp; resp != nil {
		e.Status, e.StatusText, e.MimeType = int(resp.Status), resp.StatusText, resp.MimeType
		e.RawProtocol = resp.Protocol
		e.Protocol = wireProtocol(resp.Protocol)
		if resp.ConnectionID != 0 {
			e.Connection = strconv.FormatInt(int64(resp.ConnectionID), 10)
		}
		e.RemoteIP, e.RemotePort = resp.RemoteIPAddress, int(resp.RemotePort)
		for k, v := range resp.Headers {
			e.RespHeaders = append(e.RespHeaders, har.NameValue{Name: k, Value: fmt.Sprint(v)})
		}
		sort.Slice(e.RespHeaders, func(i, j int) bool { return e.RespHeaders[i].Name < e.RespHeaders[j].Name })
		if e.Status >= 400 && e.Error == "" {
			e.Error = fmt.Sprintf("status %d", e.Status)
		}
		if tm := resp.Timing; tm != nil {
			base := tm.RequestTime
			abs := func(offset float64) float64 { return at(base + offset/1000) }
			fb := tm.ReceiveHeadersStart
			if fb <= 0 {
				fb = tm.ReceiveHeadersEnd
			}
			e.FirstByteMS = abs(fb)
			type mark struct {
				at  float64
				dst *float64
			}
			marks := []mark{{issued, &t.Blocked}}
			if tm.DNSStart >= 0 {
				marks = append(marks, mark{abs(tm.DNSStart), &t.DNS})
			}
			if tm.ConnectStart >= 0 {
				marks = append(marks, mark{abs(tm.ConnectStart), &t.Connect})
			}
			marks = append(marks, mark{abs(tm.SendStart), &t.Send}, mark{abs(tm.SendEnd), &t.Wait}, mark{abs(fb), &t.Receive})
			for i := 1; i < len(marks); i++ { // clocks of the renderer and the network service: keep order
				marks[i].at = max(marks[i].at, marks[i-1].at)
			}
			end = max(end, marks[len(marks)-1].at)
			for i, m := range marks {
				next := end
				if i+1 < len(marks) {
					next = marks[i+1].at
				}
				*m.dst = round3(next - m.at)
			}
			switch {
			case tm.SslStart >= 0 && tm.SslEnd >= tm.SslStart:
				t.SSL = math.Min(round3(tm.SslEnd-tm.SslStart), t.Connect)
			case e.Protocol == "h3" && t.Connect >= 0:
				t.SSL = t.Connect // QUIC's handshake is the TLS handshake
			}
		} else {
			t.Blocked, t.Receive = 0, round3(end-issued)
		}
	} else {
		t.Blocked = round3(end - issued)
	}
	e.Timings = t
	return e
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// checkEntryURL refuses a request whose host checkHost refuses.
func checkEntryURL(raw string, checkHost func(host string) error) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if err := checkHost(u.Hostname()); err != nil {
		return fmt.Errorf("chromium requested %s, which this load may not reach: %w", raw, err)
	}
	return nil
}

// HARPageID is the id of the one page of a load's HAR.
const HARPageID = "page_1"

// HAR converts the load into a HAR 1.2 log with wirelab's and Chrome's extensions.
func (r *Result) HAR(creatorVersion string) *har.Log {
	onLoad, dcl := r.OnLoadMS, r.DOMContentLoadedMS
	l := &har.Log{
		Creator: har.Creator{Name: "wirelab-engine", Version: creatorVersion},
		Browser: &har.Creator{Name: "Chromium", Version: strings.TrimPrefix(r.Version, "Chrome/")},
		Pages: []har.Page{{
			StartedDateTime: r.StartedAt.UTC(), ID: HARPageID, Title: r.URL,
			PageTimings: har.PageTimings{OnContentLoad: dcl, OnLoad: onLoad},
		}},
	}
	if r.Err != nil {
		l.Pages[0].Comment = "load error: " + r.Err.Error()
	}
	for _, e := range r.Entries {
		httpVersion := e.Protocol
		if httpVersion == "" {
			httpVersion = r.Protocol.WireName()
		}
		var query []har.NameValue
		if u, err := url.Parse(e.URL); err == nil {
			for k, vs := range u.Query() {
				for _, v := range vs {
					query = append(query, har.NameValue{Name: k, Value: v})
				}
			}
		}
		transfer := e.TransferSize
		he := har.Entry{
			Pageref: HARPageID, StartedDateTime: e.StartedAt.UTC(),
			Time: e.Timings.Total(),
			Request: har.Request{Method: e.Method, URL: e.URL, HTTPVersion: httpVersion, Headers: e.Headers,
				QueryString: query, HeadersSize: -1, BodySize: 0},
			Response: har.Response{Status: e.Status, StatusText: statusText(e), HTTPVersion: httpVersion,
				Headers: e.RespHeaders, Content: har.Content{Size: e.BodyBytes, MimeType: e.MimeType},
				HeadersSize: -1, BodySize: e.BodyBytes},
			Timings: har.Timings{Blocked: e.Timings.Blocked, DNS: e.Timings.DNS, Connect: e.Timings.Connect,
				SSL: e.Timings.SSL, Send: e.Timings.Send, Wait: e.Timings.Wait, Receive: e.Timings.Receive},
			ServerIPAddress: e.RemoteIP, Comment: e.Error, ConnectionID: e.Connection, Protocol: e.Protocol,
			Initiator: e.Initiator, Priority: e.Priority, ResourceType: e.ResourceType, TransferSize: &transfer,
		}
		if he.Time == 0 {
			he.Time = 0.001 // har.Write would recompute a 0; an entry always takes some time
		}
		l.Entries = append(l.Entries, he)
	}
	return l
}

func statusText(e Entry) string {
	if e.StatusText != "" {
		return e.StatusText
	}
	return http.StatusText(e.Status)
}
