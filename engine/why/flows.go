package why

import (
	"sort"
	"time"

	"github.com/wirelab/wirelab/engine/pktlog"
)

// flowKey is a transport flow regardless of direction.
type flowKey struct {
	proto        uint8
	client       [4]byte
	server       [4]byte
	cport, sport uint16
}

func keyOf(r *pktlog.Record) flowKey {
	if r.Dir == pktlog.Up {
		return flowKey{r.Proto, r.Src, r.Dst, r.SrcPort, r.DstPort}
	}
	return flowKey{r.Proto, r.Dst, r.Src, r.DstPort, r.SrcPort}
}

// flow is one TCP connection or UDP flow of the load.
type flow struct {
	key   flowKey
	recs  [2][]int // per direction (pktlog.Up, pktlog.Down): packet indexes, In order
	tcp   [2]*tcpDir
	first time.Duration // In of its first packet
	deliv [2][]int      // per direction: delivered packets in arrival order (lazily)
}

// tcpDir is one direction of a TCP connection: its sender's sequence space as it crossed the link.
type tcpDir struct {
	base uint32 // the sender's initial sequence number (or the first one seen)
	segs []seg  // transmissions that carry sequence space, In order
	orig []int  // segs that sent new sequence space, In order (= start order)
	// progress is the receiver's in-order point (relative sequence), after each change, in time
	// order; the point is 0 before anything arrived.
	progress []progress
	// arrived are the delivered segs in arrival order (= In order: the link never reorders a flow).
	arrived []int
	// holding are the periods [from, to) during which the receiver held bytes beyond a hole.
	holding [][2]time.Duration
	// acks are the acknowledgements that reached this direction's sender: the other direction's
	// delivered packets with ACK set, in arrival order.
	acks []ack
	// una is the running maximum of acks[:k+1].ack: what the sender knew was acknowledged.
	una []int64
	// recovering are the periods the sender spent recovering from losses (classifyRetx).
	recovering [][2]time.Duration
}

type seg struct {
	rec        int   // packet index
	start, end int64 // relative sequence space [start, end)
	retx       bool
	kind       retxKind
}

type progress struct {
	t     time.Duration
	point int64
}

type ack struct {
	t    time.Duration // Out: when the sender got it
	ack  int64         // relative to the acknowledged direction's base
	pure bool          // no payload, no SYN/FIN
	rec  int
}

// indexFlows groups the load's packets by flow and analyses TCP connections.
func indexFlows(packets []pktlog.Record) (map[flowKey]*flow, []*flow) {
	byKey := map[flowKey]*flow{}
	var order []*flow
	for i := range packets {
		r := &packets[i]
		if r.Proto != pktlog.ProtoTCP && r.Proto != pktlog.ProtoUDP {
			continue
		}
		k := keyOf(r)
		f := byKey[k]
		if f == nil {
			f = &flow{key: k, first: time.Duration(r.In)}
			byKey[k] = f
			order = append(order, f)
		}
		f.recs[r.Dir] = append(f.recs[r.Dir], i)
	}
	for _, f := range order {
		if f.key.proto == pktlog.ProtoTCP {
			f.analyseTCP(packets)
		}
	}
	return byKey, order
}

func (f *flow) analyseTCP(packets []pktlog.Record) {
	var bases [2]uint32
	var have [2]bool
	for d := 0; d < 2; d++ {
		for _, i := range f.recs[d] {
			r := &packets[i]
			if r.SeqLen() == 0 {
				continue
			}
			bases[d], have[d] = r.Seq, true
			break
		}
	}
	for d := 0; d < 2; d++ {
		t := &tcpDir{base: bases[d]}
		f.tcp[d] = t
		var sndMax int64
		started := false
		for _, i := range f.recs[d] {
			r := &packets[i]
			n := int64(r.SeqLen())
			if n == 0 {
				continue
			}
			s := int64(int32(r.Seq - t.base))
			sg := seg{rec: i, start: s, end: s + n}
			if started && s < sndMax {
				sg.retx = true
			}
			t.segs = append(t.segs, sg)
			if !sg.retx {
				t.orig = append(t.orig, len(t.segs)-1)
			}
			if !started || sg.end > sndMax {
				sndMax = sg.end
			}
			started = true
			if r.Fate.Delivered() {
				t.arrived = append(t.arrived, len(t.segs)-1)
			}
		}
		t.progress, t.holding = inOrder(t.segs, t.arrived, packets)
		// Acknowledgements of this direction travel the other way.
		o := 1 - d
		if !have[d] {
			continue
		}
		for _, i := range f.recs[o] {
			r := &packets[i]
			if !r.Fate.Delivered() || r.Flags&pktlog.FlagACK == 0 {
				continue
			}
			t.acks = append(t.acks, ack{t: time.Duration(r.Out), ack: int64(int32(r.Ack - t.base)), rec: i,
				pure: r.Payload == 0 && r.Flags&(pktlog.FlagSYN|pktlog.FlagFIN) == 0})
		}
		t.una = make([]int64, len(t.acks))
		for k, a := range t.acks {
			t.una[k] = a.ack
			if k > 0 {
				t.una[k] = max(t.una[k], t.una[k-1])
			}
		}
	}
}

