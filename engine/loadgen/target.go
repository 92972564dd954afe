package loadgen

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/wirelab/wirelab/engine/policy"
)

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
