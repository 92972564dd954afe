package client

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/policy"
)

// The loader targets only the lab unless told otherwise: loopback, the run's namespaces
// (labaddr.LabPrefix, 10.77.0.0/16, docs/architecture.md) and names under wirelab.test. With
// Config.Internet (a live load of a public site through the egress router, docs/egress.md) any name
// may be requested, and an IP literal or a resolved address must be the lab's or public
// (policy.Policy with AllowInternet: never private, loopback outside the namespace, link-local,
// documentation, …). Config.AllowAnyTarget lifts every check. The check runs on every URL before it
// is requested, on every resolved address before it is dialled, and on the DNS server's address
// (which is always the lab's).

// ErrNotLabTarget is wrapped by every refusal of the lab policy.
var ErrNotLabTarget = fmt.Errorf("not a lab target (allowed: loopback, %s, *.%s; pass --allow-any-target to override)", labaddr.LabPrefix, policy.LabDomain)

// IsLabAddr reports whether a is loopback or inside the lab's block (labaddr.LabPrefix).
func IsLabAddr(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || labaddr.LabPrefix.Contains(a)
}

// internetPolicy is Config.Internet's: the lab's block is the run's own, the rest must be public —
// loopback too is refused (a public name answered with 127.0.0.1 must not reach local services).
var internetPolicy = policy.Policy{AllowInternet: true, Own: labaddr.LabPrefix.Contains}

// CheckInternetHost is the URL check under Config.Internet: an IP literal must pass the policy; a
// name passes here and its addresses are checked once resolved.
func CheckInternetHost(host string) error {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return internetPolicy.CheckAddr(host, a)
	}
	return nil
}

// TargetCheck is the check of a URL's host before anything is sent to it, for a loader's three
// kinds of targets: none with anyTarget, CheckInternetHost with internet (public sites), the lab's
// (CheckTarget) otherwise. fetch, browse and Chromium's loads use it.
func TargetCheck(anyTarget, internet bool) func(host string) error {
	switch {
	case anyTarget:
		return func(string) error { return nil }
	case internet:
		return CheckInternetHost
	}
	return CheckTarget
}

// checkInternetAddr is the check of a resolved address under Config.Internet.
func checkInternetAddr(a netip.Addr, host string) error { return internetPolicy.CheckAddr(host, a) }

// IsLabHost reports whether a URL host (without port) names the lab: a lab address, "localhost",
// or a name under LabDomain.
func IsLabHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return IsLabAddr(a)
	}
	return host == "localhost" || policy.IsLabName(host)
}

// CheckTarget returns an error wrapping ErrNotLabTarget unless host is a lab host.
func CheckTarget(host string) error {
	if IsLabHost(host) {
		return nil
	}
	return fmt.Errorf("host %q: %w", host, ErrNotLabTarget)
}

func checkAddr(a netip.Addr, host string) error {
	if IsLabAddr(a) {
		return nil
	}
	return fmt.Errorf("host %q resolved to %s: %w", host, a, ErrNotLabTarget)
}

// checkTargetHost is the URL check under Config.Target: the host must be the target's or a listed
// origin, and an IP literal must pass the address policy.
func checkTargetHost(t policy.Target, host string) error {
	if err := t.CheckHost(host); err != nil {
		return err
	}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return t.CheckAddr(host, a)
	}
	return nil
}

// ErrNotLoopback is wrapped by every refusal under Config.LoopbackOnly.
var ErrNotLoopback = errors.New("not a loopback address")

// checkLoopbackHost is the URL check under Config.LoopbackOnly: an IP literal must be loopback; a name
// passes here and its addresses are checked once resolved.
func checkLoopbackHost(host string) error {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return checkLoopback(a, host)
	}
	return nil
}

func checkLoopback(a netip.Addr, host string) error {
	if a.Unmap().IsLoopback() {
		return nil
	}
	if host == a.String() {
		return fmt.Errorf("%s: %w", a, ErrNotLoopback)
	}
	return fmt.Errorf("host %q resolved to %s: %w", host, a, ErrNotLoopback)
}

// checkTargetAddrPort checks a host:port whose host must be an IP address.
func checkTargetAddrPort(hostport string) error {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return fmt.Errorf("%q: want IP:port: %w", hostport, err)
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%q: want an IP address, not a name", hostport)
	}
	if !IsLabAddr(a) {
		return fmt.Errorf("%s: %w", hostport, ErrNotLabTarget)
	}
	return nil
}
