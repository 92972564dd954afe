package link

import (
	"strings"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// benchDirection measures one packet's trip through a Direction in steady state: one Push at a
// steadily advancing time, then every Pop that is due. Packets come from a free list, as in the
// real-time runner, so the only allocations counted are the link's own (there should be none).
func benchDirection(b *testing.B, cfg Config, gap time.Duration) {
	d := newDirection(b, cfg)
	data := ipPacket(1500, 1, ecnNotECT, true) // one flow's packet: FQ-CoDel hashes it, marking would rewrite it
	free := make([]*Packet, 0, 1<<14)
	for i := 0; i < cap(free); i++ {
		free = append(free, &Packet{Data: data, Origin: i % 4})
	}
	now := time.Duration(0)
	step := func() {
		now += gap
		if len(free) == 0 {
			b.Fatal("free list exhausted: more packets in flight than the benchmark provides")
		}
		p := free[len(free)-1]
		free = free[:len(free)-1]
		p.Data[1] = ecnECT0
		if d.Push(now, p) != Accepted {
			free = append(free, p)
		}
		for {
			q, ok := d.Pop(now)
			if !ok {
				break
			}
			free = append(free, q)
		}
	}
	for i := 0; i < 200_000; i++ { // reach steady state: queue full or link busy, rings grown
		step()
	}
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
}

// BenchmarkDirection: ns/op and allocs/op are per packet (Push + its share of Pop).
func BenchmarkDirection(b *testing.B) {
	lte := mustTrace(b, strings.Repeat("1\n", 3)+strings.Repeat("2\n", 5)) // 8 opportunities per 2 ms: 48 Mbit/s
	ge := profile.Loss{Model: profile.LossGilbertElliott, P: 0.01, R: 0.3, OneMinusH: 1}
	cases := []struct {
		name string
		cfg  Config
		gap  time.Duration
	}{
		{"unlimited-5ms", Config{Delay: 5 * ms}, time.Microsecond},
		{"10gbit-5ms", Config{Delay: 5 * ms, RateBPS: 10_000_000_000, Queue: profile.QueueLimit{Packets: 256}}, 1200 * time.Nanosecond},
		{"1gbit-10ms", Config{Delay: 10 * ms, RateBPS: 1_000_000_000, Queue: profile.QueueLimit{Packets: 256}}, 12 * time.Microsecond},
		{"100mbit-overload", Config{Delay: 10 * ms, RateBPS: 100_000_000, Queue: profile.QueueLimit{Packets: 256}}, 100 * time.Microsecond},
		{"trace-48mbit", Config{Delay: 10 * ms, Trace: lte, Queue: profile.QueueLimit{Packets: 256}}, 200 * time.Microsecond},
		{"all-stages", Config{Delay: 10 * ms, Jitter: ms, RateBPS: 100_000_000, Queue: profile.QueueLimit{Packets: 256, Bytes: 300_000},
			Loss: ge, OriginExtra: map[int]time.Duration{2: 5 * ms, 3: 20 * ms}, Seed: 1}, 110 * time.Microsecond},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) { benchDirection(b, c.cfg, c.gap) })
	}
}

// BenchmarkDiscipline: each queue discipline on a 100 Mbit/s, 10 ms link offered 120 Mbit/s of
// one flow (the queue stays busy; its AQM decides on every packet), ns and allocations per packet.
func BenchmarkDiscipline(b *testing.B) {
	for _, name := range profile.DisciplineNames() {
		cfg := aqm(name, 100_000_000)
		cfg.Delay = 10 * ms
		b.Run(name, func(b *testing.B) { benchDirection(b, cfg, 100*time.Microsecond) })
	}
}

func BenchmarkStage(b *testing.B) {
	b.Run("constant-rate", func(b *testing.B) {
		r := NewConstantRate(7_000_000)
		for b.Loop() {
			r.Depart(0, 1500)
		}
	})
	b.Run("trace-rate", func(b *testing.B) {
		r := NewTraceRate(mustTrace(b, "1\n3\n3\n7\n"))
		for b.Loop() {
			r.Depart(0, 1500)
		}
	})
	b.Run("bernoulli", func(b *testing.B) {
		l := NewBernoulliLoss(0.01, 1)
		for b.Loop() {
			l.Lose()
		}
	})
	b.Run("gilbert-elliott", func(b *testing.B) {
		l := NewGilbertElliottLoss(0.01, 0.3, 1, 0, 1)
		for b.Loop() {
			l.Lose()
		}
	})
}
