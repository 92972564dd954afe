package netns

import (
	"bufio"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/internal/timebound"
	"github.com/wirelab/wirelab/engine/labaddr"
)

// assertGone checks that nothing of run id is left.
func assertGone(t *testing.T, id string) {
	t.Helper()
	for _, side := range []Side{Client, Server} {
		name := NamespaceName(id, side)
		if _, err := os.Stat(filepath.Join(netnsRunDir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("namespace %s left behind", name)
		}
		if _, err := os.Stat(filepath.Join(etcNetnsDir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s/%s left behind", etcNetnsDir, name)
		}
	}
	if _, err := os.Stat(statePath(StateDir, id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file of %s left behind", id)
	}
}

func ipIn(t *testing.T, ns string, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip -n %s %v: %v\n%s", ns, args, err, out)
	}
	return string(out)
}

func TestCreateClose(t *testing.T) {
	roottest.RequireTUN(t)
	topo, err := Create(Config{Origins: 3, Resolver: true, Server: RouteConfig{InitCwnd: 4, InitRwnd: 20}, Client: RouteConfig{InitRwnd: 30}})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Close()
	st, err := readState(topo.StatePath())
	if err != nil || st.PID != os.Getpid() || len(st.Namespaces) != 2 {
		t.Fatalf("state file: %+v %v", st, err)
	}
	srv, cli := topo.Name(Server), topo.Name(Client)
	addrs := ipIn(t, srv, "-4", "addr", "show", "dev", labaddr.TUNName)
	for _, want := range []string{"10.77.1.1/32", "10.77.1.2/32", "10.77.1.3/32", "10.77.2.53/32", "mtu 1500", "qlen 500", "UP"} {
		if !strings.Contains(addrs, want) {
			t.Errorf("server %s: no %q in\n%s", labaddr.TUNName, want, addrs)
		}
	}
	if strings.Contains(addrs, "10.77.1.4/") {
		t.Errorf("server has a 4th origin:\n%s", addrs)
	}
	route := ipIn(t, srv, "route", "show", "10.77.0.0/24")
	for _, want := range []string{"initcwnd 4", "initrwnd 20", "congctl cubic"} {
		if !strings.Contains(route, want) {
			t.Errorf("server route lacks %q: %s", want, route)
		}
	}
	route = ipIn(t, cli, "route", "show", "10.77.0.0/16")
	for _, want := range []string{"initrwnd 30", "congctl cubic"} {
		if !strings.Contains(route, want) {
			t.Errorf("client route lacks %q: %s", want, route)
		}
	}
	if lo := ipIn(t, cli, "link", "show", "lo"); !strings.Contains(lo, "UP") {
		t.Errorf("client lo not up: %s", lo)
	}
	// Commands see the run's resolver and the namespace's devices.
	out, err := topo.Command(Client, "sh", "-c", "cat /etc/resolv.conf; ls /sys/class/net").CombinedOutput()
	if err != nil {
		t.Fatalf("command: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "nameserver 10.77.2.53") || !strings.Contains(string(out), labaddr.TUNName) {
		t.Errorf("command in client namespace saw:\n%s", out)
	}
	if s, err := topo.DeviceStats(Client); err != nil || s.Dropped() != 0 {
		t.Errorf("device stats %+v %v", s, err)
	}
	id := topo.ID
	if err := topo.Close(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, id)
	if err := topo.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestECN: ECN turns on TCP's ECN (tcp_ecn=1) in both namespaces; without it they keep the
// kernel's 2 (accept, never ask).
func TestECN(t *testing.T) {
	roottest.RequireTUN(t)
	for _, ecn := range []bool{false, true} {
		topo, err := Create(Config{ECN: ecn})
		if err != nil {
			t.Fatal(err)
		}
		want := "2"
		if ecn {
			want = "1"
		}
		for _, side := range []Side{Client, Server} {
			out, err := topo.Command(side, "cat", "/proc/sys/net/ipv4/tcp_ecn").CombinedOutput()
			if got := strings.TrimSpace(string(out)); err != nil || got != want {
				t.Errorf("ECN %v, %s namespace: tcp_ecn %q (%v), want %s", ecn, side, got, err, want)
			}
		}
		if err := topo.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSetSysctl: a sysctl set on one side holds in that namespace only, not in the other.
func TestSetSysctl(t *testing.T) {
	roottest.RequireTUN(t)
	topo, err := Create(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Close()
	read := func(side Side) string {
		out, err := topo.Command(side, "cat", "/proc/sys/net/ipv4/tcp_wmem").CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s", side, err, out)
		}
		return strings.Join(strings.Fields(string(out)), " ")
	}
	before := read(Client)
	if err := topo.SetSysctl(Server, "ipv4/tcp_wmem", "4096 16384 33554432"); err != nil {
		t.Fatal(err)
	}
	if got := read(Server); got != "4096 16384 33554432" {
		t.Errorf("server tcp_wmem = %q after SetSysctl", got)
	}
	if got := read(Client); got != before {
		t.Errorf("client tcp_wmem = %q, was %q: SetSysctl reached the other namespace", got, before)
	}
}

func TestCreateFailureRemovesEverything(t *testing.T) {
	roottest.RequireTUN(t)
	for _, step := range []string{"namespace-client", "namespace-server", "tun-client", "configure-client", "tun-server", "configure-server"} {
		t.Run(step, func(t *testing.T) {
			before, _ := listNamed()
			testHookStep = func(s string) error {
				if s == step {
					return errors.New("injected")
				}
				return nil
			}
			defer func() { testHookStep = func(string) error { return nil } }()
			topo, err := Create(Config{Resolver: true})
			if err == nil {
				topo.Close()
				t.Fatal("Create succeeded")
			}
			after, _ := listNamed()
			for _, n := range after {
				if !contains(before, n) && strings.HasPrefix(n, Prefix) {
					// Another engineer's run may have started meanwhile: only ours count.
					if id := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(n, Prefix), "-c"), "-s"); fileOwnedBySelf(id) {
						t.Errorf("namespace %s left behind", n)
					}
				}
			}
			states, _, _ := listStates(StateDir)
			for _, st := range states {
				if st.PID == os.Getpid() {
					t.Errorf("state file %s left behind", st.ID)
				}
			}
		})
	}
}

func fileOwnedBySelf(id string) bool {
	st, err := readState(statePath(StateDir, id))
	return err != nil || st.PID == os.Getpid()
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func TestCloseKillsProcesses(t *testing.T) {
	roottest.RequireTUN(t)
	// Close's 5 s depend on the machine too: retried once with a new topology (internal/timebound).
	timebound.Retry(t, func(a *timebound.Attempt) {
		topo, err := Create(Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer topo.Close()
		// A plain child, one that ignores SIGTERM, and a daemon that left the process group.
		cmds := []*exec.Cmd{
			topo.Command(Server, "sleep", "100"),
			topo.Command(Client, "sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done"),
			topo.Command(Server, "sh", "-c", "setsid sleep 100 </dev/null >/dev/null 2>&1 & echo ready"),
		}
		for i, c := range cmds {
			var sc *bufio.Scanner
			if i > 0 {
				out, _ := c.StdoutPipe()
				sc = bufio.NewScanner(out)
			}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			if sc != nil && (!sc.Scan() || sc.Text() != "ready") {
				t.Fatalf("command %d did not get ready", i)
			}
		}
		cmds[2].Wait()
		// The daemon is in the namespace, not our child.
		waitFor(t, func() bool { return len(pidsIn(topo.nsID[Server])) >= 2 })
		srvPids := pidsIn(topo.nsID[Server])
		start := time.Now()
		if err := topo.Close(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 5*time.Second {
			a.Errorf("Close took %v", d)
		}
		for _, c := range cmds[:2] {
			c.Wait()
		}
		for _, pid := range srvPids {
			if _, err := os.Stat("/proc/" + itoa(pid) + "/ns/net"); err == nil {
				t.Errorf("process %d survived Close", pid)
			}
		}
	})
}

func itoa(i int) string { return strconv.Itoa(i) }

// waitFor polls cond (namespace membership has no event to wait on) for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// newTopology is a run's topology (needs root and TUN), closed when the test ends.
func newTopology(t *testing.T) *Topology {
	t.Helper()
	roottest.RequireTUN(t)
	topo, err := Create(Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { topo.Close() })
	return topo
}

// assertStateFile reports a live run whose state file is gone.
func assertStateFile(t *testing.T, live *Topology) {
	t.Helper()
	if _, err := os.Stat(live.StatePath()); err != nil {
		t.Errorf("live run's state file gone: %v", err)
	}
}

// deadRun makes what a crashed run leaves: a state file whose owner has exited, its namespaces and
// its /etc/netns directory.
func deadRun(t *testing.T) *state {
	t.Helper()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	id, _ := newID()
	st := &state{ID: id, PID: dead.Process.Pid, PIDStart: 1, Namespaces: []string{NamespaceName(id, Client), NamespaceName(id, Server)},
		EtcDirs: []string{filepath.Join(etcNetnsDir, NamespaceName(id, Client))}}
	if err := createState(StateDir, st); err != nil {
		t.Fatal(err)
	}
	for _, n := range st.Namespaces {
		h, err := createNamed(n)
		if err != nil {
			t.Fatal(err)
		}
		h.Close()
	}
	os.MkdirAll(st.EtcDirs[0], 0o755)
	return st
}

func TestGC(t *testing.T) {
	live := newTopology(t)
	// A crashed run: a state file whose owner has exited, its namespaces and a process inside.
	st := deadRun(t)
	id := st.ID
	orphan := exec.Command("ip", "netns", "exec", st.Namespaces[1], "sleep", "100")
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	defer orphan.Process.Kill()
	nsid, _ := nsIDOf(filepath.Join(netnsRunDir, st.Namespaces[1]))
	waitFor(t, func() bool { return len(pidsIn(nsid)) == 1 })

	rep, err := GC()
	if err != nil {
		t.Logf("GC errors (may concern other runs): %v", err)
	}
	assertGone(t, id)
	if err := orphan.Wait(); err == nil {
		t.Error("process in a dead run's namespace survived GC")
	}
	for _, r := range rep.Removed {
		if strings.Contains(r, live.ID) {
			t.Errorf("GC removed the live run's %s", r)
		}
	}
	for _, side := range []Side{Client, Server} {
		if _, err := os.Stat(filepath.Join(netnsRunDir, live.Name(side))); err != nil {
			t.Errorf("live run's namespace gone: %v", err)
		}
	}
	assertStateFile(t, live)
}

// TestGCOwner: the scoped collection removes exactly the dead owner's run — its namespaces,
// /etc/netns directory and state file — and leaves another dead run and a live run alone.
func TestGCOwner(t *testing.T) {
	live := newTopology(t)
	mine, other := deadRun(t), deadRun(t)
	defer func() { // the other dead run is this test's to remove
		removeRun(StateDir, other, &GCReport{})
	}()
	rep, err := GCOwner(mine.PID)
	if err != nil {
		t.Fatal(err)
	}
	assertGone(t, mine.ID)
	if len(rep.Runs) != 1 || rep.Runs[0] != mine.ID {
		t.Errorf("runs removed %v, want [%s]", rep.Runs, mine.ID)
	}
	for _, n := range other.Namespaces {
		if _, err := os.Stat(filepath.Join(netnsRunDir, n)); err != nil {
			t.Errorf("another dead run's namespace was removed: %v", err)
		}
	}
	rep, err = GCOwner(os.Getpid())
	if err != nil || len(rep.Removed) != 0 || len(rep.Kept) != 1 {
		t.Errorf("live owner: removed %v kept %v err %v; want its run kept", rep.Removed, rep.Kept, err)
	}
	assertStateFile(t, live)
}

// SentPackets counts what a side's kernel sends into its TUN device, read or not (nothing reads
// it here), and not what it delivers to its own addresses through lo.
func TestSentPackets(t *testing.T) {
	topo := newTopology(t)
	send := func(to netip.Addr, n int) {
		t.Helper()
		err := topo.Do(Server, func() error {
			c, err := net.ListenPacket("udp4", ":0") // unconnected: port unreachable stays silent
			if err != nil {
				return err
			}
			defer c.Close()
			dst := net.UDPAddrFromAddrPort(netip.AddrPortFrom(to, 9))
			for range n {
				if _, err := c.WriteTo([]byte("x"), dst); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	send(labaddr.OriginAddr(1), 5) // its own address: delivered through lo
	if n, err := topo.SentPackets(Server); err != nil || n != 0 {
		t.Fatalf("after local delivery: %d packets sent into the device (%v), want 0", n, err)
	}
	send(labaddr.ClientAddr, 3) // the client: through the device
	if n, err := topo.SentPackets(Server); err != nil || n != 3 {
		t.Errorf("after 3 datagrams to the client: %d packets sent into the device (%v), want 3", n, err)
	}
	if n, err := topo.SentPackets(Client); err != nil || n != 0 {
		t.Errorf("client side: %d packets (%v), want 0", n, err)
	}
}
