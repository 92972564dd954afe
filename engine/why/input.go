package why

import (
	"time"

	"github.com/wirelab/wirelab/engine/internal/seam"
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

// Timeline, Conn, Request and Unset are the loader's side of the seam (internal/seam, where the
// wire format is declared once): the `timeline` of `fetch --json` and `browse --json`.
type (
	Timeline = seam.Timeline
	Conn     = seam.Conn
	Request  = seam.Request
)

// Unset marks a boundary a request did not reach.
const Unset = seam.Unset

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
