package policy

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/labaddr"
)

func TestPolicy(t *testing.T) {
	own := netip.MustParsePrefix("10.77.0.0/16")
	live := Policy{Own: own.Contains}
	internet := Policy{AllowInternet: true, Own: own.Contains}
	for _, c := range []struct {
		p    Policy
		name string
		ok   bool
	}{
		{live, "h2.wirelab.test", true},
		{live, "wirelab.test", true},
		{live, "H2.WIRELAB.TEST.", true},
		{live, "example.org", false},
		{live, "wirelab.test.example.org", false},
		{live, "xwirelab.test", false},
		{internet, "example.org", true},
	} {
		err := c.p.CheckName(c.name, c.name)
		if (err == nil) != c.ok {
			t.Errorf("allow-internet %v, name %s: %v", c.p.AllowInternet, c.name, err)
		}
		if err != nil && !errors.Is(err, ErrRefused) {
			t.Errorf("%s: %v does not wrap ErrRefused", c.name, err)
		}
	}
	for _, c := range []struct {
		p    Policy
		addr string
		ok   bool
	}{
		{live, "10.77.1.1", true},
		{live, "93.184.215.14", false},
		{internet, "93.184.215.14", true},
		{internet, "10.77.1.1", true},
		{internet, "10.1.2.3", false},
		{internet, "127.0.0.1", false},
		{internet, "::1", false},
		{internet, "::ffff:192.168.1.1", false},
		{internet, "169.254.169.254", false},
		{internet, "fe80::1", false},
		{internet, "2606:4700::1111", true},
	} {
		err := c.p.CheckAddr(c.addr, netip.MustParseAddr(c.addr))
		if (err == nil) != c.ok {
			t.Errorf("allow-internet %v, %s: %v", c.p.AllowInternet, c.addr, err)
		}
	}
	for a, want := range map[string]string{"192.0.2.1": "documentation (TEST-NET-1)", "100.64.0.1": "shared address space",
		"172.31.255.255": "private", "224.0.0.251": "multicast", "2001:db8::1": "documentation", "fd00::1": "unique local",
		"8.8.8.8": "", "2a00:1450::1": ""} {
		name, special := SpecialPurpose(netip.MustParseAddr(a))
		if name != want || special != (want != "") {
			t.Errorf("%s: %q %v, want %q", a, name, special, want)
		}
	}
	if err := live.CheckResolver("127.0.0.53:53"); err == nil || !strings.Contains(err.Error(), "--allow-internet") {
		t.Errorf("a resolver outside the run without --allow-internet: %v", err)
	}
	if err := live.CheckResolver("10.77.2.53:53"); err != nil {
		t.Errorf("the run's resolver: %v", err)
	}
	// Outside a run's client namespace nothing is own: the default policy refuses the lab's
	// addresses (the root tests check the inside).
	if _, err := netlink.LinkByName(labaddr.TUNName); err == nil {
		t.Skip("the test runs inside a run's namespace")
	}
	for _, a := range []string{"10.77.1.1", "127.0.0.1", "8.8.8.8"} {
		if OwnRoute(netip.MustParseAddr(a)) {
			t.Errorf("OwnRoute(%s) outside a run's client namespace", a)
		}
	}
	if err := (Policy{}).CheckAddr("s1.wirelab.test", netip.MustParseAddr("10.77.1.1")); err == nil {
		t.Error("the default policy accepts 10.77.1.1 outside a run")
	}
}

