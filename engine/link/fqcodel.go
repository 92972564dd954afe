package link

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// FQCoDelQueue is FQ-CoDel (RFC 8290) as Linux's sch_fq_codel runs it: packets are hashed by
// their 5-tuple into flow queues, each managed by its own CoDel state machine; flows that become
// active join the new-flows list and are served first, by deficit round robin with a quantum of
// bytes; a full queue (the limit) drops from the head of the flow with the largest backlog, up to
// half of it and at most 64 packets at once. CoDel's "more than an MTU queued" check looks at the
// whole queue's backlog, as Linux does.
type FQCoDelQueue struct {
	prm     codelParams
	limit   profile.QueueLimit
	quantum int
	seed    uint64
	sink    Sink

	flows              []fqFlow
	newFlows, oldFlows fqList
	packets            int
	bytes              int64

	newFlowCount uint64
	active       int // flows on a list
	maxActive    int
	cur          *fqFlow // the flow being dequeued from (codelFIFO)
}

type fqFlow struct {
	q       ring[*Packet]
	backlog int64
	deficit int
	v       codelVars
	list    *fqList // nil: on no list
	next    int32   // the next flow on its list, -1 at the tail

	packets, drops, marks uint64
}

// fqList is a FIFO of flows (their indices), linked through fqFlow.next.
type fqList struct{ head, tail int32 }

func (l *fqList) empty() bool { return l.head < 0 }

// fqDropBatch is how many packets one overflow may drop from the fat flow (Linux's drop_batch_size).
const fqDropBatch = 64

// NewFQCoDelQueue returns an empty FQ-CoDel queue with c's flow count and quantum.
func NewFQCoDelQueue(c DisciplineConfig) *FQCoDelQueue {
	f := &FQCoDelQueue{prm: newCoDelParams(c.Discipline, c.ECN), limit: c.Limit, quantum: c.Discipline.Quantum,
		seed: c.Seed ^ fqHashStream, sink: c.Sink, flows: make([]fqFlow, c.Discipline.Flows)}
	f.newFlows, f.oldFlows = fqList{-1, -1}, fqList{-1, -1}
	for i := range f.flows {
		f.flows[i].next = -1
	}
	return f
}

const fqHashStream = 0x6671636f64656c // "fqcodel"

func (f *FQCoDelQueue) push(l *fqList, i int32) {
	fl := &f.flows[i]
	fl.list, fl.next = l, -1
	if l.tail < 0 {
		l.head = i
	} else {
		f.flows[l.tail].next = i
	}
	l.tail = i
}

func (f *FQCoDelQueue) popHead(l *fqList) int32 {
	i := l.head
	fl := &f.flows[i]
	l.head = fl.next
	if l.head < 0 {
		l.tail = -1
	}
	fl.list, fl.next = nil, -1
	return i
}

// Enqueue implements Discipline: p joins its flow's queue; a new flow joins the new-flows list
// with a full quantum. Over the limit, packets are dropped from the fattest flow — p itself
// when it is among them (then its fate is DroppedOverflow).
func (f *FQCoDelQueue) Enqueue(now time.Duration, p *Packet, _ Backlog) Fate {
	idx := f.classify(p.Data)
	fl := &f.flows[idx]
	p.flow = idx
	fl.q.push(p)
	size := int64(len(p.Data))
	fl.backlog += size
	f.bytes += size
	f.packets++
	if fl.list == nil {
		f.push(&f.newFlows, int32(idx))
		f.newFlowCount++
		fl.deficit = f.quantum
		f.active++
		f.maxActive = max(f.maxActive, f.active)
	}
	if !overLimit(f.limit, Backlog{Packets: f.packets - 1, Bytes: f.bytes - size}, int(size)) {
		return Accepted
	}
	if f.dropFattest(now, p) {
		return DroppedOverflow
	}
	return Accepted
}

// dropFattest drops from the head of the flow with the largest backlog until half of it is gone
// (at most fqDropBatch packets), as Linux's fq_codel_drop, and tells that flow's CoDel. It
// reports whether arriving, the packet that overflowed the queue, was among them.
func (f *FQCoDelQueue) dropFattest(now time.Duration, arriving *Packet) bool {
	fat := 0
	for i := range f.flows {
		if f.flows[i].backlog > f.flows[fat].backlog {
			fat = i
		}
	}
	fl := &f.flows[fat]
	threshold := fl.backlog >> 1
	var dropped int64
	n := uint32(0)
	self := false
	for {
		p := fl.q.pop()
		size := int64(len(p.Data))
		dropped += size
		fl.backlog -= size
		f.bytes -= size
		f.packets--
		fl.drops++
		n++
		if p == arriving {
			self = true
		} else {
			f.sink.Drop(p, now, DroppedOverflow)
		}
		if n >= fqDropBatch || dropped >= threshold || fl.q.len() == 0 {
			break
		}
	}
	fl.v.count += n // tell CoDel to increase its signal strength as well
	return self
}

