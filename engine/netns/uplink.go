package netns

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/internal/atomicfile"
	"github.com/wirelab/wirelab/engine/internal/nsthread"
)

// The host side of an egress topology (FarHost, docs/egress.md): the only objects of a run that are
// not inside its own namespaces. Each is recorded in the run's state file (state.Host) before it
// exists and removed by removeHostSide — Close's and GC's code alike:
//   - the veth end wirelab<id> with the far address of the run's /30 (a reserved slot of
//     HostUplinks) and IPv4 forwarding on it;
//   - the nftables table ip wirelab-<id>: masquerade of the router's address out of the default
//     route's interface, and a forward chain passing only the run's flows between the two (MSS
//     clamped to the route's MTU);
//   - a reference on IPv4 forwarding of the default route's interface, counted across runs in
//     UplinkDir: the first holder switches it on if it was off, the last one restores it; while it
//     is on because of wirelab, each holder's table drops new flows forwarded from that interface
//     anywhere but into a run.

// UplinkDir holds the host side's shared records: slot-<n> (the /30 of HostUplinks a run holds)
// and <netns inode>-<interface>.json (who holds forwarding on an interface, and its value before).
const UplinkDir = StateDir + "/uplink"

// hostLinkPrefix starts every host-side veth end (HostLinkName) and the guard's wildcard.
const hostLinkPrefix = "wirelab"

// HostTableName is the host side's nftables table (family ip) of a run.
func HostTableName(id string) string { return "wirelab-" + id }

// hostState is what a run created on the host, as its state file records it.
type hostState struct {
	// Netns is the namespace that stands for the host (Egress.HostNetns); "" = the owner's own.
	Netns string `json:"netns,omitempty"`
	// NetnsIno is that namespace's inode: GC touches the host side only in that very namespace.
	NetnsIno uint64 `json:"netns_ino"`
	// The veth end and the table are named after the run (HostLinkName, HostTableName).
	Slot  string `json:"slot,omitempty"`  // the reservation file of the run's /30
	Iface string `json:"iface,omitempty"` // the interface on which the run holds forwarding
}

// slots is how many /30s HostUplinks holds.
func slots() int { return 1 << (32 - 2 - HostUplinks.Bits()) }

func slotPrefix(n int) netip.Prefix {
	base := HostUplinks.Addr().As4()
	v := binary.BigEndian.Uint32(base[:]) + uint32(4*n)
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return netip.PrefixFrom(netip.AddrFrom4(b), 30)
}

func slotPath(n int) string { return filepath.Join(UplinkDir, "slot-"+strconv.Itoa(n)) }

// reserveHostSide finds the host's way out, records the host side in the state file and reserves
// a /30 for the run (a slot file created exclusively; one that overlaps an address or route of the
// host is skipped).
func (t *Topology) reserveHostSide() (Uplink, error) {
	e := t.eg
	u := Uplink{Far: FarHost, FarLink: HostLinkName(t.ID)}
	ino, err := nsInode(e.host)
	if err != nil {
		return u, err
	}
	h, err := netlink.NewHandleAt(vnetns.NsHandle(e.host.Fd()))
	if err != nil {
		return u, err
	}
	defer h.Close()
	iface, err := defaultIface(h)
	if err != nil {
		return u, err
	}
	u.HostIface = iface
	hs := &hostState{Netns: t.cfg.Egress.HostNetns, NetnsIno: ino}
	if err := t.own(func(st *state) { st.Host = hs }); err != nil {
		return u, err
	}
	if err := os.MkdirAll(UplinkDir, 0o755); err != nil {
		return u, err
	}
	// The id is random (8 hex digits): runs start their search in different places.
	id, _ := strconv.ParseUint(t.ID, 16, 32)
	start := int(id % uint64(slots()))
	for i := range slots() {
		n := (start + i) % slots()
		p := slotPrefix(n)
		if hostUses(h, p) {
			continue
		}
		path := slotPath(n)
		if _, err := os.Stat(path); err == nil {
			continue
		}
		next := *hs
		next.Slot = path
		if err := t.own(func(st *state) { st.Host = &next }); err != nil {
			return u, err
		}
		if err := atomicfile.Create(path, []byte(t.ID+"\n"), 0o644); err != nil {
			if errors.Is(err, os.ErrExist) {
				continue
			}
			return u, err
		}
		*hs = next
		u.Prefix = p
		u.Router, u.FarEnd = uplinkOf(p)
		return u, nil
	}
	return u, fmt.Errorf("egress: no free /30 in %s for the uplink (%d runs at once at most)", HostUplinks, slots())
}

