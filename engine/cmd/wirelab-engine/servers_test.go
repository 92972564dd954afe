package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/internal/timebound"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server/impl"
	"github.com/wirelab/wirelab/engine/trial"
)

// realServers are the implementations under test from Debian's packages, with what each serves.
func realServers(t *testing.T) []impl.Server {
	t.Helper()
	var out []impl.Server
	for _, s := range impl.All {
		if s.Name() == "builtin" {
			continue
		}
		if _, err := os.Stat(s.Support().Binary); err != nil {
			t.Fatalf("%s is not installed (make setup installs it): %v", s.Name(), err)
		}
		out = append(out, s)
	}
	return out
}

func protocolList(ps []string) string {
	b, _ := json.Marshal(ps)
	return string(b)
}

// Every corpus page loads without an error over every protocol each real server serves, through
// the emulated path, with exactly the page's objects and body bytes; HTTP/1.x uses at most 6
// connections per origin, h2/h2c/h3 exactly one per origin — whatever the server.
func TestServersCorpusAllProtocols(t *testing.T) {
	t.Parallel() // no timing bound: runs beside the package's other such tests (parallel_test.go)
	roottest.RequireTUN(t)
	servers := realServers(t)
	for _, name := range page.CorpusNames() {
		pg, err := page.Load(name, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range servers {
			t.Run(name+"/"+s.Name(), func(t *testing.T) {
				protocols := s.Support().Protocols
				spec := fmt.Sprintf(`{"page":%q,"protocols":%s,"repetitions":1,"network":"rtt=4ms","server":{"impl":%q,"max_concurrent_streams":0}}`,
					name, protocolList(protocols), s.Name())
				td := readTrial(t, runTrialOK(t, spec, 3*time.Minute))
				if len(td.loads) != len(protocols) {
					t.Fatalf("%d loads, want %d", len(td.loads), len(protocols))
				}
				for _, l := range td.loads {
					if l.Error != nil {
						t.Errorf("%s: %s", l.Protocol, *l.Error)
						continue
					}
					if l.Objects != int64(len(pg.Objects)) || l.BodyBytes != pg.TotalBytes() {
						t.Errorf("%s: %d objects / %d body bytes, the page has %d / %d", l.Protocol, l.Objects, l.BodyBytes, len(pg.Objects), pg.TotalBytes())
					}
					if l.ServerCPUMs == nil || *l.ServerCPUMs <= 0 || l.ServerRSSPeakBytes == nil || *l.ServerRSSPeakBytes <= 0 {
						t.Errorf("%s: server cost %v / %v: not measured", l.Protocol, l.ServerCPUMs, l.ServerRSSPeakBytes)
					}
					conns := harConns(t, filepath.Join(td.dir, *l.HAR))
					for host, n := range conns {
						if l.Protocol == "h1" || l.Protocol == "h1s" {
							if n > 6 {
								t.Errorf("%s: %d connections to %s, more than 6", l.Protocol, n, host)
							}
						} else if n != 1 {
							t.Errorf("%s: %d connections to %s, want exactly one", l.Protocol, n, host)
						}
					}
					if len(conns) != len(pg.Origins) {
						t.Errorf("%s: objects from %d origins, the page has %d", l.Protocol, len(conns), len(pg.Origins))
					}
				}
				// The server's own records (its access log): every object of every load, once.
				recs := readServerRecords(t, td.dir)
				if len(recs) != len(protocols)*len(pg.Objects) {
					t.Errorf("server records %d, want %d", len(recs), len(protocols)*len(pg.Objects))
				}
				var prov struct {
					Provenance trial.Provenance `json:"provenance"`
				}
				b, _ := os.ReadFile(filepath.Join(td.dir, trial.TrialFile))
				if err := json.Unmarshal(b, &prov); err != nil || prov.Provenance.Server == nil ||
					prov.Provenance.Server.Impl != s.Name() || prov.Provenance.Server.Version == "" {
					t.Errorf("trial.json provenance.server %+v (%v)", prov.Provenance.Server, err)
				}
			})
		}
	}
}

// A sharded page is served on every origin address, by every real server.
func TestServersShardedPage(t *testing.T) {
	t.Parallel() // no timing bound: runs beside the package's other such tests (parallel_test.go)
	roottest.RequireTUN(t)
	pg, err := page.Load("imgur", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range realServers(t) {
		t.Run(s.Name(), func(t *testing.T) {
			spec := fmt.Sprintf(`{"page":"imgur","shards":3,"protocols":["h1s","h2"],"repetitions":1,"network":"rtt=4ms","server":{"impl":%q,"max_concurrent_streams":0}}`, s.Name())
			td := readTrial(t, runTrialOK(t, spec, 3*time.Minute))
			for _, l := range td.loads {
				if l.Error != nil {
					t.Fatalf("%s: %s", l.Protocol, *l.Error)
				}
				if l.Objects != int64(len(pg.Objects)) || l.BodyBytes != pg.TotalBytes() {
					t.Errorf("%s: %d objects / %d bytes, the page has %d / %d", l.Protocol, l.Objects, l.BodyBytes, len(pg.Objects), pg.TotalBytes())
				}
				conns := harConns(t, filepath.Join(td.dir, *l.HAR))
				if len(conns) != 3 {
					t.Errorf("%s: objects from %d origins, want 3: %v", l.Protocol, len(conns), conns)
				}
				for host, n := range conns {
					if l.Protocol == "h2" && n != 1 {
						t.Errorf("h2: %d connections to %s", n, host)
					}
				}
			}
		})
	}
}

// serverRecord is the part of a server/requests.jsonl line the tests read.
type serverRecord struct {
	Protocol string `json:"protocol"`
	Token    string `json:"token"`
	Object   string `json:"object"`
	Status   int    `json:"status"`
	Bytes    int64  `json:"bytes"`
}

func readServerRecords(t *testing.T, dir string) []serverRecord {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, trial.ServerReqs))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []serverRecord
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r serverRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Status != 200 || r.Object == "" {
			t.Errorf("server record %+v: want 200 for a page object", r)
		}
		out = append(out, r)
	}
	return out
}