func TestTargetPolicy(t *testing.T) {
	own := func(a netip.Addr) bool { return netip.MustParsePrefix("10.77.0.0/16").Contains(a) }
	named := []netip.Addr{netip.MustParseAddr("10.20.0.5")}
	for _, tc := range []struct {
		addr    string
		flag    bool
		refused string // "" = allowed
	}{
		{"127.0.0.1", false, ""},
		{"10.77.1.2", false, ""}, // the run's own
		{"93.184.215.14", false, "needs --allow-internet"},
		{"93.184.215.14", true, ""},
		{"10.20.0.5", false, "needs --allow-internet"},
		{"10.20.0.5", true, ""},
		{"10.20.0.6", true, "the spec does not name"},
		{"192.168.1.1", true, "the spec does not name"},
		{"169.254.169.254", true, "link-local"},
		{"224.0.0.1", true, "multicast"},
		{"192.0.2.1", true, "documentation"},
		{"100.64.0.1", true, "shared address space"},
		{"::ffff:169.254.169.254", true, "link-local"},
	} {
		p := Target{Policy: Policy{AllowInternet: tc.flag, Own: own}, Named: named}
		err := p.CheckAddr("t", netip.MustParseAddr(tc.addr))
		if (tc.refused == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.refused)) {
			t.Errorf("%s (flag %v): %v; want refused %q", tc.addr, tc.flag, err, tc.refused)
		}
	}
	p := Target{Hosts: []string{"staging.example.com", "cdn.example.com"}}
	if p.CheckHost("Staging.Example.com.") != nil || p.CheckHost("other.example.com") == nil {
		t.Error("CheckHost: the target's hosts only")
	}
}

// One address rule for a probe's, a loader's and a load test's target: a special-purpose address
// is refused as such with or without --allow-internet (a probe without the flag used to be told to
// pass --allow-internet, then refused with it); a public one needs the flag; each caller keeps its
// own wording for that.
func TestOneAddressRule(t *testing.T) {
	for _, flag := range []bool{false, true} {
		for _, c := range []struct {
			check func(string, netip.Addr) error
			who   string
		}{
			{Policy{AllowInternet: flag}.CheckAddr, "policy"},
			{Target{Policy: Policy{AllowInternet: flag}}.CheckAddr, "target"},
		} {
			for a, want := range map[string]string{"169.254.169.254": "a special-purpose address (link-local), refused even with --allow-internet",
				"192.0.2.7": "documentation (TEST-NET-1)", "224.0.0.1": "multicast"} {
				if err := c.check(a, netip.MustParseAddr(a)); err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s, flag %v, %s: %v; want %q", c.who, flag, a, err, want)
				}
			}
			err := c.check("p", netip.MustParseAddr("93.184.215.14"))
			if flag != (err == nil) || (err != nil && !strings.Contains(err.Error(), "--allow-internet")) {
				t.Errorf("%s, flag %v, a public address: %v", c.who, flag, err)
			}
		}
	}
}

// A target's policy without Own is the run's namespaces as every policy's (OwnRoute): inside a
// run's client namespace the lab's addresses are its own (it used to admit none). Checked in a
// network namespace of the test's own thread with a TUN device named as the run's and the
// lab's route on it — nothing else, so no route off the machine.
func TestTargetOwnIsThePolicysDefault(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (a network namespace)")
	}
	done := make(chan struct{})
	go func() { // this goroutine's thread enters the namespace and dies with it (never unlocked)
		defer close(done)
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			t.Errorf("unshare: %v", err)
			return
		}
		link := &netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: labaddr.TUNName}, Mode: netlink.TUNTAP_MODE_TUN}
		if err := netlink.LinkAdd(link); err != nil { // persistent: removed with the namespace
			t.Errorf("a TUN device: %v", err)
			return
		}
		_, lab, _ := net.ParseCIDR(labaddr.LabPrefix.String())
		if err := netlink.LinkSetUp(link); err != nil {
			t.Errorf("link up: %v", err)
			return
		}
		if err := netlink.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: lab}); err != nil {
			t.Errorf("route: %v", err)
			return
		}
		in := netip.MustParseAddr("10.77.1.1")
		if !OwnRoute(in) {
			t.Errorf("OwnRoute(%s) inside the namespace", in)
		}
		if err := (Target{}).CheckAddr("s1.wirelab.test", in); err != nil {
			t.Errorf("a target's policy without Own, the run's %s: %v", in, err)
		}
		if err := (Policy{}).CheckAddr("s1.wirelab.test", in); err != nil {
			t.Errorf("the default policy, the run's %s: %v", in, err)
		}
		if err := (Target{}).CheckAddr("x", netip.MustParseAddr("10.1.2.3")); err == nil {
			t.Error("a target's policy admits 10.1.2.3, not the run's")
		}
	}()
	<-done
}
