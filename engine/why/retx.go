package why

import (
	"sort"
	"time"

	"github.com/wirelab/wirelab/engine/pktlog"
)

// Retransmission is one TCP retransmission as classified (for looking into a decomposition).
type Retransmission struct {
	At        time.Duration // In
	Rec       int           // index in Input.Packets
	Seq, Len  int64         // relative sequence (0 = the SYN)
	Kind      retxKind
	Dupacks   int           // duplicate ACKs the sender had received since its last advance
	SinceLast time.Duration // since the sender last sent or saw its acknowledged point advance
	RTO       time.Duration // the sender's retransmission timeout as estimated from its RTT samples
}

// retxKind is what made a TCP sender retransmit (docs/why.md, "Retransmissions by kind").
type retxKind uint8

func (k retxKind) String() string {
	return [...]string{"-", "fast", "timeout", "tlp", "spurious"}[k]
}

const (
	notRetx retxKind = iota
	kindFast
	kindTimeout
	kindTLP
	kindSpurious
)

// Linux's retransmission timer: RTO = SRTT + max(rto_min, 4·RTTVAR) with rto_min 200 ms (its
// rttvar never falls below rto_min), 1 s before the first sample (RFC 6298 §2.1).
const (
	rtoMin     = 200 * time.Millisecond
	rtoInitial = time.Second
	// tlpBeforeRTO: a probe of the highest segment that fires this early in the RTO is a tail
	// loss probe (Linux caps the probe timeout at the RTO, so late ones are hard to tell apart).
	tlpBeforeRTO = 0.9
)

// rttEstimator is RFC 6298's smoothed RTT, fed with Karn's samples.
type rttEstimator struct {
	srtt, rttvar time.Duration
	have         bool
}

func (e *rttEstimator) sample(r time.Duration) {
	if r <= 0 {
		return
	}
	if !e.have {
		e.srtt, e.rttvar, e.have = r, r/2, true
		return
	}
	d := e.srtt - r
	if d < 0 {
		d = -d
	}
	e.rttvar = (3*e.rttvar + d) / 4
	e.srtt = (7*e.srtt + r) / 8
}

func (e *rttEstimator) rto() time.Duration {
	if !e.have {
		return rtoInitial
	}
	return e.srtt + max(rtoMin, 4*e.rttvar)
}

