package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/internal/offmachine"
	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/internal/timebound"
	"github.com/wirelab/wirelab/engine/loadgen"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server"
	"github.com/wirelab/wirelab/engine/server/servertest"
)

// engineCmd runs this test binary as wirelab-engine with args (prefix: e.g. ip netns exec NS).
// offMachine is how a test runs the engine on cases that give a guard a target off the machine:
// in a network namespace with no route off the machine (roottest.IsolatedNetns, made once for t),
// or here if this process is in one already (make test runs every test in one); without root,
// elsewhere, t is skipped.
func offMachine(t *testing.T) func(args ...string) *exec.Cmd {
	t.Helper()
	if offmachine.NoRouteOff() {
		return func(args ...string) *exec.Cmd { return engine(args...) }
	}
	if os.Geteuid() != 0 {
		offmachine.Require(t)
	}
	ns := roottest.IsolatedNetns(t)
	return func(args ...string) *exec.Cmd { return engineCmd([]string{"ip", "netns", "exec", ns}, args...) }
}

func engineCmd(prefix []string, args ...string) *exec.Cmd {
	argv := append(append(prefix, os.Args[0]), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), testMainEnv+"=1")
	return cmd
}

// wantRefused runs cmd and fails the test (naming what) unless it refuses as bad input does
// (docs/bad-input.md): exit 2, one line on standard error containing every one of want, nothing on
// standard output.
func wantRefused(t *testing.T, what any, cmd *exec.Cmd, want ...string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := exitCodeOf(cmd.Run())
	msg := strings.TrimSpace(stderr.String())
	ok := code == 2 && !strings.Contains(msg, "\n") && stdout.Len() == 0
	for _, w := range want {
		ok = ok && strings.Contains(msg, w)
	}
	if !ok {
		t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 and one line with %q", what, code, msg, stdout.String(), want)
	}
}

