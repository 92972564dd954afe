package link

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// refPacket is a packet of the reference implementations: an id, a size, a flow and the time it
// was queued.
type refPacket struct {
	id, size int
	flow     uint16
	tstamp   int64 // CoDel clock units (1.024 µs)
}

// codelRef is RFC 8289's pseudocode (section 5, "Annotated Pseudocode for CoDel") transcribed as
// written, with one deliberate change: first_above_time is passed when now is strictly after it,
// as in Linux (codel_should_drop), which wirelab follows; the RFC writes now >= first_above_time.
// Time is in the same 1.024 µs units as the implementation; control_law is t + INTERVAL/√count.
type codelRef struct {
	target, interval int64
	maxPacket        int
	// bytes returns the bytes queued (the queue's, or an FQ-CoDel's whole backlog).
	bytes func() int
	pop   func() *refPacket

	firstAboveTime, dropNext int64
	count, lastCount         uint32
	dropping                 bool
	drop                     func(p *refPacket)
}

type dodequeueResult struct {
	p        *refPacket
	okToDrop bool
}

func (c *codelRef) controlLaw(t int64) int64 {
	return t + int64(float64(c.interval)/math.Sqrt(float64(c.count)))
}

func (c *codelRef) dodequeue(now int64) dodequeueResult {
	p := c.pop()
	r := dodequeueResult{p: p}
	if p == nil {
		c.firstAboveTime = 0
		return r
	}
	sojourn := now - p.tstamp
	if sojourn < c.target || c.bytes() <= c.maxPacket {
		c.firstAboveTime = 0
	} else {
		if c.firstAboveTime == 0 {
			c.firstAboveTime = now + c.interval
		} else if now > c.firstAboveTime { // RFC: >=
			r.okToDrop = true
		}
	}
	return r
}

func (c *codelRef) dequeue(now int64) *refPacket {
	r := c.dodequeue(now)
	if r.p == nil {
		c.dropping = false
		return nil
	}
	if c.dropping {
		if !r.okToDrop {
			c.dropping = false
		}
		for now >= c.dropNext && c.dropping {
			c.drop(r.p)
			c.count++
			r = c.dodequeue(now)
			if !r.okToDrop {
				c.dropping = false
			} else {
				c.dropNext = c.controlLaw(c.dropNext)
			}
		}
	} else if r.okToDrop {
		c.drop(r.p)
		r = c.dodequeue(now)
		c.dropping = true
		delta := c.count - c.lastCount
		c.count = 1
		if delta > 1 && now-c.dropNext < 16*c.interval {
			c.count = delta
		}
		c.dropNext = c.controlLaw(now)
		c.lastCount = c.count
	}
	return r.p
}

// refQueue is a plain FIFO for the reference.
type refQueue struct {
	q     []*refPacket
	bytes int
}

func (q *refQueue) push(p *refPacket) { q.q = append(q.q, p); q.bytes += p.size }
func (q *refQueue) pop() *refPacket {
	if len(q.q) == 0 {
		return nil
	}
	p := q.q[0]
	q.q = q.q[1:]
	q.bytes -= p.size
	return p
}

// refRun is one differential run: both implementations see the same arrivals and are served at
// the same instants (whenever the link, at rate bps, is free), and must make the same decisions.
type refRun struct {
	enqueue func(now time.Duration, p *refPacket) bool // false: dropped on arrival
	dequeue func(now time.Duration) *refPacket
}

// implRun is r for a discipline of this package: each arrival offered as an IP packet of its size
// and flow, its id the packet's Handle; before (nil: nothing) runs ahead of each call with its time
// (a discipline's timer ticks).
func implRun(d Discipline, before func(now time.Duration)) refRun {
	if before == nil {
		before = func(time.Duration) {}
	}
	return refRun{
		enqueue: func(now time.Duration, p *refPacket) bool {
			before(now)
			return d.Enqueue(now, &Packet{Data: ipPacket(p.size, p.flow, 0, false), arrival: now, Handle: uint64(p.id)}, Backlog{}) == Accepted
		},
		dequeue: func(now time.Duration) *refPacket {
			before(now)
			if p := d.Dequeue(now); p != nil {
				return &refPacket{id: int(p.Handle), size: len(p.Data)}
			}
			return nil
		},
	}
}

