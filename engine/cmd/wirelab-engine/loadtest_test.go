package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/loadtest"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/server/impl"
)

// loadtestCmd is `wirelab-engine loadtest --spec … --out … --progress` as a subprocess.
func loadtestCmd(t *testing.T, spec string, limit time.Duration) (*exec.Cmd, string) {
	t.Helper()
	return specCmd(t, "loadtest", spec, limit)
}

// loadtestOutput is what a test reads of a load test's directory.
type loadtestOutput struct {
	Result struct {
		Summary struct {
			Totals struct {
				Pages             int     `json:"pages"`
				PagesFailed       int     `json:"pages_failed"`
				Hits              int     `json:"hits"`
				VUsMax            int     `json:"vus_max"`
				ConnectionsOpened int     `json:"connections_opened"`
				ErrorRate         float64 `json:"error_rate"`
				Errors            struct {
					ConnectRefused int `json:"connect_refused"`
					Reset          int `json:"reset"`
				} `json:"errors"`
			} `json:"totals"`
		} `json:"summary"`
		Outcomes struct {
			ServerAt         map[string]*loadtest.Sample `json:"server_at"`
			ServerCPUUtilMax *float64                    `json:"server_cpu_util_max"`
		} `json:"outcomes"`
		Thresholds []struct {
			Expr string   `json:"expr"`
			Pass bool     `json:"pass"`
			Val  *float64 `json:"value"`
		} `json:"thresholds"`
		ThresholdsPassed bool                 `json:"thresholds_passed"`
		Interrupted      bool                 `json:"interrupted"`
		ServerExited     *loadtest.ServerExit `json:"server_exited"`
		Intervals        int                  `json:"intervals"`
		ServerSamples    int                  `json:"server_samples"`
		Provenance       struct {
			Server struct {
				Impl       string `json:"impl"`
				Version    string `json:"version"`
				CostSource string `json:"cost_source"`
			} `json:"server"`
			LoadAvgEnd string `json:"loadavg_end"`
		} `json:"provenance"`
		Emulator struct {
			Down struct {
				Packets int64 `json:"packets"`
			} `json:"down"`
		} `json:"emulator"`
	}
	Intervals []struct {
		Index           int     `json:"index"`
		TStart          float64 `json:"t_start_s"`
		TEnd            float64 `json:"t_end_s"`
		Pages           int     `json:"pages"`
		PagesPerS       float64 `json:"pages_per_s"`
		OpenConnections int     `json:"open_connections"`
	}
	Server []loadtest.Sample
}

func readLoadtest(t *testing.T, out string) loadtestOutput {
	t.Helper()
	var o loadtestOutput
	b, err := os.ReadFile(filepath.Join(out, loadtest.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &o.Result); err != nil {
		t.Fatal(err)
	}
	readJSONLines(t, filepath.Join(out, loadtest.IntervalsFile), &o.Intervals)
	readJSONLines(t, filepath.Join(out, loadtest.ServerFile), &o.Server)
	return o
}

func readJSONLines[T any](t *testing.T, path string, into *[]T) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v: %s", path, err, sc.Bytes())
		}
		*into = append(*into, v)
	}
}

const loadtestRamp = `{"page":"neoload50","protocol":%q,"network":"rtt=20ms,bw=100mbit","server":{"impl":%q},"interval_s":1,
 "scenario":{"start":1,"stages":[{"duration_s":4,"target":8}]},"think":{"mean_s":0.3},
 "thresholds":["errors == 0","server_cpu_util_max < 1.9"],"at_vus":[4]}`

