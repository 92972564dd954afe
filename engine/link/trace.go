package link

import (
	"sort"
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// TraceRate serves packets from a mahimahi trace's delivery opportunities. Its semantics follow
// mahimahi's LinkQueue, in continuous time:
//
//   - Opportunity k of the trace happens at t_k + m·period for every m ≥ 0 (the trace loops; the
//     period is its last timestamp; time 0 is when the link started). Several opportunities at
//     the same time are one opportunity of their combined size.
//   - An opportunity carries up to 1500 bytes (profile.TraceOpportunityBytes) from the head of the
//     queue, in order, of packets that arrived at or before its time. A packet may be split over
//     several opportunities, and one opportunity may carry the end of one packet and several small
//     packets after it.
//   - A packet departs at the time of the opportunity that carries its last byte.
//   - Bytes of an opportunity that the queue cannot fill are lost: capacity is never banked.
//
// mahimahi counts each packet with its 4-byte TUN header against 1504-byte opportunities; we count
// IP bytes against 1500. Full-size packets take exactly one opportunity in both; small packets
// pack slightly tighter here (e.g. 37 rather than 34 40-byte ACKs per opportunity).
type TraceRate struct {
	at     []time.Duration // distinct opportunity times within one period, increasing
	bytes  []int64         // capacity of each (1500 × opportunities at that time)
	period time.Duration

	// Cursor: the opportunity that carried the last byte of the previous packet.
	started bool          // false until the first packet
	loop    int64         // how many whole periods precede it
	i       int           // its index in at/bytes
	when    time.Duration // its absolute time (loop·period + at[i])
	spare   int64         // bytes it can still carry
}

// NewTraceRate returns a serialiser for trace t, which must be valid (as profile.ParseTrace and
// profile.LoadTrace return it; NewDirection checks a hand-made one).
func NewTraceRate(t *profile.Trace) *TraceRate {
	if len(t.Slots) == 0 || t.Period <= 0 {
		panic("link: NewTraceRate needs a trace with opportunities and a positive period")
	}
	r := &TraceRate{period: t.Period}
	for _, s := range t.Slots {
		r.at = append(r.at, s.At)
		r.bytes = append(r.bytes, int64(s.Opportunities)*profile.TraceOpportunityBytes)
	}
	return r
}

// Start implements Serializer: the opportunity that would carry the packet's first byte.
func (r *TraceRate) Start(arrival time.Duration) time.Duration {
	c := *r // the cursor moves on a copy
	switch {
	case !c.started || arrival > c.when:
		c.seek(arrival)
	case c.spare == 0:
		c.advance()
	}
	return c.when
}

// Depart implements Serializer.
func (r *TraceRate) Depart(arrival time.Duration, size int) time.Duration {
	if !r.started || arrival > r.when {
		// The link idled since the last opportunity used: its spare bytes are gone, and this
		// packet starts at the first opportunity at or after its arrival.
		r.seek(arrival)
	}
	need := int64(size)
	for need > r.spare {
		need -= r.spare
		r.advance()
	}
	r.spare -= need
	return r.when
}

// seek moves the cursor to the first opportunity at or after t (t > r.when).
func (r *TraceRate) seek(t time.Duration) {
	// Period m holds opportunities in (m·period, (m+1)·period], plus one at m·period if the trace
	// starts at 0. The first opportunity ≥ t lies in the first period whose last opportunity,
	// at (m+1)·period, is ≥ t: m = ⌈t/period⌉ - 1.
	m := int64(0)
	if t > 0 {
		m = int64((t+r.period-1)/r.period) - 1
	}
	offset := t - time.Duration(m)*r.period
	i := sort.Search(len(r.at), func(k int) bool { return r.at[k] >= offset })
	r.started, r.loop, r.i = true, m, i // i < len(r.at): the last opportunity is at period ≥ offset
	r.when = time.Duration(m)*r.period + r.at[i]
	r.spare = r.bytes[i]
}

// advance moves the cursor to the next opportunity.
func (r *TraceRate) advance() {
	r.i++
	if r.i == len(r.at) {
		r.i = 0
		r.loop++
	}
	r.when = time.Duration(r.loop)*r.period + r.at[r.i]
	r.spare = r.bytes[r.i]
}
