// Package policy is the one address policy of everything that contacts a site: which names may be
// resolved and which addresses may be sent a packet (docs/probe.md, "Safety"; docs/egress.md). The
// probe, the loaders (fetch, browse), the egress router's DNS forwarder and the live trial's
// planning step all ask it.
package policy

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/wirelab/wirelab/engine/labaddr"
)

// The address policy. Without AllowInternet a probe or a load contacts only
// addresses of the run's own namespaces, and only names under wirelab.test are resolved (through a
// resolver that is itself in the run's namespaces): no packet leaves the run. With AllowInternet
// any public address may be probed, but special-purpose addresses (private, loopback, link-local,
// documentation, …; SpecialPurpose) are still refused unless they belong to the run's namespaces.
// The check runs on every resolved address, after resolution and before any packet is sent to
// the site, and the probe then connects to exactly the addresses that passed it.

// LabDomain is the zone of the run's own names.
const LabDomain = "wirelab.test"

// Policy decides which sites and addresses may be contacted.
type Policy struct {
	// AllowInternet permits public names and addresses (the --allow-internet flag).
	AllowInternet bool
	// Own reports whether an address belongs to the run's own namespaces. Default (nil):
	// OwnRoute. Tests on loopback set their own.
	Own func(netip.Addr) bool
}

// ErrRefused is wrapped by every refusal.
var ErrRefused = errors.New("refused by the address policy")

// RefusedError is a site or address the policy refuses.
type RefusedError struct {
	What   string // the site (or resolver) as the user knows it
	Addr   string // the address refused ("" when refused by name)
	Reason string
}

func (e *RefusedError) Error() string {
	if e.Addr != "" && e.Addr != e.What {
		return fmt.Sprintf("%s resolves to %s, %s", e.What, e.Addr, e.Reason)
	}
	return fmt.Sprintf("%s: %s", e.What, e.Reason)
}

func (e *RefusedError) Unwrap() error { return ErrRefused }

func (p Policy) own(a netip.Addr) bool {
	if p.Own != nil {
		return p.Own(a)
	}
	return OwnRoute(a)
}

// IsLabName reports whether host is a name of the run's zone (wirelab.test and below).
func IsLabName(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	return host == LabDomain || strings.HasSuffix(host, "."+LabDomain)
}

// CheckName is the check of a host name before resolution: without AllowInternet only names under
// wirelab.test may be resolved, so that no query for a public name is sent either. what is the
// site as the user gave it.
func (p Policy) CheckName(what, host string) error {
	if p.AllowInternet || IsLabName(host) {
		return nil
	}
	return &RefusedError{What: what, Reason: "a public name; only *." + LabDomain + " names of this run are probed without --allow-internet"}
}

// CheckAddr is the check after resolution: what may be sent a packet.
func (p Policy) CheckAddr(what string, a netip.Addr) error { return p.checkAddr(what, a, nil) }

// checkAddr is the one address rule of a probe, a loader and a load test's target (t non-nil):
// the run's own addresses pass (a target's loopback too); a special-purpose address is refused
// even with AllowInternet — except, for a target, a private one the user named, which passes with
// AllowInternet; any other address needs AllowInternet.
func (p Policy) checkAddr(what string, a netip.Addr, t *Target) error {
	a = a.Unmap()
	if p.own(a) || (t != nil && a.IsLoopback()) {
		return nil
	}
	name, special := SpecialPurpose(a)
	switch {
	case special && t != nil && Private(a):
		if !t.named(a) {
			return &RefusedError{What: what, Addr: a.String(), Reason: "a private address (" + name + ") the spec does not name; a private target must be named in target.url, target.resolve or target.origins, and loaded with --allow-internet"}
		}
		if !p.AllowInternet {
			return &RefusedError{What: what, Addr: a.String(), Reason: "a private address outside this run's namespaces; loading it needs --allow-internet on the command line"}
		}
	case special:
		return &RefusedError{What: what, Addr: a.String(), Reason: fmt.Sprintf("a special-purpose address (%s), refused even with --allow-internet", name)}
	case !p.AllowInternet && t != nil:
		return &RefusedError{What: what, Addr: a.String(), Reason: "not loopback nor an address of this run's namespaces; loading it needs --allow-internet on the command line"}
	case !p.AllowInternet:
		return &RefusedError{What: what, Addr: a.String(), Reason: "not an address of this run's namespaces; live targets need --allow-internet"}
	}
	return nil
}

// CheckResolver is the check of the DNS server a name is resolved through: without AllowInternet
// it must be in the run's namespaces too (a query sent elsewhere would leave the run).
func (p Policy) CheckResolver(server string) error {
	host, _, err := net.SplitHostPort(server)
	if err != nil {
		return fmt.Errorf("resolver %q: want IP:port", server)
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("resolver %q: want an IP address", server)
	}
	if p.AllowInternet || p.own(a.Unmap()) {
		return nil
	}
	return &RefusedError{What: "the resolver " + server, Reason: "not in this run's namespaces; run the probe inside a wirelab run (wirelab-engine sites, wirelab probe --local) or pass --allow-internet"}
}

