package nspath

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/internal/roottest"
)

const helperEnv = "WIRELAB_NSPATH_HELPER"

// These tests use the default state directory: GC takes a namespace that no ownership file in
// its directory accounts for as a leftover, so a test with a directory of its own would remove
// the paths of other packages' tests running at the same time.

// TestMain doubles as a helper process: with helperEnv set it builds a path, prints its id and
// exits without closing it (a crash).
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		p, err := New(context.Background(), Config{RateBitsPerSecond: 10_000_000})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(p.ID)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func exists(t *testing.T, ns string) bool {
	t.Helper()
	names, err := Existing()
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(names, ns)
}

func TestPathBuildAndCloseRoot(t *testing.T) {
	roottest.Require(t)
	p, err := New(context.Background(), Config{RateBitsPerSecond: 10_000_000})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{p.Sender, p.Router, p.Receiver} {
		if !strings.HasPrefix(ns, Prefix+p.ID+"-") || !exists(t, ns) {
			t.Errorf("namespace %s missing", ns)
		}
	}
	// The router forwards and shapes: ip_forward is on and the bottleneck has the TBF.
	if v, err := p.Sysctl(p.Router, "ipv4/ip_forward"); err != nil || v != "1" {
		t.Errorf("ip_forward %q, %v", v, err)
	}
	out, err := exec.Command("tc", "-n", p.Router, "qdisc", "show", "dev", RouterToReceiverIf).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "tbf") || !strings.Contains(string(out), "10Mbit") {
		t.Errorf("bottleneck qdisc: %s %v", out, err)
	}
	// Every veth end steers its receive processing to one CPU (read through `ip netns exec`,
	// which mounts the namespace's own sysfs, not through withSysfs).
	for ns, ifs := range p.receivers() {
		for _, ifname := range ifs {
			out, err := exec.Command("ip", "netns", "exec", ns, "cat", "/sys/class/net/"+ifname+"/queues/rx-0/rps_cpus").CombinedOutput()
			if err != nil || strings.Trim(strings.TrimSpace(string(out)), "0,") != RPSCPUs {
				t.Errorf("%s %s rps_cpus %q (%v), want %s", ns, ifname, out, err, RPSCPUs)
			}
		}
	}
	// The sender reaches the receiver through the router.
	out, err = exec.Command("ip", "netns", "exec", p.Sender, "ip", "route", "get", ReceiverAddr.String()).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "via 10.79.1.2") {
		t.Errorf("route to the receiver: %s %v", out, err)
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for _, ns := range []string{p.Sender, p.Router, p.Receiver} {
		if exists(t, ns) {
			t.Errorf("namespace %s left behind", ns)
		}
	}
	if _, err := os.Stat(filepath.Join(DefaultStateDir, "path-"+p.ID+".json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ownership file left behind: %v", err)
	}
}

func TestGCRemovesACrashedRunsPathRoot(t *testing.T) {
	roottest.Require(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	id := strings.TrimSpace(string(out))
	for _, role := range []string{"snd", "rtr", "rcv"} {
		if !exists(t, Prefix+id+"-"+role) {
			t.Fatalf("the helper's namespace %s-%s is missing", id, role)
		}
	}
	// A live run's path next to it must survive GC.
	live, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()

	removed, err := GC("")
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"snd", "rtr", "rcv"} {
		ns := Prefix + id + "-" + role
		if exists(t, ns) || !slices.Contains(removed, "namespace "+ns) {
			t.Errorf("GC did not remove %s (removed %v)", ns, removed)
		}
	}
	if !slices.Contains(removed, "state file of path "+id) {
		t.Errorf("GC did not remove the ownership file (removed %v)", removed)
	}
	if !exists(t, live.Sender) {
		t.Error("GC removed a live run's namespace")
	}
}
