package netns

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"github.com/wirelab/wirelab/engine/internal/nsthread"
	"github.com/wirelab/wirelab/engine/labaddr"
)

// An egress topology (Config.Egress, docs/egress.md): the server namespace is a router whose
// uplink — a veth pair over a /30 — leads to the far side, and which forwards the client's new
// flows only to admitted addresses (router.go). The far side is the run's own local internet (a
// third namespace, Internet) or the host (uplink.go).

// Far is where an egress router's uplink leads.
type Far int

const (
	// FarInternet: a third namespace of the run (wirelab-<id>-i) holding the origins
	// (10.77.1.N on its loopback) and their DNS server (InternetDNSAddr); no route off the machine.
	FarInternet Far = iota + 1
	// FarHost: the namespace the engine runs in — the host and its default route: public sites.
	FarHost
)

func (f Far) String() string {
	switch f {
	case FarInternet:
		return "internet"
	case FarHost:
		return "host"
	}
	return fmt.Sprintf("far(%d)", int(f))
}

// Egress configures an egress topology.
type Egress struct {
	// Far is where the router's uplink leads.
	Far Far
	// HostNetns, with FarHost, names a namespace of /run/netns that stands for the host (tests put
	// the host side in a namespace of their own, with no route off the machine). "" = the
	// namespace of the calling process.
	HostNetns string
}

func (e *Egress) check() error {
	switch e.Far {
	case FarInternet:
		if e.HostNetns != "" {
			return errors.New("egress: host_netns is for the far side host")
		}
	case FarHost:
	default:
		return fmt.Errorf("egress: far side %d: want internet or host", int(e.Far))
	}
	return nil
}

// The uplink's addresses.
var (
	// InternetUplink is the uplink /30 towards the local internet (router .2, far side .1).
	InternetUplink = netip.MustParsePrefix("10.77.3.0/30")
	// HostUplinks is the block the host side's /30s come from: one slot per run (uplink.go),
	// because every run's far end is an address of the same host.
	HostUplinks = netip.MustParsePrefix("10.77.64.0/18")
	// InternetDNSAddr is the local internet's own DNS server, on the far side (the DNS forwarder's
	// upstream); the client's resolver is DNSAddr on the router.
	InternetDNSAddr = netip.AddrFrom4([4]byte{10, 77, 2, 54})
)

// UplinkName is the router's end of the uplink (and the local internet's).
const UplinkName = "wlup0"

// HostLinkName is the host's end of a run's uplink: wirelab<id>, 15 characters (IFNAMSIZ − 1).
func HostLinkName(id string) string { return "wirelab" + id }

// Uplink is an egress topology's uplink.
type Uplink struct {
	Far    Far
	Prefix netip.Prefix // the /30
	Router netip.Addr   // the router's end: the source address of everything leaving the run
	FarEnd netip.Addr   // the far side's end
	// FarLink is the far end's device: UplinkName in the local internet, HostLinkName on the host.
	FarLink string
	// HostIface is the host's way out (FarHost): the interface of its IPv4 default route.
	HostIface string
}

// egress is a built egress topology's own state.
type egress struct {
	uplink Uplink
	host   *os.File // FarHost: the host's namespace (HostNetns, or this process's)
}

func (e *egress) close() {
	if e.host != nil {
		e.host.Close()
	}
}

// uplinkOf is the /30's router and far addresses: .2 and .1 of the block.
func uplinkOf(p netip.Prefix) (router, far netip.Addr) {
	base := p.Masked().Addr()
	return base.Next().Next(), base.Next()
}

// Uplink is the egress topology's uplink (zero for another topology).
func (t *Topology) Uplink() Uplink {
	if t.eg == nil {
		return Uplink{}
	}
	return t.eg.uplink
}

