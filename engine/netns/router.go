package netns

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/wirelab/wirelab/engine/internal/nsthread"
	"github.com/wirelab/wirelab/engine/labaddr"
	"golang.org/x/sys/unix"
)

// The egress router's rules (docs/egress.md), in the router namespace — the run's own, so they go
// with it: table ip wirelab with the set of admitted addresses, a forward chain that passes the
// client's new flows only to admitted addresses on the web's ports and rejects (and counts) the rest,
// and source NAT onto the uplink.

// RouterTable is the router namespace's nftables table (family ip).
const RouterTable = "wirelab"

// AdmittedSet is the set of addresses the client may reach through the router.
const AdmittedSet = "admitted"

// WebPorts are the destinations a new flow through the router may have: TCP 80 and 443 (h1, h2c;
// TLS), UDP 443 (QUIC).
var WebPorts = []struct {
	Proto uint8
	Port  uint16
}{{unix.IPPROTO_TCP, 80}, {unix.IPPROTO_TCP, 443}, {unix.IPPROTO_UDP, 443}}

// icmpAdminProhibited is ICMP destination unreachable's code 13, "communication administratively
// prohibited" (RFC 1812): a TCP connect fails at once with EHOSTUNREACH.
const icmpAdminProhibited = 13

// ruleRefused tags the rule whose counter is RouterCounters' Refused.
const ruleRefused = "refused"

func routerTable() *nftables.Table {
	return &nftables.Table{Family: nftables.TableFamilyIPv4, Name: RouterTable}
}

func admittedSet(t *nftables.Table) *nftables.Set {
	return &nftables.Set{Table: t, Name: AdmittedSet, KeyType: nftables.TypeIPAddr}
}

// ifname is an interface name as nftables' meta iifname/oifname compares it (IFNAMSIZ, NUL-padded).
func ifname(n string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, n)
	return b
}

// matchIf is `meta iifname|oifname NAME` (key MetaKeyIIFNAME or MetaKeyOIFNAME); with op Neq and
// a name shorter than IFNAMSIZ without its NUL, a prefix (nft's "name*").
func matchIf(key expr.MetaKey, op expr.CmpOp, name []byte) []expr.Any {
	return []expr.Any{&expr.Meta{Key: key, Register: 1}, &expr.Cmp{Op: op, Register: 1, Data: name}}
}

// ctEstablished is the conntrack states `established,related` (ctState's bits).
const ctEstablished = expr.CtStateBitESTABLISHED | expr.CtStateBitRELATED

// ctState is `ct state S` for the states' bits (expr.CtStateBit…).
func ctState(bits uint32) []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeySTATE},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(bits), Xor: binaryutil.NativeEndian.PutUint32(0)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{0, 0, 0, 0}},
	}
}

func accept() *expr.Verdict { return &expr.Verdict{Kind: expr.VerdictAccept} }

// installRouter writes the router's table into the namespace ns. Nothing is admitted yet.
func installRouter(ns *os.File) error {
	c, err := nftables.New(nftables.WithNetNSFd(int(ns.Fd())))
	if err != nil {
		return err
	}
	t := c.AddTable(routerTable())
	set := admittedSet(t)
	if err := c.AddSet(set, nil); err != nil {
		return err
	}
	drop := nftables.ChainPolicyDrop
	fwd := c.AddChain(&nftables.Chain{Name: "forward", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter, Policy: &drop})
	c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: append(ctState(ctEstablished), accept())})
	fromClient := append(matchIf(expr.MetaKeyIIFNAME, expr.CmpOpEq, ifname(labaddr.TUNName)),
		matchIf(expr.MetaKeyOIFNAME, expr.CmpOpEq, ifname(UplinkName))...)
	for _, p := range WebPorts {
		e := append([]expr.Any(nil), fromClient...)
		e = append(e,
			// ip daddr @admitted
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
			&expr.Lookup{SourceRegister: 1, SetName: set.Name, SetID: set.ID},
			// meta l4proto P th dport N
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{p.Proto}},
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(p.Port)},
			accept())
		c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: e})
	}
	// Anything else the client sends through: rejected at once (a loader fails instead of waiting
	// out a timeout), and counted.
	c.AddRule(&nftables.Rule{Table: t, Chain: fwd, UserData: []byte(ruleRefused), Exprs: append(
		matchIf(expr.MetaKeyIIFNAME, expr.CmpOpEq, ifname(labaddr.TUNName)),
		&expr.Counter{},
		&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: icmpAdminProhibited})})
	nat := c.AddChain(&nftables.Chain{Name: "postrouting", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource})
	c.AddRule(&nftables.Rule{Table: t, Chain: nat, Exprs: append(
		matchIf(expr.MetaKeyOIFNAME, expr.CmpOpEq, ifname(UplinkName)), &expr.Masq{})})
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	return nil
}

