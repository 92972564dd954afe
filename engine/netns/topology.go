// Package netns builds and removes the topology of one run: a client namespace and a server
// namespace, one TUN device in each (held open by the emulator process), the run's addresses and
// routes (with initcwnd, initrwnd and congctl, and TCP+: engine/tcpplus's wl_cubicp<N>, registered
// for the topology's lifetime), and the processes started inside them.
//
// Every object is recorded in a state file (StateDir/<id>.json) before it is created;
// Close removes everything, a failed Create removes what it had made, and GC removes what a killed
// run left behind, never touching a live run's objects.
package netns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/tun"

	"github.com/wirelab/wirelab/engine/internal/nsthread"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/tcpplus"
	"github.com/wirelab/wirelab/engine/tundev"
)

// RouteConfig is the TCP tuning carried by the routes of one side (`ip route … initcwnd N
// initrwnd N congctl NAME`).
type RouteConfig struct {
	InitCwnd int    // initial congestion window in segments; 0 = kernel default (10)
	InitRwnd int    // initial receive window in segments; 0 = kernel default
	CongCtl  string // congestion control algorithm; "" = DefaultCongCtl
}

// DefaultCongCtl is the congestion control on a run's routes unless configured: cubic, as in the
// studies (the machine's own default may be bbr).
const DefaultCongCtl = "cubic"

// Config describes a topology. The zero value is valid: one origin, MTU 1500, offloads on.
type Config struct {
	Origins    int         // origin addresses 10.77.1.1 … 10.77.1.N in the server namespace; 1…64, default 1
	MTU        int         // MTU of both TUN devices; default 1500
	TxQueueLen int         // TX queue length of both TUN devices (packets, GSO super-packets count once); 0 = the kernel's (500)
	Server     RouteConfig // on the server's route towards the client
	Client     RouteConfig // on the client's route towards the servers
	// Resolver writes /etc/netns/<client namespace>/resolv.conf naming the run's DNS server
	// (DNSAddr), which `ip netns exec` bind-mounts over /etc/resolv.conf for commands.
	Resolver bool
	// NoOffload opens the TUN devices without IFF_VNET_HDR: no TSO/GSO super-packets on read and
	// no GRO on write. Slower; for comparison and debugging.
	NoOffload bool
	// Command is recorded in the state file (default os.Args).
	Command []string
	// Egress, when set, makes the server namespace the egress router towards a far side — the run's
	// own local internet or the host (docs/egress.md). The origins then live on the far side
	// (FarInternet) or nowhere (FarHost).
	Egress *Egress
	// TCPPlus, N in 1…32, makes the server's connections behave like N (study W's TCP+,
	// docs/tcpplus.md): the server's route gets initcwnd and initrwnd Server.InitCwnd×N and
	// Server.InitRwnd×N (the kernel's 10 where they are 0) and congestion control wl_cubicp<N>,
	// which Create registers (tcpplus.Register) and Close unregisters; the client's route gets
	// initrwnd Client.InitRwnd×N. Server.CongCtl must then be cubic (or empty). 0 (default): off.
	TCPPlus int
	// ECN turns on TCP's Explicit Congestion Notification in every namespace with a TCP end
	// (client, server, the local internet): net.ipv4.tcp_ecn=1, so that connections request and
	// accept it and the link's disciplines mark them instead of dropping (profile key ecn=1).
	// Off, the kernel's default (2) stays: accepted when asked for, never asked for.
	ECN bool
	// HaltPoll, when > 0, holds the machine's guest halt-polling window (haltpoll cpuidle driver:
	// guest_halt_poll_ns) at at least this long while the topology exists (haltpoll.go); 0 leaves
	// the machine's setting alone. The emulator's runs hold HaltPollFromEnv.
	HaltPoll time.Duration
}

// DefaultMTU is the TUN devices' MTU.
const DefaultMTU = 1500

// idAttempts bounds the random run ids tried when a state file for one already exists.
const idAttempts = 10