// classifyRetx gives every retransmission of the direction its kind, walking the sender's
// transmissions and the acknowledgements it received in time order, and returns the counts. It
// also records the periods the sender spent recovering (t.recovering): a timer-driven
// retransmission's stall — from one smoothed RTT after the sender's last transmission, when an
// acknowledgement would normally have released more data, to the retransmission — and every
// repair — from a retransmission until new data leaves or the repair is acknowledged.
func classifyRetx(t *tcpDir, packets []pktlog.Record, log *[]Retransmission) Retx {
	var out Retx
	var delivered, resent [][2]int64 // earlier transmissions' delivered ranges; retransmitted ranges
	var est rttEstimator
	una, sndMax := int64(0), int64(0)
	haveUna, started := false, false
	dupacks := 0
	inLoss := false
	lossHigh := int64(0)
	var lastSend, lastAdvance time.Duration
	lastAck := time.Duration(-1 << 62)
	ai := 0
	onAck := func(a ack) {
		lastAck = a.t
		switch {
		case !haveUna || a.ack > una:
			if started {
				est.sample(karnSample(t, packets, a, resent))
			}
			una, haveUna, dupacks, lastAdvance = a.ack, true, 0, a.t
			if inLoss && una >= lossHigh {
				inLoss = false
			}
		case a.ack == una && a.pure && sndMax > una:
			dupacks++
		}
	}
	for k := range t.segs {
		s := &t.segs[k]
		r := &packets[s.rec]
		in := time.Duration(r.In)
		for ai < len(t.acks) && t.acks[ai].t <= in {
			onAck(t.acks[ai])
			ai++
		}
		if s.retx {
			dupacksBefore := dupacks
			switch {
			case covered(delivered, s.start, s.end):
				s.kind = kindSpurious
				out.Spurious++
			case inLoss:
				s.kind = kindTimeout
				out.Timeout++
			case dupacks > 0 || in-lastAck <= ackClock:
				// released by the receiver's acknowledgements: duplicate ones, or (with SACK, which
				// the packet log does not parse) one that told of a hole: dupack, SACK or RACK
				s.kind = kindFast
				out.Fast++
			default:
				elapsed := in - max(lastSend, lastAdvance)
				highest := s.end >= sndMax
				lowest := haveUna && s.start <= una
				if highest && (!lowest || float64(elapsed) < tlpBeforeRTO*float64(est.rto())) {
					s.kind = kindTLP
					out.TLP++
				} else {
					s.kind = kindTimeout
					out.Timeout++
					inLoss, lossHigh = true, sndMax
				}
			}
			if log != nil {
				*log = append(*log, Retransmission{At: in, Rec: s.rec, Seq: s.start, Len: s.end - s.start, Kind: s.kind,
					Dupacks: dupacksBefore, SinceLast: in - max(lastSend, lastAdvance), RTO: est.rto()})
			}
			resent = addRange(resent, s.start, s.end)
			if timer := s.kind == kindTimeout || s.kind == kindTLP || (s.kind == kindSpurious && dupacksBefore == 0); timer && est.have {
				if from := lastSend + est.srtt; from < in {
					t.recovering = append(t.recovering, [2]time.Duration{from, in})
				}
			}
			t.recovering = append(t.recovering, [2]time.Duration{in, t.repairEnd(k, packets)})
		}
		if r.Fate.Delivered() {
			delivered = addRange(delivered, s.start, s.end)
		}
		if !started || s.end > sndMax {
			sndMax = s.end
		}
		started, lastSend = true, in
	}
	return out
}

// karnSample is the RTT sample an acknowledgement gives: from the transmission of the segment it
// acknowledged last to its arrival, unless that segment's bytes were retransmitted (Karn).
func karnSample(t *tcpDir, packets []pktlog.Record, a ack, resent [][2]int64) time.Duration {
	k := sort.Search(len(t.orig), func(k int) bool { return t.segs[t.orig[k]].end > a.ack })
	if k == 0 {
		return 0
	}
	s := t.segs[t.orig[k-1]]
	if s.end != a.ack || overlaps(resent, s.start, s.end) {
		return 0
	}
	in := time.Duration(packets[s.rec].In)
	if in > a.t {
		return 0
	}
	return a.t - in
}

// covered says whether [s, e) lies inside the union of the sorted disjoint ranges rs.
func covered(rs [][2]int64, s, e int64) bool {
	i := sort.Search(len(rs), func(i int) bool { return rs[i][1] > s })
	return i < len(rs) && rs[i][0] <= s && rs[i][1] >= e
}

func overlaps(rs [][2]int64, s, e int64) bool {
	i := sort.Search(len(rs), func(i int) bool { return rs[i][1] > s })
	return i < len(rs) && rs[i][0] < e
}

// repairEnd is when retransmission k stopped holding the sender: its next transmission of new
// data, or the acknowledgement that covered the repair, whichever came first.
func (t *tcpDir) repairEnd(k int, packets []pktlog.Record) time.Duration {
	end := time.Duration(1<<63 - 1)
	in := time.Duration(packets[t.segs[k].rec].In)
	if n := t.nextOrigAfter(in, packets); n >= 0 {
		end = time.Duration(packets[t.segs[n].rec].In)
	}
	for _, a := range t.acks {
		if a.t >= in && a.ack >= t.segs[k].end {
			end = min(end, a.t)
			break
		}
	}
	return end
}

// recoveringAt says whether the sender was recovering at t.
func (t *tcpDir) recoveringAt(at time.Duration) bool {
	for _, r := range t.recovering {
		if r[0] <= at && at < r[1] {
			return true
		}
	}
	return false
}
