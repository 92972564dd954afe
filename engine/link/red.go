package link

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// REDQueue is Random Early Detection (Floyd and Jacobson 1993) as Linux's sch_red runs it. At
// each arrival the average queue (bytes) moves towards the backlog by the weight w_q — or, after
// the queue sat empty, decays as if m small packets had passed, m = idle time / the time one
// takes at the link's rate. Below red_min nothing is dropped; above red_max everything is
// (marked, with ECN); between them packets are dropped (marked) with a probability rising
// linearly from 0 to red_probability, uniformised by the count since the last drop, as Linux and
// the paper do. Adaptive RED (red_adaptive=1) moves red_probability every 500 ms to keep the
// average between 40 % and 60 % of the way from red_min to red_max. Arrivals beyond the limit are
// dropped (overflow).
//
// Linux keeps the average in fixed point with a power-of-two weight and tabulates the idle decay;
// this keeps them in floating point with the weight as given (docs/network.md).
type REDQueue struct {
	limit    profile.QueueLimit
	ecn      bool
	rng      *rand.Rand
	min, max float64 // thresholds, bytes
	maxP     float64
	weight   float64
	adaptive bool
	txTime   float64 // seconds one average packet takes at the rate (0: no idle decay)
	q        ring[*Packet]
	bytes    int64

	avg       float64       // the average queue, bytes
	count     int           // packets since the last drop; -1 outside the thresholds
	r         float64       // the random threshold for this count
	idle      bool          // the queue has been empty since idleStart
	idleStart time.Duration //
	next      time.Duration // Adaptive RED's next adjustment
}

// REDParameters resolves RED's automatic parameters (0 in the profile) from the link's mean rate,
// as Adaptive RED sets them (Floyd, Gummadi and Shenker 2001, as ns-3's RedQueueDisc does): with C
// the rate in full-size (1500-byte) packets per second, red_min = max(5, C × 5 ms / 2) packets,
// red_max = 3 × red_min (red_min = red_max / 3 when only red_max is given), the weight
// 1 − exp(−1/C) (a time constant of one second). Thresholds are in bytes.
func REDParameters(d profile.Discipline, rateBPS float64) (minBytes, maxBytes, weight float64) {
	const pkt = profile.DefaultLinkMTU
	c := rateBPS / (8 * pkt) // packets per second
	minBytes, maxBytes, weight = float64(d.MinBytes), float64(d.MaxBytes), d.Weight
	switch {
	case minBytes == 0 && maxBytes == 0:
		minBytes = max(5, c*redTargetDelay.Seconds()/2) * pkt
		maxBytes = 3 * minBytes
	case minBytes == 0:
		minBytes = maxBytes / 3
	case maxBytes == 0:
		maxBytes = 3 * minBytes
	}
	if weight == 0 {
		weight = 0.002 // Floyd's w_q, for a link without a rate
		if c > 0 {
			weight = 1 - math.Exp(-1/c)
		}
	}
	return minBytes, maxBytes, weight
}

// redTargetDelay is Adaptive RED's target queueing delay, from which its thresholds follow.
const redTargetDelay = 5 * time.Millisecond

// Adaptive RED's constants (Linux's red.h: MAX_P_MIN, MAX_P_MAX, the 500 ms period).
const (
	redMaxPMin      = 0.01
	redMaxPMax      = 0.50
	redAdaptPeriod  = 500 * time.Millisecond
	redAvgPacket    = 1000     // bytes: tc red's avpkt, with which the idle decay counts packets
	redRandStream   = 0x726564 // "red"
	redNoAdaptation = time.Duration(math.MaxInt64)
)

// NewREDQueue returns an empty RED queue. Thresholds and weight of 0 are derived from the rate
// (REDParameters).
func NewREDQueue(c DisciplineConfig) *REDQueue {
	d := c.Discipline
	lo, hi, w := REDParameters(d, c.RateBPS)
	q := &REDQueue{limit: c.Limit, ecn: c.ECN, rng: rand.New(rand.NewPCG(c.Seed, redRandStream)),
		min: lo, max: hi, maxP: d.Probability, weight: w, adaptive: d.Adaptive,
		q: newRing[*Packet](64), count: -1, idle: true, next: redNoAdaptation}
	if c.RateBPS > 0 {
		q.txTime = redAvgPacket * 8 / c.RateBPS
	}
	if q.adaptive {
		q.next = redAdaptPeriod
	}
	return q
}

