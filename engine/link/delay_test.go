package link

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// TestFixedDelay: every packet is due exactly delay after it left the rate stage.
func TestFixedDelay(t *testing.T) {
	d := newDirection(t, Config{Delay: 75 * ms})
	for i := 0; i < 100; i++ {
		d.Push(time.Duration(i)*333*time.Microsecond, packet(100))
	}
	for i, p := range popAll(d) {
		if want := time.Duration(i)*333*time.Microsecond + 75*ms; p.Due() != want {
			t.Fatalf("packet %d due %v, want %v", i, p.Due(), want)
		}
	}
	// With a rate: the 1500-byte packet at 1 Mbit/s with 75 ms one-way leaves at 12 + 75 ms.
	d = newDirection(t, Config{Delay: 75 * ms, RateBPS: 1_000_000})
	d.Push(0, packet(1500))
	if next, ok := d.NextDeadline(); !ok || next != 87*ms {
		t.Fatalf("NextDeadline = %v, %v; want 87ms", next, ok)
	}
	if _, ok := d.Pop(87*ms - 1); ok {
		t.Fatal("popped 1 ns early")
	}
	if p, ok := d.Pop(87 * ms); !ok || p.Due() != 87*ms {
		t.Fatal("not popped when due")
	}
}

// pushSpaced pushes n packets spaced by gap and returns (departure, due) pairs in push order
// (unlimited rate: departure = push time).
func pushSpaced(t *testing.T, d *Direction, n int, gap time.Duration, origin func(i int) int) (push []time.Duration, pkts []*Packet) {
	t.Helper()
	for i := 0; i < n; i++ {
		p := packet(100)
		if origin != nil {
			p.Origin = origin(i)
		}
		at := time.Duration(i) * gap
		if d.Push(at, p) != Accepted {
			t.Fatal("dropped")
		}
		push, pkts = append(push, at), append(pkts, p)
	}
	return push, pkts
}

// TestJitterNeverReorders: back-to-back packets with jitter far larger than their spacing come
// out in order, each within [delay-j, delay+j] of its departure.
func TestJitterNeverReorders(t *testing.T) {
	const delay, jitter = 20 * ms, 5 * ms
	d := newDirection(t, Config{Delay: delay, Jitter: jitter, Seed: 9})
	push, pkts := pushSpaced(t, d, 100_000, 100*time.Microsecond, nil)
	out := popAll(d)
	clamped := 0
	for i, p := range out {
		if p != pkts[i] {
			t.Fatalf("packet %d came out in position %d", indexOf(pkts, p), i)
		}
		if i > 0 && p.Due() < out[i-1].Due() {
			t.Fatalf("packet %d due %v before the previous one at %v", i, p.Due(), out[i-1].Due())
		}
		lat := p.Due() - push[i]
		if lat < delay-jitter || lat > delay+jitter {
			t.Fatalf("packet %d delayed %v, outside %v ± %v", i, lat, delay, jitter)
		}
		if i > 0 && p.Due() == out[i-1].Due() {
			clamped++
		}
	}
	if clamped == 0 {
		t.Error("the no-reordering rule never bound: the test is not exercising it")
	}
}

func indexOf(ps []*Packet, p *Packet) int {
	for i, q := range ps {
		if q == p {
			return i
		}
	}
	return -1
}

// TestJitterSpread: packets spaced further apart than 2·jitter get exactly the configured
// distribution: uniform whole nanoseconds in [-j, +j]. Checked: range, mean, variance j²/3 and a
// χ² test of uniformity over 20 bins, each at the 99.9 % level.
func TestJitterSpread(t *testing.T) {
	const delay, jitter, n = 50 * ms, 5 * ms, 100_000
	d := newDirection(t, Config{Delay: delay, Jitter: jitter, Seed: 11})
	push, _ := pushSpaced(t, d, n, 2*jitter+1, nil)
	out := popAll(d)
	j := float64(jitter)
	var sum, sumSq float64
	lo, hi := jitter, -jitter
	var bins [20]int
	for i, p := range out {
		off := p.Due() - push[i] - delay
		lo, hi = min(lo, off), max(hi, off)
		x := float64(off)
		sum += x
		sumSq += x * x
		bins[min(int((x+j)/(2*j+1)*20), 19)]++
	}
	if lo < -jitter || hi > jitter {
		t.Fatalf("offsets span [%v, %v], outside ±%v", lo, hi, jitter)
	}
	// The extremes of n uniform draws are within 2j·20/n of the ends with probability 1 - e^-20.
	if edge := time.Duration(2 * j * 20 / n); lo > -jitter+edge || hi < jitter-edge {
		t.Errorf("offsets span only [%v, %v] of ±%v", lo, hi, jitter)
	}
	mean := sum / n
	if sd := j / math.Sqrt(3); math.Abs(mean) > z999*sd/math.Sqrt(n) {
		t.Errorf("mean offset %.0f ns, want 0 ± %.0f", mean, z999*sd/math.Sqrt(n))
	}
	// Sample variance of a uniform: σ² = j²/3, and its standard error is √((μ₄-σ⁴)/n) with μ₄ = j⁴/5.
	variance := sumSq/n - mean*mean
	if se := j * j * math.Sqrt((1.0/5-1.0/9)/n); math.Abs(variance-j*j/3) > z999*se {
		t.Errorf("variance %.4g, want %.4g ± %.4g", variance, j*j/3, z999*se)
	}
	chi2 := 0.0
	for _, b := range bins {
		e := float64(n) / 20
		chi2 += (float64(b) - e) * (float64(b) - e) / e
	}
	if chi2 > 43.82 { // χ²(19) 99.9 % quantile
		t.Errorf("χ² = %.1f over 20 bins: not uniform (bins %v)", chi2, bins)
	}
}

