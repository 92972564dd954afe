package pktlog

import (
	"math"
	"net/netip"
	"slices"
	"sort"
	"time"

	"github.com/wirelab/wirelab/engine/link"
)

// DirStats are the counts of one direction over a window.
type DirStats struct {
	Packets         int64 `json:"packets"`     // delivered packets (marked or not)
	Bytes           int64 `json:"bytes"`       // IP bytes of delivered packets
	DropsQueue      int64 `json:"drops_queue"` // the gateway queue's drops, any cause (tail + AQM + overflow)
	DropsLoss       int64 `json:"drops_loss"`
	Retransmissions int64 `json:"retransmissions"` // TCP segments re-sending already-seen sequence space
	DropsTail       int64 `json:"drops_tail"`      // a full drop-tail queue
	DropsAQM        int64 `json:"drops_aqm"`       // the discipline's early drops (CoDel, PIE, RED)
	DropsOverflow   int64 `json:"drops_overflow"`  // an AQM discipline's hard limit
	Marks           int64 `json:"marks"`           // delivered with CE set by the gateway
	// Sojourn is the time delivered packets waited in the gateway's queue (Record.SojournUS).
	Sojourn Sojourn `json:"sojourn_ms"`
}

// Sojourn summarises queue waits in milliseconds: percentiles of the delivered packets' sojourn
// times (nearest rank), all 0 when none was delivered.
type Sojourn struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Flow is one connection's (TCP) or datagram flow's (UDP) packets in a window, both directions.
type Flow struct {
	Proto   string `json:"proto"`  // tcp or udp
	Client  string `json:"client"` // address:port of the client's end
	Server  string `json:"server"` // address:port of the server's end
	Packets int64  `json:"packets"`
	Drops   int64  `json:"drops"` // the gateway queue's drops
	Marks   int64  `json:"marks"`
}

// Summary is what a window of records says (docs/metrics.md).
type Summary struct {
	Up   DirStats `json:"up"`
	Down DirStats `json:"down"`
	// FirstPacket is the ClientTime of the first Up packet of any kind; FirstRequest of the first
	// Up packet carrying request data; LastResponse of the last delivered Down packet carrying
	// response data. -1 when there is none.
	FirstPacket  time.Duration `json:"first_packet_ns"`
	FirstRequest time.Duration `json:"first_request_ns"`
	LastResponse time.Duration `json:"last_response_ns"`
	// Flows counts the TCP and UDP flows seen; Congested lists those the gateway dropped or marked
	// packets of, most drops first (then most marks) (per-flow drops: FQ-CoDel's isolation, six HTTP/1.1
	// connections against one HTTP/2 connection).
	Flows     int    `json:"flows"`
	Congested []Flow `json:"congested_flows"`
}

// ToW is Time on Wire: FirstRequest → LastResponse. ok is false when either is missing or the
// response does not follow the request.
func (s *Summary) ToW() (d time.Duration, ok bool) {
	if s.FirstRequest < 0 || s.LastResponse < 0 || s.LastResponse < s.FirstRequest {
		return 0, false
	}
	return s.LastResponse - s.FirstRequest, true
}

// ToWFirstPacket is FirstPacket → LastResponse.
func (s *Summary) ToWFirstPacket() (d time.Duration, ok bool) {
	if s.FirstPacket < 0 || s.LastResponse < 0 || s.LastResponse < s.FirstPacket {
		return 0, false
	}
	return s.LastResponse - s.FirstPacket, true
}

// Retransmissions in both directions.
func (s *Summary) Retransmissions() int64 { return s.Up.Retransmissions + s.Down.Retransmissions }

// DNSPort is the port whose UDP traffic is name resolution, not request or response data.
const DNSPort = 53

// carriesRequestData: an Up packet with TCP payload, or a UDP datagram that is not a DNS query.
func carriesRequestData(r *Record) bool {
	switch r.Proto {
	case ProtoTCP:
		return r.Payload > 0
	case ProtoUDP:
		return r.DstPort != DNSPort
	}
	return false
}

// carriesResponseData: a Down packet with TCP payload, or a UDP datagram that is not a DNS answer.
func carriesResponseData(r *Record) bool {
	switch r.Proto {
	case ProtoTCP:
		return r.Payload > 0
	case ProtoUDP:
		return r.SrcPort != DNSPort
	}
	return false
}

type flowKey struct {
	src, dst     [4]byte
	sport, dport uint16
	proto        uint8
}

type flowState struct {
	maxEnd uint32 // one past the highest sequence number seen
}

// seqBefore is a < b in 32-bit sequence space (RFC 1982).
func seqBefore(a, b uint32) bool { return int32(a-b) < 0 }