func (c *Config) withDefaults() (Config, error) {
	out := *c
	if out.Origins == 0 {
		out.Origins = 1
	}
	if out.Origins < 1 || out.Origins > labaddr.MaxOrigins {
		return out, fmt.Errorf("origins: %d outside 1…%d", c.Origins, labaddr.MaxOrigins)
	}
	if out.MTU == 0 {
		out.MTU = DefaultMTU
	}
	if out.MTU < 576 || out.MTU > 9000 {
		return out, fmt.Errorf("mtu: %d outside 576…9000", c.MTU)
	}
	if out.TxQueueLen < 0 || out.TxQueueLen > 100000 {
		return out, fmt.Errorf("txqueuelen: %d outside 0…100000", c.TxQueueLen)
	}
	for _, r := range []*RouteConfig{&out.Server, &out.Client} {
		if r.CongCtl == "" {
			r.CongCtl = DefaultCongCtl
		}
		if r.InitCwnd < 0 || r.InitCwnd > 1000 || r.InitRwnd < 0 || r.InitRwnd > 1000 {
			return out, fmt.Errorf("initcwnd/initrwnd outside 0…1000")
		}
	}
	if out.TCPPlus != 0 {
		if err := tcpplus.CheckN(out.TCPPlus); err != nil {
			return out, err
		}
		if out.Server.CongCtl != "cubic" {
			return out, fmt.Errorf("tcpplus: %s is cubic with TCP+'s backoff; the server's congctl %q cannot be kept with it", tcpplus.Name(out.TCPPlus), out.Server.CongCtl)
		}
	}
	if out.Egress != nil {
		if err := out.Egress.check(); err != nil {
			return out, err
		}
		if out.TCPPlus != 0 {
			return out, errors.New("tcpplus: not with an egress topology (the servers are behind the router)")
		}
	}
	if out.Command == nil {
		out.Command = os.Args
	}
	return out, nil
}

// Topology is one run's pair of namespaces with their TUN devices.
type Topology struct {
	ID  string
	cfg Config

	ns    [len(sides)]*os.File // open handles, indexed by Side
	nsID  [len(sides)]nsID
	tuns  [2]tun.Device // client and server
	state string        // path of the state file
	st    *state        // its content
	eg    *egress       // an egress topology's router and far side (egress.go)

	unregisterTCPPlus func() error  // releases wl_cubicp<N> (TCPPlus)
	haltPoll          *HaltPollFact // what the run found and held (nil: no haltpoll driver)

	mu     sync.Mutex
	closed bool
	cmds   []*exec.Cmd
}

// Create builds a topology. On error, everything it created is removed again.
func Create(cfg Config) (*Topology, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	var unregister func() error
	if c.TCPPlus != 0 {
		// The congestion control exists while the topology does (shared with other runs that use
		// the same N); the routes carry it and N times the windows.
		name, unreg, err := tcpplus.Register(c.TCPPlus)
		if err != nil {
			return nil, err
		}
		unregister = unreg
		c.Server.CongCtl = name
		c.Server.InitCwnd, c.Server.InitRwnd = tcpplus.RouteWindows(c.Server.InitCwnd, c.Server.InitRwnd, c.TCPPlus)
		_, c.Client.InitRwnd = tcpplus.RouteWindows(0, c.Client.InitRwnd, c.TCPPlus)
	}
	release := func() {
		if unregister != nil {
			_ = unregister()
		}
	}
	if err := checkCongCtl(c.Server.CongCtl); err != nil {
		release()
		return nil, err
	}
	if err := checkCongCtl(c.Client.CongCtl); err != nil {
		release()
		return nil, err
	}
	start, err := processStartTime(os.Getpid())
	if err != nil {
		release()
		return nil, fmt.Errorf("read own start time: %w", err)
	}
	t := &Topology{cfg: c, unregisterTCPPlus: unregister}
	// Pick an unused id: the state file is the reservation.
	for attempt := 0; ; attempt++ {
		id, err := newID()
		if err != nil {
			return nil, err
		}
		st := &state{
			ID: id, PID: os.Getpid(), PIDStart: start, Command: c.Command, CreatedAt: time.Now().UTC(),
			TUNs: []string{labaddr.TUNName + "@" + NamespaceName(id, Client), labaddr.TUNName + "@" + NamespaceName(id, Server)},
		}
		for _, side := range c.sides() {
			st.Namespaces = append(st.Namespaces, NamespaceName(id, side))
		}
		if c.Resolver {
			st.EtcDirs = []string{filepath.Join(etcNetnsDir, NamespaceName(id, Client))}
		}
		err = createState(StateDir, st)
		if err == nil {
			t.ID, t.state, t.st = id, statePath(StateDir, id), st
			break
		}
		if !errors.Is(err, os.ErrExist) || attempt+1 >= idAttempts {
			release()
			return nil, fmt.Errorf("write state file: %w", err)
		}
	}
	// After the state file: a hold is released by Close, or by GC once the run is not live.
	if t.haltPoll, err = holdHaltPoll(t.ID, c.HaltPoll); err != nil {
		return nil, errors.Join(fmt.Errorf("halt polling: %w", err), t.Close())
	}
	if err := t.build(); err != nil {
		return nil, errors.Join(err, t.Close())
	}
	return t, nil
}

