package dns

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
)

func start(t *testing.T) *Server {
	t.Helper()
	addrs := []netip.Addr{netip.MustParseAddr("10.77.1.1"), netip.MustParseAddr("10.77.1.2"), netip.MustParseAddr("fd00::3")}
	s, err := Listen("127.0.0.1:0", OriginRecords(addrs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func query(t *testing.T, s *Server, net string, name string, qtype uint16) *mdns.Msg {
	t.Helper()
	c := &mdns.Client{Net: net, Timeout: 2 * time.Second}
	m := new(mdns.Msg)
	m.SetQuestion(mdns.Fqdn(name), qtype)
	r, _, err := c.Exchange(m, s.Addr())
	if err != nil {
		t.Fatalf("%s %s: %v", net, name, err)
	}
	return r
}

func TestAnswers(t *testing.T) {
	s := start(t)
	for _, proto := range []string{"udp", "tcp"} {
		for name, want := range map[string]string{"s1.wirelab.test": "10.77.1.1", "S2.WireLab.Test": "10.77.1.2", "www.wirelab.test": "10.77.1.1"} {
			r := query(t, s, proto, name, mdns.TypeA)
			if r.Rcode != mdns.RcodeSuccess || !r.Authoritative || len(r.Answer) != 1 {
				t.Fatalf("%s %s: %v", proto, name, r)
			}
			a := r.Answer[0].(*mdns.A)
			if a.A.String() != want || a.Hdr.Ttl != TTL {
				t.Errorf("%s %s: %v", proto, name, a)
			}
		}
		// an IPv6 origin answers AAAA; IPv4 origins answer AAAA with no data
		if r := query(t, s, proto, "s3.wirelab.test", mdns.TypeAAAA); len(r.Answer) != 1 || r.Answer[0].(*mdns.AAAA).AAAA.String() != "fd00::3" {
			t.Errorf("%s AAAA s3: %v", proto, r)
		}
		if r := query(t, s, proto, "s1.wirelab.test", mdns.TypeAAAA); r.Rcode != mdns.RcodeSuccess || len(r.Answer) != 0 || len(r.Ns) != 1 {
			t.Errorf("%s AAAA s1 (NODATA): %v", proto, r)
		}
		if r := query(t, s, proto, "s9.wirelab.test", mdns.TypeA); r.Rcode != mdns.RcodeNameError || len(r.Ns) != 1 {
			t.Errorf("%s unknown name: %v", proto, r)
		}
		if r := query(t, s, proto, "example.com", mdns.TypeA); r.Rcode != mdns.RcodeRefused {
			t.Errorf("%s outside the zone: %v", proto, r)
		}
	}
	if s.Queries() != 14 {
		t.Errorf("%d queries counted, want 14", s.Queries())
	}
}

// Go's resolver, pointed at the server, resolves origin names.
func TestGoResolver(t *testing.T) {
	s := start(t)
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, s.Addr())
	}}
	ips, err := r.LookupNetIP(context.Background(), "ip4", "s2.wirelab.test")
	if err != nil || len(ips) != 1 || ips[0].String() != "10.77.1.2" {
		t.Fatalf("lookup: %v %v", ips, err)
	}
}

func TestServeStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, "127.0.0.1:0", OriginRecords([]netip.Addr{netip.MustParseAddr("10.77.1.1")}))
	}()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if _, err := Listen("127.0.0.1:0", map[string]netip.Addr{"example.com": netip.MustParseAddr("1.2.3.4")}); err == nil {
		t.Fatal("a name outside the zone was accepted")
	}
}

// HTTPS records (RFC 9460) are answered with their parameters, for names with and without an
// address; other names get NODATA for HTTPS, and the records' names keep the query's case.
func TestHTTPSRecords(t *testing.T) {
	ech := []byte{0, 4, 0xfe, 0x0d, 0, 0}
	z := Records{
		Addrs: map[string]netip.Addr{"svc.wirelab.test": netip.MustParseAddr("10.77.1.5"), "plain.wirelab.test": netip.MustParseAddr("10.77.1.6")},
		HTTPS: map[string][]HTTPSRecord{
			"svc.wirelab.test":   {{Priority: 1, ALPN: []string{"h3", "h2"}, Port: 8443, ECH: ech}},
			"alias.wirelab.test": {{Priority: 0, Target: "svc.wirelab.test"}},
		},
	}
	s, err := ListenRecords("127.0.0.1:0", z)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, proto := range []string{"udp", "tcp"} {
		r := query(t, s, proto, "SVC.wirelab.test", mdns.TypeHTTPS)
		if r.Rcode != mdns.RcodeSuccess || len(r.Answer) != 1 {
			t.Fatalf("%s HTTPS svc: %v", proto, r)
		}
		h := r.Answer[0].(*mdns.HTTPS)
		var alpn []string
		var port uint16
		var gotECH []byte
		for _, kv := range h.Value {
			switch v := kv.(type) {
			case *mdns.SVCBAlpn:
				alpn = v.Alpn
			case *mdns.SVCBPort:
				port = v.Port
			case *mdns.SVCBECHConfig:
				gotECH = v.ECH
			}
		}
		if h.Hdr.Name != "SVC.wirelab.test." || h.Priority != 1 || h.Target != "." || len(alpn) != 2 || alpn[0] != "h3" || port != 8443 || string(gotECH) != string(ech) {
			t.Errorf("%s HTTPS svc: %v", proto, h)
		}
		if r := query(t, s, proto, "alias.wirelab.test", mdns.TypeHTTPS); len(r.Answer) != 1 || r.Answer[0].(*mdns.HTTPS).Target != "svc.wirelab.test." {
			t.Errorf("%s alias: %v", proto, r)
		}
		if r := query(t, s, proto, "alias.wirelab.test", mdns.TypeA); r.Rcode != mdns.RcodeSuccess || len(r.Answer) != 0 {
			t.Errorf("%s A of an HTTPS-only name (NODATA): %v", proto, r)
		}
		if r := query(t, s, proto, "plain.wirelab.test", mdns.TypeHTTPS); r.Rcode != mdns.RcodeSuccess || len(r.Answer) != 0 || len(r.Ns) != 1 {
			t.Errorf("%s HTTPS of a name without one (NODATA): %v", proto, r)
		}
	}
	if _, err := ListenRecords("127.0.0.1:0", Records{HTTPS: map[string][]HTTPSRecord{"x.wirelab.test": {{Priority: 0, ALPN: []string{"h2"}}}}}); err == nil {
		t.Error("an alias-mode record with parameters was accepted")
	}
	if _, err := ListenRecords("127.0.0.1:0", Records{HTTPS: map[string][]HTTPSRecord{"example.com": {{Priority: 1}}}}); err == nil {
		t.Error("an HTTPS record outside the zone was accepted")
	}
}