// A short closed ramp against the built-in server and a real one: pages complete, each VU opens
// the connections its protocol should, the server is sampled once per interval (with its own
// gauges when it has them) and the counts add up.
func TestLoadtestLab(t *testing.T) {
	roottest.RequireTUN(t)
	cases := []struct{ impl, protocol string }{{"builtin", "h2"}, {"apache", "h1s"}, {"nginx", "h2"}}
	for _, c := range cases {
		t.Run(c.impl+"/"+c.protocol, func(t *testing.T) {
			if c.impl != "builtin" {
				requireImpl(t, c.impl)
			}
			cmd, out := loadtestCmd(t, fmt.Sprintf(loadtestRamp, c.protocol, c.impl), 2*time.Minute)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v: %s", err, stderr.String())
			}
			for _, ev := range []string{`"event":"ready"`, `"event":"interval"`, `"event":"done"`} {
				if !strings.Contains(stdout.String(), ev) {
					t.Errorf("progress has no %s line", ev)
				}
			}
			o := readLoadtest(t, out)
			r := o.Result
			tot := r.Summary.Totals
			if tot.Pages < 8 || tot.PagesFailed != 0 || tot.ErrorRate != 0 {
				t.Errorf("pages %d, failed %d, error rate %v: want ≥ 8 and no failures", tot.Pages, tot.PagesFailed, tot.ErrorRate)
			}
			if tot.Hits != 51*tot.Pages {
				t.Errorf("hits %d for %d pages of 51 objects", tot.Hits, tot.Pages)
			}
			if tot.VUsMax != 8 {
				t.Errorf("vus_max %d, want 8", tot.VUsMax)
			}
			// h2: one connection per VU; h1s: the page needs more than one, at most six per VU open
			// at once. (A real server may close kept connections, so the VUs may open more than six
			// each over the run — CI saw 54 for 8 VUs against Apache once, cause not found, before
			// connections_closed_by_server existed. The bound is on the connections open at once.)
			switch c.protocol {
			case "h2":
				if tot.ConnectionsOpened != tot.VUsMax {
					t.Errorf("h2: %d connections for %d VUs, want one each", tot.ConnectionsOpened, tot.VUsMax)
				}
			case "h1s":
				if tot.ConnectionsOpened <= tot.VUsMax {
					t.Errorf("h1s: %d connections for %d VUs, want more than one each", tot.ConnectionsOpened, tot.VUsMax)
				}
			}
			perVU := map[string]int{"h2": 1, "h1s": 6}[c.protocol]
			for _, iv := range o.Intervals {
				if iv.OpenConnections > perVU*tot.VUsMax {
					t.Errorf("interval %d: %d connections open for %d VUs, want at most %d each", iv.Index, iv.OpenConnections, tot.VUsMax, perVU)
				}
			}
			// One server sample per interval, same indexes; the intervals' pages add up.
			if len(o.Intervals) != r.Intervals || len(o.Server) != len(o.Intervals) || r.ServerSamples != len(o.Server) {
				t.Fatalf("%d interval lines (%d in loadtest.json), %d server samples (%d)", len(o.Intervals), r.Intervals, len(o.Server), r.ServerSamples)
			}
			sum, cpu := 0, 0.0
			for i, iv := range o.Intervals {
				sum += iv.Pages
				if want := float64(iv.Pages) / (iv.TEnd - iv.TStart); math.Abs(iv.PagesPerS-want) > 0.01*want+1e-9 {
					t.Errorf("interval %d: pages/s %v, want pages ÷ length = %v", i, iv.PagesPerS, want)
				}
				s := o.Server[i]
				if s.Index != iv.Index || math.Abs(s.TS-iv.TEnd) > 0.25 {
					t.Errorf("server sample %d (t %.3f s) for interval %d ending at %.3f s", s.Index, s.TS, iv.Index, iv.TEnd)
				}
				if s.Source == "" || s.Processes < 1 || s.Threads < s.Processes || s.MemoryBytes <= 0 || s.MemoryPeakBytes < s.MemoryBytes {
					t.Errorf("server sample %d: %+v: want source, processes, threads and memory", i, s)
				}
				if s.Error != nil {
					t.Errorf("server sample %d: %s", i, *s.Error)
				}
				if c.impl != "builtin" && len(s.Gauges) == 0 {
					t.Errorf("server sample %d: no gauges from %s's status", i, c.impl)
				}
				cpu += s.CPUMs
			}
			if sum != tot.Pages {
				t.Errorf("intervals' pages add up to %d, summary says %d", sum, tot.Pages)
			}
			if cpu <= 0 || r.Outcomes.ServerCPUUtilMax == nil || *r.Outcomes.ServerCPUUtilMax <= 0 {
				t.Errorf("server CPU %v ms, max util %v: want both measured", cpu, r.Outcomes.ServerCPUUtilMax)
			}
			if at := r.Outcomes.ServerAt["4"]; at == nil || at.Source == "" {
				t.Errorf("server_at[4] = %+v, want the sample of the interval that reached 4 VUs", at)
			}
			if len(r.Thresholds) != 2 || !r.ThresholdsPassed || r.Thresholds[1].Val == nil {
				t.Errorf("thresholds %+v, passed %v: want both decided, the server's with its value", r.Thresholds, r.ThresholdsPassed)
			}
			if r.Provenance.Server.Impl != c.impl || r.Provenance.Server.Version == "" || r.Provenance.Server.CostSource == "" || r.Provenance.LoadAvgEnd == "" {
				t.Errorf("provenance %+v", r.Provenance)
			}
			if r.Emulator.Down.Packets == 0 {
				t.Error("the emulator's summary counts no packet")
			}
			st, err := os.Stat(filepath.Join(out, loadtest.ResultFile))
			if err != nil || st.Mode().Perm() != 0o644 {
				t.Errorf("%s: mode %v (%v), want 0644 like the other files", loadtest.ResultFile, st.Mode().Perm(), err)
			}
			assertGone(t, runID(t, filepath.Join(out, loadtest.LogFile)))
		})
	}
}