// sides are the namespaces the topology has: client and server, and the far side's of an egress
// topology to the local internet.
func (c *Config) sides() []Side {
	if c.Egress != nil && c.Egress.Far == FarInternet {
		return sides[:]
	}
	return sides[:2]
}

func checkCongCtl(name string) error {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if err != nil {
		return nil // cannot tell; the route will fail if it is wrong
	}
	for _, f := range splitFields(b) {
		if f == name {
			return nil
		}
	}
	return fmt.Errorf("cc: %q is not available in this kernel (available: %s)", name, string(b[:len(b)-1]))
}

// testHookStep lets tests fail Create after a given step.
var testHookStep = func(step string) error { return nil }

func (t *Topology) build() error {
	for _, side := range t.cfg.sides() {
		h, err := createNamed(t.Name(side))
		if err != nil {
			return err
		}
		t.ns[side] = h
		if t.nsID[side], err = nsIDOf(filepath.Join(netnsRunDir, t.Name(side))); err != nil {
			return err
		}
		if err := testHookStep("namespace-" + side.String()); err != nil {
			return err
		}
	}
	if t.cfg.Resolver {
		dir := filepath.Join(etcNetnsDir, t.Name(Client))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		conf := fmt.Sprintf("# wirelab run %s\nnameserver %s\nsearch wirelab.test\noptions ndots:1\n", t.ID, labaddr.DNSAddr)
		if err := os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte(conf), 0o644); err != nil {
			return err
		}
	}
	for _, side := range []Side{Client, Server} {
		dev, err := t.createTUN(side)
		if err != nil {
			return fmt.Errorf("%s TUN: %w", side, err)
		}
		t.tuns[side] = dev
		if err := testHookStep("tun-" + side.String()); err != nil {
			return err
		}
		if err := t.configure(side); err != nil {
			return fmt.Errorf("configure %s namespace: %w", side, err)
		}
		if err := testHookStep("configure-" + side.String()); err != nil {
			return err
		}
	}
	if t.cfg.Egress != nil {
		if err := t.buildEgress(); err != nil {
			return fmt.Errorf("egress: %w", err)
		}
	}
	return nil
}

// createTUN opens /dev/net/tun from a thread inside the side's namespace (the device is created
// in the namespace of the opener) and keeps the file descriptor in this process.
func (t *Topology) createTUN(side Side) (tun.Device, error) {
	var fd int = -1
	err := nsthread.In(t.ns[side], func() error {
		var err error
		fd, err = unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		ifr, err := unix.NewIfreq(labaddr.TUNName)
		if err != nil {
			return err
		}
		flags := uint16(unix.IFF_TUN | unix.IFF_NO_PI)
		if !t.cfg.NoOffload {
			flags |= unix.IFF_VNET_HDR
		}
		ifr.SetUint16(flags)
		return unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
	})
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return nil, err
	}
	// With IFF_VNET_HDR: TSO/USO/checksum offloads (GSO split on read, coalescing on write).
	dev, err := tundev.New(fd, labaddr.TUNName, t.cfg.MTU, !t.cfg.NoOffload)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return dev, nil
}

