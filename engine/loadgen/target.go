package loadgen

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/wirelab/wirelab/engine/policy"
)

// RunServerOwn adds a cluster run's own server address (Spec.RunServer) to own: the address is
// admitted as the run's (an invalid addr adds nothing).
func RunServerOwn(addr netip.Addr, own func(netip.Addr) bool) func(netip.Addr) bool {
	if !addr.IsValid() {
		return own
	}
	return func(a netip.Addr) bool { return a.Unmap() == addr || (own != nil && own(a)) }
}

// CheckRunServer refuses an address that cannot be a run's server on a cluster worker: it must be
// IPv4 (the egress router forwards IPv4), unicast, not loopback, and not special-purpose except
// private (RFC 1918) — cluster workers' usual addresses.
func CheckRunServer(a netip.Addr) error {
	a = a.Unmap()
	if !a.Is4() || a.IsLoopback() || a.IsUnspecified() || a.IsMulticast() {
		return fmt.Errorf("want the IPv4 unicast address of the cluster worker that runs this run's server, not loopback")
	}
	if name, special := policy.SpecialPurpose(a); special && !policy.Private(a) {
		return fmt.Errorf("a special-purpose address (%s)", name)
	}
	return nil
}

// TargetPolicy is the address policy of a load of an external target (docs/loadtest.md,
// "External targets"; policy.Target): the target URL's host and origins are the only hosts a VU
// may request; the addresses the user named — IP literals among them and the values of resolve —
// are the only private ones that may pass (with allowInternet). own tells the run's namespaces
// (policy.OwnRoute in a lab's client namespace; nil outside a lab).
func TargetPolicy(target string, origins []string, resolve map[string]netip.Addr, allowInternet bool, own func(netip.Addr) bool) (*policy.Target, error) {
	u, err := url.Parse(target)
	if err != nil || u.Hostname() == "" {
		return nil, fmt.Errorf("want an http:// or https:// URL")
	}
	t := &policy.Target{AllowInternet: allowInternet, Own: own}
	for _, h := range append([]string{u.Hostname()}, origins...) {
		h = strings.TrimSuffix(strings.ToLower(strings.Trim(strings.TrimSpace(h), "[]")), ".")
		if h == "" {
			return nil, fmt.Errorf("an empty origin")
		}
		if !slices.Contains(t.Hosts, h) {
			t.Hosts = append(t.Hosts, h)
		}
		if a, err := netip.ParseAddr(h); err == nil {
			t.Named = append(t.Named, a.Unmap())
		}
	}
	for name, a := range resolve {
		if name != "localhost" {
			t.Named = append(t.Named, a.Unmap())
		}
	}
	return t, nil
}
