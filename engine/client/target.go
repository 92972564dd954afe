package client

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// The loader targets only the lab unless Config.AllowAnyTarget is set: loopback, the run's
// namespaces (10.77.0.0/16, docs/architecture.md) and names under wirelab.test. The check runs on
// every URL before it is requested, on every resolved address before it is dialled, and on the DNS
// server's address.

// LabPrefix is the address block of a run's namespaces.
var LabPrefix = netip.MustParsePrefix("10.77.0.0/16")

// LabDomain is the DNS suffix of the lab's origins (s1.wirelab.test …).
const LabDomain = "wirelab.test"

// ErrNotLabTarget is wrapped by every refusal.
var ErrNotLabTarget = fmt.Errorf("not a lab target (allowed: loopback, %s, *.%s; pass --allow-any-target to override)", LabPrefix, LabDomain)

// IsLabAddr reports whether a is loopback or inside LabPrefix.
func IsLabAddr(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || LabPrefix.Contains(a)
}

// IsLabHost reports whether a URL host (without port) names the lab: a lab address, "localhost",
// or a name under LabDomain.
func IsLabHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return IsLabAddr(a)
	}
	return host == "localhost" || host == LabDomain || strings.HasSuffix(host, "."+LabDomain)
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
