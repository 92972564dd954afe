package seam

// Timeline is a load's requests as its loader saw them: the `timeline` of `fetch --json` and
// `browse --json`, which the trial's decomposition reads (engine/why). Times are microseconds since
// the load's start (the loader's monotonic_start_ns); -1 is a boundary the request did not reach.
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

// Retx counts a load's retransmissions by kind (docs/why.md, "Retransmissions by kind").
type Retx struct {
	Fast     int64 `json:"retx_fast"`
	Timeout  int64 `json:"retx_timeout"`
	TLP      int64 `json:"retx_tlp"`
	Spurious int64 `json:"retx_spurious"`
}

// Total is every retransmission counted.
func (r Retx) Total() int64 { return r.Fast + r.Timeout + r.TLP + r.Spurious }

// Add adds o to r.
func (r *Retx) Add(o Retx) {
	r.Fast += o.Fast
	r.Timeout += o.Timeout
	r.TLP += o.TLP
	r.Spurious += o.Spurious
}
