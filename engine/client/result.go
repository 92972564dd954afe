package client

import (
	"time"

	"github.com/wirelab/wirelab/engine/har"
	"github.com/wirelab/wirelab/engine/internal/seam"
)

// Timings are one request's phases (seam.Timings: the loaders' one declaration).
type Timings = seam.Timings

// Entry is one requested object.
type Entry struct {
	URL       string `json:"url"`
	Initiator string `json:"initiator"` // URL of the document or stylesheet that referenced it; "" for the root and listed objects
	Protocol  string `json:"protocol"`  // "HTTP/1.1", "h2", "h3" or "spdy/3.1"
	// Connection is the id of the connection that carried the request (1, 2, … in the order the
	// load opened them); 0 when none was obtained.
	Connection int `json:"connection"`
	// StreamID is the h2, QUIC or SPDY stream id (even for a pushed response); -1 for HTTP/1.1
	// and when no stream was opened.
	StreamID    int64  `json:"stream_id"`
	Status      int    `json:"status"`
	ContentType string `json:"content_type"`
	BodyBytes   int64  `json:"body_bytes"` // response body bytes received (payload after framing and chunking)
	// StartedAt is the wall-clock time the request was issued; Start is the same instant on the
	// load's monotonic clock, measured from the load's first request.
	StartedAt time.Time     `json:"started_at"`
	Start     time.Duration `json:"-"`
	Time      float64       `json:"time_ms"` // issued → response complete (or failed), = Timings.Total()
	Timings   Timings       `json:"timings"`
	Retries   int           `json:"retries"` // times the request was sent again (refused stream, stale keep-alive connection)
	Error     string        `json:"error,omitempty"`
	// Pushed: the response came by server push and no request was sent (HAR _was_pushed).
	Pushed bool `json:"pushed,omitempty"`
	// Priority is the priority the request signalled (RFC 9218 field value, e.g. "u=1"; for
	// spdy3 its SYN_STREAM priority on the same 0–7 scale); "" when the policy signals none.
	Priority string `json:"priority,omitempty"`
	// Cache says how the profile's HTTP cache took part (a repeat view, docs/vitals.md "Views"):
	// "hit" — the fresh stored response was used, no request was sent (Connection 0, BodyBytes 0,
	// Protocol the stored response's); "revalidated" — a conditional request was answered 304 and
	// the stored body used (Status 304); "" — the cache took no part.
	Cache string `json:"cache,omitempty"`

	cacheBefore                  *har.CacheState // the stored entry before the request (HAR cache.beforeRequest)
	ifNoneMatch, ifModifiedSince string          // a revalidation's request fields (HAR request headers)
}

// Conn is one transport connection the load opened.
type Conn struct {
	ID         int     `json:"id"`
	Origin     string  `json:"origin"` // scheme://host:port
	Protocol   string  `json:"protocol"`
	Local      string  `json:"local"`
	Remote     string  `json:"remote"`
	OpenedMS   float64 `json:"opened_ms"`   // dial start on the load clock
	TLSVersion string  `json:"tls_version"` // "" without TLS
	ALPN       string  `json:"alpn"`
	TLSResumed bool    `json:"tls_resumed"`
	// ZeroRTT: h3, the connection's first requests went as 0-RTT data and the server accepted them.
	ZeroRTT  bool `json:"zero_rtt,omitempty"`
	Requests int  `json:"requests"`         // requests sent on it
	Pushes   int  `json:"pushes,omitempty"` // pushed streams it kept (h2, h2c, spdy3)
	// PriorityUpdates counts the PRIORITY_UPDATE frames sent (h2: one per pushed stream kept,
	// with a prioritisation policy).
	PriorityUpdates int    `json:"priority_updates,omitempty"`
	MaxStreams      uint32 `json:"max_streams,omitempty"` // h2: the server's SETTINGS_MAX_CONCURRENT_STREAMS (0 = not sent)
	// PacketsLost is, for h3, the packets this side's QUIC stack declared lost (QUIC encrypts its
	// packet numbers: a capture cannot count retransmissions).
	PacketsLost uint64 `json:"packets_lost,omitempty"`
	// QUICLoss is, for h3, this side's QUIC loss recovery by kind (engine/internal/quicloss).
	QUICLoss *seam.Retx `json:"quic_loss,omitempty"`
	Error    string     `json:"error,omitempty"` // why it failed, if it did
	// Kept: a Tab's connection opened by an earlier load and used by this one (OpenedMS is then
	// negative, Requests counts the earlier loads' too).
	Kept bool `json:"kept,omitempty"`

	arrivals [][4]int64 // h3: STREAM frames received (stream, session ns, offset, length)
}

// Phases are the per-phase sums over entries (seam.Phases).
type Phases = seam.Phases

