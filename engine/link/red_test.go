package link

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// TestREDControlLaw: the drop probability is 0 below red_min, rises linearly to max_p at
// red_max, and is 1 above it.
func TestREDControlLaw(t *testing.T) {
	const lo, hi, maxP = 30_000, 90_000, 0.1
	for _, c := range []struct{ avg, want float64 }{
		{0, 0}, {29_999, 0}, {30_000, 0}, {45_000, 0.025}, {60_000, 0.05}, {75_000, 0.075}, {89_999.9, maxP * 59_999.9 / 60_000}, {90_000, 1}, {1e9, 1},
	} {
		if got := DropProbability(c.avg, lo, hi, maxP); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("DropProbability(%v) = %v, want %v", c.avg, got, c.want)
		}
	}
}

// TestREDLinearBetweenThresholds: RED's realised per-packet drop probability is linear in the
// average queue between the thresholds. The queue is held at a fixed backlog with a weight of 1
// (so the average is the backlog); drops, uniformised by the count since the last one, come every
// X packets with X uniform on 1 … 1/p_b, so p_b = 1 / (2·mean(X) − 1).
func TestREDLinearBetweenThresholds(t *testing.T) {
	d := profile.Discipline{Name: profile.RED, MinBytes: 30_000, MaxBytes: 90_000, Probability: 0.1, Weight: 1}
	for _, frac := range []float64{0.1, 0.3, 0.5, 0.7, 0.9} {
		q := NewREDQueue(DisciplineConfig{Discipline: d, Limit: profile.QueueLimit{}, Seed: 3})
		backlog := int(30_000 + frac*60_000)
		for q.bytes < int64(backlog) {
			q.q.push(&Packet{Data: make([]byte, 1)})
			q.bytes++
		}
		q.idle = false
		var gaps []int
		since := 0
		started := false
		for range 400_000 {
			since++
			if q.Enqueue(0, &Packet{Data: make([]byte, 1)}, Backlog{}) == DroppedAQM {
				if started {
					gaps = append(gaps, since)
				}
				started, since = true, 0
				continue
			}
			q.Dequeue(0) // back to the same backlog
		}
		mean := 0.0
		for _, g := range gaps {
			mean += float64(g)
		}
		mean /= float64(len(gaps))
		got, want := 1/(2*mean-1), DropProbability(float64(backlog), 30_000, 90_000, 0.1)
		if math.Abs(got-want) > 0.03*want {
			t.Errorf("average %.0f%% of the way: realised p_b %.5f over %d drops, want %.5f", frac*100, got, len(gaps), want)
		}
	}
	// Below red_min nothing is dropped; at or above red_max everything is.
	for _, c := range []struct {
		backlog int
		want    Fate
	}{{29_000, Accepted}, {90_000, DroppedAQM}} {
		q := NewREDQueue(DisciplineConfig{Discipline: d, Limit: profile.QueueLimit{}, Seed: 3})
		q.q.push(&Packet{Data: make([]byte, c.backlog)})
		q.bytes, q.idle = int64(c.backlog), false
		for range 1000 {
			if f := q.Enqueue(0, &Packet{Data: make([]byte, 1)}, Backlog{}); f != c.want {
				t.Fatalf("backlog %d: %v, want %v", c.backlog, f, c.want)
			}
			if c.want == Accepted {
				q.q.pop()
				q.bytes--
			}
		}
	}
}

// redRef is RED as Floyd and Jacobson's paper writes it (Figure 2): the average moved by w_q at
// each arrival to a non-empty queue, decayed as (1−w_q)^m after an idle period, m = idle time /
// one packet's transmission time; between the thresholds a packet is marked with probability
// p_a = p_b / (1 − count·p_b).
type redRef struct {
	min, max, maxP, wq, s float64 // s: one average packet's transmission time, seconds
	avg                   float64
	count                 int
	qTime                 float64
	q                     []refPacket
	bytes                 float64
	rng                   *rand.Rand
}

func (r *redRef) enqueue(p refPacket, now float64) bool {
	if len(r.q) > 0 {
		r.avg = (1-r.wq)*r.avg + r.wq*r.bytes
	} else {
		r.avg *= math.Pow(1-r.wq, (now-r.qTime)/r.s)
	}
	switch {
	case r.avg >= r.min && r.avg < r.max:
		r.count++
		pb := r.maxP * (r.avg - r.min) / (r.max - r.min)
		pa := pb / (1 - float64(r.count)*pb)
		if pa < 0 || pa > 1 { // count·p_b ≥ 1: certain
			pa = 1
		}
		if r.rng.Float64() < pa {
			r.count = 0
			return false
		}
	case r.avg >= r.max:
		r.count = 0
		return false
	default:
		r.count = -1
	}
	r.q = append(r.q, p)
	r.bytes += float64(p.size)
	return true
}

func (r *redRef) dequeue(now float64) *refPacket {
	if len(r.q) == 0 {
		return nil
	}
	p := r.q[0]
	r.q = r.q[1:]
	r.bytes -= float64(p.size)
	if len(r.q) == 0 {
		r.qTime = now
	}
	return &p
}