// configure brings up lo and the TUN device of one side and adds its addresses and route.
func (t *Topology) configure(side Side) error {
	h, err := netlink.NewHandleAt(vnetns.NsHandle(t.ns[side].Fd()))
	if err != nil {
		return err
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return err
	}
	if err := h.LinkSetUp(lo); err != nil {
		return err
	}
	dev, err := h.LinkByName(labaddr.TUNName)
	if err != nil {
		return err
	}
	if err := h.LinkSetMTU(dev, t.cfg.MTU); err != nil {
		return err
	}
	// The kernel's 500 is kept by default: with the emulator's real-time reader the devices
	// dropped nothing at 2.8 Gbit/s of TCP nor at 300,000 UDP datagrams/s (docs/network.md).
	if t.cfg.TxQueueLen > 0 {
		if err := h.LinkSetTxQLen(dev, t.cfg.TxQueueLen); err != nil {
			return err
		}
	}
	var addrs []net.IP
	route := &netlink.Route{LinkIndex: dev.Attrs().Index, Scope: netlink.SCOPE_LINK}
	var rc RouteConfig
	switch {
	case side == Client:
		addrs = []net.IP{labaddr.ClientAddr.AsSlice()}
		route.Dst = ipNet(labaddr.LabPrefix)
		rc = t.cfg.Client
	case t.cfg.Egress != nil: // the router: the DNS forwarder's address only
		addrs = []net.IP{labaddr.DNSAddr.AsSlice()}
		route.Dst = ipNet(labaddr.ClientPrefix)
	default:
		for n := 1; n <= t.cfg.Origins; n++ {
			addrs = append(addrs, labaddr.OriginAddr(n).AsSlice())
		}
		addrs = append(addrs, labaddr.DNSAddr.AsSlice())
		route.Dst = ipNet(labaddr.ClientPrefix)
		rc = t.cfg.Server
	}
	for _, a := range addrs {
		if err := h.AddrAdd(dev, &netlink.Addr{IPNet: &net.IPNet{IP: a, Mask: net.CIDRMask(32, 32)}}); err != nil {
			return fmt.Errorf("address %s: %w", a, err)
		}
	}
	// The lab is IPv4: without this the kernel sends IPv6 router solicitations and MLD reports
	// through the link, noise in captures and packet counts.
	_ = nsthread.SetSysctl(t.ns[side], "ipv6/conf/"+labaddr.TUNName+"/disable_ipv6", "1")
	if err := t.setECN(t.ns[side]); err != nil {
		return err
	}
	if err := h.LinkSetUp(dev); err != nil {
		return err
	}
	route.InitCwnd, route.InitRwnd, route.Congctl = rc.InitCwnd, rc.InitRwnd, rc.CongCtl
	if err := h.RouteAdd(route); err != nil {
		return fmt.Errorf("route %s: %w", route.Dst, err)
	}
	if side == Client && t.cfg.Egress != nil {
		// Everything else too crosses the emulated link to the router, which decides.
		def := *route
		def.Dst = ipNet(defaultRoute)
		if err := h.RouteAdd(&def); err != nil {
			return fmt.Errorf("default route: %w", err)
		}
	}
	return nil
}

// setECN turns TCP's ECN on in a namespace when the configuration asks for it.
func (t *Topology) setECN(ns *os.File) error {
	if !t.cfg.ECN {
		return nil
	}
	if err := nsthread.SetSysctl(ns, "ipv4/tcp_ecn", "1"); err != nil {
		return fmt.Errorf("tcp_ecn: %w", err)
	}
	return nil
}

// defaultRoute is the IPv4 default route's destination.
var defaultRoute = netip.MustParsePrefix("0.0.0.0/0")

// ipNet is a prefix as netlink takes it.
func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// Name is the namespace name of one side.
func (t *Topology) Name(side Side) string { return NamespaceName(t.ID, side) }

// TUN is the TUN device of one side; the emulator reads and writes it.
func (t *Topology) TUN(side Side) tun.Device { return t.tuns[side] }

// Config is the topology's configuration with defaults filled in.
func (t *Topology) Config() Config { return t.cfg }