// defaultIface is the interface of the namespace's IPv4 default route.
func defaultIface(h *netlink.Handle) (string, error) {
	routes, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return "", err
	}
	for _, r := range routes {
		if p, ok := prefixOf(r.Dst); r.Dst == nil || (ok && p.Bits() == 0) {
			l, err := h.LinkByIndex(r.LinkIndex)
			if err != nil {
				return "", err
			}
			return l.Attrs().Name, nil
		}
	}
	return "", errors.New("egress: the host has no IPv4 default route: public sites cannot be reached from it")
}

// prefixOf is a netlink address or route destination as a prefix.
func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), ones), ok
}

// hostUses reports whether an address or a route (other than a default one) of the host overlaps p.
func hostUses(h *netlink.Handle, p netip.Prefix) bool {
	var used []*net.IPNet
	addrs, _ := h.AddrList(nil, netlink.FAMILY_V4)
	for _, a := range addrs {
		used = append(used, a.IPNet)
	}
	routes, _ := h.RouteList(nil, netlink.FAMILY_V4)
	for _, r := range routes {
		used = append(used, r.Dst)
	}
	for _, n := range used {
		if q, ok := prefixOf(n); ok && q.Bits() > 0 && q.Overlaps(p) {
			return true
		}
	}
	return false
}

// buildHostSide finishes the host side once the uplink exists: forwarding on the run's veth end,
// the reference on the way out, the run's table.
func (t *Topology) buildHostSide() error {
	e := t.eg
	u := e.uplink
	if err := nsthread.SetSysctl(e.host, forwardingKey(u.FarLink), "1"); err != nil {
		return fmt.Errorf("forwarding on %s: %w", u.FarLink, err)
	}
	t.mu.Lock()
	hs := *t.st.Host
	t.mu.Unlock()
	hs.Iface = u.HostIface
	if err := t.own(func(st *state) { st.Host = &hs }); err != nil {
		return err
	}
	guard, err := holdForwarding(e.host, hs.Netns, hs.NetnsIno, u.HostIface, t.ID)
	if err != nil {
		return err
	}
	if err := testHookStep("egress-forwarding"); err != nil {
		return err
	}
	return installHostTable(e.host, HostTableName(t.ID), u, guard)
}

