package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/bench"
	"github.com/wirelab/wirelab/engine/internal/cgroup"
	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/lab"
	"github.com/wirelab/wirelab/engine/server/impl"
)

var runIDPattern = regexp.MustCompile(`^[0-9a-f]{8}$`)

// bench loadgen against nginx: h2load and wirelab's VUs side by side over h1 and h2 in the lab's
// server namespace — pages measured by both tools, the server's CPU from its control group, no
// packet into the lab's link, and nothing of the lab left afterwards.
func TestBenchLoadgenNginx(t *testing.T) {
	roottest.RequireTUN(t)
	requireImpl(t, "nginx")
	if _, err := os.Stat("/usr/bin/h2load"); err != nil {
		t.Fatalf("h2load is not installed (make setup installs nghttp2-client): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, _, _ := benchLoadgenJSON(t, ctx, nil, "--server", "nginx", "--parts", "pages",
		"--clients", "2", "--duration", "2s", "--rounds", "1")
	if res.Server != "nginx" || res.Objects != 51 || !runIDPattern.MatchString(res.Lab) {
		t.Errorf("server %q, %d objects, lab %q: want nginx, neoload50's 51, a run id", res.Server, res.Objects, res.Lab)
	}
	seen := map[string]bool{}
	var requests int64
	for _, r := range res.Pages {
		seen[r.Protocol+" "+r.Tool] = true
		requests += r.Requests
		if r.Pages <= 0 || r.PagesPerS <= 0 || r.Failed != 0 || r.CPUUsPerReq <= 0 || r.ServerUsPerRq <= 0 || r.BodyBytesPerReq <= 0 {
			t.Errorf("%s %s: %+v: want pages, none failed, the tool's and the server's CPU, its body bytes per request", r.Protocol, r.Tool, r)
		}
	}
	for _, want := range []string{"h1 h2load", "h1 wirelab", "h2 h2load", "h2 wirelab"} {
		if !seen[want] {
			t.Errorf("no %s row in %+v", want, res.Pages)
		}
	}
	if len(res.Ratios) != 2 || res.Ratios[0].Protocol != "h1" || res.Ratios[1].Protocol != "h2" || res.Ratios[0].Ratio <= 0 || res.Ratios[1].Ratio <= 0 {
		t.Errorf("ratios %+v: want wirelab ÷ h2load for h1 and h2", res.Ratios)
	}
	for _, q := range res.Ratios {
		if q.Unequal {
			t.Errorf("%s: the tools did not do the same work: %s", q.Protocol, q.UnequalReason)
		}
	}
	// The tools reach the server's own address from its namespace: delivered through lo, not the
	// lab's link (whose TUN devices would count every request's packets otherwise).
	if l := res.Link; l == nil || int64(l.Client+l.Server) > requests/100 {
		t.Errorf("%+v packets into the lab's link for %d requests: want no traffic through it", l, requests)
	}
	assertGone(t, res.Lab)
	if _, err := os.Stat(filepath.Join(os.TempDir(), lab.PrivatePrefix+res.Lab)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lab's private directory is left: %v", err)
	}
	paths, err := cgroup.Plan("wirelab-" + res.Lab + "-server")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("control group %s left behind", p)
		}
	}
}

// Bad input: a server the benchmark does not know is one line listing the registry's names.
func TestBenchLoadgenBadServer(t *testing.T) {
	b, err := engine("bench", "loadgen", "--server", "lighttpd", "--parts", "pages").CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	want := "want " + strings.Join(impl.Names(), ", ")
	if code := exitCodeOf(err); code != 2 || len(lines) != 1 || !strings.Contains(lines[0], `"lighttpd"`) || !strings.Contains(lines[0], want) {
		t.Errorf("exit %d, %q: want exit 2 and one line naming the value and %q", code, b, want)
	}
}

// Bad input in a list of servers: each is checked, and none twice.
func TestBenchLoadgenServerList(t *testing.T) {
	for _, c := range []struct{ servers, want string }{
		{"builtin,lighttpd", `"lighttpd"`},
		{"builtin,builtin", `server: "builtin" twice`},
	} {
		b, err := engine("bench", "loadgen", "--server", c.servers, "--parts", "pages").CombinedOutput()
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if code := exitCodeOf(err); code != 2 || len(lines) != 1 || !strings.Contains(lines[0], c.want) {
			t.Errorf("--server %s: exit %d, %q: want exit 2 and one line with %q", c.servers, code, b, c.want)
		}
	}
}

