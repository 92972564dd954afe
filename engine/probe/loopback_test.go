package probe_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/policy"

	"github.com/wirelab/wirelab/engine/contract/contracttest"
	"github.com/wirelab/wirelab/engine/internal/offmachine"
	"github.com/wirelab/wirelab/engine/probe"
	"github.com/wirelab/wirelab/engine/sites"
)

// loopbackNet holds the catalog's addresses on loopback: 127.0.1.N for site N, the DNS server at
// 127.0.1.53. Nothing else is "own" in these tests.
var loopbackNet = netip.MustParsePrefix("127.0.1.0/24")

// freePorts picks two TCP and a UDP port number free on 127.0.0.1 and keeps them bound there for
// the test: while 127.0.0.1:P is held, no wildcard listener can take P, so the same P is free on
// every 127.0.1.N.
func freePorts(t *testing.T) probe.Ports {
	t.Helper()
	var tcp [2]int
	for i := range tcp {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		tcp[i] = ln.Addr().(*net.TCPAddr).Port
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return probe.Ports{HTTP: tcp[0], HTTPS: tcp[1], QUIC: pc.LocalAddr().(*net.UDPAddr).Port}
}

type loopbackSites struct {
	run   *sites.Running
	cfg   probe.Config
	ports probe.Ports
}

// serveLoopback serves the catalog on loopback with the sites' extra RTT left out (no emulator)
// and their Alt-Svc naming the test's QUIC port instead of 443.
func serveLoopback(t *testing.T) *loopbackSites {
	t.Helper()
	ports := freePorts(t)
	catalog := sites.Catalog()
	var addrs []netip.Addr
	for i := range catalog {
		catalog[i].AltSvc = strings.ReplaceAll(catalog[i].AltSvc, `":443"`, fmt.Sprintf(`":%d"`, ports.QUIC))
		if !catalog[i].Addr.IsValid() {
			addrs = append(addrs, netip.AddrFrom4([4]byte{127, 0, 1, byte(len(addrs) + 1)}))
		}
	}
	run, err := sites.Serve(sites.ServeConfig{Sites: catalog, Addrs: addrs, PortHTTP: ports.HTTP, PortHTTPS: ports.HTTPS,
		PortQUIC: ports.QUIC, DNS: "127.0.1.53:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Close() })
	cfg := probe.DefaultConfig()
	cfg.Ports = ports
	cfg.Policy = policy.Policy{Own: func(a netip.Addr) bool { return loopbackNet.Contains(a) }}
	cfg.Resolver = &probe.DNSResolver{Addr: run.DNS.Addr(), Timeout: time.Second}
	cfg.RootCAs = x509.NewCertPool()
	cfg.RootCAs.AppendCertsFromPEM(run.Certs.CAPEM)
	cfg.Timeout = time.Second
	cfg.Rate, _ = probe.ParseRate("100/s")
	return &loopbackSites{run: run, cfg: cfg, ports: ports}
}

func probeAll(t *testing.T, cfg probe.Config, urls []string) ([]probe.Record, error) {
	t.Helper()
	list, err := probe.ParseSites(urls, probe.DefaultMaxSites)
	if err != nil {
		t.Fatal(err)
	}
	targets, err := probe.Plan(context.Background(), cfg, list)
	if err != nil {
		return nil, err
	}
	recs := make([]probe.Record, len(targets))
	err = probe.Run(context.Background(), cfg, targets, func(r probe.Record) error {
		recs[r.Index] = r
		return nil
	})
	return recs, err
}

// Every site of the local internet is classified as its description says (announced and served,
// per protocol), and every record satisfies the contract's schema.
func TestClassifiesTheCatalog(t *testing.T) {
	l := serveLoopback(t)
	schemas := contracttest.Load(t)
	var urls []string
	var want []sites.Site
	for _, s := range sites.Catalog() {
		if _, refused := s.Expected(); !refused {
			urls = append(urls, s.URL())
			want = append(want, s)
		}
	}
	recs, err := probeAll(t, l.cfg, urls)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records for %d sites", len(recs), len(want))
	}
	for _, rec := range recs {
		s := want[rec.Index]
		for _, m := range s.Mismatches(rec) {
			t.Error(m)
		}
		b, _ := json.Marshal(rec)
		if err := schemas.Validate(contracttest.ProbeRecord, b); err != nil {
			t.Errorf("%s: record breaks the schema: %v\n%s", s.Name, err, b)
		}
		for _, p := range probe.Protocols {
			r := rec.Protocols[p]
			if r.Served && (r.Status != 200 || r.FirstByteMS == nil) {
				t.Errorf("%s %s: served with status %d, first byte %v", s.Name, p, r.Status, r.FirstByteMS)
			}
			if r.Served && p != probe.H1 && p != probe.H2C && (r.CertError != "" || r.HandshakeMS == nil) {
				t.Errorf("%s %s: cert error %q, handshake %v", s.Name, p, r.CertError, r.HandshakeMS)
			}
		}
	}
	rr := recs[4]
	if rr.DNS == nil || len(rr.DNS.HTTPS) != 1 || !rr.DNS.HTTPS[0].ECH || strings.Join(rr.DNS.HTTPS[0].ALPN, ",") != "h3,h2" {
		t.Errorf("https-rr: DNS %+v", rr.DNS)
	}
	if recs[2].AltSvc == "" || recs[0].AltSvc != "" {
		t.Errorf("alt_svc: h3 %q, h1 %q", recs[2].AltSvc, recs[0].AltSvc)
	}
	if v := recs[2].Protocols[probe.H2].TLSVersion; v != "1.3" {
		t.Errorf("TLS version %q", v)
	}
}

// Without AllowInternet, a name resolving outside the run's namespaces (192.0.2.1) and a public
// name are refused at planning, before anything is sent to them; with it, the documentation
// address is still refused (special purpose) and the site recorded as refused.
func TestPolicyRefusesBeforeContact(t *testing.T) {
	offmachine.Require(t) // a broken guard would contact 192.0.2.1
	l := serveLoopback(t)
	_, err := probeAll(t, l.cfg, []string{"h1.wirelab.test", "doc.wirelab.test"})
	var re *policy.RefusedError
	if !errors.As(err, &re) || re.Addr != "192.0.2.1" || !strings.Contains(err.Error(), "--allow-internet") {
		t.Fatalf("doc.wirelab.test without --allow-internet: %v", err)
	}
	if _, err := probeAll(t, l.cfg, []string{"example.org"}); !errors.As(err, &re) || re.Addr != "" {
		t.Fatalf("a public name without --allow-internet: %v", err)
	}
	cfg := l.cfg
	cfg.Policy.AllowInternet = true
	recs, err := probeAll(t, cfg, []string{"h1.wirelab.test", "doc.wirelab.test", "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if (r.Index == 0) != (r.Refused == "") {
			t.Errorf("%s: refused %q", r.Site, r.Refused)
		}
		if r.Index > 0 && (r.Addr != "" || r.Protocols[probe.H1].Port != 0) {
			t.Errorf("%s: contacted %q port %d", r.Site, r.Addr, r.Protocols[probe.H1].Port)
		}
	}
	if !strings.Contains(recs[1].Refused, "documentation") || !strings.Contains(recs[2].Refused, "loopback") {
		t.Errorf("reasons: %q, %q", recs[1].Refused, recs[2].Refused)
	}
}

// A plan with nothing to contact — every site refused by the policy or without an address — gives
// one reason per site (the command prints them and exits 2); one contactable site is enough to run.
func TestUncontactable(t *testing.T) {
	offmachine.Require(t) // a broken guard would contact 192.0.2.1
	l := serveLoopback(t)
	cfg := l.cfg
	cfg.Policy.AllowInternet = true // refused sites are then planned, not an error of Plan
	plan := func(urls ...string) []probe.Target {
		list, err := probe.ParseSites(urls, probe.DefaultMaxSites)
		if err != nil {
			t.Fatal(err)
		}
		targets, err := probe.Plan(context.Background(), cfg, list)
		if err != nil {
			t.Fatal(err)
		}
		return targets
	}
	reasons := probe.Uncontactable(plan("doc.wirelab.test", "127.0.0.1", "nosuch.wirelab.test"))
	if len(reasons) != 3 {
		t.Fatalf("reasons %q: want one per site", reasons)
	}
	for i, want := range []string{"doc.wirelab.test", "127.0.0.1", "nosuch.wirelab.test: no address to probe"} {
		if !strings.HasPrefix(reasons[i], want) {
			t.Errorf("reason %d %q: want it to begin %q", i, reasons[i], want)
		}
	}
	if r := probe.Uncontactable(plan("nosuch.wirelab.test", "h1.wirelab.test")); r != nil {
		t.Errorf("one contactable site: %q, want nil", r)
	}
}

// MaxDuration bounds the run: the site in progress is stopped and recorded so, the sites not
// started are recorded as not probed, and Run returns.
func TestMaxDurationEndsTheRun(t *testing.T) {
	// A TLS port that accepts and never answers: the first step waits for its whole timeout.
	ln, err := net.Listen("tcp", "127.0.1.200:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	cfg := probe.DefaultConfig()
	cfg.Policy = policy.Policy{Own: func(a netip.Addr) bool { return loopbackNet.Contains(a) }}
	cfg.Timeout, cfg.MaxDuration, cfg.Concurrency = 30*time.Second, time.Second, 1
	cfg.Ports = probe.Ports{HTTP: port, HTTPS: port, QUIC: port}
	recs, err := probeAll(t, cfg, []string{"127.0.1.200", "https://127.0.1.200/a", "https://127.0.1.200/b"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(recs[0].Error, "ended during this site's probe") || recs[0].Addr == "" {
		t.Errorf("site in progress: %q", recs[0].Error)
	}
	for _, r := range recs[1:] {
		if !strings.HasPrefix(r.Error, "not probed") || r.Protocols[probe.H1].Port != 0 {
			t.Errorf("%s: %q, port %d", r.Site, r.Error, r.Protocols[probe.H1].Port)
		}
	}
}