// serve drives r with arrivals on a link of bps and returns the ids in the order they were sent.
func serve(arrivals []arrival, bps int64, r refRun) (sent []int, refused []int) {
	free := time.Duration(0)
	i := 0
	for i < len(arrivals) || free >= 0 {
		if i < len(arrivals) && arrivals[i].at <= free {
			a := arrivals[i]
			if !r.enqueue(a.at, &refPacket{id: i, size: a.size, flow: a.flow, tstamp: int64(toCodelTime(a.at))}) {
				refused = append(refused, i)
			}
			i++
			continue
		}
		p := r.dequeue(free)
		if p == nil {
			if i == len(arrivals) {
				break
			}
			free = arrivals[i].at
			continue
		}
		sent = append(sent, p.id)
		free += TransmissionTime(p.size, bps)
	}
	return sent, refused
}

// TestCoDelMatchesRFC8289: on random arrivals at 0.9 to 1.6 times the rate, wirelab's CoDel and
// the RFC's pseudocode send and drop exactly the same packets.
func TestCoDelMatchesRFC8289(t *testing.T) {
	const bps = 10_000_000
	info, _ := profile.LookupDiscipline(profile.CoDel)
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		load := 0.9 + 0.1*float64(seed-1)
		arrivals := poisson(rng, 0, 20*time.Second, load*bps, 4, 0)

		var implDropped, refDropped []int
		rec := sinkFunc(func(p *Packet, _ time.Duration, _ Fate) { implDropped = append(implDropped, int(p.Handle)) })
		impl := NewCoDelQueue(DisciplineConfig{Discipline: info.Defaults, Limit: profile.QueueLimit{}, Sink: rec})
		implSent, _ := serve(arrivals, bps, implRun(impl, nil))

		var fifo refQueue
		ref := &codelRef{target: int64(toCodelTime(5 * time.Millisecond)), interval: int64(toCodelTime(100 * time.Millisecond)),
			maxPacket: codelMTU, bytes: func() int { return fifo.bytes }, pop: fifo.pop,
			drop: func(p *refPacket) { refDropped = append(refDropped, p.id) }}
		refSent, _ := serve(arrivals, bps, refRun{
			enqueue: func(_ time.Duration, p *refPacket) bool { fifo.push(p); return true },
			dequeue: func(now time.Duration) *refPacket { return ref.dequeue(int64(toCodelTime(now))) },
		})
		if len(refDropped) == 0 && load > 1.05 {
			t.Errorf("load %.1f: the reference dropped nothing", load)
		}
		if d := firstDifference(implSent, refSent); d >= 0 || firstDifference(implDropped, refDropped) >= 0 {
			t.Errorf("load %.1f: %d sent / %d dropped, the RFC's %d / %d; first difference at sent[%d], dropped[%d]",
				load, len(implSent), len(implDropped), len(refSent), len(refDropped), d, firstDifference(implDropped, refDropped))
		}
	}
}

type sinkFunc func(p *Packet, at time.Duration, why Fate)

func (f sinkFunc) Drop(p *Packet, at time.Duration, why Fate) { f(p, at, why) }

// firstDifference returns the first index where a and b differ (-1 when equal).
func firstDifference(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// fqRef is FQ-CoDel as RFC 8290 describes it (sections 4.1–4.3 and 5.2, with Linux's choices the
// RFC reports: drop from the fattest flow up to half its backlog and at most 64 packets, CoDel's
// MTU check on the whole queue), written plainly: a map of flows, slices for the two lists.
type fqRef struct {
	quantum, limit int
	flows          map[uint16]*fqRefFlow
	newFlows       []uint16
	oldFlows       []uint16
	packets, bytes int
	dropped        []int
	target, ival   int64
	bucket         func(flow uint16) uint32 // the flow's queue index: ties for the fattest go to the lowest, as in Linux's scan
}

type fqRefFlow struct {
	q       refQueue
	deficit int
	codel   *codelRef
	listed  bool
}

func (f *fqRef) flow(id uint16) *fqRefFlow {
	fl := f.flows[id]
	if fl == nil {
		fl = &fqRefFlow{}
		fl.codel = &codelRef{target: f.target, interval: f.ival, maxPacket: codelMTU,
			bytes: func() int { return f.bytes },
			pop: func() *refPacket {
				p := fl.q.pop()
				if p != nil {
					f.packets--
					f.bytes -= p.size
				}
				return p
			},
			drop: func(p *refPacket) { f.dropped = append(f.dropped, p.id) }}
		f.flows[id] = fl
	}
	return fl
}

func (f *fqRef) enqueue(p *refPacket) bool {
	fl := f.flow(p.flow)
	fl.q.push(p)
	f.packets++
	f.bytes += p.size
	if !fl.listed {
		fl.listed, fl.deficit = true, f.quantum
		f.newFlows = append(f.newFlows, p.flow)
	}
	if f.packets <= f.limit {
		return true
	}
	// The fattest flow (the lowest queue index on ties, as Linux's scan of its array).
	var fatID uint16
	fat := -1
	ids := make([]uint16, 0, len(f.flows))
	for id := range f.flows {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return f.bucket(ids[i]) < f.bucket(ids[j]) })
	for _, id := range ids {
		if b := f.flows[id].q.bytes; b > fat {
			fat, fatID = b, id
		}
	}
	ffl := f.flows[fatID]
	threshold, gone, n := fat/2, 0, 0
	self := false
	for {
		d := ffl.q.pop()
		f.packets--
		f.bytes -= d.size
		gone += d.size
		n++
		if d == p {
			self = true
		} else {
			f.dropped = append(f.dropped, d.id)
		}
		if n >= 64 || gone >= threshold || len(ffl.q.q) == 0 {
			break
		}
	}
	ffl.codel.count += uint32(n)
	return !self
}

