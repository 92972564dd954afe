package roottest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/internal/nsthread"
)

// StandIn is a stand-in for the host and what lies beyond it, for tests of the egress path's host
// side (docs/egress.md) that must never reach anything off the machine: World is a namespace
// playing the host — loopback, and a default route over WayOut (MTU 1400, like this project's
// machines' uplink) to Upstream, a namespace playing the rest of the internet at UpstreamAddr (MTU
// 1500 on its end: only MSS clamping lets full-size TCP segments through). Neither has a route
// off the machine. Both are removed when the test ends.
type StandIn struct {
	World, Upstream string     // namespace names (in /run/netns)
	WayOut          string     // World's interface towards Upstream
	WorldAddr       netip.Addr // World's address on WayOut (what the far side sees after NAT)
	UpstreamAddr    netip.Addr
}

// IsolatedNetns makes a network namespace with no route off the machine — only its loopback
// device, up — for the test's subprocesses (`ip netns exec NAME …`); removed when the test ends.
// Root only (it skips otherwise).
func IsolatedNetns(t testing.TB) string {
	t.Helper()
	Require(t)
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	name := "wltest-" + hex.EncodeToString(b[:]) + "-iso" // not a run's name: gc leaves it alone
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	if out, err := exec.Command("ip", "-n", name, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set lo up: %v: %s", err, out)
	}
	if out, _ := exec.Command("ip", "-n", name, "-o", "route", "show", "table", "all").CombinedOutput(); strings.Contains(string(out), "default") {
		t.Fatalf("the isolated namespace has a default route: %s", out)
	}
	return name
}

// The stand-in's addresses: a /24 of the lab's block that no run uses.
var (
	standInWorld    = netip.MustParseAddr("10.77.200.1")
	standInUpstream = netip.MustParseAddr("10.77.200.2")
)

// NewStandIn builds a StandIn (root only).
func NewStandIn(t testing.TB) *StandIn {
	t.Helper()
	RequireTUN(t)
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	tag := hex.EncodeToString(b[:])
	s := &StandIn{World: "wltest-" + tag + "-w", Upstream: "wltest-" + tag + "-u", WayOut: "wayout0",
		WorldAddr: standInWorld, UpstreamAddr: standInUpstream}
	t.Cleanup(func() {
		exec.Command("ip", "netns", "del", s.World).Run()
		exec.Command("ip", "netns", "del", s.Upstream).Run()
	})
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", s.World)
	run("netns", "add", s.Upstream)
	run("-n", s.World, "link", "set", "lo", "up")
	run("-n", s.Upstream, "link", "set", "lo", "up")
	run("-n", s.World, "link", "add", s.WayOut, "mtu", "1400", "type", "veth", "peer", "name", "wayin0", "netns", s.Upstream)
	run("-n", s.World, "addr", "add", s.WorldAddr.String()+"/24", "dev", s.WayOut)
	run("-n", s.Upstream, "addr", "add", s.UpstreamAddr.String()+"/24", "dev", "wayin0")
	run("-n", s.World, "link", "set", s.WayOut, "up")
	run("-n", s.Upstream, "link", "set", "wayin0", "up")
	run("-n", s.World, "route", "add", "default", "via", s.UpstreamAddr.String(), "dev", s.WayOut)
	return s
}

// Do runs fn on a thread in the namespace (sockets it creates stay there).
func (s *StandIn) Do(t testing.TB, namespace string, fn func() error) {
	t.Helper()
	if err := do(namespace, fn); err != nil {
		t.Fatal(err)
	}
}

// do runs fn on a thread in the namespace (nsthread.In).
func do(namespace string, fn func() error) error {
	ns, err := nsthread.Open(namespace)
	if err != nil {
		return err
	}
	defer ns.Close()
	return nsthread.In(ns, fn)
}

// Forwarding reads World's IPv4 forwarding switch on an interface ("0" or "1").
func (s *StandIn) Forwarding(t testing.TB, iface string) string {
	t.Helper()
	ns, err := nsthread.Open(s.World)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	v, err := nsthread.Sysctl(ns, "ipv4/conf/"+iface+"/forwarding")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Listen opens a TCP listener in Upstream on port.
func (s *StandIn) Listen(t testing.TB, port int) net.Listener {
	t.Helper()
	var ln net.Listener
	s.Do(t, s.Upstream, func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(s.UpstreamAddr, uint16(port)).String())
		return err
	})
	t.Cleanup(func() { ln.Close() })
	return ln
}

// RefusedAtOnce dials addr and reports nil when the connection is rejected at once with
// EHOSTUNREACH — what an egress router's ICMP "administratively prohibited" does — and an error
// when it connects, fails otherwise or only after a second. Call it inside the client namespace.
func RefusedAtOnce(network, addr string) error {
	t0 := time.Now()
	c, err := net.DialTimeout(network, addr, 5*time.Second)
	switch {
	case err == nil:
		c.Close()
		return errors.New("connected")
	case !errors.Is(err, syscall.EHOSTUNREACH):
		return err
	case time.Since(t0) > time.Second:
		return fmt.Errorf("refused only after %s", time.Since(t0).Round(time.Millisecond))
	}
	return nil
}
