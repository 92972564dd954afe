package main

import (
	"bufio"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/internal/roottest"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]uint64{
		"30mbit": 30_000_000, "1.5Mbit": 1_500_000, "500kbit": 500_000, "1gbit": 1_000_000_000, "64000bit": 64_000,
	} {
		if got, err := parseRate(in); err != nil || got != want {
			t.Errorf("parseRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "30", "mbit", "-1mbit", "30mbps", "x kbit"} {
		if _, err := parseRate(bad); err == nil {
			t.Errorf("parseRate(%q) accepted", bad)
		}
	}
}

// Bad input exits 2 with one line naming the flag and what is allowed, before touching the
// machine.
func TestBenchTCPPlusUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "want one of link, loader, loadgen, servers, tcpplus"},
		{[]string{"nosuch"}, "want one of link, loader, loadgen, servers, tcpplus"},
		{[]string{"loader", "--bogus"}, "bogus"},
		{[]string{"tcpplus", "--n", "0"}, "--n"},
		{[]string{"tcpplus", "--n", "33"}, "between 1 and 32"},
		{[]string{"tcpplus", "--rate", "fast"}, "--rate"},
		{[]string{"tcpplus", "--cwnd", "5"}, "--cwnd 5"},
		{[]string{"tcpplus", "--bogus"}, "bogus"},
		{[]string{"link", "--halt-poll", "fast"}, `--halt-poll: "fast" is not a halt-polling window`},
		{[]string{"link", "--halt-poll", "20ms"}, "to 10ms"},
	} {
		err := commands["bench"].Run(tc.args)
		if err == nil || !cli.IsUsage(err) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("bench %v: %v; want a one-line usage error containing %q", tc.args, err, tc.want)
		}
	}
}

// A bad WIRELAB_HALT_POLL is the bad input of every command that runs (exit 2, one line naming
// it, the value and what is allowed), before any run; the others do not read it.
func TestRunCommandsCheckHaltPollEnv(t *testing.T) {
	t.Setenv("WIRELAB_HALT_POLL", "bogus")
	for name, c := range commands {
		err := c.Run([]string{"--bogus-flag"})
		if !c.Runs {
			if err != nil && strings.Contains(err.Error(), "WIRELAB_HALT_POLL") {
				t.Errorf("%s reads WIRELAB_HALT_POLL: %v", name, err)
			}
			continue
		}
		if err == nil || !cli.IsUsage(err) || strings.Contains(err.Error(), "\n") ||
			!strings.Contains(err.Error(), `WIRELAB_HALT_POLL: "bogus" is not a halt-polling window`) || !strings.Contains(err.Error(), "to 10ms") {
			t.Errorf("%s with WIRELAB_HALT_POLL=bogus: %v; want one usage line naming it, the value and the range", name, err)
		}
	}
	for _, name := range []string{"bench", "loadtest", "servers", "shell", "sites", "trial"} {
		if !commands[name].Runs {
			t.Errorf("%s runs topologies but does not check their environment", name)
		}
	}
}

// SIGINT during the measurement: the command stops and removes its namespaces and its
// registration.
func TestBenchTCPPlusSIGINTCleansUpRoot(t *testing.T) {
	roottest.Require(t)
	cmd := exec.Command(os.Args[0], "bench", "tcpplus", "--cwnd", "2000")
	cmd.Env = append(os.Environ(), testMainEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	var seen []string
	var id string
	for lines.Scan() {
		seen = append(seen, lines.Text())
		if rest, ok := strings.CutPrefix(lines.Text(), "path "); ok {
			id, _, _ = strings.Cut(rest, " ")
		}
		if lines.Text() == "sending with cubic" { // everything exists and the sampler runs
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	for lines.Scan() {
		seen = append(seen, lines.Text())
	}
	err = cmd.Wait()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
		t.Fatalf("exit: %v; stderr %q", err, seen)
	}
	if last := seen[len(seen)-1]; !strings.Contains(last, "interrupted") {
		t.Errorf("last line %q; want the cancellation", last)
	}
	if id == "" {
		t.Fatalf("no path announced: %q", seen)
	}
	for _, ns := range benchNamespaces(t) {
		if strings.HasPrefix(ns, "wirelab-tcpplus-"+id+"-") {
			t.Errorf("namespace %s left behind", ns)
		}
	}
	raw, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if slices.Contains(strings.Fields(string(raw)), "wl_cubicp6") {
		t.Error("wl_cubicp6 still registered")
	}
}

// benchNamespaces lists the namespaces of backoff measurements (named wirelab-tcpplus-…); other
// packages' tests may be creating some at the same time, so callers look for their own.
func benchNamespaces(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/run/netns")
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "wirelab-tcpplus-") {
			names = append(names, e.Name())
		}
	}
	return names
}
