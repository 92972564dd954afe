package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// Resolver resolves a site's name: its addresses (A, AAAA) and HTTPS records. A failed lookup is
// a DNSResult with Error set.
type Resolver interface {
	Resolve(ctx context.Context, host string) *DNSResult
	// Server is the resolver's address (host:port) for the policy's check; "" for resolvers
	// that send nothing.
	Server() string
}

var (
	_ Resolver = (*DNSResolver)(nil)
	_ Resolver = StaticResolver(nil)
)

// DNSResolver asks one DNS server A, AAAA and HTTPS questions at once, over UDP (TCP when an
// answer is truncated).
type DNSResolver struct {
	Addr     string        // IP:port of the server
	Timeout  time.Duration // per attempt; default 3 s
	Attempts int           // per question, on timeouts; default 2
}

// SystemResolverAddr is the first nameserver of /etc/resolv.conf (port 53 unless given), the
// resolver a probe uses unless told otherwise. Inside a run's client namespace that file names the
// run's DNS server.
func SystemResolverAddr() (string, error) {
	cfg, err := dns.ClientConfigFromFile("/etc/resolv.conf")
	if err != nil {
		return "", fmt.Errorf("read /etc/resolv.conf: %w", err)
	}
	if len(cfg.Servers) == 0 {
		return "", errors.New("/etc/resolv.conf names no nameserver; pass --dns IP[:PORT]")
	}
	return net.JoinHostPort(cfg.Servers[0], cfg.Port), nil
}

// Server implements Resolver.
func (r *DNSResolver) Server() string { return r.Addr }

// Resolve implements Resolver.
func (r *DNSResolver) Resolve(ctx context.Context, host string) *DNSResult {
	res := &DNSResult{Server: r.Addr, A: []string{}, AAAA: []string{}, HTTPS: []HTTPSRecord{}}
	start := time.Now()
	types := []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeHTTPS}
	answers := make([]*dns.Msg, len(types))
	errs := make([]error, len(types))
	var wg sync.WaitGroup
	for i, t := range types {
		wg.Go(func() { answers[i], errs[i] = r.exchange(ctx, host, t) })
	}
	wg.Wait()
	res.MS = float64(time.Since(start).Microseconds()) / 1000
	for i, t := range types {
		m := answers[i]
		if errs[i] != nil || m.Rcode != dns.RcodeSuccess {
			continue
		}
		for _, rr := range m.Answer {
			switch v := rr.(type) {
			case *dns.A:
				if t == dns.TypeA {
					res.A = append(res.A, v.A.String())
				}
			case *dns.AAAA:
				if t == dns.TypeAAAA {
					res.AAAA = append(res.AAAA, v.AAAA.String())
				}
			case *dns.HTTPS:
				if t == dns.TypeHTTPS {
					res.HTTPS = append(res.HTTPS, httpsRecord(v))
				}
			}
		}
	}
	switch {
	case errs[0] != nil && errs[1] != nil:
		res.Error = fmt.Sprintf("resolve %s via %s: %v", host, r.Addr, errs[0])
	case answers[0] != nil && answers[0].Rcode != dns.RcodeSuccess:
		res.Error = fmt.Sprintf("resolve %s: %s", host, dns.RcodeToString[answers[0].Rcode])
	case len(res.A) == 0 && len(res.AAAA) == 0:
		res.Error = fmt.Sprintf("resolve %s: no A or AAAA record", host)
	}
	return res
}

// The DNSResolver's defaults: a question is sent at most defaultResolveAttempts times (again only
// after a timeout), each attempt waiting defaultResolveTimeout.
const (
	defaultResolveTimeout  = 3 * time.Second
	defaultResolveAttempts = 2
)

func (r *DNSResolver) exchange(ctx context.Context, host string, t uint16) (*dns.Msg, error) {
	timeout, attempts := r.Timeout, r.Attempts
	if timeout <= 0 {
		timeout = defaultResolveTimeout
	}
	if attempts <= 0 {
		attempts = defaultResolveAttempts
	}
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(host), t)
	q.SetEdns0(1232, false)
	var lastErr error
	for range attempts {
		udp := &dns.Client{Net: "udp", Timeout: timeout}
		m, _, err := udp.ExchangeContext(ctx, q, r.Addr)
		if err == nil && m.Truncated {
			tcp := &dns.Client{Net: "tcp", Timeout: timeout}
			m, _, err = tcp.ExchangeContext(ctx, q, r.Addr)
		}
		if err == nil {
			return m, nil
		}
		lastErr = err
		var ne net.Error
		if ctx.Err() != nil || !errors.As(err, &ne) || !ne.Timeout() {
			break
		}
	}
	return nil, lastErr
}

func httpsRecord(h *dns.HTTPS) HTTPSRecord {
	out := HTTPSRecord{Priority: int(h.Priority), Target: h.Target, ALPN: []string{}}
	for _, kv := range h.Value {
		switch v := kv.(type) {
		case *dns.SVCBAlpn:
			out.ALPN = append(out.ALPN, v.Alpn...)
		case *dns.SVCBNoDefaultAlpn:
			out.NoDefaultALPN = true
		case *dns.SVCBPort:
			out.Port = int(v.Port)
		case *dns.SVCBECHConfig:
			out.ECH = len(v.ECH) > 0
		}
	}
	return out
}

// StaticResolver answers from a map without sending anything (tests).
type StaticResolver map[string]*DNSResult

// Server implements Resolver.
func (StaticResolver) Server() string { return "" }

// Resolve implements Resolver.
func (r StaticResolver) Resolve(_ context.Context, host string) *DNSResult {
	if res, ok := r[host]; ok {
		c := *res
		return &c
	}
	return &DNSResult{A: []string{}, AAAA: []string{}, HTTPS: []HTTPSRecord{}, Error: "resolve " + host + ": NXDOMAIN"}
}

// addrs are a resolution's addresses, IPv4 first.
func (d *DNSResult) addrs() ([]netip.Addr, error) {
	var out []netip.Addr
	for _, s := range append(append([]string(nil), d.A...), d.AAAA...) {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("resolver answered %q, not an address", s)
		}
		out = append(out, a.Unmap())
	}
	return out, nil
}
