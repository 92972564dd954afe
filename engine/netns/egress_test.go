package netns

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/nftables"

	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/labaddr"
)

// uplinkEntries lists UplinkDir (but its lock).
func uplinkEntries() []string {
	entries, _ := os.ReadDir(UplinkDir)
	var out []string
	for _, e := range entries {
		if e.Name() != "lock" {
			out = append(out, e.Name())
		}
	}
	return out
}

// assertHostClean checks that the stand-in host keeps nothing of any run (no veth end, no table),
// that forwarding on its way out is off again, and that UplinkDir is as before the run.
func assertHostClean(t *testing.T, s *roottest.StandIn, before []string) {
	t.Helper()
	s.Do(t, s.World, func() error {
		ifs, err := net.Interfaces()
		for _, i := range ifs {
			if strings.HasPrefix(i.Name, hostLinkPrefix) {
				t.Errorf("veth end %s left on the host", i.Name)
			}
		}
		return err
	})
	f, err := openHostNetns(s.World)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, _ := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
	tables, _ := c.ListTablesOfFamily(nftables.TableFamilyIPv4)
	for _, tb := range tables {
		t.Errorf("table ip %s left on the host", tb.Name)
	}
	if got := s.Forwarding(t, s.WayOut); got != "0" {
		t.Errorf("forwarding on the way out is %s, want 0 (as before the run)", got)
	}
	if after := uplinkEntries(); !slices.Equal(after, before) {
		t.Errorf("%s: %v, was %v", UplinkDir, after, before)
	}
}

// An egress topology's objects: the router's address and routes, the local internet's origins,
// the state file's record of the host side.
func TestEgressTopology(t *testing.T) {
	roottest.RequireTUN(t)
	topo, err := Create(Config{Origins: 2, Resolver: true, Egress: &Egress{Far: FarInternet}, Server: RouteConfig{InitCwnd: 4}})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Close()
	st, err := readState(topo.StatePath())
	if err != nil || len(st.Namespaces) != 3 || st.Host != nil {
		t.Fatalf("state: %+v %v", st, err)
	}
	srv, cli, inet := topo.Name(Server), topo.Name(Client), topo.Name(Internet)
	if a := ipIn(t, srv, "-4", "addr", "show", "dev", labaddr.TUNName); !strings.Contains(a, "10.77.2.53/32") || strings.Contains(a, "10.77.1.1/") {
		t.Errorf("router's TUN device: want the DNS forwarder's address only:\n%s", a)
	}
	if r := ipIn(t, cli, "route", "show", "default"); !strings.Contains(r, "dev "+labaddr.TUNName) {
		t.Errorf("client default route: %s", r)
	}
	if r := ipIn(t, srv, "route", "show", "default"); !strings.Contains(r, "via 10.77.3.1 dev "+UplinkName) {
		t.Errorf("router default route: %s", r)
	}
	lo := ipIn(t, inet, "-4", "addr", "show", "dev", "lo")
	for _, want := range []string{"10.77.1.1/32", "10.77.1.2/32", "10.77.2.54/32"} {
		if !strings.Contains(lo, want) {
			t.Errorf("local internet's lo lacks %s:\n%s", want, lo)
		}
	}
	if r := ipIn(t, inet, "route", "show", "10.77.3.2"); !strings.Contains(r, "initcwnd 4") {
		t.Errorf("the origins' route back lacks the server's knobs: %s", r)
	}
	if r := ipIn(t, inet, "route", "show", "default"); strings.TrimSpace(r) != "" {
		t.Errorf("the local internet has a default route: %s", r)
	}
	id := topo.ID
	if err := topo.Close(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, id)
}

// A Create that fails at any step of the egress part leaves nothing, on the host side either.
func TestEgressCreateFailureRemovesEverything(t *testing.T) {
	s := roottest.NewStandIn(t)
	before := uplinkEntries()
	defer func() { testHookStep = func(string) error { return nil } }()
	for _, step := range []string{"egress-reserved", "egress-uplink", "egress-router", "egress-forwarding"} {
		testHookStep = func(got string) error {
			if got == step {
				return errors.New("injected")
			}
			return nil
		}
		states, _, _ := listStates(StateDir)
		names, _ := listNamed()
		_, err := Create(hostConfig(s))
		if err == nil || !strings.Contains(err.Error(), "injected") {
			t.Fatalf("%s: %v", step, err)
		}
		if after, _, _ := listStates(StateDir); len(after) != len(states) {
			t.Errorf("%s: %d state files, were %d", step, len(after), len(states))
		}
		if after, _ := listNamed(); len(after) != len(names) {
			t.Errorf("%s: namespaces %v, were %v", step, after, names)
		}
		assertHostClean(t, s, before)
	}
}

// hostConfig is a run whose egress goes to the stand-in host s.
func hostConfig(s *roottest.StandIn) Config {
	return Config{Egress: &Egress{Far: FarHost, HostNetns: s.World}}
}

// createToHost creates a run with egress to s, failing the test if it cannot.
func createToHost(t *testing.T, s *roottest.StandIn) *Topology {
	t.Helper()
	topo, err := Create(hostConfig(s))
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// A run killed with an egress topology to the host: GC removes its namespaces and its host side,
// and restores forwarding on the way out.
func TestEgressGCAfterOwnerDied(t *testing.T) {
	s := roottest.NewStandIn(t)
	before := uplinkEntries()
	topo := createToHost(t, s)
	if got := s.Forwarding(t, s.WayOut); got != "1" {
		t.Fatalf("forwarding %s during the run", got)
	}
	makeDead(t, topo)
	rep, err := GC()
	if err != nil {
		t.Logf("GC errors (may concern other runs): %v", err)
	}
	t.Logf("GC removed %v", rep.Removed)
	assertHostClean(t, s, before)
	assertGone(t, topo.ID)
	if _, err := os.Stat(filepath.Join(netnsRunDir, NamespaceName(topo.ID, Internet))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("internet namespace of %s left", topo.ID)
	}
}

// Two runs to the same host at once: each gets its own /30 and table, forwarding on the way out is
// switched on by the first and restored only when the last one ends.
func TestEgressHostRunsShareForwarding(t *testing.T) {
	s := roottest.NewStandIn(t)
	before := uplinkEntries()
	a := createToHost(t, s)
	b, err := Create(hostConfig(s))
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	if a.Uplink().Prefix == b.Uplink().Prefix {
		t.Errorf("both runs got %s", a.Uplink().Prefix)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if got := s.Forwarding(t, s.WayOut); got != "1" {
		t.Errorf("forwarding %s after the first run ended while the second runs; want 1", got)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	assertHostClean(t, s, before)
}