// installHostTable writes the run's table on the host: NAT out of the way out, the run's flows
// between its veth end and the way out, nothing else to or from the run; with guard, no new flow
// forwarded from the way out except into a run.
func installHostTable(ns *os.File, name string, u Uplink, guard bool) error {
	c, err := nftables.New(nftables.WithNetNSFd(int(ns.Fd())))
	if err != nil {
		return err
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: name})
	nat := c.AddChain(&nftables.Chain{Name: "postrouting", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource})
	router := u.Router.As4()
	c.AddRule(&nftables.Rule{Table: t, Chain: nat, Exprs: []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: router[:]},
		&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname(u.HostIface)},
		&expr.Masq{},
	}})
	policy := nftables.ChainPolicyAccept // the host's other forwarding is none of this table's business
	fwd := c.AddChain(&nftables.Chain{Name: "forward", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter, Policy: &policy})
	out := append(matchIf(expr.MetaKeyIIFNAME, expr.CmpOpEq, ifname(u.FarLink)), matchIf(expr.MetaKeyOIFNAME, expr.CmpOpEq, ifname(u.HostIface))...)
	in := append(matchIf(expr.MetaKeyIIFNAME, expr.CmpOpEq, ifname(u.HostIface)), matchIf(expr.MetaKeyOIFNAME, expr.CmpOpEq, ifname(u.FarLink))...)
	for _, dir := range [][]expr.Any{out, in} {
		c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: append(append([]expr.Any(nil), dir...), clampMSS()...)})
	}
	c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: append(append([]expr.Any(nil), out...), accept())})
	c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: append(append(append([]expr.Any(nil), in...), ctState(ctEstablished)...), accept())})
	drop := &expr.Verdict{Kind: expr.VerdictDrop}
	c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: append(matchIf(expr.MetaKeyIIFNAME, expr.CmpOpEq, ifname(u.FarLink)), drop)})
	c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: append(matchIf(expr.MetaKeyOIFNAME, expr.CmpOpEq, ifname(u.FarLink)), drop)})
	if guard {
		// iifname WAYOUT oifname != "wirelab*" ct state new drop: the host forwards nothing it did
		// not forward before wirelab switched forwarding on.
		e := append(matchIf(expr.MetaKeyIIFNAME, expr.CmpOpEq, ifname(u.HostIface)), matchIf(expr.MetaKeyOIFNAME, expr.CmpOpNeq, []byte(hostLinkPrefix))...)
		e = append(append(e, ctState(expr.CtStateBitNEW)...), drop)
		c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: e})
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("host table %s: %w", name, err)
	}
	return nil
}

// clampMSS is `tcp flags syn tcp option maxseg size set rt mtu`: a SYN's (and SYN-ACK's) MSS is
// lowered to what the route's MTU carries (the host's way out may have a smaller MTU than the
// run's 1500: 1400 on this project's machines); the kernel never raises it.
func clampMSS() []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 13, Len: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 1, Mask: []byte{0x02}, Xor: []byte{0}},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{0}},
		&expr.Rt{Register: 1, Key: expr.RtTCPMSS},
		&expr.Byteorder{SourceRegister: 1, DestRegister: 1, Op: expr.ByteorderHton, Len: 2, Size: 2},
		&expr.Exthdr{SourceRegister: 1, Type: 2, Offset: 2, Len: 2, Op: expr.ExthdrOpTcpopt},
	}
}

// forwardingRecord is UplinkDir/<inode>-<interface>.json: the runs that need forwarding on an
// interface of a namespace, and its value before the first of them.
type forwardingRecord struct {
	Iface    string   `json:"iface"`
	Netns    string   `json:"netns,omitempty"` // as hostState.Netns
	NetnsIno uint64   `json:"netns_ino"`
	Was      string   `json:"was"` // "0" or "1"
	Holders  []string `json:"holders"`
}

func forwardingPath(ino uint64, iface string) string {
	return filepath.Join(UplinkDir, fmt.Sprintf("%d-%s.json", ino, iface))
}

// lockUplinks takes the host side's lock (flock on UplinkDir/lock) and returns its release.
func lockUplinks() (func(), error) { return lockDir(UplinkDir) }

// forwardingKey is the sysctl of IPv4 forwarding on one interface (nsthread.SetSysctl's key).
func forwardingKey(ifc string) string { return "ipv4/conf/" + ifc + "/forwarding" }