// TestJitterClampsAtZero: with jitter larger than the delay, a packet is never due before it left
// the rate stage, and the clamp is reached.
func TestJitterClampsAtZero(t *testing.T) {
	d := newDirection(t, Config{Delay: ms, Jitter: 5 * ms, Seed: 3})
	push, _ := pushSpaced(t, d, 10_000, 20*ms, nil)
	atZero := 0
	for i, p := range popAll(d) {
		if p.Due() < push[i] {
			t.Fatalf("packet %d due %v before it was sent at %v", i, p.Due(), push[i])
		}
		if p.Due() == push[i] {
			atZero++
		}
	}
	if atZero < 3000 { // P(delay+J ≤ 0) = 4/10
		t.Errorf("only %d of 10000 packets clamped to zero delay", atZero)
	}
}

// TestJitterHasItsOwnRandomStream: adding jitter does not change which packets are lost.
func TestJitterHasItsOwnRandomStream(t *testing.T) {
	fates := func(jitter time.Duration) []Fate {
		d := newDirection(t, Config{Delay: 10 * ms, Jitter: jitter, Loss: profile.Loss{Model: profile.LossBernoulli, P: 0.2}, Seed: 5})
		return burst(d, 0, repeat(100, 5000)...)
	}
	a, b := fates(0), fates(3*ms)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("packet %d: %v without jitter, %v with", i, a[i], b[i])
		}
	}
}

// TestPerOriginDelay: origin_delay applies to its origin only; packets to different origins may
// overtake each other, never within one origin — also with jitter.
func TestPerOriginDelay(t *testing.T) {
	extra := map[int]time.Duration{2: 20 * ms, 3: 5 * ms, 4: 20 * ms, 5: 0}
	d := newDirection(t, Config{Delay: 10 * ms, OriginExtra: extra})
	origins := []int{0, 1, 2, 3, 4, 5, 6, 99, -1}
	push, pkts := pushSpaced(t, d, 9*100, ms, func(i int) int { return origins[i%len(origins)] })
	for i, p := range pkts {
		if want := push[i] + 10*ms + extra[p.Origin]; p.Due() != want {
			t.Fatalf("origin %d: due %v after sending at %v, want %v", p.Origin, p.Due(), push[i], want)
		}
	}
	out := popAll(d)
	overtaken := false
	last := map[int]int{}
	for i, p := range out {
		if i > 0 && p.Due() < out[i-1].Due() {
			t.Fatalf("Pop out of due order at %d", i)
		}
		k := indexOf(pkts, p)
		if prev, ok := last[p.Origin]; ok && k < prev {
			t.Fatalf("origin %d reordered", p.Origin)
		}
		last[p.Origin] = k
		overtaken = overtaken || (i > 0 && k < indexOf(pkts, out[i-1]))
	}
	if !overtaken {
		t.Error("no packet overtook another: origins with more delay should be overtaken")
	}

	// With jitter: order within each origin holds, and the per-origin extra comes on top.
	d = newDirection(t, Config{Delay: 10 * ms, Jitter: 3 * ms, OriginExtra: extra, Seed: 4})
	rng := rand.New(rand.NewPCG(1, 1))
	push, pkts = pushSpaced(t, d, 20_000, 50*time.Microsecond, func(int) int { return rng.IntN(6) })
	lastDue := map[int]time.Duration{}
	for i, p := range pkts {
		lat := p.Due() - push[i] - extra[p.Origin]
		if lat < 7*ms || lat > 13*ms {
			t.Fatalf("packet %d (origin %d) base delay %v outside 10 ms ± 3 ms", i, p.Origin, lat)
		}
		if p.Due() < lastDue[p.Origin] {
			t.Fatalf("packet %d (origin %d) due before an earlier packet of its origin", i, p.Origin)
		}
		lastDue[p.Origin] = p.Due()
	}
}

// TestTiesLeaveInPushOrder: packets of different lanes due at the same time leave in the order
// they were pushed.
func TestTiesLeaveInPushOrder(t *testing.T) {
	d := newDirection(t, Config{OriginExtra: map[int]time.Duration{1: 2 * ms}})
	a := &Packet{Origin: 1} // due 0 + 2 ms
	b := &Packet{Origin: 0} // pushed at 2 ms, due 2 ms
	c := &Packet{Origin: 1} // pushed at 0, due 2 ms
	d.Push(0, a)
	d.Push(0, c)
	d.Push(2*ms, b)
	out := popAll(d)
	if len(out) != 3 || out[0] != a || out[1] != c || out[2] != b {
		t.Errorf("tie order: got %v %v %v", out[0].Origin, out[1].Origin, out[2].Origin)
	}
}