func (f *fqRef) dequeue(now int64) *refPacket {
	for {
		var id uint16
		fromNew := len(f.newFlows) > 0
		switch {
		case fromNew:
			id = f.newFlows[0]
		case len(f.oldFlows) > 0:
			id = f.oldFlows[0]
		default:
			return nil
		}
		fl := f.flows[id]
		if fl.deficit <= 0 {
			fl.deficit += f.quantum
			f.removeHead(fromNew)
			f.oldFlows = append(f.oldFlows, id)
			continue
		}
		p := fl.codel.dequeue(now)
		if p == nil {
			f.removeHead(fromNew)
			if fromNew && len(f.oldFlows) > 0 {
				f.oldFlows = append(f.oldFlows, id)
			} else {
				fl.listed = false
			}
			continue
		}
		fl.deficit -= p.size
		return p
	}
}

func (f *fqRef) removeHead(fromNew bool) {
	if fromNew {
		f.newFlows = f.newFlows[1:]
	} else {
		f.oldFlows = f.oldFlows[1:]
	}
}

// TestFQCoDelMatchesRFC8290: on random arrivals of 12 flows at 0.9 to 1.6 times the rate, with a
// limit that overflows now and then, wirelab's FQ-CoDel and the plain reference send and drop
// the same packets. The flows are chosen so that none share a flow queue (the reference does not
// hash).
func TestFQCoDelMatchesRFC8290(t *testing.T) {
	const bps = 10_000_000
	info, _ := profile.LookupDiscipline(profile.FQCoDel)
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 9))
		load := 0.9 + 0.1*float64(seed-1)
		arrivals := poisson(rng, 0, 20*time.Second, load*bps, 12, 0)
		// Bursts of one flow, so that the fattest flow's overflow drops happen too.
		arrivals = merge(arrivals, cbr(5*time.Second, 6*time.Second, 30e6, 1500, 13, 0))
		limit := profile.QueueLimit{Packets: 300}

		var implDropped []int
		rec := sinkFunc(func(p *Packet, _ time.Duration, _ Fate) { implDropped = append(implDropped, int(p.Handle)) })
		impl := NewFQCoDelQueue(DisciplineConfig{Discipline: info.Defaults, Limit: limit, Sink: rec, Seed: seed})
		buckets := map[uint32]uint16{}
		for f := uint16(1); f <= 13; f++ {
			b := impl.classify(ipPacket(100, f, 0, false))
			if other, ok := buckets[b]; ok {
				t.Skipf("seed %d: flows %d and %d share a flow queue", seed, other, f)
			}
			buckets[b] = f
		}
		implSent, implRefused := serve(arrivals, bps, implRun(impl, nil))

		ref := &fqRef{quantum: info.Defaults.Quantum, limit: int(limit.Packets), flows: map[uint16]*fqRefFlow{},
			bucket: func(f uint16) uint32 { return impl.classify(ipPacket(100, f, 0, false)) },
			target: int64(toCodelTime(5 * time.Millisecond)), ival: int64(toCodelTime(100 * time.Millisecond))}
		refSent, refRefused := serve(arrivals, bps, refRun{
			enqueue: func(_ time.Duration, p *refPacket) bool { return ref.enqueue(p) },
			dequeue: func(now time.Duration) *refPacket { return ref.dequeue(int64(toCodelTime(now))) },
		})
		if len(ref.dropped)+len(refRefused) == 0 && load > 1.05 {
			t.Errorf("load %.1f: the reference dropped nothing", load)
		}
		if d := firstDifference(implSent, refSent); d >= 0 || firstDifference(implDropped, ref.dropped) >= 0 || firstDifference(implRefused, refRefused) >= 0 {
			t.Errorf("load %.1f: %d sent / %d dropped / %d refused, the reference's %d / %d / %d; first difference at sent[%d]",
				load, len(implSent), len(implDropped), len(implRefused), len(refSent), len(ref.dropped), len(refRefused), d)
		}
	}
}
