package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// Resolver turns a host name into IPv4 addresses (the lab is IPv4-only). A load calls it at most
// once per name: results are cached for the load and never beyond it.
type Resolver interface {
	Lookup(ctx context.Context, host string) ([]netip.Addr, error)
}

var (
	_ Resolver = StaticResolver(nil)
	_ Resolver = (*DNSResolver)(nil)
	_ Resolver = SystemResolver{}
)

// StaticResolver maps lower-case names to one address each, without any network traffic
// (trial option client.dns = static).
type StaticResolver map[string]netip.Addr

// ParseStaticResolver parses "name=ip,name=ip".
func ParseStaticResolver(s string) (StaticResolver, error) {
	r := StaticResolver{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, ip, ok := strings.Cut(item, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q: want name=ip", item)
		}
		a, err := netip.ParseAddr(ip)
		if err != nil || !a.Is4() {
			return nil, fmt.Errorf("%q: %q is not an IPv4 address", item, ip)
		}
		r[strings.ToLower(strings.TrimSuffix(name, "."))] = a
	}
	if len(r) == 0 {
		return nil, errors.New("no name=ip pairs")
	}
	return r, nil
}

// Lookup implements Resolver.
func (r StaticResolver) Lookup(_ context.Context, host string) ([]netip.Addr, error) {
	if a, ok := r[strings.ToLower(strings.TrimSuffix(host, "."))]; ok {
		return []netip.Addr{a}, nil
	}
	return nil, fmt.Errorf("resolve %s: not in the static map", host)
}

// DNSResolver sends A queries over UDP to one server, so that lookups cross the emulated path as
// in study E. Each attempt uses a fresh socket; a truncated answer is retried over TCP.
type DNSResolver struct {
	Server   string        // IP:port of the server, e.g. 10.77.2.53:53
	Timeout  time.Duration // per attempt; default 5 s (glibc's resolv.conf default)
	Attempts int           // default 2 (glibc's default)
}

// Lookup implements Resolver.
func (r *DNSResolver) Lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	resp, err := r.exchange(ctx, host, dns.TypeA)
	if err != nil {
		return nil, fmt.Errorf("resolve %s via %s: %w", host, r.Server, err)
	}
	return answerAddrs(host, resp)
}

// exchange sends one query for host of type qtype: over UDP, a truncated answer again over TCP,
// each attempt with its own socket; an attempt that times out is tried again, up to Attempts.
func (r *DNSResolver) exchange(ctx context.Context, host string, qtype uint16) (*dns.Msg, error) {
	timeout, attempts := r.Timeout, r.Attempts
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	if attempts <= 0 {
		attempts = 2
	}
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(host), qtype)
	udp := &dns.Client{Net: "udp", Timeout: timeout}
	var lastErr error
	for range attempts {
		resp, _, err := udp.ExchangeContext(ctx, q, r.Server)
		if err == nil && resp.Truncated {
			tcp := &dns.Client{Net: "tcp", Timeout: timeout}
			resp, _, err = tcp.ExchangeContext(ctx, q, r.Server)
		}
		if err == nil {
			return resp, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			break
		}
	}
	return nil, lastErr
}

func answerAddrs(host string, resp *dns.Msg) ([]netip.Addr, error) {
	if resp.Rcode != dns.RcodeSuccess {
		return nil, fmt.Errorf("resolve %s: %s", host, dns.RcodeToString[resp.Rcode])
	}
	var addrs []netip.Addr
	for _, rr := range resp.Answer {
		if a, ok := rr.(*dns.A); ok {
			if ip, ok := netip.AddrFromSlice(a.A.To4()); ok {
				addrs = append(addrs, ip)
			}
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve %s: no A record", host)
	}
	return addrs, nil
}

// HTTPSResolver is a Resolver that also answers HTTPS queries (RFC 9460): client.h3 = https-rr.
type HTTPSResolver interface {
	Resolver
	// LookupHTTPS returns the ALPN ids of the host's service-mode HTTPS records (empty: none).
	LookupHTTPS(ctx context.Context, host string) ([]string, error)
}

var _ HTTPSResolver = (*DNSResolver)(nil)

// LookupHTTPS implements HTTPSResolver: an HTTPS query (type 65) for host, as Chromium sends
// beside its A query, tried as often as an A query. No record, or a name without one (NODATA), is no ALPN id and no error.
func (r *DNSResolver) LookupHTTPS(ctx context.Context, host string) ([]string, error) {
	resp, err := r.exchange(ctx, host, dns.TypeHTTPS)
	if err != nil {
		return nil, fmt.Errorf("resolve %s HTTPS via %s: %w", host, r.Server, err)
	}
	var alpn []string
	for _, rr := range resp.Answer {
		h, ok := rr.(*dns.HTTPS)
		if !ok || h.Priority == 0 {
			continue // alias mode: not followed (the lab serves none)
		}
		for _, kv := range h.Value {
			if a, ok := kv.(*dns.SVCBAlpn); ok {
				alpn = append(alpn, a.Alpn...)
			}
		}
	}
	return alpn, nil
}

// SystemResolver asks the operating system's resolver (for use outside the lab).
type SystemResolver struct{}

// Lookup implements Resolver.
func (SystemResolver) Lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip4", host)
}

// lookupCache is one load's name cache: the first caller for a name queries the Resolver, callers
// arriving meanwhile wait for that answer, later callers get it at once.
type lookupCache struct {
	r       Resolver
	mu      sync.Mutex
	entries map[string]*lookupEntry
	queries int // lookups sent to the Resolver
}

type lookupEntry struct {
	done  chan struct{}
	addrs []netip.Addr
	err   error
}

func newLookupCache(r Resolver) *lookupCache {
	return &lookupCache{r: r, entries: map[string]*lookupEntry{}}
}

func (c *lookupCache) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	c.mu.Lock()
	e, ok := c.entries[host]
	if !ok {
		e = &lookupEntry{done: make(chan struct{})}
		c.entries[host] = e
		c.queries++
		c.mu.Unlock()
		e.addrs, e.err = c.r.Lookup(ctx, host)
		close(e.done)
		return e.addrs, e.err
	}
	c.mu.Unlock()
	select {
	case <-e.done:
		return e.addrs, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *lookupCache) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queries
}
