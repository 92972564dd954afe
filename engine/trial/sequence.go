package trial

import "math/rand/v2"

// Load is one page load of the trial's sequence.
type Load struct {
	Index      int    // position in the sequence, 0-based
	Protocol   string // the protocol of this load
	Repetition int    // 0-based repetition of this protocol
}

// orderStream separates the random order's stream from the other uses of the seed.
const orderStream = 0x6f72646572 // "order"

// Sequence is the trial's load order: `alternate` runs the protocols in the spec's order once per
// repetition (A B A B …); `random` shuffles that sequence with a PCG seeded from the spec's seed
// (Fisher–Yates, math/rand/v2), so the same seed gives the same order. Either way a protocol's
// repetitions are numbered in the order they run.
func Sequence(s *Spec) []Load {
	seq := make([]Load, 0, len(s.Protocols)*s.Repetitions)
	for r := 0; r < s.Repetitions; r++ {
		for _, p := range s.Protocols {
			seq = append(seq, Load{Protocol: p, Repetition: r})
		}
	}
	if s.Order == "random" {
		rng := rand.New(rand.NewPCG(uint64(s.Seed), orderStream))
		rng.Shuffle(len(seq), func(i, j int) { seq[i], seq[j] = seq[j], seq[i] })
	}
	// Repetitions count each protocol's loads in the order they run.
	next := map[string]int{}
	for i := range seq {
		seq[i].Index = i
		seq[i].Repetition = next[seq[i].Protocol]
		next[seq[i].Protocol]++
	}
	return seq
}
