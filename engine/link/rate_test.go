package link

import (
	"math/big"
	"math/rand/v2"
	"testing"
	"time"
)

// ceilNS returns ⌈bits·10⁹/bps⌉ exactly, independently of the implementation's 128-bit arithmetic.
func ceilNS(bits *big.Int, bps int64) int64 {
	num := new(big.Int).Mul(bits, big.NewInt(int64(time.Second)))
	q, r := new(big.Int).QuoRem(num, big.NewInt(bps), new(big.Int))
	if r.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

// TestSerialisationTimes: one packet into an idle link at the documented extremes and in between.
func TestSerialisationTimes(t *testing.T) {
	cases := []struct {
		bps  int64
		size int
		want time.Duration
	}{
		{1_000_000, 1500, 12 * time.Millisecond}, // the example
		{64_000, 1500, 187_500 * time.Microsecond},
		{10_000_000_000, 1500, 1200 * time.Nanosecond},
		{100_000_000_000, 1500, 120 * time.Nanosecond},
		{1_000, 1500, 12 * time.Second},
		{10_000_000_000, 1, time.Nanosecond},           // 0.8 ns, rounded up: the last bit has left at 1 ns
		{3_000_000, 1000, 2_666_667 * time.Nanosecond}, // 2.6666… ms
		{12_000_000, 40, 26_667 * time.Nanosecond},
		{10_000_000_000, 65535, 52_428 * time.Nanosecond},
		{1_000_000, 0, 0},
	}
	for _, c := range cases {
		if got := NewConstantRate(c.bps).Depart(0, c.size); got != c.want {
			t.Errorf("%d B at %d bit/s leaves at %v, want %v", c.size, c.bps, got, c.want)
		}
		if got := TransmissionTime(c.size, c.bps); got != c.want {
			t.Errorf("TransmissionTime(%d, %d) = %v, want %v", c.size, c.bps, got, c.want)
		}
		// The same packet arriving later leaves the same time after its arrival.
		at := 7*time.Second + 3
		if got := NewConstantRate(c.bps).Depart(at, c.size); got != at+c.want {
			t.Errorf("%d B at %d bit/s arriving at %v leaves at %v, want %v", c.size, c.bps, at, got, at+c.want)
		}
	}
}

// TestBackToBackSpacing: a burst leaves spaced by exactly the serialisation time, and fractional
// times are rounded per departure, not accumulated.
func TestBackToBackSpacing(t *testing.T) {
	r := NewConstantRate(1_000_000)
	for k := 1; k <= 300; k++ {
		if got, want := r.Depart(0, 1500), time.Duration(k)*12*time.Millisecond; got != want {
			t.Fatalf("packet %d of a burst leaves at %v, want %v", k, got, want)
		}
	}
	// 1-byte packets at 10 Gbit/s take 0.8 ns each: departures ⌈0.8·k⌉ = 1, 2, 3, 4, 4, 5, …
	r = NewConstantRate(10_000_000_000)
	want := []time.Duration{1, 2, 3, 4, 4, 5, 6, 7, 8, 8}
	for k, w := range want {
		if got := r.Depart(0, 1); got != w {
			t.Fatalf("1-byte packet %d at 10 Gbit/s leaves at %v ns, want %v ns", k+1, int64(got), int64(w))
		}
	}
}

// TestIdleLinkRestarts: a packet that arrives after the link went idle starts at its arrival;
// one that arrives while the link is busy waits for the previous one.
func TestIdleLinkRestarts(t *testing.T) {
	ms := time.Millisecond
	r := NewConstantRate(1_000_000)
	steps := []struct{ arrival, want time.Duration }{
		{0, 12 * ms},
		{20 * ms, 32 * ms},       // idle from 12 to 20 ms
		{32 * ms, 44 * ms},       // arrives exactly when the link frees up
		{43 * ms, 56 * ms},       // arrives while busy: waits
		{43 * ms, 68 * ms},       // same arrival time again
		{100*ms + 1, 112*ms + 1}, // odd nanosecond
		{112*ms + 1, 124*ms + 1}, // exactly at the end again
		{10 * time.Hour, 10*time.Hour + 12*ms},
	}
	for i, s := range steps {
		if got := r.Depart(s.arrival, 1500); got != s.want {
			t.Fatalf("step %d: arrival %v leaves at %v, want %v", i, s.arrival, got, s.want)
		}
	}
	// A fractional end: 1000 B at 3 Mbit/s ends at 2666666.67 ns, reported as 2666667. A 500-byte
	// packet arriving at 2666667 ns found the link idle (for 0.33 ns), starts then and ends at
	// 4000000.33 → 4000001; continuing the busy period instead would give 4000000.
	r = NewConstantRate(3_000_000)
	first := r.Depart(0, 1000)
	if got, want := r.Depart(first, 500), time.Duration(4_000_001); got != want {
		t.Errorf("after a fractional end, next leaves at %d, want %d", got, want)
	}
}

// TestNoCumulativeDrift: 10⁶ back-to-back packets at a rate whose per-packet time is fractional.
// Every departure equals the exact ⌈k·bits/rate⌉; adding rounded per-packet times would be off by
// 0.29 ms by the end (and a millisecond clock, as mahimahi has, far more).
func TestNoCumulativeDrift(t *testing.T) {
	const n = 1_000_000
	const bps = 7_000_000 // 1500 B take 1714285.714… ns
	r := NewConstantRate(bps)
	perPacket := TransmissionTime(1500, bps)
	var naive time.Duration
	bits := new(big.Int)
	step := big.NewInt(1500 * 8)
	for k := 1; k <= n; k++ {
		got := r.Depart(0, 1500)
		naive += perPacket
		bits.Add(bits, step)
		if k%1000 == 0 || k < 1000 {
			if want := time.Duration(ceilNS(bits, bps)); got != want {
				t.Fatalf("packet %d leaves at %d ns, want exactly %d ns", k, got, want)
			}
		}
		if k == n && naive-got < 250*time.Microsecond {
			t.Fatalf("the test is not sensitive: naive summation drifts only %v", naive-got)
		}
	}
}

// TestLongBusyPeriodAtHighRate: hours of continuous 100 Gbit/s traffic (bits far beyond 64 bits ×
// 10⁹) stay exact.
func TestLongBusyPeriodAtHighRate(t *testing.T) {
	const bps = 100_000_000_000
	r := NewConstantRate(bps)
	// Jump the busy period forward cheaply: one enormous packet (2 h of serialisation) then small
	// ones; the departure of each must still be exact.
	huge := 2 * 3600 * bps / 8
	bits := big.NewInt(int64(huge) * 8)
	if got, want := r.Depart(0, huge), 2*time.Hour; got != want {
		t.Fatalf("huge packet leaves at %v, want %v", got, want)
	}
	for k := 0; k < 1000; k++ {
		got := r.Depart(0, 1499)
		bits.Add(bits, big.NewInt(1499*8))
		if want := time.Duration(ceilNS(bits, bps)); got != want {
			t.Fatalf("packet %d after 2 h leaves at %d, want %d", k, got, want)
		}
	}
}

// TestConstantRateMatchesFluidReference: random arrivals and sizes against an exact rational
// model of a FIFO server: start = max(arrival, previous end), end = start + bits/rate, departure
// = ⌈end⌉.
func TestConstantRateMatchesFluidReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, bps := range []int64{64_000, 1_000_000, 3_000_000, 7_777_777, 1_000_000_000, 10_000_000_000} {
		r := NewConstantRate(bps)
		end := new(big.Rat)
		now := time.Duration(0)
		for i := 0; i < 20000; i++ {
			serial := time.Duration(int64(1500*8) * int64(time.Second) / bps)
			now += time.Duration(rng.Int64N(int64(2*serial) + 2)) // sometimes busy, sometimes idle
			size := 40 + rng.IntN(1461)
			start := new(big.Rat).SetInt64(int64(now))
			if start.Cmp(end) < 0 {
				start.Set(end)
			}
			end = start.Add(start, big.NewRat(int64(size)*8*int64(time.Second), bps))
			q := new(big.Int).Quo(end.Num(), end.Denom())
			if new(big.Rat).SetInt(q).Cmp(end) < 0 {
				q.Add(q, big.NewInt(1))
			}
			if got := r.Depart(now, size); int64(got) != q.Int64() {
				t.Fatalf("%d bit/s, packet %d (%d B at %d ns): leaves at %d, reference %s", bps, i, size, now, got, q)
			}
		}
	}
}