// admit adds IPv4 addresses to the admitted set of the router namespace ns.
func admit(ns *os.File, addrs []netip.Addr) error {
	var elems []nftables.SetElement
	for _, a := range addrs {
		a = a.Unmap()
		if !a.Is4() {
			return fmt.Errorf("admit %s: the egress path is IPv4", a)
		}
		b := a.As4()
		elems = append(elems, nftables.SetElement{Key: b[:]})
	}
	if len(elems) == 0 {
		return nil
	}
	c, err := nftables.New(nftables.WithNetNSFd(int(ns.Fd())))
	if err != nil {
		return err
	}
	if err := c.SetAddElements(admittedSet(routerTable()), elems); err != nil {
		return err
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("admit: %w", err)
	}
	return nil
}

// Admit lets the client reach addrs through the egress router (TCP 80 and 443, UDP 443): the
// planning step's addresses. Every address must be IPv4 and have passed the address policy.
func (t *Topology) Admit(addrs ...netip.Addr) error {
	if t.eg == nil {
		return errors.New("netns: not an egress topology")
	}
	return admit(t.ns[Server], addrs)
}

// AdmitIn is Admit from another process: namespace names a run's router namespace
// (wirelab-<id>-s) — the DNS forwarder's way (docs/egress.md).
func AdmitIn(namespace string, addrs ...netip.Addr) error {
	f, err := openRunNamespace(namespace)
	if err != nil {
		return err
	}
	defer f.Close()
	return admit(f, addrs)
}

// openRunNamespace opens a run's named namespace (wirelab-<id>-c|s|i) in /run/netns.
func openRunNamespace(namespace string) (*os.File, error) {
	if !namespacePattern.MatchString(namespace) {
		return nil, fmt.Errorf("netns: %q is not a run's namespace", namespace)
	}
	return os.Open(filepath.Join(netnsRunDir, namespace))
}

// DoIn runs fn on an OS thread inside the named namespace of /run/netns (a run's); sockets fn
// creates stay there (the DNS forwarder's listening sockets in the router namespace).
func DoIn(namespace string, fn func() error) error {
	f, err := openRunNamespace(namespace)
	if err != nil {
		return err
	}
	defer f.Close()
	return nsthread.In(f, fn)
}

// RouterCounters is what the egress router let through and what it refused.
type RouterCounters struct {
	Admitted []netip.Addr // the admitted set, in the kernel's order
	Refused  uint64       // packets from the client rejected (no admitted address, or another port)
}

// RouterCounters reads the egress router's set and counter.
func (t *Topology) RouterCounters() (RouterCounters, error) {
	var rc RouterCounters
	if t.eg == nil {
		return rc, errors.New("netns: not an egress topology")
	}
	c, err := nftables.New(nftables.WithNetNSFd(int(t.ns[Server].Fd())))
	if err != nil {
		return rc, err
	}
	tbl := routerTable()
	elems, err := c.GetSetElements(admittedSet(tbl))
	if err != nil {
		return rc, fmt.Errorf("admitted set: %w", err)
	}
	for _, e := range elems {
		if a, ok := netip.AddrFromSlice(e.Key); ok {
			rc.Admitted = append(rc.Admitted, a)
		}
	}
	rules, err := c.GetRules(tbl, &nftables.Chain{Name: "forward", Table: tbl})
	if err != nil {
		return rc, fmt.Errorf("forward chain: %w", err)
	}
	for _, r := range rules {
		if string(r.UserData) != ruleRefused {
			continue
		}
		for _, e := range r.Exprs {
			if ctr, ok := e.(*expr.Counter); ok {
				rc.Refused = ctr.Packets
			}
		}
	}
	return rc, nil
}
