package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/emulator"
	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/realtime"
)

// The test binary doubles as the bench peer.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "bench-peer" {
		if err := PeerMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// delayLink is a delay-only test double of the link model.
type delayLink struct {
	delay time.Duration
	q     []delayed
}

type delayed struct {
	due    time.Duration
	pkt    []byte
	origin int
}

func (l *delayLink) Push(now time.Duration, pkt []byte, origin int) realtime.Fate {
	l.q = append(l.q, delayed{now + l.delay, pkt, origin})
	return realtime.Queued
}

func (l *delayLink) Pop(now time.Duration) ([]byte, int, bool) {
	if len(l.q) == 0 || l.q[0].due > now {
		return nil, 0, false
	}
	d := l.q[0]
	l.q[0] = delayed{}
	l.q = l.q[1:]
	return d.pkt, d.origin, true
}

func (l *delayLink) NextDeadline() (time.Duration, bool) {
	if len(l.q) == 0 {
		return 0, false
	}
	return l.q[0].due, true
}

// delayRun understands "rtt=D" and "delay_up=D,delay_down=D" only.
func delayRun(profile string, seed uint64) (emulator.Config, error) {
	var up, down time.Duration
	for _, item := range strings.Split(profile, ",") {
		k, v, _ := strings.Cut(item, "=")
		d, err := time.ParseDuration(v)
		if err != nil {
			return emulator.Config{}, fmt.Errorf("%s: %v", k, err)
		}
		switch k {
		case "rtt":
			up, down = d/2, d-d/2
		case "delay_up":
			up = d
		case "delay_down":
			down = d
		}
	}
	return emulator.Config{Up: &delayLink{delay: up}, Down: &delayLink{delay: down}}, nil
}

// TestLinkBenchDelayOnly runs the RTT and capacity parts against the delay-only double; it takes
// ~15 s, so only when asked for (WIRELAB_BENCH_TEST=1).
func TestLinkBenchDelayOnly(t *testing.T) {
	roottest.RequireTUN(t)
	if os.Getenv("WIRELAB_BENCH_TEST") == "" {
		t.Skip("needs WIRELAB_BENCH_TEST=1")
	}
	res, err := Link(LinkOptions{Quick: true, Self: os.Args[0], NewRun: delayRun, Progress: os.Stderr, Only: strings.Split(os.Getenv("WIRELAB_BENCH_TEST"), ",")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	t.Logf("%s", b)
}