// Physics per server, as for the built-in server (TestTrialPhysicsRoundTrips): at 200 ms RTT a
// 1 kB root page takes h1 and h2c 2 RTT (TCP, request), h1s and h2 3 (TCP, TLS 1.3, request),
// h3 2 (QUIC with TLS, request): never less than the path allows, and the fastest of three loads
// within 3 % of it. The median is logged, not checked: a real server may take a round trip more
// on its own. Caddy 2.6's QUIC handshake does in half or more of its loads (docs/server.md; all three
// loads of a trial in 2 of 5 runs on 2026-11-25), so its h3 may also sit within 3 % of 3 RTT — one
// round trip whole, never a fraction of one, which is still the path's physics.
func TestServersPhysicsRoundTrips(t *testing.T) {
	roottest.RequireTUN(t)
	const rtt = 200.0
	rtts := map[string]float64{"h1": 2, "h1s": 3, "h2": 3, "h2c": 2, "h3": 2}
	ownRoundTrip := map[[2]string]bool{{"caddy", "h3"}: true} // the server's own extra round trip
	for _, s := range realServers(t) {
		t.Run(s.Name(), func(t *testing.T) {
			// The upper bound depends on the machine: retried once with a new trial (internal/timebound).
			timebound.Retry(t, func(a *timebound.Attempt) {
				protocols := s.Support().Protocols
				spec := fmt.Sprintf(`{"page":"synthetic:0x1kB","protocols":%s,"repetitions":3,"network":"rtt=200ms","client":{"dns":"static"},"server":{"impl":%q,"max_concurrent_streams":0}}`,
					protocolList(protocols), s.Name())
				td := readTrial(t, runTrialOK(t, spec, 3*time.Minute))
				plt := map[string][]float64{}
				for _, l := range td.loads {
					if l.Error != nil {
						t.Fatalf("%s: %s", l.Protocol, *l.Error)
					}
					n := rtts[l.Protocol]
					if l.PltMs < n*rtt-1 {
						t.Errorf("%s load %d: PLT %.1f ms < %.0f RTT: faster than the path", l.Protocol, l.Index, l.PltMs, n)
					}
					plt[l.Protocol] = append(plt[l.Protocol], l.PltMs)
				}
				for _, p := range protocols {
					n := rtts[p]
					best, m := slices.Min(plt[p]), median(plt[p])
					t.Logf("%s %s: fastest %.1f ms = %.3f RTT, median %.1f ms", s.Name(), p, best, best/rtt, m)
					within := func(n float64) bool { return best <= n*rtt*1.03 }
					own := ownRoundTrip[[2]string{s.Name(), p}]
					// The pair with a round trip of its own is judged in whole round trips, n or n+1,
					// plus the server's own time, which is not the path's: up to 0.15 RTT (Caddy's h3
					// loads at 2 RTT took 408–413 ms here, connect 206–227 ms in earlier runs).
					whole := math.Round(best / rtt)
					switch {
					case within(n):
					case own && (whole == n || whole == n+1) && best >= whole*rtt-1 && best <= (whole+0.15)*rtt:
						t.Logf("%s %s: %.0f RTT and %.1f ms of the server's own (docs/server.md)", s.Name(), p, whole, best-whole*rtt)
					default:
						a.Errorf("%s: fastest of %d loads %.1f ms, more than 3 %% above %.0f RTT", p, len(plt[p]), best, n)
					}
				}
			})
		})
	}
}