func writeSpec(t *testing.T, spec string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(f, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// Bad input: one line naming the field or flag, exit 2, nothing run.
func TestLoadgenBadInput(t *testing.T) {
	good := `{"protocol":"h1","scenario":{"stages":[{"duration_s":1,"target":1}]}}`
	target := "http://127.0.0.1:1/"
	for _, tc := range []struct {
		spec string
		args []string
		want string
	}{
		{`{"protocol":"h1","scenario":{"start":0,"stages":[{"duration_s":5,"target":0}]}}`, nil, "scenario.stages: got 0 VUs throughout"},
		{`{"protocol":"h1","scenario":{"stages":[{"duration_s":5,"target":-1}]}}`, nil, "scenario.stages[0].target: got -1"},
		{`{"protocol":"h1","scenario":{"stages":[{"duration_s":0,"target":1}]}}`, nil, "scenario.stages[0].duration_s: got 0"},
		{`{"protocol":"h1","think":{"mean_s":-0.5},"scenario":{"stages":[{"duration_s":1,"target":1}]}}`, nil, "think.mean_s: got -0.5"},
		{`{"protocol":"h1","sla":{"statistic":"median"},"scenario":{"stages":[{"duration_s":1,"target":1}]}}`, nil, `sla.statistic: got "median"`},
		{`{"protocol":"h1","thresholds":["pages > fast"],"scenario":{"stages":[{"duration_s":1,"target":1}]}}`, nil, `thresholds[0]: got "pages > fast"`},
		{`{"protocol":"h1","thresholds":["server_cpu_util_max < 1"],"scenario":{"stages":[{"duration_s":1,"target":1}]}}`, nil, "server_cpu_util_max needs the lab's server samples"},
		{`{"protocol":"h1","client":{"dns":"server"},"scenario":{"stages":[{"duration_s":1,"target":1}]}}`, nil, "client.dns: got \"server\"; needs the lab's DNS server"},
		{`{"protocol":"h1","scenario":{"stages":[{"duration_s":8000,"target":1}]}}`, nil, "must last at most limits.max_duration_s"},
		{`not json`, nil, "spec: invalid JSON"},
		{good, []string{"--target", "https://127.0.0.1:1/"}, "protocol h1 needs an http:// URL"},
		{good, []string{"--target", "ftp://127.0.0.1/"}, "want an http:// or https:// URL"},
		{good, []string{"--target", "http://nowhere.wirelab.test/"}, "not in the static map"},
		{good, []string{"--start-ns", "12"}, "--start-ns 12:"},
		{good, []string{"--start-ns", "soon"}, "--start-ns soon: want an integer"},
		{good, []string{"--ca", "/nonexistent.pem"}, "--ca /nonexistent.pem"},
		{good, []string{"--resolve", "x"}, "--resolve x:"},
		{good, []string{"--vus", "3"}, "flag provided but not defined: -vus"},
		{good, []string{"--source", "x"}, "--source x: ParseAddr"},
		{good, []string{"--part", "2/2"}, "--part 2/2: want 0 ≤ K < N ≤ 1024"},
		{good, []string{"--part", "half"}, "--part half: want K/N"},
		{good, []string{"--source", "127.0.0.2,127.0.0.2"}, "127.0.0.2: given twice"},
		// binding only (nothing is sent): a documentation address this namespace does not own
		{good, []string{"--source", "127.0.0.2,192.0.2.1"}, "192.0.2.1: not an address of this namespace"},
		{good, []string{"--pprof", "192.0.2.1:6060"}, "--pprof 192.0.2.1:6060: want a loopback address and port"},
		{good, []string{"--pprof", "6060"}, "--pprof 6060: want a loopback address and port"},
		{good, []string{"--run-server", "10.0.0.5"}, "--run-server 10.0.0.5: only with --lab and a spec's target"},
	} {
		args := []string{"loadgen", "--spec", writeSpec(t, tc.spec)}
		if !strings.Contains(strings.Join(tc.args, " "), "--target") {
			args = append(args, "--target", target)
		}
		args = append(args, tc.args...)
		wantRefused(t, tc.spec+" "+strings.Join(tc.args, " "), engineCmd(nil, args...), tc.want)
	}
	cmd := engineCmd(nil, "loadgen", "--target", target)
	if out, err := cmd.CombinedOutput(); exitCodeOf(err) != 2 || !strings.Contains(string(out), "--spec: required") {
		t.Errorf("no --spec: exit %d, %s", exitCodeOf(err), out)
	}
}

// builtinOnLoopback serves pg from this process on 127.0.0.1.
func builtinOnLoopback(t *testing.T, pg *page.Page) *server.Server {
	t.Helper()
	return servertest.Start(t, pg, server.DefaultConfig(netip.MustParseAddr("127.0.0.1")))
}

// readLines splits loadgen's stdout into interval records and the summary (the last line).
func readLines(t *testing.T, out []byte) ([]loadgen.Interval, *loadgen.Summary) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var ivs []loadgen.Interval
	for _, l := range lines[:len(lines)-1] {
		var iv loadgen.Interval
		if err := json.Unmarshal([]byte(l), &iv); err != nil || iv.Event != "interval" {
			t.Fatalf("not an interval line: %s", l)
		}
		ivs = append(ivs, iv)
	}
	var sum loadgen.Summary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || sum.Event != "summary" {
		t.Fatalf("last line is not the summary: %s", lines[len(lines)-1])
	}
	return ivs, &sum
}

// A short run against the built-in server: one line per interval, then the summary; intervals
// aligned on --start-ns; a failed threshold exits 1 after the summary.
func TestLoadgenRun(t *testing.T) {
	pg, err := page.Load("synthetic:8x1kB", 1)
	if err != nil {
		t.Fatal(err)
	}
	srv := builtinOnLoopback(t, pg)
	root, _ := srv.RootURL(server.H2, "tok")
	spec := writeSpec(t, `{"protocol":"h2","interval_s":0.5,"think":{"mean_s":0.1},"thresholds":["errors == 0","pages_per_s > 1000000"],
		"scenario":{"start":3,"stages":[{"duration_s":1.5,"target":3}]}}`)
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	start := ts.Nano() + int64(300*time.Millisecond)
	cmd := engineCmd(nil, "loadgen", "--spec", spec, "--target", root, "--resolve", "s1.wirelab.test=127.0.0.1",
		"--ca", srv.Certs().CAPath(), "--start-ns", strconv.FormatInt(start, 10),
		"--source", "127.0.0.2,127.0.0.3") // the spreading itself: client's TestLoadFromSourceAddrs
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if code := exitCodeOf(err); code != 1 || !strings.Contains(stderr.String(), "1 of 2 thresholds failed: pages_per_s > 1000000") {
		t.Fatalf("exit %d, stderr %s; want 1 for the failed threshold", code, stderr.String())
	}
	ivs, sum := readLines(t, out)
	if len(ivs) < 3 || sum.Intervals != len(ivs) || sum.StartNs != start || sum.Target != root {
		t.Fatalf("%d interval lines, summary: %d intervals, start %d (want %d), target %s", len(ivs), sum.Intervals, sum.StartNs, start, sum.Target)
	}
	var pages int64
	for i, iv := range ivs {
		if iv.Index != i || iv.TStartS != float64(i)*0.5 {
			t.Errorf("interval %d: index %d starts at %v s", i, iv.Index, iv.TStartS)
		}
		pages += iv.Pages
	}
	if pages != sum.Totals.Pages || pages < 5 || sum.Totals.Errors.Total() != 0 || sum.Totals.Hits != pages*int64(len(pg.Objects)) {
		t.Errorf("%d pages in the intervals, %d in the totals, %d errors, %d hits", pages, sum.Totals.Pages, sum.Totals.Errors.Total(), sum.Totals.Hits)
	}
	if !sum.Thresholds[0].Pass || sum.Thresholds[1].Pass || sum.ThresholdsPassed {
		t.Errorf("thresholds %+v", sum.Thresholds)
	}
	if sum.Totals.ConnectionsOpened != 3 {
		t.Errorf("%d connections for 3 VUs over h2 (per_vu)", sum.Totals.ConnectionsOpened)
	}
}

// SIGINT stops the VUs: the last (partial) interval and the summary are printed, exit 130.
func TestLoadgenInterrupt(t *testing.T) {
	pg, err := page.Load("synthetic:4x1kB", 1)
	if err != nil {
		t.Fatal(err)
	}
	// The run's 5 s depend on the machine: retried once (internal/timebound).
	timebound.Retry(t, func(a *timebound.Attempt) {
		srv := builtinOnLoopback(t, pg)
		root, _ := srv.RootURL(server.H1, "tok")
		spec := writeSpec(t, `{"protocol":"h1","interval_s":0.5,"think":{"mean_s":0.05},"scenario":{"start":2,"stages":[{"duration_s":600,"target":2}]}}`)
		cmd := engineCmd(nil, "loadgen", "--spec", spec, "--target", root, "--resolve", "s1.wirelab.test=127.0.0.1")
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		sc := bufio.NewScanner(stdout)
		var out bytes.Buffer
		if !sc.Scan() { // the first interval: VUs are running
			t.Fatal("no interval line")
		}
		out.Write(sc.Bytes())
		out.WriteByte('\n')
		cmd.Process.Signal(syscall.SIGINT)
		for sc.Scan() {
			out.Write(sc.Bytes())
			out.WriteByte('\n')
		}
		err = cmd.Wait()
		if code := exitCodeOf(err); code != 130 {
			t.Fatalf("exit %d, want 130", code)
		}
		ivs, sum := readLines(t, out.Bytes())
		if !sum.Interrupted || len(ivs) < 2 {
			t.Errorf("interrupted %v, %d intervals, %v s", sum.Interrupted, len(ivs), sum.DurationS)
		}
		if sum.DurationS > 5 {
			a.Errorf("the run lasted %v s after its first interval of 0.5 s and a SIGINT; want ≤ 5 s", sum.DurationS)
		}
		if last := ivs[len(ivs)-1]; last.TEndS-last.TStartS >= 0.5 || last.TEndS != sum.DurationS {
			t.Errorf("last interval [%v, %v); want the partial one up to the interruption at %v", last.TStartS, last.TEndS, sum.DurationS)
		}
	})
}

// The refusal of a remote target runs inside a network namespace with no route off the machine
// (only its loopback device, down), with documentation addresses (RFC 5737): even a bug could
// not send a packet anywhere.
func TestLoadgenRefusesRemoteTarget(t *testing.T) {
	ns := roottest.IsolatedNetns(t)
	spec := writeSpec(t, `{"protocol":"h1","scenario":{"stages":[{"duration_s":1,"target":1}]}}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--target", "http://192.0.2.1/"}, "--target http://192.0.2.1/: 192.0.2.1 is not a loopback address"},
		{[]string{"--target", "http://www.example.test:8080/", "--resolve", "www.example.test=198.51.100.7"}, "198.51.100.7 is not a loopback address"},
		{[]string{"--target", "http://10.77.1.1/"}, "10.77.1.1 is not a loopback address"},
		{[]string{"--target", "http://[2001:db8::1]/"}, "2001:db8::1 is not a loopback address"},
	} {
		cmd := engineCmd([]string{"ip", "netns", "exec", ns}, append([]string{"loadgen", "--spec", spec}, tc.args...)...)
		wantRefused(t, tc.args, cmd, tc.want, "--allow-remote-target")
	}
}

// A limit of the generator's machine stops the run at once with one line naming it — here the
// open-files limit, capped by --max-open-files below what 60 VUs' connections need: exit 1, the
// summary of what was measured before it, and no page that met the limit counted as the server's
// error (today's alternative was a run going on with a million errors).
func TestLoadgenStopsAtTheOpenFilesLimit(t *testing.T) {
	pg, err := page.Load("synthetic:8x1kB", 1)
	if err != nil {
		t.Fatal(err)
	}
	srv := builtinOnLoopback(t, pg)
	root, _ := srv.RootURL(server.H1, "tok")
	spec := writeSpec(t, `{"protocol":"h1","interval_s":0.5,"think":{"mean_s":0.5},"scenario":{"start":60,"stages":[{"duration_s":600,"target":60}]}}`)
	cmd := engineCmd(nil, "loadgen", "--spec", spec, "--target", root, "--resolve", "s1.wirelab.test=127.0.0.1", "--max-open-files", "40")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if code := exitCodeOf(err); code != 1 || len(lines) != 1 ||
		!strings.Contains(lines[0], "reached the process's open-files limit (RLIMIT_NOFILE 40) at ") {
		t.Fatalf("exit %d, stderr %q; want 1 and one line naming the open-files limit", code, stderr.String())
	}
	t.Log(lines[0])
	_, sum := readLines(t, out)
	if sum.Interrupted || sum.Totals.Errors.Total() != 0 || sum.DurationS > 60 {
		t.Errorf("summary: interrupted %v, %d errors, %v s; want the run ended by the limit (not a signal, not the scenario's 600 s), no errors counted",
			sum.Interrupted, sum.Totals.Errors.Total(), sum.DurationS)
	}
}

// Local ports: with a range of 40 ports (set in this test's own network namespace), 50 h2 VUs (one
// connection each) fit when they leave from two source addresses (--source) and stop at once with
// the one line naming the port range when they all leave from one. Needs root in a namespace of
// its own (make test runs every test in one).
func TestLoadgenPortsAndSources(t *testing.T) {
	const rangeFile = "/proc/sys/net/ipv4/ip_local_port_range"
	if os.Geteuid() != 0 || !offmachine.NoRouteOff() {
		t.Skip("narrows net.ipv4.ip_local_port_range: runs only as root in a network namespace of its own")
	}
	old, err := os.ReadFile(rangeFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rangeFile, []byte("40000 40039"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.WriteFile(rangeFile, old, 0o644) })
	pg, err := page.Load("synthetic:2x1kB", 1)
	if err != nil {
		t.Fatal(err)
	}
	srv := builtinOnLoopback(t, pg)
	root, _ := srv.RootURL(server.H2, "tok")
	spec := writeSpec(t, `{"protocol":"h2","interval_s":0.5,"think":{"mean_s":0.5},"thresholds":["errors == 0"],
		"scenario":{"start":50,"stages":[{"duration_s":1.5,"target":50}]}}`)
	run := func(extra ...string) ([]byte, string, int) {
		args := append([]string{"loadgen", "--spec", spec, "--target", root, "--resolve", "s1.wirelab.test=127.0.0.1", "--ca", srv.Certs().CAPath()}, extra...)
		cmd := engineCmd(nil, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		return out, strings.TrimSpace(stderr.String()), exitCodeOf(err)
	}
	// First from two addresses the other run does not use (its connections' TIME_WAIT stays apart).
	out, msg, code := run("--source", "127.0.0.2,127.0.0.3")
	if code != 0 {
		t.Fatalf("from two sources: exit %d, %s; want 0 (2 × ~39 ports for 50 connections)", code, msg)
	}
	if _, sum := readLines(t, out); sum.Totals.ConnectionsOpened != 50 || sum.Totals.Pages < 50 {
		t.Errorf("from two sources: %d connections, %d pages; want 50 and every VU's pages", sum.Totals.ConnectionsOpened, sum.Totals.Pages)
	}
	out, msg, code = run()
	lines := strings.Split(msg, "\n")
	if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], "reached its local ports (net.ipv4.ip_local_port_range 40000 40039)") ||
		!strings.Contains(lines[0], "--source") {
		t.Fatalf("from one source: exit %d, stderr %q; want 1 and one line naming the port range and --source", code, msg)
	}
	if _, sum := readLines(t, out); sum.Totals.Errors.Total() != 0 {
		t.Errorf("from one source: %d errors counted; want none (the limit is the generator's)", sum.Totals.Errors.Total())
	}
}

// limits.max_rps stops the run: 20 VUs without think time on a 9-object page far exceed a cap of
// 50 responses per second; the run ends within its first second with one line naming the cap
// (exit 1), its summary printed, not the scenario's 600 s.
func TestLoadgenStopsAtTheRateCap(t *testing.T) {
	pg, err := page.Load("synthetic:8x1kB", 1)
	if err != nil {
		t.Fatal(err)
	}
	srv := builtinOnLoopback(t, pg)
	root, _ := srv.RootURL(server.H2, "tok")
	spec := writeSpec(t, `{"protocol":"h2","interval_s":0.5,"think":{"mean_s":0},"limits":{"max_rps":50},"scenario":{"start":20,"stages":[{"duration_s":600,"target":20}]}}`)
	cmd := engineCmd(nil, "loadgen", "--spec", spec, "--target", root, "--resolve", "s1.wirelab.test=127.0.0.1", "--ca", srv.Certs().CAPath())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if code := exitCodeOf(err); code != 1 || len(lines) != 1 || !strings.Contains(lines[0], "above limits.max_rps (50)") {
		t.Fatalf("exit %d, stderr %q; want 1 and one line naming limits.max_rps", code, stderr.String())
	}
	t.Log(lines[0])
	_, sum := readLines(t, out)
	if sum.Interrupted || sum.DurationS > 1.5 || sum.Totals.Hits < 50 {
		t.Errorf("summary: interrupted %v, %v s, %d hits; want the run ended by the cap within its first second, after more than 50 responses",
			sum.Interrupted, sum.DurationS, sum.Totals.Hits)
	}
}