// OwnRoute reports whether a belongs to the run's namespaces as seen from the calling process's
// network namespace: it is in the lab's block (labaddr.LabPrefix) and the kernel routes it over the
// run's TUN device (labaddr.TUNName). Outside a run's client namespace nothing is own.
func OwnRoute(a netip.Addr) bool {
	a = a.Unmap()
	if !a.Is4() || !labaddr.LabPrefix.Contains(a) {
		return false
	}
	routes, err := netlink.RouteGet(a.AsSlice())
	if err != nil || len(routes) == 0 {
		return false
	}
	link, err := netlink.LinkByIndex(routes[0].LinkIndex)
	return err == nil && link.Attrs().Name == labaddr.TUNName
}

// specialBlock is one entry of IANA's special-purpose address registries.
type specialBlock struct {
	prefix netip.Prefix
	name   string
}

// specialPurpose is IANA's IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890 and
// updates), restricted to the blocks that are not globally reachable, plus multicast.
var specialPurpose = func() []specialBlock {
	var out []specialBlock
	for _, b := range []struct{ p, n string }{
		{"0.0.0.0/8", "this network"},
		{"10.0.0.0/8", "private"},
		{"100.64.0.0/10", "shared address space"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local"},
		{"172.16.0.0/12", "private"},
		{"192.0.0.0/24", "IETF protocol assignments"},
		{"192.0.2.0/24", "documentation (TEST-NET-1)"},
		{"192.88.99.0/24", "6to4 relay anycast"},
		{"192.168.0.0/16", "private"},
		{"198.18.0.0/15", "benchmarking"},
		{"198.51.100.0/24", "documentation (TEST-NET-2)"},
		{"203.0.113.0/24", "documentation (TEST-NET-3)"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved"},
		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"64:ff9b:1::/48", "local-use IPv4/IPv6 translation"},
		{"100::/64", "discard-only"},
		{"2001::/23", "IETF protocol assignments"},
		{"2001:db8::/32", "documentation"},
		{"2002::/16", "6to4"},
		{"3fff::/20", "documentation"},
		{"5f00::/16", "segment routing SIDs"},
		{"fc00::/7", "unique local"},
		{"fe80::/10", "link-local"},
		{"ff00::/8", "multicast"},
	} {
		out = append(out, specialBlock{netip.MustParsePrefix(b.p), b.n})
	}
	return out
}()

// SpecialPurpose reports whether a is in a special-purpose block (not globally reachable, or
// multicast) and names the block. IPv4-mapped IPv6 addresses are judged as IPv4.
func SpecialPurpose(a netip.Addr) (string, bool) {
	a = a.Unmap()
	if !a.IsValid() {
		return "invalid", true
	}
	for _, b := range specialPurpose {
		if b.prefix.Contains(a) {
			return b.name, true
		}
	}
	return "", false
}

// Private reports whether a is in an RFC 1918 private block (10/8, 172.16/12, 192.168/16): the
// one kind of special-purpose address an external load-test target may have (a staging server),
// and only when the user names it and passes --allow-internet (Target).
func Private(a netip.Addr) bool {
	a = a.Unmap()
	return a.Is4() && a.IsPrivate()
}

// Target is the address policy of a load test of an external target (docs/loadtest.md, "External
// targets"): only the target's host and the origins the user lists may be requested, and every
// address a VU dials must be
//   - loopback, or one of the run's own namespaces (Own, default OwnRoute) — no flag needed;
//   - public, only with AllowInternet (set by --allow-internet on the command line, never by a file);
//   - private (RFC 1918), only with AllowInternet and when the user named that very address: as an
//     IP literal of the target's URL or of an origin, or as a value of target.resolve (Named);
//   - any other special-purpose address (link-local and the cloud metadata service 169.254.169.254,
//     multicast, documentation, benchmarking, shared address space, …): never.
type Target struct {
	// Policy: AllowInternet (--allow-internet, never from a file) and Own (the run's namespaces;
	// default OwnRoute, as for every address check).
	Policy
	// Hosts are the names and IP literals that may be requested (the target's host and
	// target.origins), lower case; nil allows any host (the addresses are still checked).
	Hosts []string
	// Named are the addresses the user wrote (private ones pass only if named).
	Named []netip.Addr
}

// CheckHost refuses a host that is neither the target's nor a listed origin.
func (t Target) CheckHost(host string) error {
	if t.Hosts == nil {
		return nil
	}
	h := strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	for _, ok := range t.Hosts {
		if h == ok {
			return nil
		}
	}
	return &RefusedError{What: host, Reason: "not the target's host nor one of target.origins (" + strings.Join(t.Hosts, ", ") + "); list the origins the VUs may contact"}
}

// CheckAddr is the check of an address before a packet is sent to it (Policy's rule, with the
// target's loopback and named private addresses).
func (t Target) CheckAddr(what string, a netip.Addr) error { return t.checkAddr(what, a, &t) }

func (t Target) named(a netip.Addr) bool {
	for _, n := range t.Named {
		if n.Unmap() == a {
			return true
		}
	}
	return false
}