// The ends of a run with a real server: on success, on Ctrl-C, and after SIGKILL + gc, nothing of
// the run is left: no server process, no control group, no private directory (certificates, key,
// configuration, document root), no namespace or state file. While the run lives, the key is 0600.
func TestServersLeaveNothingBehind(t *testing.T) {
	roottest.RequireTUN(t)
	const spec = `{"page":"twitter","protocols":["h1s","h2"],"repetitions":40,"network":"rtt=100ms","server":{"impl":"nginx"}}`
	for _, end := range []string{"success", "failure", "interrupt", "kill"} {
		t.Run(end, func(t *testing.T) {
			s := spec
			if end == "success" {
				s = strings.Replace(spec, `"repetitions":40`, `"repetitions":1`, 1)
			}
			cmd, out := trialCmd(t, s, 2*time.Minute)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			r := startUntilLoad(t, cmd)
			id := trialRunID(t, out)
			dir := filepath.Join(os.TempDir(), "wirelab-lab-"+id)
			st, err := os.Stat(filepath.Join(dir, "certs", "key.pem"))
			if err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("the run's key: %v, mode %v; want 0600", err, st.Mode().Perm())
			}
			cgroups := ownedCgroups(t, id)
			if len(cgroups) == 0 {
				t.Error("the run records no control group")
			}
			pids := groupPids(t, cgroups)
			if len(pids) < 2 {
				t.Errorf("nginx processes %v: want a master and its workers", pids)
			}
			switch end {
			case "success":
				_, _ = bufio.NewReader(r).ReadString(0)
				if err := cmd.Wait(); err != nil {
					t.Fatalf("%v: %s", err, stderr.String())
				}
			case "failure":
				// The server dies under the trial: the trial fails (exit 1), and cleans up.
				for _, pid := range pids {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				_, _ = bufio.NewReader(r).ReadString(0)
				if code := exitCodeOf(cmd.Wait()); code != 1 || !strings.Contains(stderr.String(), "the server exited during the trial") {
					t.Errorf("exit %d after the server died, want 1 naming it: %s", code, stderr.String())
				}
			case "interrupt":
				_ = cmd.Process.Signal(syscall.SIGINT)
				_, _ = bufio.NewReader(r).ReadString(0)
				if code := exitCodeOf(cmd.Wait()); code != 130 {
					t.Errorf("exit %d after SIGINT, want 130", code)
				}
			case "kill":
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				if out, err := engine("gc").CombinedOutput(); err != nil {
					t.Fatalf("gc: %v\n%s", err, out)
				}
			}
			assertLabGone(t, dir, cgroups, pids)
			assertGone(t, id)
		})
	}
}

// assertLabGone: the lab's directory, its servers' control groups and its server processes are gone.
func assertLabGone(t *testing.T, dir string, cgroups []string, pids []int) {
	t.Helper()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind", dir)
	}
	for _, cg := range cgroups {
		if _, err := os.Stat(cg); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("control group %s left behind", cg)
		}
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("server process %d left running", pid)
		}
	}
}

var labTopoRE = regexp.MustCompile(`topology wirelab-([0-9a-f]{8})-c`)

