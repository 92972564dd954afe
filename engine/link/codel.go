package link

import (
	"math"
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// codelTime is CoDel's clock as Linux keeps it: nanoseconds >> 10 (units of 1.024 µs) in 32 bits,
// compared through signed differences (RFC 1982), so it wraps harmlessly as long as the times
// compared are within 36 minutes of each other.
type codelTime uint32

const codelShift = 10

func toCodelTime(d time.Duration) codelTime { return codelTime(uint64(d) >> codelShift) }

func (a codelTime) after(b codelTime) bool   { return int32(a-b) > 0 }
func (a codelTime) afterEq(b codelTime) bool { return int32(a-b) >= 0 }
func (a codelTime) before(b codelTime) bool  { return int32(a-b) < 0 }

// codelControlLaw is CoDel's control law (RFC 8289, 3.3): the next drop comes interval/√count
// after t. A pure function, computed exactly (IEEE square root, truncated to the clock's unit):
// Linux caches 1/√count and refines it by one Newton step per drop, which makes the second drop's
// interval 29 % short, the third's 2.6 % and is within 1 % from the seventh on.
func codelControlLaw(t, interval codelTime, count uint32) codelTime {
	return t + codelTime(float64(interval)/math.Sqrt(float64(count)))
}

// codelMTU is the backlog in bytes at or below which CoDel never drops: one full-size packet
// (Linux's psched_mtu on Ethernet, which counts the 14-byte header; wirelab counts IP bytes, so
// a 1500-byte packet alone is always at or below it, as it is in Linux).
const codelMTU = 1514

// codelParams are one CoDel instance's parameters in its clock's units.
type codelParams struct {
	target, interval codelTime
	ecn              bool
}

func newCoDelParams(d profile.Discipline, ecn bool) codelParams {
	return codelParams{target: toCodelTime(d.Target), interval: toCodelTime(d.Interval), ecn: ecn}
}

// codelVars is one CoDel state machine (RFC 8289's variables; Linux's struct codel_vars): CoDel's
// own, or each FQ-CoDel flow queue's.
type codelVars struct {
	count, lastCount uint32
	dropping         bool
	firstAbove       codelTime // when the sojourn time went (or will be) above target for an interval; 0: below
	dropNext         codelTime // the next drop while dropping
	ldelay           codelTime // the last packet's sojourn time
}

// codelFIFO is the queue a CoDel state machine manages: the whole queue (CoDel) or one flow's
// (FQ-CoDel).
type codelFIFO interface {
	// pop removes the head (nil when empty).
	pop() *Packet
	// backlog is the discipline's bytes after the pop (FQ-CoDel: all its flows', as Linux).
	backlog() int64
	// drop is told of each packet CoDel drops, at now.
	drop(p *Packet, now time.Duration)
}

// shouldDrop is RFC 8289's dodequeue decision for the packet just popped at now: whether its
// sojourn time has stayed at or above target, with more than an MTU queued, for an interval.
func (v *codelVars) shouldDrop(p *Packet, now codelTime, prm *codelParams, backlog int64) bool {
	if p == nil {
		v.firstAbove = 0
		return false
	}
	v.ldelay = now - toCodelTime(p.arrival)
	if v.ldelay.before(prm.target) || backlog <= codelMTU {
		v.firstAbove = 0 // went below: stay below for at least an interval
		return false
	}
	if v.firstAbove == 0 {
		v.firstAbove = now + prm.interval // just went above: drop if still above then
	} else if now.after(v.firstAbove) {
		return true
	}
	return false
}

// dequeue is CoDel's dequeue (RFC 8289, 5.7; Linux's codel_dequeue): the next packet of q at now,
// after dropping — or, with ECN, marking — what the control law says. nil when q is empty or
// everything it held was dropped.
func (v *codelVars) dequeue(now time.Duration, prm *codelParams, q codelFIFO) *Packet {
	p := q.pop()
	if p == nil {
		v.dropping = false
		return nil
	}
	ct := toCodelTime(now)
	drop := v.shouldDrop(p, ct, prm, q.backlog())
	switch {
	case v.dropping && !drop:
		v.dropping = false // sojourn time below target: leave the dropping state
	case v.dropping:
		// Drop until the next drop is in the future; a large backlog can make several due now.
		for v.dropping && ct.afterEq(v.dropNext) {
			v.count++
			if prm.ecn && markCE(p) {
				v.dropNext = codelControlLaw(v.dropNext, prm.interval, v.count)
				return p
			}
			q.drop(p, now)
			p = q.pop()
			if !v.shouldDrop(p, ct, prm, q.backlog()) {
				v.dropping = false
			} else {
				v.dropNext = codelControlLaw(v.dropNext, prm.interval, v.count)
			}
		}
	case drop:
		if !prm.ecn || !markCE(p) {
			q.drop(p, now)
			p = q.pop()
			v.shouldDrop(p, ct, prm, q.backlog())
		}
		v.dropping = true
		// If the queue went above target soon after it last went below, the drop rate that
		// controlled it then is a good start now (Linux's rule, as RFC 8289 quotes it).
		delta := v.count - v.lastCount
		if delta > 1 && (ct - v.dropNext).before(16*prm.interval) {
			v.count = delta
		} else {
			v.count = 1
		}
		v.lastCount = v.count
		v.dropNext = codelControlLaw(ct, prm.interval, v.count)
	}
	return p
}

// CoDelQueue is CoDel (RFC 8289) as Linux's sch_codel runs it: one FIFO whose dequeue drops (or
// marks) the head while its sojourn time has stayed above target for an interval, spacing drops
// interval/√count apart. Arrivals beyond the limit are dropped (overflow). Time is kept in
// Linux's 1.024 µs units.
type CoDelQueue struct {
	prm   codelParams
	v     codelVars
	limit profile.QueueLimit
	q     ring[*Packet]
	bytes int64
	sink  Sink
}

// NewCoDelQueue returns an empty CoDel queue.
func NewCoDelQueue(c DisciplineConfig) *CoDelQueue {
	return &CoDelQueue{prm: newCoDelParams(c.Discipline, c.ECN), limit: c.Limit, q: newRing[*Packet](64), sink: c.Sink}
}

// Enqueue implements Discipline: a drop only when the queue is at its limit.
func (c *CoDelQueue) Enqueue(_ time.Duration, p *Packet, _ Backlog) Fate {
	if overLimit(c.limit, c.Backlog(), len(p.Data)) {
		return DroppedOverflow
	}
	c.q.push(p)
	c.bytes += int64(len(p.Data))
	return Accepted
}

// Dequeue implements Discipline.
func (c *CoDelQueue) Dequeue(now time.Duration) *Packet { return c.v.dequeue(now, &c.prm, c) }

// Backlog implements Discipline.
func (c *CoDelQueue) Backlog() Backlog { return Backlog{Packets: c.q.len(), Bytes: c.bytes} }

func (c *CoDelQueue) pop() *Packet {
	if c.q.len() == 0 {
		return nil
	}
	p := c.q.pop()
	c.bytes -= int64(len(p.Data))
	return p
}

func (c *CoDelQueue) backlog() int64 { return c.bytes }

func (c *CoDelQueue) drop(p *Packet, now time.Duration) { c.sink.Drop(p, now, DroppedAQM) }
