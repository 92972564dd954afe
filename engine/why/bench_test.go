package why

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/pktlog"
)

// BenchmarkDecompose: a 1.5 MB load (about 2,000 packets) at 10 Mbit/s, 100 ms RTT, 1 % loss over
// six connections — a trial's heavy case. A trial's load takes seconds; this is its cost.
func BenchmarkDecompose(b *testing.B) {
	p := rtt100
	p.rateDown = 10e6
	s := newSim(p)
	rng := rand.New(rand.NewPCG(1, 2))
	s.drop = func(sp simPacket) bool {
		return sp.flags&pktlog.FlagSYN == 0 && sp.dir == pktlog.Down && rng.Float64() < 0.01
	}
	for i := 0; i < 12; i++ {
		s.request(time.Duration(i)*time.Millisecond, 125_000, -1)
	}
	s.run()
	in, _ := s.input(b)
	b.ReportMetric(float64(len(in.Packets)), "packets")
	b.ResetTimer()
	for b.Loop() {
		Decompose(in)
	}
}
