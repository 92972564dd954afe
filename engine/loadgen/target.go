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
// admitted as the run's (an invalid addr adds nothing; a nil own is policy.OwnRoute).
func RunServerOwn(addr netip.Addr, own func(netip.Addr) bool) func(netip.Addr) bool {
	if !addr.IsValid() {
		return own
	}
	if own == nil {
		own = policy.OwnRoute // the policy's default
	}
	return func(a netip.Addr) bool { return a.Unmap() == addr || own(a) }
}

// ParseRunServer reads the address of a run's server on a cluster worker (loadtest --serve, a
// serving line's addr, loadgen --run-server) and refuses one that cannot be: it must be IPv4 (the
// egress router forwards IPv4), unicast, not loopback, and not special-purpose except private
// (RFC 1918) — cluster workers' usual addresses. The address is returned unmapped.
func ParseRunServer(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, err
	}
	a = a.Unmap()
	if !a.Is4() || a.IsLoopback() || a.IsUnspecified() || a.IsMulticast() {
		return netip.Addr{}, fmt.Errorf("want the IPv4 unicast address of the cluster worker that runs this run's server, not loopback")
	}
	if name, special := policy.SpecialPurpose(a); special && !policy.Private(a) {
		return netip.Addr{}, fmt.Errorf("a special-purpose address (%s)", name)
	}
	return a, nil
}

// TargetPolicy is the address policy of a load of an external target (docs/loadtest.md,
// "External targets"; policy.Target): the target URL's host and origins are the only hosts a VU
// may request; the addresses the user named — IP literals among them and the values of resolve —
// are the only private ones that may pass (with allowInternet). own tells the run's namespaces
// (nil: policy.OwnRoute, the policy's default, which admits nothing outside a lab's client
// namespace).
func TargetPolicy(target string, origins []string, resolve map[string]netip.Addr, allowInternet bool, own func(netip.Addr) bool) (*policy.Target, error) {
	u, err := url.Parse(target)
	if err != nil || u.Hostname() == "" {
		return nil, fmt.Errorf("want an http:// or https:// URL")
	}
	t := &policy.Target{Policy: policy.Policy{AllowInternet: allowInternet, Own: own}}
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