// inOrder follows the receiver's in-order point as segments arrive, and the periods during which
// it held bytes beyond a hole.
func inOrder(segs []seg, arrived []int, packets []pktlog.Record) ([]progress, [][2]time.Duration) {
	if len(arrived) == 0 {
		return nil, nil
	}
	var out []progress
	var holding [][2]time.Duration
	point := segs[0].start // the first byte the receiver expects: the SYN, or the first seen
	var held [][2]int64    // out-of-order ranges, sorted, disjoint
	for _, k := range arrived {
		s := segs[k]
		t := time.Duration(packets[s.rec].Out)
		if s.start > point {
			if len(held) == 0 {
				holding = append(holding, [2]time.Duration{t, -1})
			}
			held = addRange(held, s.start, s.end)
			continue
		}
		if s.end <= point {
			continue
		}
		point = s.end
		for len(held) > 0 && held[0][0] <= point {
			point = max(point, held[0][1])
			held = held[1:]
		}
		if len(held) == 0 && len(holding) > 0 && holding[len(holding)-1][1] < 0 {
			holding[len(holding)-1][1] = t
		}
		out = append(out, progress{t, point})
	}
	if n := len(holding); n > 0 && holding[n-1][1] < 0 {
		holding[n-1][1] = time.Duration(1<<63 - 1)
	}
	return out, holding
}

// holdingAt says whether the receiver held bytes beyond a hole at t.
func (t *tcpDir) holdingAt(at time.Duration) bool {
	k := sort.Search(len(t.holding), func(k int) bool { return t.holding[k][1] > at })
	return k < len(t.holding) && t.holding[k][0] <= at
}

func addRange(rs [][2]int64, s, e int64) [][2]int64 {
	i := sort.Search(len(rs), func(i int) bool { return rs[i][0] > s })
	rs = append(rs, [2]int64{})
	copy(rs[i+1:], rs[i:])
	rs[i] = [2]int64{s, e}
	// merge around i
	merged := rs[:0]
	for _, r := range rs {
		if n := len(merged); n > 0 && r[0] <= merged[n-1][1] {
			merged[n-1][1] = max(merged[n-1][1], r[1])
			continue
		}
		merged = append(merged, r)
	}
	return merged
}

// pointAt is the receiver's in-order point at t (after every arrival at or before t).
func (t *tcpDir) pointAt(at time.Duration) int64 {
	k := sort.Search(len(t.progress), func(k int) bool { return t.progress[k].t > at })
	if k == 0 {
		if len(t.segs) == 0 {
			return 0
		}
		return t.segs[0].start
	}
	return t.progress[k-1].point
}

// origCovering returns the first transmission of the byte at seq (index into segs), -1 if the
// byte was never sent in the window.
func (t *tcpDir) origCovering(seq int64) int {
	k := sort.Search(len(t.orig), func(k int) bool { return t.segs[t.orig[k]].end > seq })
	if k < len(t.orig) && t.segs[t.orig[k]].start <= seq {
		return t.orig[k]
	}
	return -1
}

// firstDelivery returns the first delivered transmission (by In) covering seq, -1 if none.
func (t *tcpDir) firstDelivery(seq int64, packets []pktlog.Record) int {
	for _, k := range t.arrived {
		s := t.segs[k]
		if s.start <= seq && seq < s.end {
			return k
		}
	}
	return -1
}

// sndMaxAt is one past the highest sequence sent at or before t.
func (t *tcpDir) sndMaxAt(at time.Duration, packets []pktlog.Record) int64 {
	k := sort.Search(len(t.orig), func(k int) bool { return time.Duration(packets[t.segs[t.orig[k]].rec].In) > at })
	if k == 0 {
		return -1
	}
	return t.segs[t.orig[k-1]].end
}

// nextOrigAfter is the first transmission of new sequence space after t (-1: none).
func (t *tcpDir) nextOrigAfter(at time.Duration, packets []pktlog.Record) int {
	k := sort.Search(len(t.orig), func(k int) bool { return time.Duration(packets[t.segs[t.orig[k]].rec].In) > at })
	if k == len(t.orig) {
		return -1
	}
	return t.orig[k]
}

// lastTxAt is the last transmission at or before t (-1: none).
func (t *tcpDir) lastTxAt(at time.Duration, packets []pktlog.Record) int {
	k := sort.Search(len(t.segs), func(k int) bool { return time.Duration(packets[t.segs[k].rec].In) > at })
	return k - 1
}

// ackBefore is the last acknowledgement that reached the sender at or before t (-1: none).
func (t *tcpDir) ackBefore(at time.Duration) int {
	k := sort.Search(len(t.acks), func(k int) bool { return t.acks[k].t > at })
	return k - 1
}

// unaAt is what the sender knew was acknowledged at t.
func (t *tcpDir) unaAt(at time.Duration) int64 {
	if k := t.ackBefore(at); k >= 0 {
		return t.una[k]
	}
	return -1
}