// The vus part sizes its processes from the open-files limit it reads (its hard limit here lowered
// to 600 with prlimit): VUs that would need more processes than it runs are one line naming the
// limit, exit 2, before anything starts.
func TestBenchLoadgenVUsNamesTheLimit(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("no prlimit (util-linux)")
	}
	cmd := engine("bench", "loadgen", "--parts", "vus", "--vus", "100000")
	cmd.Path, cmd.Args = prlimit, append([]string{prlimit, "--nofile=600:600"}, cmd.Args...)
	b, err := cmd.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	want := []string{"100000 VUs need 291 generator and 291 server processes of at most 344 VUs each", "RLIMIT_NOFILE 600 per process", "at most 64"}
	if code := exitCodeOf(err); code != 2 || len(lines) != 1 {
		t.Fatalf("exit %d, %q: want exit 2 and one line", code, b)
	}
	for _, w := range want {
		if !strings.Contains(lines[0], w) {
			t.Errorf("%q lacks %q", lines[0], w)
		}
	}
}

// The vus part on nginx, its processes multiplied by a low open-files limit (prlimit 600: at most
// 344 VUs per process, so 1,200 VUs take 4 generators and nginx with 4 workers): every VU
// connected and held through nginx's workers (reuseport spreads the connections; a worker that
// got more than its worker_connections would refuse them), no error, both ends' CPU measured,
// nothing of the lab left.
func TestBenchLoadgenVUsNginx(t *testing.T) {
	roottest.RequireTUN(t)
	requireImpl(t, "nginx")
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("no prlimit (util-linux)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, out, stderr := benchLoadgenJSON(t, ctx, []string{prlimit, "--nofile=600:600"}, "--server", "nginx", "--parts", "vus",
		"--vus", "1200", "--think", "5s", "--ramp", "5s", "--hold", "10s")
	v := res.VUs
	if v == nil {
		t.Fatalf("no vus row: %s", out)
	}
	if v.Server != "nginx" || v.Plan.Generators != 4 || v.Plan.Servers != 4 || !strings.Contains(v.Where, `"worker_processes":4`) || !strings.Contains(v.Where, `"reuseport":true`) {
		t.Errorf("server %q, plan %+v, where %q: want nginx with 4 workers (reuseport) for 4 generators", v.Server, v.Plan, v.Where)
	}
	if v.VUsHeld != 1200 || v.OpenConnections != 1200 || v.Errors != 0 || v.PagesFailed != 0 || v.PagesPerSHold <= 0 {
		t.Errorf("held %d VUs with %d connections, %d errors, %d pages failed, %v pages/s: want 1200, 1200, 0, 0, > 0\n%s",
			v.VUsHeld, v.OpenConnections, v.Errors, v.PagesFailed, v.PagesPerSHold, stderr)
	}
	if v.GenMsPerPage <= 0 {
		t.Errorf("CPU per page %v (generators): want measured", v.GenMsPerPage)
	}
	// nginx's CPU and memory are its control group's: none to read on a machine without one.
	if _, err := cgroup.Available(); err != nil {
		if v.ServerMsPerPage != nil || v.ServerCores != nil {
			t.Errorf("server CPU %v cores, %v ms per page without a control group (%v): want null (not measured)", v.ServerCores, v.ServerMsPerPage, err)
		}
	} else if v.ServerMsPerPage == nil || *v.ServerMsPerPage <= 0 || v.ServerMemBytes <= 0 {
		t.Errorf("CPU per page %v (server), server memory %d: want measured (its control group)", v.ServerMsPerPage, v.ServerMemBytes)
	}
	m := regexp.MustCompile(`in lab ([0-9a-f]{8}) `).FindStringSubmatch(v.Where)
	if m == nil {
		t.Fatalf("no lab named in %q", v.Where)
	}
	assertGone(t, m[1])
}

