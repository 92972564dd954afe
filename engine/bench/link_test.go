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
	"github.com/wirelab/wirelab/engine/realtime/realtimetest"
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
	return emulator.Config{Up: &realtimetest.DelayLink{Delay: up}, Down: &realtimetest.DelayLink{Delay: down}}, nil
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
