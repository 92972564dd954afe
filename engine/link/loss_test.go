package link

import (
	"math"
	"testing"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// binomialInterval returns the central 1-alpha interval [lo, hi] of Binomial(n, p), exactly:
// P(X < lo) ≤ alpha/2 and P(X > hi) ≤ alpha/2.
func binomialInterval(n int, p, alpha float64) (lo, hi int) {
	lgn, _ := math.Lgamma(float64(n + 1))
	cdf, lo := 0.0, -1
	for k := 0; k <= n; k++ {
		lgk, _ := math.Lgamma(float64(k + 1))
		lgnk, _ := math.Lgamma(float64(n - k + 1))
		cdf += math.Exp(lgn - lgk - lgnk + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
		if lo < 0 && cdf > alpha/2 {
			lo = k
		}
		if cdf >= 1-alpha/2 {
			return lo, k
		}
	}
	return lo, n
}

func pattern(m LossModel, n int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = m.Lose()
	}
	return out
}

func count(pat []bool) int {
	c := 0
	for _, lost := range pat {
		if lost {
			c++
		}
	}
	return c
}

// TestBernoulliRealisedLoss: over 10⁵ packets the number lost lies in the exact binomial 99.9 %
// interval, for several p (and through a whole Direction for one of them).
func TestBernoulliRealisedLoss(t *testing.T) {
	const n = 100_000
	for i, p := range []float64{0.001, 0.005, 0.01, 0.03, 0.1, 0.5, 0.9} {
		lo, hi := binomialInterval(n, p, 0.001)
		lost := count(pattern(NewBernoulliLoss(p, uint64(100+i)), n))
		if lost < lo || lost > hi {
			t.Errorf("p=%v: %d of %d lost, outside the 99.9%% interval [%d, %d]", p, lost, n, lo, hi)
		}
	}
	if lost := count(pattern(NewBernoulliLoss(0, 1), n)); lost != 0 {
		t.Errorf("p=0 lost %d", lost)
	}
	if lost := count(pattern(NewBernoulliLoss(1, 1), n)); lost != n {
		t.Errorf("p=1 lost %d of %d", lost, n)
	}
	// The same through a Direction, where loss comes before the queue.
	d := newDirection(t, Config{Loss: profile.Loss{Model: profile.LossBernoulli, P: 0.03}, Seed: 7})
	for i := 0; i < n; i++ {
		d.Push(0, packet(100))
	}
	lo, hi := binomialInterval(n, 0.03, 0.001)
	if s := d.Stats(); int(s.DropsLoss) < lo || int(s.DropsLoss) > hi || s.InFlight != n-int(s.DropsLoss) {
		t.Errorf("Direction with loss=3%%: %+v, want drops in [%d, %d]", s, lo, hi)
	}
}

// TestLossSeeds: the same seed gives the same drop pattern; a different seed a different one.
func TestLossSeeds(t *testing.T) {
	models := map[string]func(seed uint64) LossModel{
		"bernoulli": func(s uint64) LossModel { return NewBernoulliLoss(0.05, s) },
		"gilbert-elliott": func(s uint64) LossModel {
			return NewGilbertElliottLoss(0.05, 0.3, 0.9, 0.01, s)
		},
	}
	for name, mk := range models {
		a, b, c := pattern(mk(42), 20_000), pattern(mk(42), 20_000), pattern(mk(43), 20_000)
		same, diff := true, false
		for i := range a {
			same = same && a[i] == b[i]
			diff = diff || a[i] != c[i]
		}
		if !same {
			t.Errorf("%s: seed 42 twice gave different drop patterns", name)
		}
		if !diff {
			t.Errorf("%s: seeds 42 and 43 gave the same drop pattern", name)
		}
	}
}

// geMoments returns the stationary loss rate of a Gilbert–Elliott model and the asymptotic
// variance per packet of the loss count. With π_b = p/(p+r), λ = 1-p-r (the chain's second
// eigenvalue) and f_b, f_g the loss probabilities in bad and good, losses are independent given
// the states, so Var(X) = μ(1-μ) and Cov(X_0, X_j) = (f_b-f_g)²·π_b·π_g·λ^j for j ≥ 1; summing the
// series gives σ² = μ(1-μ) + 2(f_b-f_g)²·π_b·π_g·λ/(1-λ).
func geMoments(p, r, fb, fg float64) (mean, variance float64) {
	pib := p / (p + r)
	pig := 1 - pib
	mean = pib*fb + pig*fg
	lambda := 1 - p - r
	variance = mean*(1-mean) + 2*(fb-fg)*(fb-fg)*pib*pig*lambda/(1-lambda)
	return mean, variance
}

// TestGilbertElliottStationaryLoss: over 10⁶ packets the realised loss rate is within the 99.9 %
// normal interval around π_bad·(1-h) + π_good·(1-k), using the chain's autocorrelated variance.
func TestGilbertElliottStationaryLoss(t *testing.T) {
	const n = 1_000_000
	cases := []struct{ p, r, oneMinusH, oneMinusK float64 }{
		{0.01, 0.3, 1, 0},        // netem defaults: Simple Gilbert
		{0.05, 0.5, 0.8, 0.001},  // the golden case
		{0.1, 0.1, 0.5, 0.05},    // long sojourns, loss in both states
		{0.002, 0.05, 1, 0},      // rare, long bursts
		{0.3, 0.6, 0.25, 0.0001}, // fast switching
	}
	for i, c := range cases {
		mean, variance := geMoments(c.p, c.r, c.oneMinusH, c.oneMinusK)
		tol := z999 * math.Sqrt(variance/n)
		lost := count(pattern(NewGilbertElliottLoss(c.p, c.r, c.oneMinusH, c.oneMinusK, uint64(10+i)), n))
		rate := float64(lost) / n
		if math.Abs(rate-mean) > tol {
			t.Errorf("GE %+v: loss rate %.5f, stationary %.5f ± %.5f (99.9%%)", c, rate, mean, tol)
		}
		if tol > 0.15*mean {
			t.Errorf("GE %+v: tolerance %.5f is too loose for a mean of %.5f: use more packets", c, tol, mean)
		}
	}
}

// TestGilbertElliottBursts: with netem's defaults (1-h = 100 %, 1-k = 0 %) losses are exactly the
// bad sojourns: burst lengths are geometric with mean 1/r and gaps with mean 1/p.
func TestGilbertElliottBursts(t *testing.T) {
	const n = 2_000_000
	for i, c := range []struct{ p, r float64 }{{0.01, 0.3}, {0.02, 0.1}, {0.05, 0.5}, {0.001, 0.02}} {
		pat := pattern(NewGilbertElliottLoss(c.p, c.r, 1, 0, uint64(20+i)), n)
		var bursts, gaps []int
		run := 1
		for k := 1; k <= n; k++ {
			if k < n && pat[k] == pat[k-1] {
				run++
				continue
			}
			if pat[k-1] {
				bursts = append(bursts, run)
			} else if k-run > 0 && k < n { // complete gaps only: not the first, not the last
				gaps = append(gaps, run)
			}
			run = 1
		}
		if pat[n-1] {
			bursts = bursts[:len(bursts)-1] // the last burst may be cut off
		}
		check := func(what string, runs []int, q float64) {
			sum := 0
			for _, l := range runs {
				sum += l
			}
			mean := float64(sum) / float64(len(runs))
			// Geometric on {1, 2, …} with leaving probability q: mean 1/q, variance (1-q)/q².
			tol := z999 * math.Sqrt((1-q)/(q*q)/float64(len(runs)))
			if math.Abs(mean-1/q) > tol {
				t.Errorf("GE p=%v r=%v: mean %s length %.3f over %d, want %.3f ± %.3f", c.p, c.r, what, mean, len(runs), 1/q, tol)
			}
		}
		check("burst", bursts, c.r)
		check("gap", gaps, c.p)
	}
}

// TestGilbertElliottNetemOrder: a packet is judged in the state it finds, then the chain moves;
// the chain starts good. With p = r = 1 the states alternate good, bad, good, …
func TestGilbertElliottNetemOrder(t *testing.T) {
	cases := []struct {
		p, r, oneMinusH, oneMinusK float64
		want                       string
	}{
		{1, 1, 1, 0, "-x-x-x-x"},
		{1, 0, 1, 0, "-xxxxxxx"}, // once bad, always bad
		{0, 1, 1, 0, "--------"}, // never leaves good
		{0, 0, 0, 1, "xxxxxxxx"}, // good always loses (1-k = 100 %)
		{1, 1, 0, 1, "x-x-x-x-"}, // inverted: lose in good, keep in bad
	}
	for _, c := range cases {
		g := NewGilbertElliottLoss(c.p, c.r, c.oneMinusH, c.oneMinusK, 1)
		got := ""
		for i := 0; i < len(c.want); i++ {
			if g.Lose() {
				got += "x"
			} else {
				got += "-"
			}
		}
		if got != c.want {
			t.Errorf("GE %+v: %s, want %s", c, got, c.want)
		}
	}
}

// TestLossBeforeQueue: a lost packet never occupies the queue. Alternating losses (GE with
// p = r = 1) halve a 512-packet burst to exactly what a 256-packet queue holds; were loss applied
// after the queue, 256 packets would be dropped by the queue first.
func TestLossBeforeQueue(t *testing.T) {
	d := newDirection(t, Config{
		RateBPS: 1_000_000,
		Queue:   profile.QueueLimit{Packets: 256},
		Loss:    profile.Loss{Model: profile.LossGilbertElliott, P: 1, R: 1, OneMinusH: 1, OneMinusK: 0},
	})
	fates := burst(d, 0, repeat(1500, 512)...)
	for i, f := range fates {
		want := Accepted
		if i%2 == 1 {
			want = DroppedLoss
		}
		if f != want {
			t.Fatalf("packet %d: %v, want %v", i, f, want)
		}
	}
	if s := d.Stats(); s.DropsLoss != 256 || s.DropsQueue != 0 || s.MaxQueuePackets != 256 || s.DropsLossBytes != 256*1500 {
		t.Errorf("stats %+v", s)
	}
	if d.Push(0, packet(1500)) != DroppedQueue {
		t.Error("the 257th surviving packet was not dropped by the queue")
	}
}

func TestNewLossModel(t *testing.T) {
	for _, c := range []struct {
		loss profile.Loss
		want string
	}{
		{profile.Loss{Model: profile.LossNone}, "link.NoLoss"},
		{profile.Loss{Model: profile.LossBernoulli, P: 0.1}, "*link.BernoulliLoss"},
		{profile.Loss{Model: profile.LossGilbertElliott, P: 0.1, R: 0.2, OneMinusH: 1}, "*link.GilbertElliottLoss"},
	} {
		m, err := NewLossModel(c.loss, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := typeName(m); got != c.want {
			t.Errorf("NewLossModel(%+v) = %s, want %s", c.loss, got, c.want)
		}
	}
	for _, bad := range []profile.Loss{{Model: "random", P: 0.1}, {Model: profile.LossBernoulli, P: 1.5}, {Model: profile.LossGilbertElliott, P: math.NaN()}} {
		if _, err := NewLossModel(bad, 1); err == nil {
			t.Errorf("NewLossModel(%+v) accepted", bad)
		}
	}
}