// Dequeue implements Discipline: deficit round robin over the new flows, then the old ones; each
// flow's CoDel decides what of its head to drop.
func (f *FQCoDelQueue) Dequeue(now time.Duration) *Packet {
	for {
		l := &f.newFlows
		if l.empty() {
			l = &f.oldFlows
			if l.empty() {
				return nil
			}
		}
		idx := l.head
		fl := &f.flows[idx]
		if fl.deficit <= 0 {
			fl.deficit += f.quantum
			f.popHead(l)
			f.push(&f.oldFlows, idx)
			continue
		}
		f.cur = fl
		p := fl.v.dequeue(now, &f.prm, f)
		f.cur = nil
		if p == nil {
			// Empty: a new flow passes through the old list once (so it cannot starve them), an
			// old flow leaves.
			f.popHead(l)
			if l == &f.newFlows && !f.oldFlows.empty() {
				f.push(&f.oldFlows, idx)
			} else {
				f.active--
			}
			continue
		}
		fl.deficit -= len(p.Data)
		fl.packets++
		if p.ce {
			fl.marks++
		}
		return p
	}
}

// Backlog implements Discipline.
func (f *FQCoDelQueue) Backlog() Backlog { return Backlog{Packets: f.packets, Bytes: f.bytes} }

func (f *FQCoDelQueue) pop() *Packet {
	fl := f.cur
	if fl.q.len() == 0 {
		return nil
	}
	p := fl.q.pop()
	size := int64(len(p.Data))
	fl.backlog -= size
	f.bytes -= size
	f.packets--
	return p
}

func (f *FQCoDelQueue) backlog() int64 { return f.bytes }

func (f *FQCoDelQueue) drop(p *Packet, now time.Duration) {
	f.cur.drops++
	f.sink.Drop(p, now, DroppedAQM)
}

// Flows implements flowReporter.
func (f *FQCoDelQueue) Flows() FlowStats {
	s := FlowStats{Queues: len(f.flows), NewFlows: f.newFlowCount, MaxActive: f.maxActive, Top: []FlowCounts{}}
	for i := range f.flows {
		fl := &f.flows[i]
		if fl.drops+fl.marks > 0 {
			s.WithDrops++
			s.Top = append(s.Top, FlowCounts{Queue: i, Packets: fl.packets, Drops: fl.drops, Marks: fl.marks})
		}
	}
	slices.SortStableFunc(s.Top, func(a, b FlowCounts) int {
		return int(int64(b.Drops+b.Marks) - int64(a.Drops+a.Marks))
	})
	if len(s.Top) > TopFlows {
		s.Top = s.Top[:TopFlows]
	}
	return s
}

// classify hashes a packet's flow — IP addresses, protocol and, for TCP and UDP, ports — into one
// of the flow queues (Linux: skb_get_hash, a keyed hash of the same fields, scaled by
// reciprocal_scale). Keyed by the direction's seed, so collisions are reproducible.
func (f *FQCoDelQueue) classify(pkt []byte) uint32 {
	h := f.seed
	mix := func(v uint64) {
		h ^= v
		h *= 0x9e3779b97f4a7c15
		h ^= h >> 32
	}
	var l4 []byte
	var proto uint8
	switch {
	case len(pkt) >= 20 && pkt[0]>>4 == 4:
		proto = pkt[9]
		mix(uint64(binary.BigEndian.Uint32(pkt[12:16]))<<32 | uint64(binary.BigEndian.Uint32(pkt[16:20])))
		if ihl := int(pkt[0]&0x0f) * 4; ihl >= 20 && ihl <= len(pkt) && binary.BigEndian.Uint16(pkt[6:8])&0x1fff == 0 {
			l4 = pkt[ihl:]
		}
	case len(pkt) >= 40 && pkt[0]>>4 == 6:
		proto = pkt[6]
		for i := 8; i < 40; i += 8 {
			mix(binary.BigEndian.Uint64(pkt[i : i+8]))
		}
		l4 = pkt[40:]
	}
	mix(uint64(proto))
	if (proto == 6 || proto == 17) && len(l4) >= 4 {
		mix(uint64(binary.BigEndian.Uint32(l4[0:4])))
	}
	hi, _ := bits.Mul32(uint32(h>>32)^uint32(h), uint32(len(f.flows)))
	return hi
}