// buildEgress makes the router and its far side, after the namespaces and TUN devices exist.
func (t *Topology) buildEgress() error {
	e := &egress{}
	t.eg = e
	router := t.ns[Server]
	var farNS *os.File
	switch t.cfg.Egress.Far {
	case FarInternet:
		farNS = t.ns[Internet]
		e.uplink = Uplink{Far: FarInternet, Prefix: InternetUplink, FarLink: UplinkName}
		e.uplink.Router, e.uplink.FarEnd = uplinkOf(InternetUplink)
	case FarHost:
		host, err := openHostNetns(t.cfg.Egress.HostNetns)
		if err != nil {
			return err
		}
		e.host, farNS = host, host
		u, err := t.reserveHostSide()
		if err != nil {
			return err
		}
		e.uplink = u
	}
	if err := testHookStep("egress-reserved"); err != nil {
		return err
	}
	// The router forwards (its own namespace's switch; the host's is untouched here).
	if err := nsthread.SetSysctl(router, "ipv4/ip_forward", "1"); err != nil {
		return fmt.Errorf("router forwarding: %w", err)
	}
	rh, err := netlink.NewHandleAt(vnetns.NsHandle(router.Fd()))
	if err != nil {
		return err
	}
	defer rh.Close()
	fh, err := netlink.NewHandleAt(vnetns.NsHandle(farNS.Fd()))
	if err != nil {
		return err
	}
	defer fh.Close()
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: UplinkName, MTU: t.cfg.MTU},
		PeerName:      e.uplink.FarLink,
		PeerNamespace: netlink.NsFd(farNS.Fd()),
	}
	if err := rh.LinkAdd(veth); err != nil {
		return fmt.Errorf("uplink %s/%s: %w", UplinkName, e.uplink.FarLink, err)
	}
	if err := testHookStep("egress-uplink"); err != nil {
		return err
	}
	bits := e.uplink.Prefix.Bits()
	ends := []struct {
		h    *netlink.Handle
		ns   *os.File
		name string
		addr netip.Addr
	}{{rh, router, UplinkName, e.uplink.Router}, {fh, farNS, e.uplink.FarLink, e.uplink.FarEnd}}
	for _, end := range ends {
		l, err := end.h.LinkByName(end.name)
		if err != nil {
			return err
		}
		if err := end.h.AddrAdd(l, &netlink.Addr{IPNet: ipNet(netip.PrefixFrom(end.addr, bits))}); err != nil {
			return fmt.Errorf("%s: address %s: %w", end.name, end.addr, err)
		}
		_ = nsthread.SetSysctl(end.ns, "ipv6/conf/"+end.name+"/disable_ipv6", "1")
		if err := end.h.LinkSetUp(l); err != nil {
			return err
		}
	}
	up, err := rh.LinkByName(UplinkName)
	if err != nil {
		return err
	}
	if err := rh.RouteAdd(&netlink.Route{LinkIndex: up.Attrs().Index, Dst: ipNet(defaultRoute), Gw: e.uplink.FarEnd.AsSlice()}); err != nil {
		return fmt.Errorf("router default route: %w", err)
	}
	if err := installRouter(router); err != nil {
		return fmt.Errorf("router rules: %w", err)
	}
	if err := testHookStep("egress-router"); err != nil {
		return err
	}
	switch e.uplink.Far {
	case FarInternet:
		return t.buildInternet(fh)
	case FarHost:
		return t.buildHostSide()
	}
	return nil
}

// buildInternet configures the local internet's namespace: loopback up with the origins and the
// sites' DNS server on it, and the route back to the router carrying the server side's TCP knobs
// (the origins are the servers).
func (t *Topology) buildInternet(h *netlink.Handle) error {
	lo, err := h.LinkByName("lo")
	if err != nil {
		return err
	}
	if err := h.LinkSetUp(lo); err != nil {
		return err
	}
	addrs := []netip.Addr{InternetDNSAddr}
	for n := 1; n <= t.cfg.Origins; n++ {
		addrs = append(addrs, labaddr.OriginAddr(n))
	}
	for _, a := range addrs {
		if err := h.AddrAdd(lo, &netlink.Addr{IPNet: ipNet(netip.PrefixFrom(a, 32))}); err != nil {
			return fmt.Errorf("address %s: %w", a, err)
		}
	}
	up, err := h.LinkByName(UplinkName)
	if err != nil {
		return err
	}
	rc := t.cfg.Server
	route := &netlink.Route{LinkIndex: up.Attrs().Index, Scope: netlink.SCOPE_LINK, Dst: ipNet(netip.PrefixFrom(t.eg.uplink.Router, 32)),
		InitCwnd: rc.InitCwnd, InitRwnd: rc.InitRwnd, Congctl: rc.CongCtl}
	if err := h.RouteAdd(route); err != nil {
		return fmt.Errorf("route to the router: %w", err)
	}
	return t.setECN(t.ns[Internet])
}

// openHostNetns opens the namespace that stands for the host: a named one, or this process's.
func openHostNetns(name string) (*os.File, error) {
	if name == "" {
		return os.Open("/proc/self/ns/net")
	}
	if filepath.Base(name) != name || name == "." || name == ".." {
		return nil, fmt.Errorf("egress: host namespace %q: want a name of %s", name, netnsRunDir)
	}
	return os.Open(filepath.Join(netnsRunDir, name))
}

// FarCommand prepares argv to run on the far side of an egress topology: in the local internet's
// namespace (as Command(Internet, …)), or on the host — this process's namespace, or HostNetns
// through `ip netns exec`. A host-side process is signalled by Close like every command, but is
// not found by a sweep of the run's namespaces: it must end with its parent (Pdeathsig).
func (t *Topology) FarCommand(argv ...string) *exec.Cmd {
	if t.cfg.Egress == nil || t.cfg.Egress.Far == FarInternet {
		return t.Command(Internet, argv...)
	}
	var cmd *exec.Cmd
	if ns := t.cfg.Egress.HostNetns; ns != "" {
		cmd = exec.Command("ip", append([]string{"netns", "exec", ns}, argv...)...)
	} else {
		cmd = exec.Command(argv[0], argv[1:]...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	t.mu.Lock()
	t.cmds = append(t.cmds, cmd)
	t.mu.Unlock()
	return cmd
}
