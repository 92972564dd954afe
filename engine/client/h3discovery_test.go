package client

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/dns"
	"github.com/wirelab/wirelab/engine/internal/dnsserve"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server"
)

// h3Lab is the built-in server on 127.0.0.1 with TCP and QUIC on one port (as the lab's 443),
// resumption on, and the lab DNS for its origin: what HTTP/3 discovery needs on loopback.
type h3Lab struct {
	srv *server.Server
	dns *dns.Server
}

func startH3Lab(t *testing.T, altSvc bool, alpn []string) h3Lab {
	t.Helper()
	pg, err := page.Load("synthetic:3x10kB", 1)
	if err != nil {
		t.Fatal(err)
	}
	pc, ln, err := dnsserve.Listen("127.0.0.1:0") // a port free on UDP and TCP
	if err != nil {
		t.Fatal(err)
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	pc.Close()
	ln.Close()
	a := netip.MustParseAddr("127.0.0.1")
	cfg := server.DefaultConfig(a)
	cfg.PortHTTP, cfg.PortHTTPS, cfg.PortQUIC = 0, port, port
	cfg.SessionResumption = true
	if altSvc {
		cfg.AltSvc = `h3=":` + strconv.Itoa(port) + `"; ma=86400`
	}
	srv, err := server.Start(pg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	d, err := dns.ListenRecords("127.0.0.1:0", dns.OriginZone([]netip.Addr{a}, alpn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return h3Lab{srv: srv, dns: d}
}

// load loads the page over h3 found by how (the URL is the https one: TCP and QUIC share its
// port), with profile (nil: a first view).
func (l h3Lab) load(t *testing.T, how H3Discovery, profile *Profile) *Result {
	t.Helper()
	res := l.loadWith(t, how, profile, &DNSResolver{Server: l.dns.Addr()})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	return res
}

// loadWith is load with names resolved by resolver, the load's own error left to the caller.
func (l h3Lab) loadWith(t *testing.T, how H3Discovery, profile *Profile, resolver Resolver) *Result {
	t.Helper()
	root, err := l.srv.RootURL(server.H2, page.NewToken())
	if err != nil {
		t.Fatal(err)
	}
	ld, err := New(Config{Protocol: H3, H3: how, Profile: profile, Resolver: resolver,
		RootCAs: l.srv.Certs().CAPool(), Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res, err := ld.Load(context.Background(), root, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// alt-svc: the root document over h2, every later request over h3 once its Alt-Svc announced it;
// the repeat view (the same profile) starts on QUIC, resumes and sends 0-RTT. Without an
// announcement nothing goes over h3 (h3_discovery none).
func TestH3DiscoveryAltSvc(t *testing.T) {
	skipZeroRTTUnderRace(t)
	l := startH3Lab(t, true, nil)
	prof := NewProfile()
	first := l.load(t, H3AltSvc, prof)
	if first.Entries[0].Protocol != "h2" || first.Protocols["h2"] != 1 || first.Protocols["h3"] != len(first.Entries)-1 {
		t.Errorf("first view: root over %s, requests %v: want the root over h2, the rest over h3", first.Entries[0].Protocol, first.Protocols)
	}
	if first.H3Discovery != "alt-svc" || first.Connections != 2 || first.TLSHandshakes != 2 {
		t.Errorf("first view: discovery %q, %d connections, %d full handshakes", first.H3Discovery, first.Connections, first.TLSHandshakes)
	}
	repeat := l.load(t, H3AltSvc, prof)
	if repeat.Protocols["h3"] != len(repeat.Entries) || repeat.Connections != 1 || repeat.TLSResumed != 1 || repeat.ZeroRTT != 1 || repeat.TLSHandshakes != 0 {
		t.Errorf("repeat view: requests %v, %d connections, %d resumed, %d 0-RTT, %d full: want one resumed QUIC connection with 0-RTT",
			repeat.Protocols, repeat.Connections, repeat.TLSResumed, repeat.ZeroRTT, repeat.TLSHandshakes)
	}
	quiet := startH3Lab(t, false, nil).load(t, H3AltSvc, nil)
	if quiet.Protocols["h3"] != 0 || quiet.H3Discovery != "none" {
		t.Errorf("no Alt-Svc: requests %v, discovery %q", quiet.Protocols, quiet.H3Discovery)
	}
}

// https-rr: a record listing h3 starts every request on QUIC; one without h3 (or none) keeps h2.
func TestH3DiscoveryHTTPSRecord(t *testing.T) {
	for _, c := range []struct {
		alpn []string
		h3   bool
	}{{[]string{"h3", "h2"}, true}, {[]string{"h2"}, false}, {nil, false}} {
		res := startH3Lab(t, false, c.alpn).load(t, H3HTTPSRR, nil)
		want := map[bool]string{true: "h3", false: "h2"}[c.h3]
		if res.Protocols[want] != len(res.Entries) || (res.H3Discovery == "https-rr") != c.h3 {
			t.Errorf("record alpn %v: requests %v, discovery %q: want all over %s", c.alpn, res.Protocols, res.H3Discovery, want)
		}
		if res.DNSQueries != 1 || res.Entries[0].Timings.DNS < 0 {
			t.Errorf("record alpn %v: %d names sent, root's dns %v", c.alpn, res.DNSQueries, res.Entries[0].Timings.DNS)
		}
	}
	if _, err := New(Config{Protocol: H3, H3: H3HTTPSRR, Resolver: StaticResolver{"s1.wirelab.test": netip.MustParseAddr("127.0.0.1")}}); err == nil {
		t.Error("https-rr with a static resolver was accepted")
	}
	if _, err := New(Config{Protocol: H3, H3: "altsvc"}); err == nil {
		t.Error("an unknown h3 discovery was accepted")
	}
}

// lostHTTPS answers A queries and never an HTTPS query (as if every attempt were lost on the path).
type lostHTTPS struct{ *DNSResolver }

func (lostHTTPS) LookupHTTPS(context.Context, string) ([]string, error) {
	return nil, errors.New("i/o timeout")
}

// https-rr without an answer to the HTTPS query: the origin goes over h2 on its A record, as a
// browser does — the load does not fail.
func TestH3DiscoveryHTTPSRecordUnanswered(t *testing.T) {
	l := startH3Lab(t, false, []string{"h3", "h2"})
	res := l.loadWith(t, H3HTTPSRR, nil, lostHTTPS{&DNSResolver{Server: l.dns.Addr()}})
	if res.Err != nil || res.Protocols["h2"] != len(res.Entries) || res.H3Discovery == "https-rr" {
		t.Errorf("unanswered HTTPS query: error %v, requests %v, discovery %q: want every request over h2", res.Err, res.Protocols, res.H3Discovery)
	}
}

// A repeat view over TCP resumes every TLS connection (no 0-RTT: Go's client sends no early data);
// without a shared profile nothing resumes.
func TestRepeatViewResumesTCP(t *testing.T) {
	l := startH3Lab(t, false, nil)
	for _, proto := range []Protocol{H1S, H2} {
		root, _ := l.srv.RootURL(server.Protocol(proto), page.NewToken())
		prof := NewProfile()
		var res [3]*Result
		for i, p := range []*Profile{prof, prof, nil} {
			ld, err := New(Config{Protocol: proto, Profile: p, Resolver: &DNSResolver{Server: l.dns.Addr()}, RootCAs: l.srv.Certs().CAPool()})
			if err != nil {
				t.Fatal(err)
			}
			if res[i], err = ld.Load(context.Background(), root, nil); err != nil || res[i].Err != nil {
				t.Fatal(err, res[i].Err)
			}
		}
		if r := res[1]; r.TLSResumed != r.Connections || r.TLSHandshakes != 0 || r.ZeroRTT != 0 {
			t.Errorf("%s repeat: %d resumed of %d connections, %d full, %d 0-RTT", proto, r.TLSResumed, r.Connections, r.TLSHandshakes, r.ZeroRTT)
		}
		// (an h1s first view with a profile may resume its later connections with the ticket of
		// its first, as Chromium does; without one nothing resumes)
		if r := res[2]; r.TLSResumed != 0 {
			t.Errorf("%s without a profile: %d resumed", proto, r.TLSResumed)
		}
	}
}