// HaltPoll is the guest halt-polling window the run found and held (Config.HaltPoll); nil when the
// machine has no haltpoll driver.
func (t *Topology) HaltPoll() *HaltPollFact { return t.haltPoll }

// StatePath is the path of the run's state file.
func (t *Topology) StatePath() string { return t.state }

// OwnCgroups records control groups (their directories) that the run is about to create: Close
// removes them (killing what is left in them), and so does GC if the owner dies. Record before
// creating, so that nothing exists that the state file does not name.
func (t *Topology) OwnCgroups(dirs ...string) error {
	return t.own(func(st *state) { st.Cgroups = append(st.Cgroups, dirs...) })
}

// OwnDir records a private directory the run is about to create (its base name must contain the
// run's id, e.g. wirelab-lab-<id>): Close removes it, and so does GC if the owner dies.
func (t *Topology) OwnDir(dir string) error {
	if !filepath.IsAbs(dir) || !ownedDirPattern.MatchString(filepath.Base(dir)) || !strings.Contains(filepath.Base(dir), t.ID) {
		return fmt.Errorf("netns: %s is not a private directory of run %s (wirelab-<what>-%s)", dir, t.ID, t.ID)
	}
	return t.own(func(st *state) { st.Dirs = append(st.Dirs, dir) })
}

func (t *Topology) own(add func(*state)) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.st == nil {
		return errors.New("netns: the topology is closed")
	}
	next := *t.st
	next.Cgroups = append([]string(nil), t.st.Cgroups...)
	next.Dirs = append([]string(nil), t.st.Dirs...)
	add(&next)
	if err := replaceState(StateDir, &next); err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	t.st = &next
	return nil
}

// OriginAddrs lists the origin addresses of the topology.
func (t *Topology) OriginAddrs() []string {
	out := make([]string, t.cfg.Origins)
	for i := range out {
		out[i] = labaddr.OriginAddr(i + 1).String()
	}
	return out
}

// Sides are the topology's namespaces: client and server, and internet for an egress topology to
// the local internet.
func (t *Topology) Sides() []Side { return t.cfg.sides() }

// Do runs fn on an OS thread inside the side's network namespace. Sockets fn creates stay in
// that namespace after Do returns.
func (t *Topology) Do(side Side, fn func() error) error { return nsthread.In(t.ns[side], fn) }

// SetSysctl writes /proc/sys/net/<key> (e.g. "ipv4/tcp_wmem") in the side's namespace; it lasts
// as long as the namespace.
func (t *Topology) SetSysctl(side Side, key, value string) error {
	return nsthread.SetSysctl(t.ns[side], key, value)
}

