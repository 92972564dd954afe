package link

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// LossModel decides, packet by packet, whether the path loses a packet. It sees every packet
// offered to the link, before the queue: a lost packet never occupies the queue. Models are
// seeded: the same seed gives the same drop pattern for the same packet sequence.
type LossModel interface {
	// Lose reports whether the next packet is lost.
	Lose() bool
}

var (
	_ LossModel = NoLoss{}
	_ LossModel = (*BernoulliLoss)(nil)
	_ LossModel = (*GilbertElliottLoss)(nil)
)

// Random streams: each consumer of randomness in a direction has its own PCG stream, so that
// enabling jitter does not change the drop pattern and vice versa.
const (
	lossStream   = 0x6c6f7373     // "loss"
	jitterStream = 0x6a6974746572 // "jitter"
)

// NewLossModel builds the model a resolved profile names. This is the one place where loss
// models are chosen by name.
func NewLossModel(l profile.Loss, seed uint64) (LossModel, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	switch l.Model {
	case profile.LossNone:
		return NoLoss{}, nil
	case profile.LossBernoulli:
		return NewBernoulliLoss(l.P, seed), nil
	case profile.LossGilbertElliott:
		return NewGilbertElliottLoss(l.P, l.R, l.OneMinusH, l.OneMinusK, seed), nil
	}
	return nil, fmt.Errorf("link: unknown loss model %q", l.Model) // unreachable after Validate
}

// NoLoss never loses a packet and draws no random numbers.
type NoLoss struct{}

// Lose always reports false.
func (NoLoss) Lose() bool { return false }

// chance is a probability as a 53-bit threshold: an event with probability p happens when the top
// 53 bits of a uniform uint64 are below p·2^53. p = 1 always happens, p = 0 never; resolution
// 2^-53, the same as float64's in [0.5, 1).
type chance uint64

func newChance(p float64) chance { return chance(math.Round(p * (1 << 53))) }

func (c chance) happens(rng *rand.PCG) bool { return rng.Uint64()>>11 < uint64(c) }

// BernoulliLoss loses each packet independently with probability p (one random draw per packet).
type BernoulliLoss struct {
	rng rand.PCG
	p   chance
}

// NewBernoulliLoss returns a Bernoulli loss model with loss probability p ∈ [0, 1].
func NewBernoulliLoss(p float64, seed uint64) *BernoulliLoss {
	return &BernoulliLoss{rng: *rand.NewPCG(seed, lossStream), p: newChance(p)}
}

// Lose reports whether the next packet is lost.
func (b *BernoulliLoss) Lose() bool { return b.p.happens(&b.rng) }

// GilbertElliottLoss is the two-state Gilbert–Elliott model with netem's gemodel semantics: the
// chain starts in the good state; each packet is lost with the loss probability of the state it
// finds (1-k in good, 1-h in bad), and then the chain moves (good→bad with probability p,
// bad→good with probability r). Two random draws per packet, as in netem.
//
// Stationary loss rate: π_bad·(1-h) + π_good·(1-k) with π_bad = p/(p+r); with 1-h = 1 and
// 1-k = 0 (netem's defaults) losses come in bursts of mean length 1/r.
type GilbertElliottLoss struct {
	rng                   rand.PCG
	toBad, toGood         chance
	lossInBad, lossInGood chance
	bad                   bool
}

// NewGilbertElliottLoss returns a Gilbert–Elliott model; all parameters are probabilities in [0, 1].
func NewGilbertElliottLoss(p, r, oneMinusH, oneMinusK float64, seed uint64) *GilbertElliottLoss {
	return &GilbertElliottLoss{
		rng:   *rand.NewPCG(seed, lossStream),
		toBad: newChance(p), toGood: newChance(r),
		lossInBad: newChance(oneMinusH), lossInGood: newChance(oneMinusK),
	}
}

// Lose reports whether the next packet is lost, then advances the chain.
func (g *GilbertElliottLoss) Lose() bool {
	if g.bad {
		lost := g.lossInBad.happens(&g.rng)
		if g.toGood.happens(&g.rng) {
			g.bad = false
		}
		return lost
	}
	lost := g.lossInGood.happens(&g.rng)
	if g.toBad.happens(&g.rng) {
		g.bad = true
	}
	return lost
}