// Enqueue implements Discipline: the average updated, then RED's decision, then the limit.
func (q *REDQueue) Enqueue(now time.Duration, p *Packet, _ Backlog) Fate {
	q.avg = q.average(now)
	q.idle = false
	switch {
	case q.avg < q.min:
		q.count = -1
	case q.avg >= q.max:
		q.count = -1
		if !q.ecn || !markCE(p) {
			return DroppedAQM
		}
	default:
		q.count++
		if q.count == 0 {
			q.r = q.random()
		} else if (q.avg-q.min)*float64(q.count) >= q.r {
			q.count, q.r = 0, q.random()
			if !q.ecn || !markCE(p) {
				return DroppedAQM
			}
		}
	}
	if overLimit(q.limit, q.Backlog(), len(p.Data)) {
		return DroppedOverflow
	}
	q.q.push(p)
	q.bytes += int64(len(p.Data))
	return Accepted
}

// average is the average queue at now (Linux's red_calc_qavg).
func (q *REDQueue) average(now time.Duration) float64 {
	if !q.idle {
		return q.avg + q.weight*(float64(q.bytes)-q.avg)
	}
	if q.txTime == 0 {
		return q.avg
	}
	m := (now - q.idleStart).Seconds() / q.txTime
	return q.avg * math.Pow(1-q.weight, m)
}

// random draws the count-since-last-drop threshold: a drop comes once (avg−min)·count reaches
// it, which spaces drops uniformly over 1 … (max−min)/(max_p·(avg−min)) packets (Linux's
// red_random and red_mark_probability).
func (q *REDQueue) random() float64 { return q.rng.Float64() * (q.max - q.min) / q.maxP }

// Dequeue implements Discipline: the head; an emptied queue starts an idle period.
func (q *REDQueue) Dequeue(now time.Duration) *Packet {
	if q.q.len() == 0 {
		return nil
	}
	p := q.q.pop()
	q.bytes -= int64(len(p.Data))
	if q.q.len() == 0 {
		q.idle, q.idleStart = true, now
	}
	return p
}

// Backlog implements Discipline.
func (q *REDQueue) Backlog() Backlog { return Backlog{Packets: q.q.len(), Bytes: q.bytes} }

// NextTick implements ticker: Adaptive RED's next adjustment (never without red_adaptive).
func (q *REDQueue) NextTick() time.Duration { return q.next }

// Tick implements ticker: Adaptive RED (Floyd, Gummadi and Shenker 2001; Linux's
// red_adaptative_algo): raise max_p by min(0.01, max_p/4) while the average is above 60 % of the
// way between the thresholds, lower it by a tenth while below 40 %.
func (q *REDQueue) Tick(now time.Duration) {
	avg := q.avg
	if q.idle {
		avg = q.average(now)
	}
	delta := q.max - q.min
	switch {
	case avg > q.min+3*delta/5 && q.maxP <= redMaxPMax:
		q.maxP += min(0.01, q.maxP/4)
	case avg < q.min+2*delta/5 && q.maxP >= redMaxPMin:
		q.maxP = q.maxP / 10 * 9
	}
	q.next += redAdaptPeriod
}

// MaxP is the current drop probability at red_max (it moves with red_adaptive).
func (q *REDQueue) MaxP() float64 { return q.maxP }

// Average is the average queue in bytes as of the last arrival.
func (q *REDQueue) Average() float64 { return q.avg }

// DropProbability is RED's drop probability before uniformisation at an average of avg bytes:
// 0 below red_min, rising linearly to max_p at red_max, 1 above (the control law, a pure function).
func DropProbability(avg, minBytes, maxBytes, maxP float64) float64 {
	switch {
	case avg < minBytes:
		return 0
	case avg >= maxBytes:
		return 1
	}
	return maxP * (avg - minBytes) / (maxBytes - minBytes)
}
