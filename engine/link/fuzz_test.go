package link

import (
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// FuzzDirection drives a Direction with an arbitrary sequence of pushes and pops under an
// arbitrary configuration and checks the invariants that hold for every input:
//   - Pop never returns a packet before it is due, and returns packets in due order;
//   - a packet is never due before it was pushed, nor earlier than delay-jitter after;
//   - packets to one origin come out in the order they went in (all packets, without origins);
//   - every accepted packet comes out exactly once; dropped ones never do;
//   - the queue never holds more than its limits; the counters add up.
func FuzzDirection(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{3, 7, 1, 200, 5, 9, 250, 250, 250, 250, 1, 1, 1, 0, 0, 0, 255, 128, 64})
	f.Add([]byte{1, 255, 4, 3, 2, 1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) < 6 {
			return
		}
		cfg := Config{
			Delay:  time.Duration(ops[0]) * 100 * time.Microsecond,
			Jitter: time.Duration(ops[1]%8) * 250 * time.Microsecond,
			Queue:  profile.QueueLimit{Packets: int64(ops[2] % 8), Bytes: int64(ops[3]%4) * 2000},
			Seed:   uint64(ops[4]),
		}
		if cfg.Queue.Bytes != 0 {
			cfg.Queue.Bytes += 1500
		}
		switch ops[5] % 4 {
		case 1:
			cfg.RateBPS = 1_000_000
		case 2:
			cfg.RateBPS = 10_000_000_000
		case 3:
			cfg.Trace = &profile.Trace{Name: "fuzz", Period: 3 * ms, Slots: []profile.TraceSlot{{At: ms, Opportunities: 1}, {At: 3 * ms, Opportunities: 2}}}
		}
		switch ops[5] / 4 % 3 {
		case 1:
			cfg.Loss = profile.Loss{Model: profile.LossBernoulli, P: 0.2}
		case 2:
			cfg.Loss = profile.Loss{Model: profile.LossGilbertElliott, P: 0.1, R: 0.5, OneMinusH: 1}
		}
		if ops[5]&0x80 != 0 {
			cfg.OriginExtra = map[int]time.Duration{1: 2 * ms, 2: 500 * time.Microsecond, 3: 2 * ms}
		}
		d, err := NewDirection(cfg)
		if err != nil {
			t.Fatal(err)
		}
		type sent struct {
			at  time.Duration
			seq int
		}
		info := map[*Packet]sent{}
		lastSeq := map[int]int{}
		now, seq, accepted := time.Duration(0), 0, 0
		var lastDue time.Duration
		pop := func(at time.Duration) {
			for {
				p, ok := d.Pop(at)
				if !ok {
					return
				}
				s, known := info[p]
				switch {
				case !known:
					t.Fatalf("Pop returned a packet that was not accepted or came out twice")
				case p.Due() > at:
					t.Fatalf("Pop(%v) returned a packet due at %v", at, p.Due())
				case p.Due() < lastDue:
					t.Fatalf("Pop out of due order: %v after %v", p.Due(), lastDue)
				case p.Due() < s.at:
					t.Fatalf("packet due at %v before it was pushed at %v", p.Due(), s.at)
				case p.Due() < s.at+cfg.Delay-cfg.Jitter:
					t.Fatalf("packet pushed at %v due at %v, earlier than delay %v - jitter %v", s.at, p.Due(), cfg.Delay, cfg.Jitter)
				}
				if prev, ok := lastSeq[p.Origin]; ok && s.seq < prev {
					t.Fatalf("origin %d reordered", p.Origin)
				}
				lastSeq[p.Origin] = s.seq
				lastDue = p.Due()
				delete(info, p)
			}
		}
		for i := 6; i+1 < len(ops); i += 2 {
			op, arg := ops[i], ops[i+1]
			now += time.Duration(op&0x0f) * time.Duration(arg) * time.Microsecond
			if op&0x10 != 0 {
				pop(now)
				continue
			}
			p := &Packet{Data: make([]byte, 1+int(arg)*6), Origin: int(op>>5) % 5}
			if f := d.Push(now, p); f == Accepted {
				info[p] = sent{now, seq}
				accepted++
			}
			seq++
			if s := d.Stats(); (cfg.Queue.Packets > 0 && int64(s.MaxQueuePackets) > cfg.Queue.Packets) ||
				(cfg.Queue.Bytes > 0 && s.MaxQueueBytes > cfg.Queue.Bytes) {
				t.Fatalf("queue exceeded its limits %+v: %+v", cfg.Queue, s)
			}
		}
		pop(forever)
		if len(info) != 0 {
			t.Fatalf("%d accepted packets never came out", len(info))
		}
		s := d.Stats()
		if s.Packets != uint64(seq) || s.Packets != uint64(accepted)+s.DropsLoss+s.DropsQueue ||
			s.DeliveredPackets != uint64(accepted) || s.InFlight != 0 {
			t.Fatalf("counters do not add up: %+v (pushed %d, accepted %d)", s, seq, accepted)
		}
		if cfg.RateBPS == 0 && cfg.Trace == nil && (s.DropsQueue != 0 || s.MaxQueuePackets != 0) {
			t.Fatalf("an unlimited link queued or dropped: %+v", s)
		}
	})
}
