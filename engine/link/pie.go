package link

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// PIEQueue is PIE (RFC 8033) as Linux's sch_pie runs it since 2019 — and, with the docsis_pie
// discipline, DOCSIS-PIE (RFC 8034). Packets are dropped (or, with ECN, marked) at enqueue with a
// probability that a proportional-integral controller updates every tupdate from the queueing
// delay: Linux's PIE measures that delay as the sojourn time of the last packet dequeued (its
// default, dq_rate_estimator off); DOCSIS-PIE estimates it from the queue's bytes and the
// configured rate. A burst allowance suppresses early drops at first, and derandomization
// (accumulated probability) spaces them.
//
// Linux's PIE keeps time in psched ticks (64 ns) and the probability as a fraction of
// MAX_PROB = 2⁵⁶−1; this is the same arithmetic. DOCSIS-PIE has no Linux implementation: it
// follows RFC 8034's pseudocode in floating point (docs/network.md says where from).
type PIEQueue struct {
	docsis bool
	limit  profile.QueueLimit
	ecn    bool
	rng    *rand.Rand
	q      ring[*Packet]
	bytes  int64
	next   time.Duration // the next probability update

	// Linux PIE, in psched ticks and MAX_PROB units.
	target, burstReset uint64 // ticks
	tupdate            time.Duration
	alpha, beta        uint64 // in sixteenths, as Linux's parameters
	qdelay, qdelayOld  uint64 // ticks
	burst              uint64 // remaining burst allowance, ticks
	dqStamp            uint64 // ticks of the last dequeue; dqInvalid before one
	prob, accu         uint64

	// DOCSIS-PIE, in seconds and probabilities as RFC 8034's pseudocode.
	d docsisPIE
}

// Linux's PIE constants (include/net/pie.h, sch_pie.c).
const (
	pieMaxProb    = math.MaxUint64 >> 8
	pieTickShift  = 6 // psched ticks: 64 ns
	pieTicksPerS  = 1_000_000_000 >> pieTickShift
	pieDQInvalid  = math.MaxUint64
	pieFirstTick  = 500 * time.Millisecond // the timer first fires HZ/2 after the qdisc is made
	pieMTU        = 1514                   // psched_mtu on Ethernet: under two of these PIE never drops
	pieRandStream = 0x706965               // "pie"
)

func pieTicks(d time.Duration) uint64 { return uint64(d) >> pieTickShift }

// RFC 8034's constants (Appendix A).
const (
	docsisTarget       = 10 * time.Millisecond
	docsisTUpdate      = 16 * time.Millisecond
	docsisAlpha        = 0.25
	docsisBeta         = 2.5
	docsisMaxBurst     = 142 * time.Millisecond
	docsisBurstTimeout = time.Second
	docsisMeanPkt      = 1024.0
	docsisMinPkt       = 64.0
	docsisProbLow      = 0.85
	docsisProbHigh     = 8.5
	docsisLatencyLow   = 5 * time.Millisecond
	docsisLatencyHigh  = 200 * time.Millisecond
)

// docsisPIE is DOCSIS-PIE's state (RFC 8034's pseudocode).
type docsisPIE struct {
	rateBPS    float64
	buffer     float64 // bytes: the limit, or the packet limit × MEAN_PKTSIZE
	prob, accu float64
	qdelayOld  float64 // seconds
	burst      time.Duration
	state      docsisState
	resets     int // updates spent quiet while IN_BURST
}

type docsisState uint8

const (
	docsisNoBurst         docsisState = iota // INACTIVE: no early drop below a third of the buffer
	docsisInBurst                            // the queue got long: the next drop starts protection
	docsisBurstProtecting                    // a burst allowance runs after the first drop
)

// NewPIEQueue returns an empty PIE queue; c.Discipline.Name docsis_pie makes it DOCSIS-PIE.
func NewPIEQueue(c DisciplineConfig) *PIEQueue {
	q := &PIEQueue{limit: c.Limit, ecn: c.ECN, rng: rand.New(rand.NewPCG(c.Seed, pieRandStream)), q: newRing[*Packet](64)}
	if c.Discipline.Name == profile.DOCSISPIE {
		q.docsis = true
		q.limit = docsisLimit(c.Limit, c.RateBPS)
		q.d = docsisPIE{rateBPS: c.RateBPS, buffer: float64(q.limit.Bytes)}
		if q.limit.Bytes == 0 {
			q.d.buffer = float64(q.limit.Packets) * docsisMeanPkt
		}
		q.tupdate = docsisTUpdate
		q.next = 0 // ns-2's DOCSIS model starts its timer at once
		return q
	}
	d := c.Discipline
	q.target, q.tupdate = pieTicks(d.Target), d.TUpdate
	q.alpha, q.beta = uint64(math.Round(d.Alpha*16)), uint64(math.Round(d.Beta*16))
	q.burstReset = pieTicks(d.Burst)
	q.burst, q.dqStamp = q.burstReset, pieDQInvalid
	q.next = pieFirstTick
	return q
}

