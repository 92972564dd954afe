package loadgen

import (
	"fmt"
	"sync"
	"time"
)

// A RateCapError ends a run whose virtual users got more responses in one second than the spec's
// limits.max_rps allows: a hard cap, meant for targets wirelab does not own (docs/loadtest.md,
// "External targets") — the run stops rather than go on loading someone's server harder than
// the user allowed.
type RateCapError struct {
	MaxRPS float64
	Part   Part // a generator of several caps its share: MaxRPS ÷ N

	Got       int64   // responses in the second that broke the cap
	AtS       float64 // the run's time when it did, s
	ActiveVUs int64
}

func (e *RateCapError) Error() string {
	what := fmt.Sprintf("limits.max_rps (%g)", e.MaxRPS)
	if !e.Part.Whole() {
		what = fmt.Sprintf("generator %s's share of limits.max_rps (%g of %g)", e.Part, e.MaxRPS/float64(e.Part.N), e.MaxRPS)
	}
	return fmt.Sprintf("stopped: %d responses in the second before t = %.1f s, above %s, at %d active VUs; lower the VUs or the rate, or raise limits.max_rps if the server's owner agrees",
		e.Got, e.AtS, what, e.ActiveVUs)
}

// rateSlots divide the cap's one-second window: a page's responses count in the slot in which the
// page completed, and the window is the last rateSlots slots.
const rateSlots = 10

// rateCap counts responses over a sliding second (rateSlots slots of 100 ms).
type rateCap struct {
	max   float64
	start time.Time
	mu    sync.Mutex
	slot  int64 // the newest slot's number since start
	n     [rateSlots]int64
}

// add counts hits at now and returns the second's total if it is above the cap (0 otherwise).
func (c *rateCap) add(now time.Time, hits int64) int64 {
	if c == nil || hits == 0 {
		return 0
	}
	s := int64(now.Sub(c.start) / (time.Second / rateSlots))
	c.mu.Lock()
	defer c.mu.Unlock()
	if s > c.slot {
		for k := c.slot + 1; k <= s && k <= c.slot+rateSlots; k++ {
			c.n[k%rateSlots] = 0
		}
		c.slot = s
	}
	if s < c.slot-rateSlots+1 { // a page recorded late, outside the window: it counts in the oldest slot
		s = c.slot - rateSlots + 1
	}
	c.n[((s%rateSlots)+rateSlots)%rateSlots] += hits
	var sum int64
	for _, v := range c.n {
		sum += v
	}
	if float64(sum) > c.max {
		return sum
	}
	return 0
}
