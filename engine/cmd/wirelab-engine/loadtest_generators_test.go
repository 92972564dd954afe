package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/loadgen"
	"github.com/wirelab/wirelab/engine/loadtest"
)

// A load test whose VUs run as two generator processes (--generators 2): each merged interval's
// request count is the generators' sum and its p90 the merged histogram's; SIGKILLing one
// generator mid-run ends the load test degraded (exit 1, one line), the intervals after the loss
// marked, what was measured kept; nothing is left behind, and gc finds nothing afterwards.
func TestLoadtestGenerators(t *testing.T) {
	roottest.RequireTUN(t)
	const spec = `{"page":"synthetic:6x1kB","protocol":"h2","network":"rtt=10ms","server":{"impl":"builtin"},"interval_s":1,
 "scenario":{"start":6,"stages":[{"duration_s":6,"target":6}]},"think":{"mean_s":0.1}}`
	for _, kill := range []bool{false, true} {
		t.Run(map[bool]string{false: "both", true: "one-killed"}[kill], func(t *testing.T) {
			cmd, out := loadtestCmd(t, spec, 2*time.Minute)
			cmd.Args = append(cmd.Args, "--generators", "2")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if kill {
				pid := waitForChild(t, cmd.Process.Pid, "1/2", 20*time.Second)
				time.Sleep(2500 * time.Millisecond) // into the scenario's third interval
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			err := cmd.Wait()
			msg := strings.TrimSpace(stderr.String())
			if !kill && err != nil {
				t.Fatalf("%v: %s", err, msg)
			}
			if kill && (exitCodeOf(err) != 1 || !strings.Contains(msg, "degraded: generator(s) lost mid-run (local-1 after") || strings.Contains(msg, "\n")) {
				t.Fatalf("exit %d, stderr %q: want 1 and one line naming the lost generator", exitCodeOf(err), msg)
			}
			var res struct {
				Degraded   bool                   `json:"degraded"`
				Generators []loadgen.GeneratorRun `json:"generators"`
				Summary    loadgen.Summary        `json:"summary"`
			}
			b, rerr := os.ReadFile(filepath.Join(out, loadtest.ResultFile))
			if rerr != nil || json.Unmarshal(b, &res) != nil {
				t.Fatalf("%s: %v", loadtest.ResultFile, rerr)
			}
			var merged []loadgen.Interval
			readJSONLines(t, filepath.Join(out, loadtest.IntervalsFile), &merged)
			var gens [2][]loadgen.Interval
			for k := range gens {
				name := "local-" + strconv.Itoa(k)
				g, err := readGeneratorOutput(name, filepath.Join(out, loadtest.GeneratorsDir, name+".jsonl"))
				if err != nil || (g.Summary == nil) != (kill && k == 1) {
					t.Fatalf("%s's own lines: %v, summary %v", name, err, g.Summary != nil)
				}
				gens[k] = g.Intervals
			}
			if res.Degraded != kill || len(res.Generators) != 2 || res.Generators[1].Lost != kill || res.Summary.Intervals != len(merged) {
				t.Errorf("degraded %v, generators %+v, %d intervals (summary %d)", res.Degraded, res.Generators, len(merged), res.Summary.Intervals)
			}
			var pages int64
			for i, iv := range merged {
				var hits int64
				var hists []string
				for k := range gens {
					if i < len(gens[k]) {
						hits += gens[k][i].Hits
						hists = append(hists, gens[k][i].PageHist)
					}
				}
				lost := kill && i >= len(gens[1])
				if iv.Hits != hits || iv.Degraded != lost {
					t.Errorf("interval %d: %d requests, the generators' sum %d; degraded %v, want %v", i, iv.Hits, hits, iv.Degraded, lost)
				}
				if iv.PageMs != nil {
					if p90, err := mergedHistOf(hists...); err != nil || p90 != iv.PageMs.P90 {
						t.Errorf("interval %d: p90 %v, the merged histogram's %v (%v)", i, iv.PageMs.P90, p90, err)
					}
				}
				pages += iv.Pages
			}
			// both loaded (not a timing bound: over the whole run, not per interval)
			if res.Generators[0].Pages == 0 || res.Generators[1].Pages == 0 {
				t.Errorf("generators %+v: want both loading", res.Generators)
			}
			if pages != res.Summary.Totals.Pages || pages == 0 || (!kill && res.Summary.Totals.VUsMax != 6) {
				t.Errorf("%d pages in the intervals, %d in the summary, vus_max %d", pages, res.Summary.Totals.Pages, res.Summary.Totals.VUsMax)
			}
			id := runID(t, filepath.Join(out, loadtest.LogFile))
			assertGone(t, id)
			// gc finds nothing of this run (another's leftovers on a shared machine are not ours)
			if out, err := engine("gc").CombinedOutput(); err != nil || strings.Contains(string(out), id) {
				t.Errorf("gc after the run: %v: %s", err, out)
			}
		})
	}
}

// waitForChild finds the loadgen process running part (K/N) below the engine pid.
func waitForChild(t *testing.T, engine int, part string, limit time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			b, err := os.ReadFile(filepath.Join(d, "cmdline"))
			if err != nil {
				continue
			}
			args := strings.Split(string(b), "\x00")
			if len(args) < 2 || args[0] != os.Args[0] || !strings.Contains(string(b), "\x00--part\x00"+part+"\x00") {
				continue
			}
			pid, _ := strconv.Atoi(filepath.Base(d))
			for p := pid; p > 1; p = parentOf(p) {
				if p == engine {
					return pid
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no loadgen --part %s below %d within %v", part, engine, limit)
	return 0
}

func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
