package link

import (
	"sort"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// sojournsAfter returns the sojourn times of the packets delivered after from, sorted.
func sojournsAfter(out []outcome, from time.Duration) []time.Duration {
	var s []time.Duration
	for _, o := range out {
		if o.fate.Delivered() && o.at >= from {
			s = append(s, o.sojourn)
		}
	}
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s
}

func dropFraction(out []outcome, from time.Duration) float64 {
	n, d := 0, 0
	for _, o := range out {
		if o.at >= from {
			n++
			if o.fate == DroppedAQM {
				d++
			}
		}
	}
	return float64(d) / float64(n)
}

// TestPIESettlesNearTarget: under a constant overload PIE's controller moves the drop probability
// until the queueing delay sits at the target: after it settles, the median sojourn is within
// 20 % of target and the drops are the excess (a third, at 1.5 × the rate).
func TestPIESettlesNearTarget(t *testing.T) {
	for _, c := range []struct {
		name   string
		target time.Duration
	}{{profile.PIE, 15 * time.Millisecond}, {profile.DOCSISPIE, 10 * time.Millisecond}} {
		for _, load := range []float64{1.2, 1.5, 2} {
			out, _ := runLink(t, aqm(c.name, 10_000_000), cbr(0, 40*time.Second, load*10e6, 1500, 1, 0), 0)
			s := sojournsAfter(out, 20*time.Second)
			median := s[len(s)/2]
			if median < c.target*8/10 || median > c.target*12/10 {
				t.Errorf("%s at %.1f× the rate: median sojourn %v after settling, target %v (p10 %v, p90 %v)", c.name, load, median, c.target, s[len(s)/10], s[len(s)*9/10])
			}
			t.Logf("%s at %.1f× the rate: median sojourn %v (p10 %v, p90 %v), dropped %.3f", c.name, load, median, s[len(s)/10], s[len(s)*9/10], dropFraction(out, 20*time.Second))
			if f, want := dropFraction(out, 20*time.Second), 1-1/load; f < want-0.02 || f > want+0.02 {
				t.Errorf("%s at %.1f× the rate: dropped %.3f of arrivals, want %.3f", c.name, load, f, want)
			}
		}
	}
}