// holdForwarding adds run id to the holders of forwarding on iface (in ns, inode ino), switching
// it on if it was off. guard is true when it was off before wirelab.
func holdForwarding(ns *os.File, nsName string, ino uint64, iface, id string) (guard bool, err error) {
	unlock, err := lockUplinks()
	if err != nil {
		return false, err
	}
	defer unlock()
	path := forwardingPath(ino, iface)
	var rec forwardingRecord
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &rec); err != nil {
			return false, fmt.Errorf("%s: %w", path, err)
		}
	} else if errors.Is(err, os.ErrNotExist) {
		rec = forwardingRecord{Iface: iface, Netns: nsName, NetnsIno: ino}
		if rec.Was, err = nsthread.Sysctl(ns, forwardingKey(iface)); err != nil {
			return false, fmt.Errorf("forwarding on %s: %w", iface, err)
		}
	} else {
		return false, err
	}
	if !slices.Contains(rec.Holders, id) {
		rec.Holders = append(rec.Holders, id)
	}
	b, _ := json.MarshalIndent(rec, "", "  ")
	if err := atomicfile.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return false, err
	}
	if rec.Was == "0" {
		if err := nsthread.SetSysctl(ns, forwardingKey(iface), "1"); err != nil {
			return false, fmt.Errorf("forwarding on %s: %w", iface, err)
		}
	}
	return rec.Was == "0", nil
}