// docsisLimit is docsis_pie's queue limit: the one given, or DOCSIS 3.1's default buffer of
// 100 ms at the rate (at least three full-size packets).
func docsisLimit(l profile.QueueLimit, rateBPS float64) profile.QueueLimit {
	if l.Packets != 0 || l.Bytes != 0 {
		return l
	}
	return profile.QueueLimit{Bytes: max(int64(rateBPS*profile.DOCSISPIEBuffer.Seconds()/8), 3*profile.DefaultLinkMTU)}
}

// Enqueue implements Discipline: a drop at the limit (overflow), else PIE's early-drop decision.
func (q *PIEQueue) Enqueue(_ time.Duration, p *Packet, _ Backlog) Fate {
	if overLimit(q.limit, q.Backlog(), len(p.Data)) {
		q.accu, q.d.accu = 0, 0
		return DroppedOverflow
	}
	if q.docsis && q.d.dropEarly(float64(q.bytes), float64(len(p.Data)), q.rng) ||
		!q.docsis && q.dropEarly(len(p.Data)) && !(q.ecn && q.prob <= pieMaxProb/10 && markCE(p)) {
		q.accu = 0
		return DroppedAQM
	}
	q.q.push(p)
	q.bytes += int64(len(p.Data))
	return Accepted
}

// dropEarly is Linux's pie_drop_early (bytemode off).
func (q *PIEQueue) dropEarly(size int) bool {
	switch {
	case q.burst > 0: // burst allowance left
		return false
	case q.qdelay < q.target/2 && q.prob < pieMaxProb/5: // low delay and a low probability
		return false
	case q.bytes < 2*pieMTU: // fewer than two full-size packets queued
		return false
	}
	if q.prob == 0 {
		q.accu = 0
	} else {
		q.accu += q.prob
	}
	switch {
	case q.accu < (pieMaxProb/100)*85:
		return false
	case q.accu >= (pieMaxProb/2)*17:
		return true
	}
	if q.rng.Uint64()>>8 < q.prob {
		q.accu = 0
		return true
	}
	return false
}

// Dequeue implements Discipline: the head, and Linux's pie_process_dequeue (the sojourn time as
// the queueing delay, the burst allowance running down).
func (q *PIEQueue) Dequeue(now time.Duration) *Packet {
	if q.q.len() == 0 {
		return nil
	}
	p := q.q.pop()
	q.bytes -= int64(len(p.Data))
	if q.docsis {
		return p
	}
	t := pieTicks(now)
	q.qdelay = t - pieTicks(p.arrival)
	var dtime uint64
	if q.dqStamp != pieDQInvalid {
		dtime = t - q.dqStamp
	}
	q.dqStamp = t
	if q.bytes == 0 {
		q.qdelay = 0
	}
	if dtime > 0 {
		q.burst -= min(q.burst, dtime)
	}
	return p
}

// Backlog implements Discipline.
func (q *PIEQueue) Backlog() Backlog { return Backlog{Packets: q.q.len(), Bytes: q.bytes} }

// NextTick implements ticker: the next probability update.
func (q *PIEQueue) NextTick() time.Duration { return q.next }

// Tick implements ticker: the probability update, then the next one tupdate later.
func (q *PIEQueue) Tick(now time.Duration) {
	if q.docsis {
		q.d.update(float64(q.bytes))
	} else {
		q.calculate()
	}
	q.next += q.tupdate
}