// Bad input: the vus part on a server it cannot run on is one line naming it and the ones it can.
func TestBenchLoadgenVUsBadServer(t *testing.T) {
	requireImpl(t, "apache")
	b, err := engine("bench", "loadgen", "--server", "apache", "--parts", "vus").CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if code := exitCodeOf(err); code != 2 || len(lines) != 1 || !strings.Contains(lines[0], `"apache"`) || !strings.Contains(lines[0], "builtin or nginx") {
		t.Errorf("exit %d, %q: want exit 2 and one line naming apache and builtin or nginx", code, b)
	}
}

// Interrupted (Ctrl-C), the vus part still prints what it measured up to then — exit 130, the
// row marked interrupted, with its VUs (and how far the run stayed clean).
func TestBenchLoadgenVUsInterrupted(t *testing.T) {
	roottest.RequireTUN(t)
	requireImpl(t, "nginx")
	var res bench.LoadgenResult
	interruptLoadgen(t, &res, "--server", "nginx", "--parts", "vus")
	if v := res.VUs; v == nil || !v.Interrupted || v.VUsReached != 100 || len(v.Failed) != 0 {
		t.Errorf("vus row %+v: want it interrupted, 100 VUs reached, no generator failed", v)
	}
	// The lab is removed after Ctrl-C too.
	if res.VUs != nil {
		m := regexp.MustCompile(`in lab ([0-9a-f]{8}) `).FindStringSubmatch(res.VUs.Where)
		if m == nil {
			t.Fatalf("no lab named in %q", res.VUs.Where)
		}
		assertGone(t, m[1])
	}
}

// Interrupted in the vus part of a run over two servers: both servers' results, in the shape of
// a run over two servers ({"runs": [...]}), and exit 130 — not the last server's alone.
func TestBenchLoadgenVUsInterruptedServers(t *testing.T) {
	roottest.RequireTUN(t)
	requireImpl(t, "nginx")
	if _, err := exec.LookPath("h2load"); err != nil {
		t.Skip("no h2load")
	}
	var res struct{ Runs []*bench.LoadgenResult }
	interruptLoadgen(t, &res, "--server", "nginx,builtin", "--parts", "pages,vus", "--protocols", "h2", "--rounds", "1", "--duration", "1s", "--clients", "2")
	if len(res.Runs) != 2 || res.Runs[0].Server != "nginx" || len(res.Runs[0].Pages) == 0 || res.Runs[1].Server != "builtin" {
		t.Fatalf("runs %+v: want nginx's pages, then builtin's", res.Runs)
	}
	if v := res.Runs[1].VUs; v == nil || !v.Interrupted || v.VUsReached != 100 {
		t.Errorf("builtin's vus row %+v: want it interrupted, 100 VUs reached", v)
	}
}

// interruptLoadgen runs bench loadgen with args and 100 VUs, sends SIGINT (Ctrl-C) at the vus
// part's second interval line, wants exit 130 and reads the JSON printed into res.
func interruptLoadgen(t *testing.T, res any, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args = append(append([]string{"bench", "loadgen"}, args...), "--vus", "100", "--think", "2s", "--ramp", "5s", "--hold", "60s", "--json")
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), testMainEnv+"=1")
	var stdout strings.Builder
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() { // the second interval line: VUs connected
		progress.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "t=   10 s") {
			_ = cmd.Process.Signal(syscall.SIGINT)
		}
	}
	err = cmd.Wait()
	if code := exitCodeOf(err); code != 130 {
		t.Fatalf("exit %d: want 130\n%s", code, progress.String())
	}
	if err := json.Unmarshal([]byte(stdout.String()), res); err != nil {
		t.Fatalf("%v: %q\n%s", err, stdout.String(), progress.String())
	}
}

// benchLoadgenJSON runs `bench loadgen ARGS --json` with this test binary as the engine (pre: a
// command it runs under, such as prlimit) and decodes its result; the test fails with the command's
// stderr when it fails. out and stderr are returned for the failure messages of the checks after.
func benchLoadgenJSON(t *testing.T, ctx context.Context, pre []string, args ...string) (bench.LoadgenResult, []byte, string) {
	t.Helper()
	argv := append(append(append([]string{}, pre...), os.Args[0], "bench", "loadgen"), args...)
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], "--json")...)
	cmd.Env = append(os.Environ(), testMainEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bench loadgen: %v\n%s", err, stderr.String())
	}
	var res bench.LoadgenResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return res, out, stderr.String()
}
