package client

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// testDNS is an authoritative server for *.wirelab.test on 127.0.0.1 (UDP and TCP) that counts
// queries. With truncate set, UDP answers are empty and truncated, so clients must retry over TCP.
type testDNS struct {
	addr     string
	udp, tcp atomic.Int64
}

func startDNS(t testing.TB, names map[string]netip.Addr, truncate bool, silent bool) *testDNS {
	t.Helper()
	d := &testDNS{}
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		isUDP := w.RemoteAddr().Network() == "udp"
		if isUDP {
			d.udp.Add(1)
		} else {
			d.tcp.Add(1)
		}
		if silent {
			return
		}
		m := new(dns.Msg)
		m.SetReply(q)
		m.Authoritative = true
		name := strings.TrimSuffix(strings.ToLower(q.Question[0].Name), ".")
		a, ok := names[name]
		switch {
		case !ok:
			m.Rcode = dns.RcodeNameError
		case truncate && isUDP:
			m.Truncated = true
		default:
			m.Answer = append(m.Answer, &dns.A{
				Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60},
				A:   a.AsSlice(),
			})
		}
		w.WriteMsg(m)
	})
	// The same port for UDP and TCP; a port free for UDP may be taken for TCP: try a few.
	var pc net.PacketConn
	var ln net.Listener
	for attempt := 0; ln == nil; attempt++ {
		var err error
		if pc, err = net.ListenPacket("udp4", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		port := pc.LocalAddr().(*net.UDPAddr).Port
		if ln, err = net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err != nil {
			pc.Close()
			if attempt == 20 {
				t.Fatal(err)
			}
		}
	}
	udpSrv := &dns.Server{PacketConn: pc, Handler: handler}
	tcpSrv := &dns.Server{Listener: ln, Handler: handler}
	go udpSrv.ActivateAndServe()
	go tcpSrv.ActivateAndServe()
	t.Cleanup(func() { udpSrv.Shutdown(); tcpSrv.Shutdown() })
	d.addr = pc.LocalAddr().String()
	return d
}

// TestDNSLoad: names are resolved through the DNS server, once per name per load, and the first
// request on each origin carries the lookup.
func TestDNSLoad(t *testing.T) {
	for _, proto := range []Protocol{H1S, H2, H3} {
		t.Run(string(proto), func(t *testing.T) {
			t.Parallel()
			s := newSite(t, proto, 2, 20, serverOpts{})
			d := startDNS(t, s.resolver, false, false)
			cfg := s.config()
			cfg.Resolver = &DNSResolver{Server: d.addr}
			l, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for load := 1; load <= 2; load++ {
				res, err := l.Load(context.Background(), s.root(), nil)
				if err != nil {
					t.Fatal(err)
				}
				checkComplete(t, res, s.page.want)
				checkTimings(t, res)
				if q := d.udp.Load(); q != int64(2*load) || res.DNSQueries != 2 {
					t.Errorf("load %d: server saw %d queries in all, the load sent %d; want 2 per load (one per name)", load, q, res.DNSQueries)
				}
				if res.Entries[0].Timings.DNS <= 0 {
					t.Errorf("root's dns phase %v, want > 0", res.Entries[0].Timings.DNS)
				}
				if res.Phases.DNS <= 0 {
					t.Errorf("phases dns sum %v", res.Phases.DNS)
				}
			}
		})
	}
}

func TestDNSResolverAnswers(t *testing.T) {
	names := map[string]netip.Addr{"s1.wirelab.test": mustAddr("10.77.1.1")}
	ctx := context.Background()

	d := startDNS(t, names, false, false)
	r := &DNSResolver{Server: d.addr}
	if got, err := r.Lookup(ctx, "S1.wirelab.test"); err != nil || len(got) != 1 || got[0] != mustAddr("10.77.1.1") {
		t.Errorf("lookup: %v %v", got, err)
	}
	if _, err := r.Lookup(ctx, "s9.wirelab.test"); err == nil || !strings.Contains(err.Error(), "NXDOMAIN") {
		t.Errorf("unknown name: %v, want NXDOMAIN", err)
	}

	tc := startDNS(t, names, true, false)
	if got, err := (&DNSResolver{Server: tc.addr}).Lookup(ctx, "s1.wirelab.test"); err != nil || len(got) != 1 {
		t.Errorf("truncated UDP answer: %v %v", got, err)
	}
	if tc.udp.Load() != 1 || tc.tcp.Load() != 1 {
		t.Errorf("truncated answer: %d UDP and %d TCP queries, want 1 and 1", tc.udp.Load(), tc.tcp.Load())
	}

	silent := startDNS(t, names, false, true)
	start := time.Now()
	_, err := (&DNSResolver{Server: silent.addr, Timeout: 100 * time.Millisecond, Attempts: 3}).Lookup(ctx, "s1.wirelab.test")
	if err == nil || silent.udp.Load() != 3 {
		t.Errorf("silent server: %v after %d attempts, want an error after 3", err, silent.udp.Load())
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Errorf("3 attempts of 100 ms took %v", el)
	}
}

func TestStaticResolver(t *testing.T) {
	r, err := ParseStaticResolver("s1.wirelab.test=10.77.1.1, S2.wirelab.test.=10.77.1.2")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Lookup(context.Background(), "s2.WIRELAB.test"); err != nil || got[0] != mustAddr("10.77.1.2") {
		t.Errorf("s2: %v %v", got, err)
	}
	if _, err := r.Lookup(context.Background(), "s3.wirelab.test"); err == nil {
		t.Error("unknown name resolved")
	}
	for _, bad := range []string{"", "s1", "s1=", "=10.0.0.1", "s1=::1", "s1=300.1.1.1"} {
		if _, err := ParseStaticResolver(bad); err == nil {
			t.Errorf("ParseStaticResolver(%q) accepted", bad)
		}
	}
}

// TestLookupCache: concurrent lookups of one name within a load send one query.
func TestLookupCache(t *testing.T) {
	var calls atomic.Int64
	release := make(chan struct{})
	c := newLookupCache(resolverFunc(func(ctx context.Context, host string) ([]netip.Addr, error) {
		calls.Add(1)
		<-release
		return []netip.Addr{mustAddr("10.77.1.1")}, nil
	}))
	results := make(chan error, 5)
	for range 5 {
		go func() {
			_, err := c.lookup(context.Background(), "s1.wirelab.test")
			results <- err
		}()
	}
	time.Sleep(20 * time.Millisecond) // let them all queue behind the first (the assertion holds either way)
	close(release)
	for range 5 {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	if calls.Load() != 1 || c.count() != 1 {
		t.Errorf("%d resolver calls, %d counted; want 1", calls.Load(), c.count())
	}
}

type resolverFunc func(ctx context.Context, host string) ([]netip.Addr, error)

func (f resolverFunc) Lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	return f(ctx, host)
}