// TestREDMatchesPaper: Linux's RED (wirelab's) and the paper's draw their randomness differently
// (Linux draws the count at which the next drop falls; the paper a coin per packet with p_a), so
// on the same random overloads they are compared where they must agree: the share of arrivals
// dropped, the average queue they hold and the spread of the gaps between drops.
func TestREDMatchesPaper(t *testing.T) {
	const bps = 10_000_000
	d := profile.Discipline{Name: profile.RED, MinBytes: 30_000, MaxBytes: 90_000, Probability: 0.1, Weight: 0.002}
	for seed := uint64(1); seed <= 4; seed++ {
		load := 1.02 + 0.03*float64(seed-1)
		rng := rand.New(rand.NewPCG(seed, 17))
		arrivals := poisson(rng, 0, 60*time.Second, load*bps, 4, 0)

		impl := NewREDQueue(DisciplineConfig{Discipline: d, Limit: profile.QueueLimit{}, Seed: seed, RateBPS: bps})
		var implAvg []float64
		_, implDropped := serve(arrivals, bps, refRun{
			enqueue: func(now time.Duration, p *refPacket) bool {
				f := impl.Enqueue(now, &Packet{Data: ipPacket(p.size, p.flow, 0, false), arrival: now, Handle: uint64(p.id)}, Backlog{})
				implAvg = append(implAvg, impl.Average())
				return f == Accepted
			},
			dequeue: func(now time.Duration) *refPacket {
				if p := impl.Dequeue(now); p != nil {
					return &refPacket{id: int(p.Handle), size: len(p.Data)}
				}
				return nil
			},
		})
		ref := &redRef{min: 30_000, max: 90_000, maxP: 0.1, wq: 0.002, s: redAvgPacket * 8 / bps, count: -1, rng: rand.New(rand.NewPCG(seed, 99))}
		var refAvg []float64
		_, refDropped := serve(arrivals, bps, refRun{
			enqueue: func(now time.Duration, p *refPacket) bool {
				ok := ref.enqueue(*p, now.Seconds())
				refAvg = append(refAvg, ref.avg)
				return ok
			},
			dequeue: func(now time.Duration) *refPacket { return ref.dequeue(now.Seconds()) },
		})
		mean := func(xs []float64) float64 {
			xs = xs[len(xs)/3:]
			s := 0.0
			for _, x := range xs {
				s += x
			}
			return s / float64(len(xs))
		}
		implShare, refShare := float64(len(implDropped))/float64(len(arrivals)), float64(len(refDropped))/float64(len(arrivals))
		ia, ra := mean(implAvg), mean(refAvg)
		t.Logf("load %.2f: Linux's RED drops %.4f with an average queue of %.0f B, the paper's %.4f with %.0f B", load, implShare, ia, refShare, ra)
		if math.Abs(implShare-refShare) > 0.1*refShare || math.Abs(ia-ra) > 0.05*(90_000-30_000) {
			t.Errorf("load %.2f: Linux's RED drops %.4f with an average queue of %.0f B, the paper's %.4f with %.0f B", load, implShare, ia, refShare, ra)
		}
		if ra < 30_000 || ra > 90_000 {
			t.Errorf("load %.2f: the average %.0f B is not between the thresholds: the scenario does not test the linear part", load, ra)
		}
	}
}

// TestAdaptiveRED: with red_adaptive, a standing average above 60 % of the way between the
// thresholds raises max_p step by step (by min(0.01, max_p/4) every 500 ms, up to 0.5); an idle
// queue lowers it by a tenth every 500 ms down to 0.01.
func TestAdaptiveRED(t *testing.T) {
	d := profile.Discipline{Name: profile.RED, MinBytes: 30_000, MaxBytes: 90_000, Probability: 0.02, Weight: 0.002, Adaptive: true}
	out, dir := runLink(t, Config{RateBPS: 10_000_000, Discipline: d, Queue: profile.QueueLimit{Packets: 1000}, Seed: 1},
		cbr(0, 20*time.Second, 13e6, 1500, 1, 0), 0)
	q := dir.queue.(*REDQueue)
	if q.MaxP() <= 0.05 {
		t.Errorf("after 20 s of overload max_p is %.3f, want it raised from 0.02", q.MaxP())
	}
	if countFate(out, DroppedAQM) == 0 {
		t.Error("no drops")
	}
	raised := q.MaxP()
	q.Tick(q.NextTick() + 10*time.Second) // ten seconds idle
	if q.MaxP() >= raised {
		t.Errorf("max_p %.3f after an idle stretch, was %.3f", q.MaxP(), raised)
	}
}

// TestREDParameters: RED's automatic thresholds and weight follow Adaptive RED's rule from the
// rate; given ones are kept, and one threshold given derives the other.
func TestREDParameters(t *testing.T) {
	auto := profile.Discipline{Name: profile.RED, Probability: 0.02}
	for _, c := range []struct {
		d              profile.Discipline
		rate           float64
		lo, hi, weight float64
	}{
		{auto, 1e6, 7500, 22500, 1 - math.Exp(-1/(1e6/12000))},      // 83 packets/s: 5 packets
		{auto, 100e6, 31250, 93750, 1 - math.Exp(-1/(100e6/12000))}, // 8333 packets/s: 20.8 packets
		{auto, 0, 7500, 22500, 0.002},
		{profile.Discipline{Name: profile.RED, MinBytes: 30_000, Weight: 0.01}, 1e6, 30000, 90000, 0.01},
		{profile.Discipline{Name: profile.RED, MaxBytes: 90_000}, 1e6, 30000, 90000, 1 - math.Exp(-1/(1e6/12000))},
	} {
		lo, hi, w := REDParameters(c.d, c.rate)
		if math.Abs(lo-c.lo) > 1e-6 || math.Abs(hi-c.hi) > 1e-6 || math.Abs(w-c.weight) > 1e-12 {
			t.Errorf("%+v at %v bit/s: %v, %v, %v; want %v, %v, %v", c.d, c.rate, lo, hi, w, c.lo, c.hi, c.weight)
		}
	}
}
