package emulator

import (
	"errors"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/internal/allocs"
	"github.com/wirelab/wirelab/engine/link"
	"github.com/wirelab/wirelab/engine/link/profile"
	"github.com/wirelab/wirelab/engine/realtime"
)

func TestLinkPath(t *testing.T) {
	cfg, err := ConfigFromProfile(profile.MustParse("rtt=20ms,bw=1mbit,queue=2,origin_delay=2:10ms,iw=4,irw=8,cc=reno"), 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Topology.Server; s.InitCwnd != 4 || s.InitRwnd != 8 || s.CongCtl != "reno" {
		t.Errorf("server routes %+v", s)
	}
	if c := cfg.Topology.Client; c.InitCwnd != 0 || c.InitRwnd != 8 || c.CongCtl != "reno" || cfg.Topology.Origins != 2 {
		t.Errorf("client routes %+v", c)
	}
	up := cfg.Up
	a, b, c := make([]byte, 1500), make([]byte, 1500), make([]byte, 1500)
	if f := up.Push(0, a, 1, 7); f != link.Accepted {
		t.Fatalf("first packet: %v", f)
	}
	up.Push(0, b, 2, 8)
	if f := up.Push(0, c, 1, 9); f != link.DroppedQueue {
		t.Fatalf("third packet into a queue of 2: %v", f)
	}
	// 1500 B at 1 Mbit/s is 12 ms of serialisation, then 10 ms one way.
	if dl, ok := up.NextDeadline(); !ok || dl != 22*time.Millisecond {
		t.Fatalf("next deadline %v %v", dl, ok)
	}
	if _, ok := up.Pop(21 * time.Millisecond); ok {
		t.Fatal("released early")
	}
	out, ok := up.Pop(22 * time.Millisecond)
	if !ok || out != (realtime.Out{Handle: 7, Fate: link.Delivered, At: 22 * time.Millisecond}) {
		t.Fatalf("first release: %v %+v", ok, out)
	}
	// Origin 2: 24 ms serialised (after waiting 12 ms), 10 + 5 ms one way.
	out, ok = up.Pop(time.Second)
	if !ok || out != (realtime.Out{Handle: 8, Fate: link.Delivered, At: 39 * time.Millisecond, Sojourn: 12 * time.Millisecond}) {
		t.Fatalf("second release: %v %+v", ok, out)
	}
	m := up.(ModelReporter)
	if s, g := m.Stats(), m.Gateway(); s.MaxQueuePackets != 2 || g.DropsTail != 1 || g.Discipline != "droptail" || g.Sojourn.Count != 2 {
		t.Errorf("stats %+v, gateway %+v", s, g)
	}
	// Recycled packets carry nothing over.
	up.Push(time.Second, c, 0, 9)
	if dl, _ := up.NextDeadline(); dl != time.Second+12*time.Millisecond+10*time.Millisecond {
		t.Errorf("deadline after recycling %v", dl)
	}
	if n := allocs.Count(100, func() {
		now := 10 * time.Second
		up.Push(now, a, 1, 1)
		for {
			if _, ok := up.Pop(now + time.Second); !ok {
				break
			}
		}
	}); n != 0 {
		t.Errorf("%d allocations in 100 packets", n)
	}
}

// TestLinkPathAQM: a discipline that drops at dequeue hands the dropped packet back with its
// handle, cause, time and sojourn, and CE marks reach the runner.
func TestLinkPathAQM(t *testing.T) {
	for _, c := range []struct {
		profile string
		ecn     byte
		want    link.Fate
	}{{"bw=1mbit,queue=codel", 0, link.DroppedAQM}, {"bw=1mbit,queue=codel,ecn=1", 2, link.Marked}} {
		cfg, err := ConfigFromProfile(profile.MustParse(c.profile), 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		down := cfg.Down
		fates := map[link.Fate]int{}
		now := time.Duration(0)
		for i := 0; i < 3000; i++ { // 2 Mbit/s offered into 1 Mbit/s for 18 s
			now += 6 * time.Millisecond
			pkt := make([]byte, 1500)
			pkt[0], pkt[1] = 0x45, c.ecn
			if f := down.Push(now, pkt, 0, realtime.Handle(i)); f != link.Accepted {
				fates[f]++
			}
			for {
				out, ok := down.Pop(now)
				if !ok {
					break
				}
				fates[out.Fate]++
				if out.Fate == link.DroppedAQM && (out.At > now || out.Sojourn < 5*time.Millisecond) {
					t.Fatalf("drop %+v at %v", out, now)
				}
			}
		}
		if fates[c.want] == 0 || fates[link.Delivered] == 0 {
			t.Errorf("%s: fates %v", c.profile, fates)
		}
	}
}

// ECN reaches the topology (TCP in the namespaces) and both directions' disciplines.
func TestConfigFromProfileECN(t *testing.T) {
	for _, ecn := range []bool{false, true} {
		p := "bw=1mbit,queue=codel"
		if ecn {
			p += ",ecn=1"
		}
		cfg, err := ConfigFromProfile(profile.MustParse(p), 1, 1)
		if err != nil || cfg.Topology.ECN != ecn {
			t.Errorf("%s: topology ECN %v, %v", p, cfg.Topology.ECN, err)
		}
	}
}

func TestConfigFromProfileBadTrace(t *testing.T) {
	_, err := ConfigFromProfile(profile.MustParse("trace_down=/nonexistent"), 1, 1)
	var pe *profile.Error
	if !errors.As(err, &pe) {
		t.Fatalf("missing trace: %T %v, want *profile.Error", err, err)
	}
}