// Summarize derives a Summary from records sorted by In (as Window and Take return them).
func Summarize(recs []Record) Summary { return SummarizeUntil(recs, math.MaxInt64) }

// SummarizeUntil is Summarize with LastResponse limited to packets the client received at or
// before responseBy (ClientTime): a trial passes the instant the load completed, so that what
// arrives afterwards — a TLS close_notify answering the client's, the connections' teardown — is
// not taken for the page's response. Counts cover every record.
func SummarizeUntil(recs []Record, responseBy time.Duration) Summary {
	s := Summary{FirstPacket: -1, FirstRequest: -1, LastResponse: -1}
	flows := map[flowKey]*flowState{}
	conns := map[flowKey]*Flow{}
	var sojourn [2][]uint32
	for i := range recs {
		r := &recs[i]
		d := &s.Up
		if r.Dir == Down {
			d = &s.Down
		}
		switch r.Fate {
		case link.Delivered, link.Marked:
			d.Packets++
			d.Bytes += int64(r.IPLen)
			sojourn[r.Dir] = append(sojourn[r.Dir], r.SojournUS)
			if r.Fate == link.Marked {
				d.Marks++
			}
		case link.DroppedQueue:
			d.DropsTail++
		case link.DroppedAQM:
			d.DropsAQM++
		case link.DroppedOverflow:
			d.DropsOverflow++
		case link.DroppedLoss:
			d.DropsLoss++
		}
		if r.Proto == ProtoTCP || r.Proto == ProtoUDP {
			k := connKey(r)
			c := conns[k]
			if c == nil {
				c = &Flow{}
				conns[k] = c
			}
			switch {
			case r.Fate.Delivered():
				c.Packets++
			case r.Fate.QueueDrop():
				c.Drops++
			}
			if r.Fate == link.Marked {
				c.Marks++
			}
		}
		if n := r.SeqLen(); n > 0 {
			k := flowKey{r.Src, r.Dst, r.SrcPort, r.DstPort, r.Proto}
			f := flows[k]
			if f == nil {
				flows[k] = &flowState{maxEnd: r.Seq + n}
			} else {
				if seqBefore(r.Seq, f.maxEnd) {
					d.Retransmissions++
				}
				if end := r.Seq + n; seqBefore(f.maxEnd, end) {
					f.maxEnd = end
				}
			}
		}
		t := r.ClientTime()
		if r.Dir == Up {
			if s.FirstPacket < 0 || t < s.FirstPacket {
				s.FirstPacket = t
			}
			if carriesRequestData(r) && (s.FirstRequest < 0 || t < s.FirstRequest) {
				s.FirstRequest = t
			}
		} else if r.Fate.Delivered() && carriesResponseData(r) && t > s.LastResponse && t <= responseBy {
			s.LastResponse = t
		}
	}
	for i, d := range []*DirStats{&s.Up, &s.Down} {
		d.DropsQueue = d.DropsTail + d.DropsAQM + d.DropsOverflow
		d.Sojourn = sojournOf(sojourn[i])
	}
	s.Flows = len(conns)
	for k, c := range conns {
		if c.Drops+c.Marks == 0 {
			continue
		}
		c.Proto, c.Client, c.Server = k.name()
		s.Congested = append(s.Congested, *c)
	}
	sort.Slice(s.Congested, func(i, j int) bool {
		a, b := s.Congested[i], s.Congested[j]
		if a.Drops != b.Drops {
			return a.Drops > b.Drops
		}
		if a.Marks != b.Marks {
			return a.Marks > b.Marks
		}
		return a.Client+a.Server < b.Client+b.Server
	})
	return s
}

// connKey is a flow with its client's end first, whichever way the packet went.
func connKey(r *Record) flowKey {
	if r.Dir == Up {
		return flowKey{r.Src, r.Dst, r.SrcPort, r.DstPort, r.Proto}
	}
	return flowKey{r.Dst, r.Src, r.DstPort, r.SrcPort, r.Proto}
}

func (k flowKey) name() (proto, client, server string) {
	proto = "udp"
	if k.proto == ProtoTCP {
		proto = "tcp"
	}
	return proto, netip.AddrPortFrom(netip.AddrFrom4(k.src), k.sport).String(), netip.AddrPortFrom(netip.AddrFrom4(k.dst), k.dport).String()
}

// sojournOf summarises sojourn times in µs (nearest rank, as the link's own summary).
func sojournOf(us []uint32) Sojourn {
	if len(us) == 0 {
		return Sojourn{}
	}
	slices.Sort(us)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(us)))) - 1
		return float64(us[max(i, 0)]) / 1e3
	}
	return Sojourn{P50: at(0.50), P95: at(0.95), P99: at(0.99), Max: float64(us[len(us)-1]) / 1e3}
}
