package link

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// DelayLine is the propagation stage: it holds packets that have left the rate stage until they
// are due at the far end.
type DelayLine interface {
	// Insert schedules p, which left the rate stage at departure. Calls come in departure order;
	// departure never decreases.
	Insert(departure time.Duration, p *Packet)
	// Pop removes and returns the packet due earliest, if it is due at or before now.
	Pop(now time.Duration) (*Packet, bool)
	// Next reports when the earliest packet is due (false when the line is empty).
	Next() (time.Duration, bool)
	// Len is the number of packets in the line.
	Len() int
}

var _ DelayLine = (*PathDelay)(nil)

// PathDelay is a fixed one-way delay with optional jitter and optional extra delay per origin.
//
// A packet that left the rate stage at departure is due at
//
//	base  = max(departure + max(0, delay + J), previous packet's base)   J uniform in [-jitter, +jitter] ns
//	due   = base + extra(origin)
//
// J is a whole number of nanoseconds drawn uniformly from [-jitter, +jitter] (inclusive), once per
// packet, from the direction's own random stream. The max with the previous packet's base is the
// no-reordering rule: jitter never lets a packet overtake the one before it (like a real path
// whose delay varies, not a shuffler). When packets are spaced more than 2·jitter apart the rule
// never binds and the realised delay is exactly uniform; closer packets are pushed back to keep
// order, which raises their mean delay.
//
// extra(origin) is a constant per origin, so packets to one origin never overtake each other;
// packets to origins with different extra delays may overtake each other (they take different
// paths). Packets due at the same time leave in the order they entered.
type PathDelay struct {
	delay  time.Duration
	jitter time.Duration
	span   uint64     // 2·jitter + 1 possible values of J
	rng    *rand.Rand // nil without jitter
	floor  time.Duration

	lanes  []lane  // lane 0: no extra delay; one lane per distinct non-zero extra delay
	laneOf []uint8 // origin → lane (origins beyond the slice use lane 0)
	seq    uint64
	n      int
}

// lane holds the packets that share one extra delay; their due times never decrease.
type lane struct {
	extra time.Duration
	q     ring[*Packet]
}

// NewPathDelay returns a delay line. originExtra gives the extra one-way delay of origins
// 1 … profile.MaxOrigin (other keys and non-positive delays are ignored); seed seeds the jitter.
func NewPathDelay(delay, jitter time.Duration, originExtra map[int]time.Duration, seed uint64) *PathDelay {
	d := &PathDelay{delay: delay, jitter: jitter}
	if jitter > 0 {
		d.span = 2*uint64(jitter) + 1
		d.rng = rand.New(rand.NewPCG(seed, jitterStream))
	}
	d.lanes = []lane{{q: newRing[*Packet](256)}}
	var extras []time.Duration
	maxOrigin := 0
	for origin, extra := range originExtra {
		if origin < 1 || origin > profile.MaxOrigin || extra <= 0 {
			continue
		}
		if !slices.Contains(extras, extra) {
			extras = append(extras, extra)
		}
		maxOrigin = max(maxOrigin, origin)
	}
	slices.Sort(extras) // lanes in a deterministic order
	for _, e := range extras {
		d.lanes = append(d.lanes, lane{extra: e, q: newRing[*Packet](256)})
	}
	d.laneOf = make([]uint8, maxOrigin+1)
	for origin, extra := range originExtra {
		if origin >= 1 && origin <= profile.MaxOrigin && extra > 0 {
			d.laneOf[origin] = uint8(1 + slices.Index(extras, extra)) // at most 64 lanes + lane 0
		}
	}
	return d
}

// Insert implements DelayLine.
func (d *PathDelay) Insert(departure time.Duration, p *Packet) {
	delay := d.delay
	if d.rng != nil {
		delay += time.Duration(d.rng.Uint64N(d.span)) - d.jitter
		if delay < 0 {
			delay = 0
		}
	}
	base := max(departure+delay, d.floor)
	d.floor = base
	ln := &d.lanes[0]
	if p.Origin > 0 && p.Origin < len(d.laneOf) {
		ln = &d.lanes[d.laneOf[p.Origin]]
	}
	p.due = base + ln.extra
	p.seq = d.seq
	d.seq++
	ln.q.push(p)
	d.n++
}

// head returns the lane whose first packet leaves first, or nil.
func (d *PathDelay) head() *lane {
	if d.n == 0 {
		return nil
	}
	if len(d.lanes) == 1 {
		return &d.lanes[0]
	}
	var best *lane
	for i := range d.lanes {
		ln := &d.lanes[i]
		if ln.q.len() == 0 {
			continue
		}
		if best == nil {
			best = ln
			continue
		}
		p, b := ln.q.peek(), best.q.peek()
		if p.due < b.due || (p.due == b.due && p.seq < b.seq) {
			best = ln
		}
	}
	return best
}

// Pop implements DelayLine.
func (d *PathDelay) Pop(now time.Duration) (*Packet, bool) {
	ln := d.head()
	if ln == nil || ln.q.peek().due > now {
		return nil, false
	}
	d.n--
	return ln.q.pop(), true
}

// Next implements DelayLine.
func (d *PathDelay) Next() (time.Duration, bool) {
	ln := d.head()
	if ln == nil {
		return 0, false
	}
	return ln.q.peek().due, true
}

// Len implements DelayLine.
func (d *PathDelay) Len() int { return d.n }
