package pktlog

import (
	"math"
	"time"
)

// DirStats are the counts of one direction over a window.
type DirStats struct {
	Packets         int64 `json:"packets"` // delivered packets
	Bytes           int64 `json:"bytes"`   // IP bytes of delivered packets
	DropsQueue      int64 `json:"drops_queue"`
	DropsLoss       int64 `json:"drops_loss"`
	Retransmissions int64 `json:"retransmissions"` // TCP segments re-sending already-seen sequence space
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
	for i := range recs {
		r := &recs[i]
		d := &s.Up
		if r.Dir == Down {
			d = &s.Down
		}
		switch r.Fate {
		case Delivered:
			d.Packets++
			d.Bytes += int64(r.IPLen)
		case DroppedQueue:
			d.DropsQueue++
		case DroppedLoss:
			d.DropsLoss++
		}
		if n := r.SeqLen(); n > 0 {
			k := flowKey{r.Src, r.Dst, r.SrcPort, r.DstPort}
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
		} else if r.Fate == Delivered && carriesResponseData(r) && t > s.LastResponse && t <= responseBy {
			s.LastResponse = t
		}
	}
	return s
}