// trialRunID waits for the trial's engine.log to name its run id.
func trialRunID(t *testing.T, out string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(filepath.Join(out, trial.LogFile))
		if m := labTopoRE.FindSubmatch(b); m != nil {
			return string(m[1])
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no topology line in engine.log")
	return ""
}

func ownedCgroups(t *testing.T, id string) []string {
	t.Helper()
	var st struct {
		Cgroups []string `json:"cgroups"`
	}
	b, err := os.ReadFile(filepath.Join(netns.StateDir, id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st.Cgroups
}

// groupPids are the processes in the run's control group: the server's.
func groupPids(t *testing.T, cgroups []string) []int {
	t.Helper()
	if len(cgroups) == 0 {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(cgroups[0], "cgroup.procs"))
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

// Bad input about servers: one line naming the field, exit 2, nothing created or left running.
func TestServersBadInput(t *testing.T) {
	roottest.RequireTUN(t)
	dir := t.TempDir()
	refused := filepath.Join(dir, "refused.conf")
	if err := os.WriteFile(refused, []byte("events {}\nhttp { frobnicate on; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkRefusedSpecs(t, []refusedSpec{
		{`{"page":"twitter","server":{"impl":"lighttpd"}}`, `server.impl: got "lighttpd"; must be builtin, apache, nginx, h2o or caddy`},
		{`{"page":"twitter","protocols":["h1s","h3"],"server":{"impl":"nginx"}}`, `protocols[1]: got "h3"; not served by server.impl nginx, which serves h1, h1s, h2`},
		{`{"page":"twitter","protocols":["spdy3"],"server":{"impl":"apache"}}`, `protocols[0]: got "spdy3"; not served by server.impl apache`},
		{`{"page":"twitter","server":{"impl":"nginx","nginx":{"worker_proceses":2}}}`, `server.nginx.worker_proceses: unknown field; did you mean worker_processes?`},
		{`{"page":"twitter","server":{"impl":"apache","apache":{"mpm":"threaded"}}}`, `server.apache.mpm: got "threaded"; must be event, worker or prefork`},
		{`{"page":"twitter","server":{"impl":"caddy","max_concurrent_streams":100}}`, `server.max_concurrent_streams: got "100"; server.impl caddy cannot set it`},
		{`{"page":"twitter","server":{"impl":"h2o","push":"all"}}`, `server.push: got "all"; server.impl h2o cannot set it`},
		{`{"page":"twitter","server":{"impl":"nginx","config":"/nonexistent/nginx.conf"}}`, `server.config: got "/nonexistent/nginx.conf"; must be a regular file: it does not exist`},
		{`{"page":"twitter","protocols":["h1"],"server":{"impl":"nginx","config":"` + refused + `"}}`, `server.config: got "` + refused + `"; nginx refuses it: `},
		{`{"page":"twitter","protocols":["h1"],"server":{"impl":"nginx","config":"` + refused + `"}}`, `unknown directive "frobnicate" in ` + refused + `:2`},
	})
}

// docs/server.md shows the registry's tables exactly as `servers ls --markdown` prints them.
func TestServersDocIsTheRegistrys(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/server.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := serversMarkdown(listServers()); !strings.Contains(string(doc), want) {
		t.Errorf("docs/server.md does not hold the tables of `wirelab-engine servers ls --markdown`; paste them:\n%s", want)
	}
}

var conformanceRowRE = regexp.MustCompile("(?m)^\\| `([a-z0-9]+)` \\| ([^|]+) \\| (h2c?) \\| ([0-9]+) \\| ([0-9]+) \\|")

// h2spec against every real server's h2 and h2c gives the pass counts docs/server.md documents,
// as long as the installed versions are the documented ones (a new package version: regenerate the
// table with `wirelab-engine servers conformance --markdown`). It takes minutes (h2spec waits up to
// 2 s in some of its 145 cases, ×8), so it runs with `make conformance` (WIRELAB_CONFORMANCE=1),
// not in every `make test`.
func TestServersConformance(t *testing.T) {
	roottest.RequireTUN(t)
	if os.Getenv("WIRELAB_CONFORMANCE") != "1" {
		t.Skip("h2spec against every server takes minutes: make conformance runs it (WIRELAB_CONFORMANCE=1)")
	}
	doc, err := os.ReadFile("../../../docs/server.md")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		version string
		passed  int
	}
	documented := map[string]row{}
	for _, m := range conformanceRowRE.FindAllStringSubmatch(string(doc), -1) {
		n, _ := strconv.Atoi(m[4])
		documented[m[1]+"/"+m[3]] = row{strings.TrimSpace(m[2]), n}
	}
	for _, s := range realServers(t) {
		res, err := conformanceOf(t.Context(), s)
		if err != nil {
			t.Fatalf("%s: %v", s.Name(), err)
		}
		for _, r := range res {
			d, ok := documented[r.Server+"/"+r.Protocol]
			if !ok {
				t.Errorf("%s %s: not in docs/server.md's conformance table", r.Server, r.Protocol)
				continue
			}
			t.Logf("h2spec against %s %s (%s): %d passed, %d failed", r.Server, r.Protocol, r.Version, r.Passed, r.Failed)
			if r.Version != d.version {
				t.Logf("%s is %s here, the table %s: regenerate it", r.Server, r.Version, d.version)
				continue
			}
			if r.Passed != d.passed {
				t.Errorf("%s %s: %d passed, docs/server.md says %d", r.Server, r.Protocol, r.Passed, d.passed)
			}
		}
	}
}
