package why

import (
	"time"

	"github.com/wirelab/wirelab/engine/pktlog"
)

// Input is everything Decompose reads, on the emulator's clock (ns since the emulator started, the
// clock of packet records).
type Input struct {
	// Packets are the records of the load's own flows (trial.Own), sorted by In; Others the rest
	// of its window (another load's connection closing), which shared the bottleneck with them.
	Packets []pktlog.Record
	Others  []pktlog.Record
	// Path is the emulated path's bottleneck per direction.
	Path Path `json:"-"`
	// Timeline is the loader's requests and connections; Origin is the emulator time of its zero
	// (the loader's monotonic_start_ns).
	Timeline Timeline
	Origin   time.Duration
	// Maps are the built-in server's stream maps of its h2 connections (optional).
	Maps []StreamMap
	// QUIC is what the QUIC stacks counted (h3): added to the TCP retransmissions' kinds.
	QUIC Retx
	// Start and End bound the interval to partition: the load's first packet and ToW's last
	// response packet (pktlog.Summary's FirstPacket and LastResponse).
	Start, End time.Duration
}

// Path is the emulated path's bottleneck, per direction.
type Path struct {
	Up, Down Bottleneck
}

// Bottleneck is one direction's serialiser. NewSerializer returns a fresh one in the idle state
// (link.NewConstantRate or link.NewTraceRate for the profile's rate or trace); nil means the
// direction's rate is unlimited: no queue forms and no packet waits.
type Bottleneck struct {
	NewSerializer func() Serializer
}

// Serializer is the link model's rate stage (engine/link's Serializer): when the last bit of a
// packet of size bytes arriving at arrival leaves, in arrival order.
type Serializer interface {
	Depart(arrival time.Duration, size int) time.Duration
}

// Timeline is a load's requests as its loader saw them: the `timeline` of `fetch --json` and
// `browse --json`. Times are microseconds since the load's start (the loader's
// monotonic_start_ns); -1 is a boundary the request did not reach.
type Timeline struct {
	Conns    []Conn    `json:"conns"`
	Requests []Request `json:"requests"`
}

// Conn is one transport connection of the load.
type Conn struct {
	ID        int    `json:"id"`        // the loader's id (Request.Conn)
	Transport string `json:"transport"` // "tcp" or "udp" (QUIC)
	// Local and Remote are ip:port. Local is "" when the loader cannot tell (Chromium): the
	// connection is then the flow to Remote whose first packet left when its first request's
	// connect phase started.
	Local  string `json:"local,omitempty"`
	Remote string `json:"remote"`
	// Arrivals are, for an h3 connection of the engine's loader, the stream data it received:
	// [stream, at_us, offset, length] per STREAM frame, in arrival order.
	Arrivals [][4]int64 `json:"arrivals,omitempty"`
}

// Request is one request's life, its boundaries as the HAR phases define them (docs/metrics.md,
// "Loader timings").
type Request struct {
	URL string `json:"url"`
	// Initiator is the index (in Timeline.Requests) of the request whose response made this one
	// known; -1 for the root and requests issued at the start (objects mode) or with no known
	// initiator. InitiatorAt, when ≥ 0, is the instant the initiator released it (replay's
	// first-chunk dependencies); otherwise the initiator's end.
	Initiator   int   `json:"initiator"`
	InitiatorAt int64 `json:"initiator_at_us,omitempty"`
	Conn        int   `json:"conn"`   // Conn.ID; 0 when it got none
	Stream      int64 `json:"stream"` // h2/h3/spdy stream id; -1 for HTTP/1.x
	Issued      int64 `json:"issued_us"`
	DNSStart    int64 `json:"dns_us"`
	Connect     int64 `json:"connect_us"`
	SSLStart    int64 `json:"ssl_us"`
	ConnectEnd  int64 `json:"connect_end_us"`
	SendStart   int64 `json:"send_us"`
	SendEnd     int64 `json:"send_end_us"`
	FirstByte   int64 `json:"first_byte_us"`
	End         int64 `json:"end_us"`
	Failed      bool  `json:"failed,omitempty"`
}

// Unset marks a boundary a request did not reach.
const Unset = -1

// StreamMap says which bytes of a TCP connection's response byte stream belong to which stream:
// the built-in server's h2 connections (offsets count TCP payload bytes from the connection's
// first server byte, the TLS handshake included).
type StreamMap struct {
	Remote string // the client's ip:port
	Runs   []StreamRun
}

// StreamRun is a run of a stream's bytes: [Start, End) in the connection's payload offsets.
type StreamRun struct {
	Stream     int64
	Start, End int64
}

// Result is what Decompose found.
type Result struct {
	Parts Parts
	Retx  Retx
	// Path is the critical path, in time order: consecutive segments, each charged to one part.
	Path []Segment
	// Retransmissions are the TCP retransmissions with their kinds and what decided them.
	Retransmissions []Retransmission
}

// Segment is a piece of the critical path.
type Segment struct {
	From, To time.Duration // emulator clock
	Part     Part
	Request  int // index in Timeline.Requests; -1 when none (compute before the first request)
}