// The end of a load test other than its scenario's: the server dies under load (the VUs stop,
// what was measured is kept, exit 1 naming it), Ctrl-C (exit 130, interrupted, intervals kept),
// and a killed engine (gc removes it all). Nothing is left behind in any case.
func TestLoadtestEnds(t *testing.T) {
	roottest.RequireTUN(t)
	requireImpl(t, "nginx")
	const spec = `{"page":"neoload50","protocol":"h1s","network":"rtt=20ms","server":{"impl":"nginx"},"interval_s":1,
 "scenario":{"start":4,"stages":[{"duration_s":60,"target":4}]},"think":{"mean_s":0.2}}`
	for _, end := range []string{"server-dies", "interrupt", "kill"} {
		t.Run(end, func(t *testing.T) {
			cmd, out := loadtestCmd(t, spec, 2*time.Minute)
			r, stderr := startPiped(t, cmd)
			intervals := 0
			for intervals < 2 {
				line, err := r.ReadString('\n')
				if err != nil {
					_ = cmd.Process.Kill()
					t.Fatalf("fewer than two intervals (%v): %s", err, stderr.String())
				}
				if strings.Contains(line, `"event":"interval"`) {
					intervals++
				}
			}
			id := runID(t, filepath.Join(out, loadtest.LogFile))
			cgroups := ownedCgroups(t, id)
			pids := groupPids(t, cgroups)
			if len(pids) < 2 {
				t.Errorf("nginx processes %v: want a master and its workers", pids)
			}
			generators := labChildren(t, id)
			if len(generators) == 0 {
				t.Error("no loadgen child found")
			}
			drain := func() { _, _ = bufio.NewReader(r).ReadString(0) }
			switch end {
			case "server-dies":
				for _, pid := range pids {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				drain()
				if code := exitCodeOf(cmd.Wait()); code != 1 || !strings.Contains(stderr.String(), "the server exited during the load test") {
					t.Errorf("exit %d after the server died, want 1 naming it: %s", code, stderr.String())
				}
				o := readLoadtest(t, out)
				if o.Result.ServerExited == nil || o.Result.ServerExited.TS < 1 || o.Result.Interrupted {
					t.Errorf("server_exited %+v, interrupted %v: want when it died, not an interruption", o.Result.ServerExited, o.Result.Interrupted)
				}
				if e := o.Result.Summary.Totals.Errors; e.ConnectRefused+e.Reset == 0 {
					t.Errorf("errors %+v: want the VUs' refused or reset connections after the server died", e)
				}
				if len(o.Intervals) < 2 || o.Result.Summary.Totals.Pages == 0 {
					t.Errorf("%d intervals, %d pages kept", len(o.Intervals), o.Result.Summary.Totals.Pages)
				}
			case "interrupt":
				_ = cmd.Process.Signal(syscall.SIGINT)
				drain()
				if code := exitCodeOf(cmd.Wait()); code != 130 {
					t.Errorf("exit %d after SIGINT, want 130: %s", code, stderr.String())
				}
				o := readLoadtest(t, out)
				if !o.Result.Interrupted || o.Result.ServerExited != nil || len(o.Intervals) < 2 || len(o.Server) != len(o.Intervals) {
					t.Errorf("interrupted %v, server_exited %+v, %d intervals, %d samples", o.Result.Interrupted, o.Result.ServerExited, len(o.Intervals), len(o.Server))
				}
			case "kill":
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				// The generator is a child of the killed engine in the client namespace: gc ends it.
				if out, err := engine("gc").CombinedOutput(); err != nil {
					t.Fatalf("gc: %v\n%s", err, out)
				}
			}
			assertLabGone(t, filepath.Join(os.TempDir(), "wirelab-lab-"+id), cgroups, pids)
			for _, pid := range generators {
				if alive(pid) {
					t.Errorf("loadgen %d left running", pid)
				}
			}
			assertGone(t, id)
		})
	}
}

// labChildren are the processes started with `--lab ID`: the run's load generator.
func labChildren(t *testing.T, id string) []int {
	t.Helper()
	matches, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []int
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil || !bytes.Contains(b, []byte("\x00--lab\x00"+id+"\x00")) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(m))); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// Bad input: one line naming the field, exit 2, nothing created; --check creates nothing either.
func TestLoadtestBadInput(t *testing.T) {
	good := `{"page":"neoload50","protocol":"h2","network":"rtt=20ms","scenario":{"stages":[{"duration_s":1,"target":1}]}}`
	cases := []struct{ name, spec, want string }{
		{"no page", `{"protocol":"h2","scenario":{"stages":[{"duration_s":1,"target":1}]}}`, "page"},
		{"unknown page", strings.Replace(good, "neoload50", "no-such-page", 1), "page"},
		{"bad network", strings.Replace(good, "rtt=20ms", "rtt=fast", 1), "network"},
		{"unknown server", strings.Replace(good, `"network"`, `"server":{"impl":"iis"},"network"`, 1), "server.impl"},
		{"unsupported protocol", strings.Replace(strings.Replace(good, `"network"`, `"server":{"impl":"nginx"},"network"`, 1), `"h2"`, `"h3"`, 1), `protocol: got "h3"; not served by server.impl nginx`},
		{"unknown field", strings.Replace(good, `"page"`, `"pgae":1,"page"`, 1), "pgae"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			specFile := filepath.Join(dir, "spec.json")
			if err := os.WriteFile(specFile, []byte(c.spec), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out")
			for _, args := range [][]string{{"loadtest", "--check", "--spec", specFile}, {"loadtest", "--spec", specFile, "--out", out}} {
				b, err := engine(args...).CombinedOutput()
				lines := strings.Split(strings.TrimSpace(string(b)), "\n")
				if code := exitCodeOf(err); code != 2 || len(lines) != 1 || !strings.Contains(lines[0], c.want) {
					t.Errorf("%v: exit %d, output %q: want exit 2 and one line naming %s", args[:2], code, b, c.want)
				}
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s created for a bad spec", out)
			}
		})
	}
	specFile := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(specFile, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := engine("loadtest", "--check", "--spec", specFile).CombinedOutput(); err != nil {
		t.Errorf("--check of a good spec: %v: %s", err, b)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := engine("loadtest", "--spec", specFile, "--out", file).CombinedOutput(); exitCodeOf(err) != 2 || !strings.Contains(string(b), "--out") {
		t.Errorf("--out naming a file: exit %d: %s", exitCodeOf(err), b)
	}
}

// loadgen --lab is accepted only inside that run's client or server namespace while the run lives:
// a process outside cannot borrow a lab's address policy to load 10.77.x.x.
func TestLoadgenLabRefusedOutsideTheRun(t *testing.T) {
	spec := writeSpec(t, `{"protocol":"h1","scenario":{"stages":[{"duration_s":1,"target":1}]}}`)
	for _, id := range []string{"nothex!!", "0badc0de"} {
		b, err := engine("loadgen", "--spec", spec, "--target", "http://10.77.0.2/", "--lab", id).CombinedOutput()
		if code := exitCodeOf(err); code != 2 || !strings.Contains(string(b), "--lab "+id) {
			t.Errorf("--lab %s outside the run: exit %d: %s", id, code, b)
		}
	}
	b, err := engine("loadgen", "--spec", spec, "--target", "http://127.0.0.1:1/", "--dns", "10.77.0.53").CombinedOutput()
	if code := exitCodeOf(err); code != 2 || !strings.Contains(string(b), "--dns") {
		t.Errorf("--dns without --lab: exit %d: %s", code, b)
	}
	if !roottest.HaveTUN() {
		return
	}
	// Two live runs: run A's --lab is accepted in A's client namespace (loadtest) and server
	// namespace (bench loadgen beside a real server), refused here and in B's namespaces.
	runs := [2]*netns.Topology{}
	for i := range runs {
		topo, err := netns.Create(netns.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = topo.Close() })
		runs[i] = topo
	}
	a, other := runs[0], runs[1]
	// Targets each namespace delivers locally (nothing listens on port 9: connection refused).
	targets := map[netns.Side]string{netns.Client: "http://" + labaddr.ClientAddr.String() + ":9/", netns.Server: "http://" + labaddr.OriginAddr(1).String() + ":9/"}
	for _, side := range []netns.Side{netns.Client, netns.Server} {
		args := []string{os.Args[0], "loadgen", "--spec", spec, "--target", targets[side], "--lab", a.ID}
		cmd := a.Command(side, args...)
		cmd.Env = append(os.Environ(), testMainEnv+"=1")
		b, err := cmd.Output()
		if err != nil || !strings.Contains(string(b), `"event":"summary"`) {
			t.Errorf("--lab %s in its %s namespace: %v: %s", a.ID, side, err, b)
		}
		cmd = other.Command(side, args...)
		cmd.Env = append(os.Environ(), testMainEnv+"=1")
		b, err = cmd.CombinedOutput()
		want := "this process is not in " + a.Name(netns.Client) + " or " + a.Name(netns.Server)
		if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); exitCodeOf(err) != 2 || len(lines) != 1 || !strings.Contains(lines[0], want) {
			t.Errorf("--lab %s in another run's %s namespace: exit %d, %q: want exit 2 and one line: %s", a.ID, side, exitCodeOf(err), b, want)
		}
	}
	b, err = engine("loadgen", "--spec", spec, "--target", targets[netns.Server], "--lab", a.ID).CombinedOutput()
	if code := exitCodeOf(err); code != 2 || !strings.Contains(string(b), "this process is not in") {
		t.Errorf("--lab %s outside its namespaces: exit %d: %s", a.ID, code, b)
	}
}

// requireImpl fails the test unless a real server is installed (make setup installs them all).
func requireImpl(t *testing.T, name string) {
	t.Helper()
	s, err := impl.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Support().Binary); err != nil {
		t.Fatalf("%s is not installed (make setup installs it): %v", name, err)
	}
}
