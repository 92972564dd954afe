package main

import (
	"bufio"
	"bytes"
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

	"github.com/wirelab/wirelab/engine/internal/child"
	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/internal/timebound"
)

var topoLine = regexp.MustCompile(`topology (wirelab-([0-9a-f]{8})-c) / (wirelab-[0-9a-f]{8}-s) up`)

// runID reads the run id from an engine log.
func runID(t *testing.T, log string) string {
	t.Helper()
	b, _ := os.ReadFile(log)
	m := topoLine.FindStringSubmatch(string(b))
	if m == nil {
		t.Fatalf("no topology line in the engine log:\n%s", b)
	}
	return m[2]
}

// assertGone checks that nothing of run id is left: namespaces, state file, resolver directory.
func assertGone(t *testing.T, id string) {
	t.Helper()
	for _, p := range []string{"/run/netns/wirelab-" + id + "-c", "/run/netns/wirelab-" + id + "-s", "/run/netns/wirelab-" + id + "-i",
		"/run/wirelab/" + id + ".json", "/etc/netns/wirelab-" + id + "-c"} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind", p)
		}
	}
}

// exitCodeOf is a command's exit status from what its Run or Wait returned.
var exitCodeOf = child.ExitCode

// waitFile waits for a file to appear (the commands under test create it when they are ready).
func waitFile(t *testing.T, path string, exited <-chan error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case err := <-exited:
			t.Fatalf("exited before %s appeared: %v", path, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestShellExitStatusAndStats(t *testing.T) {
	roottest.RequireTUN(t)
	dir := t.TempDir()
	log, stats := filepath.Join(dir, "engine.log"), filepath.Join(dir, "stats.json")
	cmd := engine("shell", "--net", "rtt=10ms", "--origins", "3", "--log", log, "--stats", stats, "--pcap", dir, "--resolver", "--",
		"sh", "-c", `echo "$WIRELAB_SERVER_ADDRS $WIRELAB_CLIENT_ADDR"; grep nameserver /etc/resolv.conf; exit 3`)
	out, err := cmd.Output()
	if code := exitCodeOf(err); code != 3 {
		t.Fatalf("exit status %d (%v), want CMD's 3", code, err)
	}
	if got := string(out); !strings.Contains(got, "10.77.1.1,10.77.1.2,10.77.1.3 10.77.0.2") || !strings.Contains(got, "nameserver 10.77.2.53") {
		t.Errorf("CMD printed %q", got)
	}
	assertGone(t, runID(t, log))
	b, _ := os.ReadFile(log)
	if !strings.HasPrefix(string(b), "# wirelab-engine ") || !strings.Contains(string(b), "# command: ") || !strings.Contains(string(b), "# profile: rtt=10ms") {
		t.Errorf("engine log header:\n%s", b)
	}
	var st struct {
		ExitStatus int `json:"exit_status"`
		Emulator   struct {
			DeviceDrops uint64          `json:"device_drops"`
			LatenessUS  json.RawMessage `json:"lateness_us"`
			Up          struct {
				Packets int64 `json:"packets"`
			} `json:"up"`
		} `json:"emulator"`
	}
	sb, err := os.ReadFile(stats)
	if err != nil || json.Unmarshal(sb, &st) != nil || st.ExitStatus != 3 || st.Emulator.LatenessUS == nil {
		t.Errorf("stats file: %v\n%s", err, sb)
	}
	for _, side := range []string{"client.pcap", "server.pcap"} {
		if _, err := os.Stat(filepath.Join(dir, side)); err != nil {
			t.Error(err)
		}
	}
}

// TestShellRTT runs a server in the server namespace and measures TCP connect times from the
// client: never below the configured RTT (physics), and not far above it (a loaded 2-core machine
// gets a generous bound; `bench link` reports the precise figures).
func TestShellRTT(t *testing.T) {
	roottest.RequireTUN(t)
	// The median's bound depends on the machine: retried once (internal/timebound).
	timebound.Retry(t, func(a *timebound.Attempt) {
		self := os.Args[0]
		cmd := engine("shell", "--net", "rtt=30ms", "--server-cmd", "exec "+self+" bench-peer serve 10.77.1.1:9000", "--server-port", "9000",
			"--", self, "bench-peer", "connect", "10.77.1.1:9000", "10", "1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr.Bytes())
		}
		var r struct {
			ConnectMs []float64 `json:"connect_ms"`
		}
		if err := json.Unmarshal(out, &r); err != nil || len(r.ConnectMs) != 10 {
			t.Fatalf("peer printed %q (%v)", out, err)
		}
		for _, ms := range r.ConnectMs {
			if ms < 30 {
				t.Errorf("connect took %.3f ms, below the configured 30 ms RTT", ms)
			}
		}
		if med := r.ConnectMs[5]; med > 30+5 {
			a.Errorf("median connect %.3f ms for a 30 ms RTT", med)
		}
		t.Logf("connect ms: %v", r.ConnectMs)
	})
}

func TestShellSIGINTCleansUp(t *testing.T) {
	roottest.RequireTUN(t)
	dir := t.TempDir()
	log, ready := filepath.Join(dir, "engine.log"), filepath.Join(dir, "ready")
	cmd := engine("shell", "--net", "rtt=10ms", "--log", log, "--server-cmd", "exec sleep 100", "--", "sh", "-c", "touch "+ready+"; exec sleep 100")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	waitFile(t, ready, exited)
	id := runID(t, log)
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-exited:
		if code := exitCodeOf(err); code != 130 {
			t.Errorf("exit status %d after SIGINT, want 130", code)
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("shell did not exit after SIGINT")
	}
	assertGone(t, id)
}

func TestShellSIGKILLThenGC(t *testing.T) {
	roottest.RequireTUN(t)
	dir := t.TempDir()
	start := func(name string) (*exec.Cmd, string, chan error) {
		log, ready := filepath.Join(dir, name+".log"), filepath.Join(dir, name+".ready")
		cmd := engine("shell", "--net", "rtt=2ms", "--log", log, "--resolver", "--server-cmd", "exec sleep 100", "--", "sh", "-c", "touch "+ready+"; exec sleep 100")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		waitFile(t, ready, exited)
		return cmd, runID(t, log), exited
	}
	killed, deadID, exited := start("killed")
	live, liveID, liveExited := start("live")
	killed.Process.Kill()
	<-exited
	// The crashed run's namespaces (and the processes in them) outlive it; its TUN devices do not.
	if _, err := os.Stat("/run/netns/wirelab-" + deadID + "-s"); err != nil {
		t.Fatalf("expected the killed run's namespace to remain: %v", err)
	}
	out, err := engine("gc").CombinedOutput()
	if err != nil {
		t.Fatalf("gc: %v\n%s", err, out)
	}
	assertGone(t, deadID)
	if !strings.Contains(string(out), "kept live run "+liveID) {
		t.Errorf("gc output does not mention the live run %s:\n%s", liveID, out)
	}
	for _, side := range []string{"c", "s"} {
		if _, err := os.Stat("/run/netns/wirelab-" + liveID + "-" + side); err != nil {
			t.Errorf("gc removed the live run's namespace: %v", err)
		}
	}
	// The live run still works and cleans up after itself.
	live.Process.Signal(syscall.SIGTERM)
	if code := exitCodeOf(<-liveExited); code != 143 {
		t.Errorf("live run exit %d after SIGTERM, want 143", code)
	}
	assertGone(t, liveID)
}

func TestShellBadInput(t *testing.T) {
	cases := [][]string{
		{"--net", "rtt=150"},                       // no unit
		{"--net", "rtt=-5ms"},                      // negative
		{"--net", "loss=150%"},                     // outside [0,1]
		{"--net", "queue=0"},                       // queue of 0
		{"--net", "trace_down=/nonexistent/trace"}, // missing trace
		{"--net", "bw=10mbps"},                     // unknown unit
		{"--origins", "0"},
		{"--no-such-flag"},
	}
	empty := filepath.Join(t.TempDir(), "empty.trace")
	os.WriteFile(empty, nil, 0o644)
	cases = append(cases, []string{"--net", "trace_down=" + empty})
	for _, c := range cases {
		var stderr bytes.Buffer
		cmd := engine(append(append([]string{"shell"}, c...), "--", "true")...)
		cmd.Stderr = &stderr
		err := cmd.Run()
		if code := exitCodeOf(err); code != 2 {
			t.Errorf("%v: exit %d, want 2", c, code)
		}
		msg := strings.TrimSpace(stderr.String())
		if strings.Count(msg, "\n") != 0 || msg == "" {
			t.Errorf("%v: want one line on stderr, got %q", c, msg)
		}
	}
	// Nothing was created: no state file names a bad-input run's pid.
	entries, _ := os.ReadDir("/run/wirelab")
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join("/run/wirelab", e.Name()))
		var st struct{ Command []string }
		if json.Unmarshal(b, &st) == nil && len(st.Command) > 1 && st.Command[0] == os.Args[0] && strings.Contains(strings.Join(st.Command, " "), "--no-such-flag") {
			t.Errorf("bad input created %s", e.Name())
		}
	}
}

func TestGCUsage(t *testing.T) {
	cmd := engine("gc", "extra")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if code := exitCodeOf(cmd.Run()); code != 2 {
		t.Errorf("gc extra: exit %d", code)
	}
	sc := bufio.NewScanner(&stderr)
	n := 0
	for sc.Scan() {
		n++
	}
	if n != 1 {
		t.Errorf("%d lines on stderr", n)
	}
}
