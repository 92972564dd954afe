package emulator

import (
	"errors"
	"testing"
	"time"

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
	if f := up.Push(0, a, 1); f != realtime.Queued {
		t.Fatalf("first packet: %v", f)
	}
	up.Push(0, b, 2)
	if f := up.Push(0, c, 1); f != realtime.DroppedQueue {
		t.Fatalf("third packet into a queue of 2: %v", f)
	}
	// 1500 B at 1 Mbit/s is 12 ms of serialisation, then 10 ms one way.
	if dl, ok := up.NextDeadline(); !ok || dl != 22*time.Millisecond {
		t.Fatalf("next deadline %v %v", dl, ok)
	}
	if _, _, ok := up.Pop(21 * time.Millisecond); ok {
		t.Fatal("released early")
	}
	pkt, origin, ok := up.Pop(22 * time.Millisecond)
	if !ok || &pkt[0] != &a[0] || origin != 1 {
		t.Fatalf("first release: %v origin %d", ok, origin)
	}
	// Origin 2: 24 ms serialised, 10 + 5 ms one way.
	pkt, origin, ok = up.Pop(time.Second)
	if !ok || &pkt[0] != &b[0] || origin != 2 {
		t.Fatalf("second release: %v origin %d", ok, origin)
	}
	if q := up.(QueueReporter).MaxQueuePackets(); q != 2 {
		t.Errorf("max queue %d", q)
	}
	// Recycled packets carry nothing over.
	up.Push(time.Second, c, 0)
	if dl, _ := up.NextDeadline(); dl != time.Second+12*time.Millisecond+10*time.Millisecond {
		t.Errorf("deadline after recycling %v", dl)
	}
	if allocs := testing.AllocsPerRun(100, func() {
		now := 10 * time.Second
		up.Push(now, a, 1)
		for {
			if _, _, ok := up.Pop(now + time.Second); !ok {
				break
			}
		}
	}); allocs != 0 {
		t.Errorf("%v allocations per packet", allocs)
	}
}

func TestConfigFromProfileBadTrace(t *testing.T) {
	_, err := ConfigFromProfile(profile.MustParse("trace_down=/nonexistent"), 1, 1)
	var pe *profile.Error
	if !errors.As(err, &pe) {
		t.Fatalf("missing trace: %T %v, want *profile.Error", err, err)
	}
}
