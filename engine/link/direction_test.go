package link

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/internal/allocs"
	"github.com/wirelab/wirelab/engine/link/profile"
)

// TestOnePacketAt1Mbit: the example, end to end through a Direction.
func TestOnePacketAt1Mbit(t *testing.T) {
	d := newDirection(t, Config{RateBPS: 1_000_000})
	p := packet(1500)
	if f := d.Push(0, p); f != Accepted {
		t.Fatalf("Push: %v", f)
	}
	if next, ok := d.NextDeadline(); !ok || next != 12*ms {
		t.Fatalf("NextDeadline = %v, %v; want 12ms, true", next, ok)
	}
	if _, ok := d.Pop(12*ms - 1); ok {
		t.Fatal("left before 12 ms")
	}
	if got, ok := d.Pop(12 * ms); !ok || got != p || got.Due() != 12*ms {
		t.Fatalf("Pop(12ms) = %v, %v", got, ok)
	}
	if _, ok := d.NextDeadline(); ok {
		t.Fatal("NextDeadline on an empty link")
	}
	if _, ok := d.Pop(forever); ok {
		t.Fatal("Pop on an empty link")
	}
}

func TestStats(t *testing.T) {
	d := newDirection(t, Config{
		RateBPS: 1_000_000, Delay: 5 * ms, Queue: profile.QueueLimit{Packets: 3},
		Loss: profile.Loss{Model: profile.LossGilbertElliott, P: 1, R: 1, OneMinusH: 1}, // lose every 2nd
	})
	burst(d, 0, 100, 200, 300, 400, 500, 600, 700, 800, 900) // kept: 100 300 500 | 700 900 dropped by the queue
	d.Pop(12 * ms)                                           // one Pop hands out one packet
	s := d.Stats()
	want := Stats{
		Packets: 9, Bytes: 4500,
		DropsLoss: 4, DropsLossBytes: 200 + 400 + 600 + 800,
		DropsQueue: 2, DropsQueueBytes: 700 + 900,
		MaxQueuePackets: 3, MaxQueueBytes: 900,
		DeliveredPackets: 1, DeliveredBytes: 100, // 100 B: 0.8 ms + 5 ms
		InFlight: 2,
	}
	if s != want {
		t.Errorf("Stats = %+v\nwant    %+v", s, want)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"packets":9`, `"bytes":4500`, `"drops_queue":2`, `"drops_loss":4`, `"max_queue_packets":3`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("Stats JSON %s lacks %s (the trial contract's emulator summary)", b, k)
		}
	}
}

// TestTimeNeverRunsBackwards: a Push with an earlier time than the previous one is treated as
// arriving at the latest time seen.
func TestTimeNeverRunsBackwards(t *testing.T) {
	d := newDirection(t, Config{RateBPS: 1_000_000})
	d.Push(100*ms, packet(1500))
	d.Push(50*ms, packet(1500))
	out := popAll(d)
	if out[0].Due() != 112*ms || out[1].Due() != 124*ms {
		t.Errorf("dues %v %v, want 112ms 124ms", out[0].Due(), out[1].Due())
	}
}

func TestNewDirectionRejects(t *testing.T) {
	tr := mustTrace(t, "1\n")
	cases := map[string]Config{
		"negative delay":        {Delay: -1},
		"negative jitter":       {Jitter: -1},
		"negative rate":         {RateBPS: -1},
		"trace and rate":        {RateBPS: 1000, Trace: tr},
		"empty trace":           {Trace: &profile.Trace{Name: "x", Period: ms}},
		"trace period":          {Trace: &profile.Trace{Name: "x", Period: 2 * ms, Slots: []profile.TraceSlot{{At: ms, Opportunities: 1}}}},
		"trace order":           {Trace: &profile.Trace{Name: "x", Period: ms, Slots: []profile.TraceSlot{{At: ms, Opportunities: 1}, {At: ms, Opportunities: 1}}}},
		"bad loss":              {Loss: profile.Loss{Model: profile.LossBernoulli, P: 2}},
		"unknown loss":          {Loss: profile.Loss{Model: "burst"}},
		"negative queue":        {Queue: profile.QueueLimit{Packets: -1}},
		"origin 0":              {OriginExtra: map[int]time.Duration{0: ms}},
		"origin 65":             {OriginExtra: map[int]time.Duration{65: ms}},
		"negative origin extra": {OriginExtra: map[int]time.Duration{2: -ms}},
	}
	for name, cfg := range cases {
		if _, err := NewDirection(cfg); err == nil {
			t.Errorf("%s: NewDirection accepted %+v", name, cfg)
		}
	}
	// The zero Config is a valid link: no delay, no loss, unlimited rate.
	if _, err := NewDirection(Config{}); err != nil {
		t.Errorf("zero Config: %v", err)
	}
}

// TestConfigsFromProfile: a resolved profile splits into the two directions as documented.
func TestConfigsFromProfile(t *testing.T) {
	r := profile.MustParse("rtt=100ms,bw_up=1mbit,bw_down=10mbit,loss_down=1%,queue_up=64kB,jitter_down=2ms,origin_delay=2:41ms/3:0.003us")
	up, down, err := Configs(r, nil, nil, 7)
	if err != nil {
		t.Fatal(err)
	}
	if up.Delay != 50*ms || up.RateBPS != 1_000_000 || up.Loss.Model != profile.LossNone || up.Queue.Bytes != 64000 || up.Jitter != 0 {
		t.Errorf("up %+v", up)
	}
	if down.Delay != 50*ms || down.RateBPS != 10_000_000 || down.Loss.P != 0.01 || down.Queue.Packets != 256 || down.Jitter != 2*ms {
		t.Errorf("down %+v", down)
	}
	// Extra RTT split like rtt: half each way, an odd nanosecond down.
	if up.OriginExtra[2] != 20500*time.Microsecond || down.OriginExtra[2] != 20500*time.Microsecond ||
		up.OriginExtra[3] != 1 || down.OriginExtra[3] != 2 {
		t.Errorf("origin extras up %v down %v", up.OriginExtra, down.OriginExtra)
	}
	if up.Seed == down.Seed {
		t.Error("both directions share a seed: their drop patterns would be identical")
	}
	if _, _, err := Configs(profile.MustParse("trace_down=x"), nil, nil, 1); err == nil {
		t.Error("Configs accepted a profile naming a trace without the trace")
	}
	bad := r
	bad.Up.Delay = -1
	if _, _, err := Configs(bad, nil, nil, 1); err == nil {
		t.Error("Configs accepted an invalid profile")
	}
}

// TestFromProfile loads traces and reports a missing one under its key.
func TestFromProfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "one.trace")
	if err := os.WriteFile(path, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	up, down, err := FromProfile(profile.MustParse("rtt=10ms,bw_up=1mbit,trace_down="+path), 1)
	if err != nil {
		t.Fatal(err)
	}
	up.Push(0, packet(1500))
	down.Push(0, packet(1500))
	if p, _ := up.Pop(forever); p.Due() != 17*ms {
		t.Errorf("up: due %v, want 12 ms + 5 ms", p.Due())
	}
	if p, _ := down.Pop(forever); p.Due() != 6*ms {
		t.Errorf("down: due %v, want 1 ms (first opportunity) + 5 ms", p.Due())
	}
	_, _, err = FromProfile(profile.MustParse("trace_down="+filepath.Join(dir, "missing")), 1)
	if err == nil || !strings.HasPrefix(err.Error(), "trace_down: ") || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing trace: %v", err)
	}
}

// TestNoAllocationsInSteadyState: once the buffers have grown, a Push/Pop cycle through every
// stage (GE loss, byte-limited queue, rate, jitter, per-origin lanes) allocates nothing.
func TestNoAllocationsInSteadyState(t *testing.T) {
	for name, cfg := range map[string]Config{
		"rate": {
			Delay: 20 * ms, Jitter: ms, RateBPS: 100_000_000, Queue: profile.QueueLimit{Packets: 256, Bytes: 200_000},
			Loss:        profile.Loss{Model: profile.LossGilbertElliott, P: 0.01, R: 0.3, OneMinusH: 1},
			OriginExtra: map[int]time.Duration{2: 5 * ms, 3: 10 * ms},
		},
		"trace":     {Delay: 5 * ms, Trace: mustTrace(t, "1\n1\n2\n"), Queue: profile.QueueLimit{Packets: 1000}},
		"unlimited": {Delay: 5 * ms, Loss: profile.Loss{Model: profile.LossBernoulli, P: 0.01}},
		"codel":     withDelay(aqm(profile.CoDel, 100_000_000)),
		"fq_codel":  withDelay(aqm(profile.FQCoDel, 100_000_000)),
		"pie":       withDelay(aqm(profile.PIE, 100_000_000)),
		"docsis":    withDelay(aqm(profile.DOCSISPIE, 100_000_000)),
		"red":       withDelay(aqm(profile.RED, 100_000_000)),
		"codel-ecn": func() Config { c := withDelay(aqm(profile.CoDel, 100_000_000)); c.ECN = true; return c }(),
	} {
		d := newDirection(t, cfg)
		pool := make([]*Packet, 1<<13)
		for i := range pool {
			pool[i] = &Packet{Data: ipPacket(1500, uint16(i%4), ecnECT0, true), Origin: i % 4}
		}
		now, k := time.Duration(0), 0
		cycle := func() {
			now += 100 * time.Microsecond // 120 Mbit/s offered: the 100 Mbit/s queue fills and drops
			d.Push(now, pool[k&(len(pool)-1)])
			k++
			for {
				if _, ok := d.Pop(now); !ok {
					break
				}
			}
		}
		for i := 0; i < 100_000; i++ { // warm up: let the rings grow
			cycle()
		}
		if n := allocs.Count(10_000, cycle); n != 0 {
			t.Errorf("%s: %d allocations in 10,000 packets in steady state", name, n)
		}
	}
}

func withDelay(c Config) Config { c.Delay = 20 * ms; return c }

func TestFateString(t *testing.T) {
	for f, want := range map[Fate]string{Accepted: "accepted", DroppedLoss: "dropped-loss", DroppedQueue: "dropped-queue", 17: "fate(17)"} {
		if got := f.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", f, got, want)
		}
	}
}