// calculate is Linux's pie_calculate_probability (dq_rate_estimator off).
func (q *PIEQueue) calculate() {
	qdelay, qdelayOld := q.qdelay, q.qdelayOld
	update := !(qdelay == 0 && q.bytes != 0) // a tiny backlog: do not decay this round
	alpha := (q.alpha * (pieMaxProb / pieTicksPerS)) >> 4
	beta := (q.beta * (pieMaxProb / pieTicksPerS)) >> 4
	// Scale the weights down while the probability is small (RFC 8033, 4.2).
	if q.prob < pieMaxProb/10 {
		alpha >>= 1
		beta >>= 1
		for power := uint64(100); q.prob < pieMaxProb/power && power <= 1_000_000; power *= 10 {
			alpha >>= 2
			beta >>= 2
		}
	}
	// Unsigned differences multiplied and read as signed: C's arithmetic in sch_pie.c.
	delta := int64(alpha*(qdelay-q.target)) + int64(beta*(qdelay-qdelayOld))
	old := q.prob
	if delta > int64(pieMaxProb/(100/2)) && q.prob >= pieMaxProb/10 {
		delta = int64(pieMaxProb/100) * 2 // raise by at most 2 % a step
	}
	if qdelay > pieTicks(250*time.Millisecond) {
		delta += int64(pieMaxProb / (100 / 2)) // a fast rise for high delays
	}
	q.prob += uint64(delta)
	if delta > 0 {
		if q.prob < old {
			q.prob, update = pieMaxProb, false
		}
	} else if q.prob > old {
		q.prob = 0
	}
	if qdelay == 0 && qdelayOld == 0 && update {
		q.prob -= q.prob / 64 // idle: decay to 98.4 %
	}
	if qdelay < q.target/2 && qdelayOld < q.target/2 && q.prob == 0 {
		q.burst, q.dqStamp, q.accu = q.burstReset, pieDQInvalid, 0 // pie_vars_init: a new burst allowance
	}
	q.qdelayOld = qdelay
}

// Probability is the current drop probability (0 to 1).
func (q *PIEQueue) Probability() float64 {
	if q.docsis {
		return q.d.prob
	}
	return float64(q.prob) / pieMaxProb
}

// QueueDelay is the queueing delay the controller last used.
func (q *PIEQueue) QueueDelay() time.Duration {
	if q.docsis {
		return time.Duration(q.d.qdelayOld * 1e9)
	}
	return time.Duration(q.qdelay << pieTickShift)
}

// dropEarly is RFC 8034's drop_early: byte-scaled probability, derandomized, no drop until the
// queue has reached a third of the buffer, then a burst allowance from the first drop on.
func (d *docsisPIE) dropEarly(backlog, size float64, rng *rand.Rand) bool {
	if d.burst > 0 {
		return false
	}
	if d.prob == 0 {
		d.accu = 0
	}
	if d.state == docsisNoBurst {
		if backlog < d.buffer/3 {
			return false
		}
		d.state = docsisInBurst
	}
	p := min(d.prob*size/docsisMeanPkt, docsisProbLow)
	d.accu += p
	u := rng.Float64()
	switch {
	case d.qdelayOld < docsisTarget.Seconds()/2 && d.prob < 0.2:
		return false
	case backlog <= 2*docsisMeanPkt:
		return false
	case d.accu < docsisProbLow:
		return false
	case d.accu < docsisProbHigh && u > p:
		return false
	}
	d.accu = 0
	if d.state == docsisInBurst {
		d.state, d.burst = docsisBurstProtecting, docsisMaxBurst
	}
	return true
}

// update is RFC 8034's calculate_drop_prob, every 16 ms: the delay from the backlog and the rate.
func (d *docsisPIE) update(backlog float64) {
	qdelay := 0.0
	if d.rateBPS > 0 {
		qdelay = backlog * 8 / d.rateBPS
	}
	target := docsisTarget.Seconds()
	if d.burst > 0 {
		d.prob = 0
	} else {
		p := docsisAlpha*(qdelay-target) + docsisBeta*(qdelay-d.qdelayOld)
		switch {
		case d.prob < 0.000001:
			p /= 2048
		case d.prob < 0.00001:
			p /= 512
		case d.prob < 0.0001:
			p /= 128
		case d.prob < 0.001:
			p /= 32
		case d.prob < 0.01:
			p /= 8
		case d.prob < 0.1:
			p /= 2
		case d.prob < 1:
			p /= 0.5
		case d.prob < 10:
			p /= 0.125
		default:
			p /= 0.03125
		}
		if d.prob >= 0.1 && p > 0.02 {
			p = 0.02
		}
		p += d.prob
		if qdelay < docsisLatencyLow.Seconds() && d.qdelayOld < docsisLatencyLow.Seconds() {
			p *= 0.98
		} else if qdelay > docsisLatencyHigh.Seconds() {
			p += 0.02
		}
		d.prob = min(max(p, 0), docsisProbLow*docsisMeanPkt/docsisMinPkt)
	}
	d.burst -= min(d.burst, docsisTUpdate)
	quiet := qdelay < target/2 && d.qdelayOld < target/2 && d.prob == 0 && d.burst == 0
	switch {
	case quiet && d.state == docsisBurstProtecting:
		d.state, d.resets = docsisInBurst, 0
	case quiet && d.state == docsisInBurst:
		if d.resets++; d.resets > int(docsisBurstTimeout/docsisTUpdate) {
			d.state, d.resets = docsisNoBurst, 0
		}
	case !quiet && d.state == docsisInBurst:
		d.resets = 0
	}
	d.qdelayOld = qdelay
}
