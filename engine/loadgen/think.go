package loadgen

import (
	"math/rand/v2"
	"time"
)

// Thinker draws one VU's think times: fixed (exactly mean) or exponential with that mean, from a
// PCG seeded by (seed, VU index), so a run's schedule is reproducible VU by VU.
type Thinker struct {
	mean        time.Duration
	exponential bool
	rng         *rand.Rand
}

// NewThinker returns VU vu's think-time source for t.
func NewThinker(t Think, seed int64, vu int) *Thinker {
	return &Thinker{mean: seconds(t.MeanS), exponential: t.Distribution == "exponential",
		rng: rand.New(rand.NewPCG(uint64(seed), uint64(vu)))}
}

// Next is the next think time.
func (th *Thinker) Next() time.Duration {
	if !th.exponential || th.mean == 0 {
		return th.mean
	}
	return time.Duration(th.rng.ExpFloat64() * float64(th.mean))
}
