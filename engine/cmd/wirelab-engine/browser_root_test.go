package main

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/wirelab/wirelab/engine/bench"
	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/internal/timebound"
	"github.com/wirelab/wirelab/engine/lab"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/page/pagetest"
)

// Root tests of the browser and of replay through the emulated path: the server in the server
// namespace (with the run's DNS server), each load a `wirelab-engine browse|fetch` process in the
// client namespace — this test binary acting as wirelab-engine — as a trial runs them.

func startLab(t *testing.T, profile, pg string) *lab.Lab {
	t.Helper()
	roottest.RequireTUN(t)
	l, err := bench.StartLab(bench.LabConfig{Profile: profile, Page: pg, Engine: os.Args[0], Env: []string{testMainEnv + "=1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := l.Close(); err != nil {
			t.Error(err)
		}
	})
	return l
}

func requireChromium(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	if _, err := exec.LookPath("/usr/bin/chromium"); err != nil {
		t.Skip("no Chromium (apt-get install chromium)")
	}
}

// TestBrowseEmulatedCorpus: Chromium loads every corpus page over h1s, h2 and h3 through the
// emulated path, resolving names with the run's DNS server; every HAR entry says the protocol
// asked for, and every object arrives with its size.
func TestBrowseEmulatedCorpus(t *testing.T) {
	t.Parallel() // no timing bound: runs beside the package's other such tests (parallel_test.go)
	roottest.RequireTUN(t)
	requireChromium(t)
	for _, name := range page.CorpusNames() {
		t.Run(name, func(t *testing.T) {
			pg, err := page.Load(name, 1)
			if err != nil {
				t.Fatal(err)
			}
			l := startLab(t, "rtt=10ms,bw=100mbit", name)
			for _, proto := range []struct{ name, wire string }{{"h1s", "HTTP/1.1"}, {"h2", "h2"}, {"h3", "h3"}} {
				harFile := filepath.Join(t.TempDir(), proto.name+".har")
				sum, out, err := bench.Browse(l, proto.name, "--har", harFile)
				if err != nil {
					t.Fatalf("%s: %v\n%s", proto.name, err, out)
				}
				if sum["error"] != nil || sum["objects"] != float64(len(pg.Objects)) || sum["body_bytes"] != float64(pg.TotalBytes()) {
					t.Errorf("%s: error %v, %v objects, %v bytes; want %d, %d", proto.name, sum["error"], sum["objects"], sum["body_bytes"], len(pg.Objects), pg.TotalBytes())
				}
				if extras, _ := sum["client"].(map[string]any); extras == nil || extras["dns_queries"].(float64) < 1 {
					t.Errorf("%s: no DNS lookup in the HAR timings (client %v)", proto.name, sum["client"])
				}
				entries := harEntries(t, harFile)
				if len(entries) != len(pg.Objects) {
					t.Errorf("%s: %d HAR entries, want %d", proto.name, len(entries), len(pg.Objects))
				}
				for _, e := range entries {
					if e.Protocol != proto.wire {
						t.Errorf("%s: %s over %q, want %s", proto.name, e.Request.URL, e.Protocol, proto.wire)
					}
				}
			}
		})
	}
}

// criticalPathJSON is pagetest.CriticalPath (drawn there) as a page file.
func criticalPathJSON(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "critical-path.json")
	if err := os.WriteFile(file, pagetest.CriticalPath().JSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestReplayCriticalPathEmulated: at 100 ms RTT and no loss, the hand-made graph replays in the
// predicted time: DNS, TCP, TLS and the root request (4 RTT), the script and the last image (1 RTT
// each), and the computations on the critical path, 50 + 80 + 40 ms × compute scale. Never faster
// than that; slower by at most 5 ms per step of the critical path — each of the six exchanges costs
// the end hosts some work of their own (the TLS handshake's crypto, the TUN crossings, the
// wake-ups), and each of the three computations is a timer in the loader's process that wakes when
// the scheduler runs it. The prediction leaves both out: measured 1–2 ms per request and 5 ms for
// TLS at load average 4 (HAR of `fetch --mode replay`), 13–29 ms over a load at scale 0, more than
// the 3 % of the prediction this test allowed before (18 ms at scale 0), which made it fail on a
// loaded machine with nothing wrong in the replay. A missing computation makes a load faster than
// the prediction; a wrong dependency or an extra round trip costs 40 ms × scale or 100 ms. The least
// disturbed of three loads is compared, and the upper bound is retried once (internal/timebound).
func TestReplayCriticalPathEmulated(t *testing.T) {
	roottest.RequireTUN(t)
	if testing.Short() {
		t.Skip("real-time path")
	}
	file := criticalPathJSON(t)
	l := startLab(t, "rtt=100ms", file)
	const rtt, exchanges, computations, perStep = 100.0, 6, 3, 5.0
	for _, scale := range []float64{1, 2, 0} {
		want := exchanges*rtt + (50+80+40)*scale
		slack := exchanges * perStep
		if scale > 0 {
			slack += computations * perStep
		}
		timebound.Retry(t, func(a *timebound.Attempt) {
			var plts []float64
			for range 3 {
				sum, out, err := bench.Fetch(l, "h2", "--mode", "replay", "--page", file, "--compute-scale", fmt.Sprint(scale))
				if err != nil {
					t.Fatalf("scale %g: %v\n%s", scale, err, out)
				}
				if sum["objects"] != 4.0 {
					t.Errorf("scale %g: %v objects", scale, sum["objects"])
				}
				plts = append(plts, sum["plt_ms"].(float64))
			}
			got := slices.Min(plts)
			t.Logf("compute scale %g: plt %v ms, predicted %.0f ms", scale, plts, want)
			if got < want {
				t.Errorf("compute scale %g: plt %.1f ms (least of %v), faster than the predicted %.0f ms", scale, got, plts, want)
			} else if got > want+slack {
				a.Errorf("compute scale %g: plt %.1f ms (least of %v), predicted %.0f ms + ≤ %.0f ms", scale, got, plts, want, slack)
			}
		})
	}
}

// TestReplayEqualsFlatEmulated: a page without computation (a synthetic page) replayed with
// compute_scale 0 loads in the time flat mode takes, within noise: the least disturbed of five
// loads each within 3 % (flat mode also parses the HTML, which a busy machine slows down).
func TestReplayEqualsFlatEmulated(t *testing.T) {
	roottest.RequireTUN(t)
	if testing.Short() {
		t.Skip("real-time path")
	}
	const pg = "synthetic:16x10kB"
	l := startLab(t, "rtt=40ms,bw=10mbit", pg)
	timebound.Retry(t, func(a *timebound.Attempt) {
		plt := map[string][]float64{}
		for range 5 {
			for _, mode := range []string{"flat", "replay"} {
				extra := []string{"--mode", mode}
				if mode == "replay" {
					extra = append(extra, "--page", pg, "--compute-scale", "0")
				}
				sum, out, err := bench.Fetch(l, "h2", extra...)
				if err != nil {
					t.Fatalf("%s: %v\n%s", mode, err, out)
				}
				plt[mode] = append(plt[mode], sum["plt_ms"].(float64))
			}
		}
		f, r := slices.Min(plt["flat"]), slices.Min(plt["replay"])
		t.Logf("flat %v ms, replay %v ms", plt["flat"], plt["replay"])
		if math.Abs(f-r) > 0.03*f {
			a.Errorf("replay (scale 0) %.1f ms vs flat %.1f ms (least of five each: %v, %v): more than 3 %% apart", r, f, plt["replay"], plt["flat"])
		}
	})
}