// Result is one page load.
type Result struct {
	URL       string
	Protocol  Protocol
	Mode      Mode
	StartedAt time.Time // wall clock of the first request
	// PLT is the page load time: from the instant the first request was issued (before its DNS
	// lookup and connection) to the instant the last response completed, on the monotonic clock.
	PLT time.Duration
	// Connections is the number of connections the load opened (a Tab's kept ones not counted).
	Connections   int
	TLSHandshakes int // full handshakes
	TLSResumed    int // resumed handshakes
	ZeroRTT       int // h3 connections whose first requests went as accepted 0-RTT data
	// CacheHits and CacheRevalidated count the entries the HTTP cache answered without a request
	// and with a 304 (Entry.Cache); both 0 without a Profile.
	CacheHits, CacheRevalidated int
	// H3Discovery says how the load found HTTP/3 (h3 loads only, else ""): forced, alt-svc or
	// https-rr when some request went over QUIC, "none" when none did (nothing announced it).
	H3Discovery string
	// Protocols counts the requests by what carried them (HTTP/1.1, h2, h3, spdy/3.1): an h3
	// load that discovers HTTP/3 carries its first requests over h2.
	Protocols  map[string]int
	Objects    int // entries that completed with a status below 400
	BodyBytes  int64
	Phases     Phases
	DNSQueries int // names sent to the Resolver
	Retries    int
	Pushes     PushStats // server pushes received (h2, h2c, spdy3 with AcceptPush)
	// QUICPacketsLost sums Conns' PacketsLost: h3 packets the client declared lost.
	QUICPacketsLost int64
	// Err is the load's failure: the first object to fail (by completion time) or the timeout.
	// The numbers above are then partial.
	Err     error
	Entries []Entry // in the order the requests were issued
	// ComputeScale is the replay's computation scale (nil outside replay mode).
	ComputeScale *float64
	Conns        []Conn // in the order they were opened

	userAgent string         // sent with every request (for the HAR)
	priority  PriorityPolicy // the load's prioritisation policy
	tl        *seam.Timeline // Summary's timeline (a single load's, not a Tab's)
}

// Summary is the load as the trial contract's load record names its fields (docs/trial-contract.md).
type Summary struct {
	URL           string    `json:"url"`
	Protocol      Protocol  `json:"protocol"`
	Mode          Mode      `json:"mode"`
	StartedAt     time.Time `json:"started_at"`
	PLTms         float64   `json:"plt_ms"`
	Connections   int       `json:"connections"`
	TLSHandshakes int       `json:"tls_handshakes"`
	TLSResumed    int       `json:"tls_resumed"`
	ZeroRTT       int       `json:"zero_rtt_connections"`
	// CacheHits and CacheRevalidated: the requests the profile's HTTP cache answered itself and
	// those answered 304 (a repeat view; absent when 0).
	CacheHits        int            `json:"cache_hits,omitempty"`
	CacheRevalidated int            `json:"cache_revalidated,omitempty"`
	H3Discovery      string         `json:"h3_discovery,omitempty"`
	Protocols        map[string]int `json:"protocols"`
	Objects          int            `json:"objects"`
	BodyBytes        int64          `json:"body_bytes"`
	Phases           Phases         `json:"phases_ms"`
	DNSQueries       int            `json:"dns_queries"`
	Retries          int            `json:"retries"`
	PushedBytes      int64          `json:"pushed_bytes"`            // body bytes received by server push
	PushesUsed       int            `json:"pushes_used"`             // pushes a request adopted
	PushesUnused     int            `json:"pushes_unused"`           // pushes no request adopted (refused ones included)
	Priority         string         `json:"priority"`                // the prioritisation policy
	ComputeScale     *float64       `json:"compute_scale,omitempty"` // replay mode only
	// QUICPacketsLost: h3 packets the client's QUIC stack declared lost (0 for TCP protocols);
	// QUICLoss the same stack's recovery by kind (nil for TCP protocols).
	QUICPacketsLost int64      `json:"quic_packets_lost"`
	QUICLoss        *seam.Retx `json:"quic_loss,omitempty"`
	Error           *string    `json:"error"`
	// Timeline is every request's boundaries and every connection's endpoints, for the trial's
	// decomposition of the load (engine/why; not part of the load record).
	Timeline *seam.Timeline `json:"timeline,omitempty"`
}

// Summary returns the load-record fields of r.
func (r *Result) Summary() Summary {
	s := Summary{
		URL: r.URL, Protocol: r.Protocol, Mode: r.Mode, StartedAt: r.StartedAt.UTC(),
		PLTms: ms(r.PLT), Connections: r.Connections, TLSHandshakes: r.TLSHandshakes,
		TLSResumed: r.TLSResumed, ZeroRTT: r.ZeroRTT, CacheHits: r.CacheHits, CacheRevalidated: r.CacheRevalidated, H3Discovery: r.H3Discovery, Protocols: r.Protocols, Objects: r.Objects, BodyBytes: r.BodyBytes, Phases: r.Phases,
		DNSQueries: r.DNSQueries, Retries: r.Retries, PushedBytes: r.Pushes.Bytes,
		PushesUsed: r.Pushes.Used, PushesUnused: r.Pushes.Unused, Priority: string(r.priority),
		ComputeScale: r.ComputeScale, QUICPacketsLost: r.QUICPacketsLost,
	}
	s.Timeline = r.tl
	for _, c := range r.Conns {
		if c.QUICLoss != nil {
			if s.QUICLoss == nil {
				s.QUICLoss = &seam.Retx{}
			}
			s.QUICLoss.Add(*c.QUICLoss)
		}
	}
	if r.Err != nil {
		msg := r.Err.Error()
		s.Error = &msg
	}
	return s
}

// ms converts a duration to float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