// Command prepares argv to run inside the side's namespace, as `ip netns exec` does: its own mount
// namespace with /sys remounted and the files of /etc/netns/<name>/ (the run's resolv.conf) bound
// over /etc. The process leads its own process group and dies with this process (SIGKILL). Close
// terminates it and everything else still running in the namespace.
func (t *Topology) Command(side Side, argv ...string) *exec.Cmd {
	cmd := exec.Command("ip", append([]string{"netns", "exec", t.Name(side)}, argv...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	t.mu.Lock()
	t.cmds = append(t.cmds, cmd)
	t.mu.Unlock()
	return cmd
}

// DeviceStats are a TUN device's kernel counters.
type DeviceStats struct {
	TxPackets uint64 `json:"tx_packets"` // handed by the kernel to the emulator (GSO super-packets count once)
	RxPackets uint64 `json:"rx_packets"` // written by the emulator into the kernel
	TxDropped uint64 `json:"tx_dropped"` // dropped because the emulator did not read fast enough
	RxDropped uint64 `json:"rx_dropped"` // dropped on the way in from the emulator
}

// Dropped is every packet the device dropped.
func (s DeviceStats) Dropped() uint64 { return s.TxDropped + s.RxDropped }

// DeviceStats reads the TUN device counters of one side.
func (t *Topology) DeviceStats(side Side) (DeviceStats, error) {
	h, err := netlink.NewHandleAt(vnetns.NsHandle(t.ns[side].Fd()))
	if err != nil {
		return DeviceStats{}, err
	}
	defer h.Close()
	dev, err := h.LinkByName(labaddr.TUNName)
	if err != nil {
		return DeviceStats{}, err
	}
	s := dev.Attrs().Statistics
	if s == nil {
		return DeviceStats{}, errors.New("no statistics")
	}
	return DeviceStats{TxPackets: s.TxPackets, RxPackets: s.RxPackets, TxDropped: s.TxDropped, RxDropped: s.RxDropped}, nil
}

// SentPackets is how many packets one side's kernel has sent into its TUN device: the count of the
// device's root queueing discipline (sent or dropped there), which holds every packet whether or
// not anything reads the device — DeviceStats' TxPackets counts a packet only once it is read.
func (t *Topology) SentPackets(side Side) (uint64, error) {
	h, err := netlink.NewHandleAt(vnetns.NsHandle(t.ns[side].Fd()))
	if err != nil {
		return 0, err
	}
	defer h.Close()
	dev, err := h.LinkByName(labaddr.TUNName)
	if err != nil {
		return 0, err
	}
	qdiscs, err := h.QdiscList(dev)
	if err != nil {
		return 0, err
	}
	for _, q := range qdiscs {
		a := q.Attrs()
		if a.Parent != netlink.HANDLE_ROOT || a.Statistics == nil || a.Statistics.Basic == nil {
			continue
		}
		n := uint64(a.Statistics.Basic.Packets)
		if a.Statistics.Queue != nil {
			n += uint64(a.Statistics.Queue.Drops)
		}
		return n, nil
	}
	return 0, fmt.Errorf("%s: no root queueing discipline with statistics", labaddr.TUNName)
}

// KillGrace is how long Close waits after SIGTERM before it sends SIGKILL.
const KillGrace = time.Second

// killWait is how long Close waits for SIGKILLed processes to be gone before it goes on.
const killWait = 2 * time.Second

// Close terminates every process in the namespaces, closes the TUN devices (which removes them),
// deletes the namespaces and the resolver files, and finally the state file. It is idempotent.
func (t *Topology) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	cmds := t.cmds
	t.mu.Unlock()
	var errs []error
	// Our own children first, through os.Process (pidfd-based: never a recycled pid): they may not
	// have entered the namespace yet. Then everything living in the namespaces, daemons included.
	for _, c := range cmds {
		if c.Process != nil {
			_ = c.Process.Signal(syscall.SIGTERM)
		}
	}
	var pids []int
	for side := range t.ns {
		if t.ns[side] != nil {
			pids = append(pids, pidsIn(t.nsID[side])...)
		}
	}
	// Host-side processes (FarHost: the DNS forwarder) are among cmds, signalled above; nothing
	// else of the host's is touched.
	terminate(pids, KillGrace)
	for _, c := range cmds {
		if c.Process != nil {
			_ = c.Process.Kill()
		}
	}
	for side := range t.ns {
		if t.ns[side] != nil {
			// Stragglers that were forking while we signalled.
			terminate(pidsIn(t.nsID[side]), 0)
		}
	}
	for side, dev := range t.tuns {
		if dev != nil {
			if err := dev.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close %s TUN: %w", Side(side), err))
			}
		}
	}
	if t.eg != nil {
		t.eg.close()
	}
	for side, h := range t.ns {
		if h != nil {
			h.Close()
		}
		if t.ID != "" && slices.Contains(t.cfg.sides(), Side(side)) {
			if err := deleteNamed(t.Name(Side(side))); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if t.ID != "" {
		if t.cfg.Resolver {
			if err := os.RemoveAll(filepath.Join(etcNetnsDir, t.Name(Client))); err != nil {
				errs = append(errs, err)
			}
		}
		t.mu.Lock()
		st := t.st
		t.mu.Unlock()
		if st != nil {
			errs = append(errs, removeOwned(st, nil)...)
		}
		if len(errs) == 0 {
			if err := os.Remove(t.state); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	if t.unregisterTCPPlus != nil {
		// Last: no socket of the run can select it any more (sockets using it keep it anyway).
		if err := t.unregisterTCPPlus(); err != nil {
			errs = append(errs, fmt.Errorf("tcpplus: %w", err))
		}
	}
	return errors.Join(errs...)
}