// releaseForwarding removes the holders for which drop is true; when none is left, the value from
// before the first is restored and the record removed. Caller holds the lock.
func releaseForwarding(path string, drop func(id string) bool) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var rec forwardingRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	kept := slices.DeleteFunc(slices.Clone(rec.Holders), drop)
	if len(kept) == len(rec.Holders) {
		return nil
	}
	if len(kept) > 0 {
		rec.Holders = kept
		b, _ := json.MarshalIndent(rec, "", "  ")
		return atomicfile.WriteFile(path, append(b, '\n'), 0o644)
	}
	if rec.Was == "0" || rec.Was == "1" {
		ns, err := hostNetnsFor(rec.Netns, rec.NetnsIno)
		if err != nil {
			return err
		}
		if ns != nil {
			err := nsthread.SetSysctl(ns, forwardingKey(rec.Iface), rec.Was)
			ns.Close()
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("restore forwarding on %s: %w", rec.Iface, err)
			}
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// hostNetnsFor opens the namespace a host side was made in, if it is still there: a named one
// whose inode matches, or this process's own when it is that one. nil, nil when it is gone (then
// so is everything made in it).
func hostNetnsFor(name string, ino uint64) (*os.File, error) {
	f, err := openHostNetns(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if got, err := nsInode(f); err != nil || got != ino {
		f.Close()
		return nil, nil
	}
	return f, nil
}

// removeHostSide removes what run id made on the host: its veth end, its table, its hold on
// forwarding, its slot. Close and GC both call it; rep, when not nil, lists what was removed.
func removeHostSide(id string, hs *hostState, rep *GCReport) []error {
	var errs []error
	note := func(what string) {
		if rep != nil {
			rep.Removed = append(rep.Removed, what)
		}
	}
	ns, err := hostNetnsFor(hs.Netns, hs.NetnsIno)
	if err != nil {
		errs = append(errs, err)
	}
	if ns != nil {
		errs = append(errs, removeHostObjects(ns, HostLinkName(id), HostTableName(id), note)...)
		ns.Close()
	}
	if hs.Iface != "" {
		unlock, err := lockUplinks()
		if err != nil {
			errs = append(errs, err)
		} else {
			path := forwardingPath(hs.NetnsIno, hs.Iface)
			if err := releaseForwarding(path, func(h string) bool { return h == id }); err != nil {
				errs = append(errs, err)
			} else {
				note("forwarding hold on " + hs.Iface)
			}
			unlock()
		}
	}
	if hs.Slot != "" && filepath.Dir(hs.Slot) == UplinkDir && strings.HasPrefix(filepath.Base(hs.Slot), "slot-") {
		if slotOwner(hs.Slot) == id {
			if err := os.Remove(hs.Slot); err != nil {
				errs = append(errs, err)
			} else {
				note(hs.Slot)
			}
		}
	}
	return errs
}

// removeHostObjects deletes a run's veth end (link) and table in the host namespace ns, those that
// are there: the one place that removes them, for removeHostSide and gcHostOrphans. note receives
// what went.
func removeHostObjects(ns *os.File, link, table string, note func(string)) []error {
	var errs []error
	if link != "" {
		if h, err := netlink.NewHandleAt(vnetns.NsHandle(ns.Fd())); err == nil {
			// The link may be going already: it goes with the router namespace's end.
			if l, err := h.LinkByName(link); err == nil {
				if err := h.LinkDel(l); err == nil {
					note("link " + link)
				} else if !errors.Is(err, unix.ENODEV) {
					errs = append(errs, fmt.Errorf("host link %s: %w", link, err))
				}
			}
			h.Close()
		}
	}
	if table != "" {
		if c, err := nftables.New(nftables.WithNetNSFd(int(ns.Fd()))); err == nil {
			tables, _ := c.ListTablesOfFamily(nftables.TableFamilyIPv4)
			for _, t := range tables {
				if t.Name != table {
					continue
				}
				c.DelTable(t)
				if err := c.Flush(); err != nil {
					errs = append(errs, fmt.Errorf("host table %s: %w", table, err))
				} else {
					note("nftables table ip " + table)
				}
			}
		}
	}
	return errs
}

// slotOwner is the run id a slot file names ("" when it cannot be read).
func slotOwner(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// gcUplinks drops the forwarding holds and slots of runs that are not live (no state file, or
// a dead owner): what a run killed between its records and its state file's removal left. live
// holds the ids of the runs GC found live; any other holder's state file is read again under the
// lock (runLive), since a run created after GC listed the states holds with a state file it has
// not seen.
func gcUplinks(live map[string]bool, rep *GCReport) []error {
	dead := func(id string) bool { return !live[id] && !runLive(id) }
	var errs []error
	entries, err := os.ReadDir(UplinkDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return []error{err}
	}
	unlock, err := lockUplinks()
	if err != nil {
		return []error{err}
	}
	defer unlock()
	for _, e := range entries {
		path := filepath.Join(UplinkDir, e.Name())
		switch {
		case strings.HasSuffix(e.Name(), ".json"):
			if err := releaseForwarding(path, dead); err != nil {
				errs = append(errs, err)
			}
		case strings.HasPrefix(e.Name(), "slot-"):
			if id := slotOwner(path); id != "" && dead(id) {
				if err := os.Remove(path); err == nil {
					rep.Removed = append(rep.Removed, path)
				}
			}
		}
	}
	return errs
}

// hostIDPattern matches the run id in a host-side veth end's or table's name.
var hostIDPattern = regexp.MustCompile(`^wirelab-?([0-9a-f]{8})$`)

// gcHostOrphans removes, in this process's namespace, host-side veth ends (wirelab<id>) and tables
// (ip wirelab-<id>) of runs that are not live.
func gcHostOrphans(live map[string]bool, rep *GCReport) []error {
	orphan := func(name string, named func(string) string) string {
		if m := hostIDPattern.FindStringSubmatch(name); m != nil && name == named(m[1]) && !live[m[1]] {
			return name
		}
		return ""
	}
	var links, tables []string
	all, _ := netlink.LinkList()
	for _, l := range all {
		if n := orphan(l.Attrs().Name, HostLinkName); n != "" {
			links = append(links, n)
		}
	}
	if c, err := nftables.New(); err == nil {
		ts, _ := c.ListTablesOfFamily(nftables.TableFamilyIPv4) // an error: no nftables, nothing of ours
		for _, t := range ts {
			if n := orphan(t.Name, HostTableName); n != "" {
				tables = append(tables, n)
			}
		}
	}
	if len(links)+len(tables) == 0 {
		return nil
	}
	self, err := os.Open("/proc/self/ns/net")
	if err != nil {
		return []error{err}
	}
	defer self.Close()
	note := func(what string) { rep.Removed = append(rep.Removed, what) }
	var errs []error
	for _, l := range links {
		errs = append(errs, removeHostObjects(self, l, "", note)...)
	}
	for _, t := range tables {
		errs = append(errs, removeHostObjects(self, "", t, note)...)
	}
	return errs
}
