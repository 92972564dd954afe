package client

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server"
)

// Connections leave from the source addresses in turn, each bound to its address with the port
// left to connect (every 127/8 address is the loopback's own, so this needs no namespace).
func TestSourceAddrsSpreadConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srcs, err := NewSourceAddrs([]netip.Addr{netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3"), netip.MustParseAddr("::1")})
	if err != nil {
		t.Fatal(err)
	}
	dst := ln.Addr().(*net.TCPAddr).AddrPort()
	var got []string
	for range 4 {
		d, err := srcs.dialer(dst.Addr())
		if err != nil {
			t.Fatal(err)
		}
		c, err := d.DialContext(context.Background(), "tcp", dst.String())
		if err != nil {
			t.Fatal(err)
		}
		sc, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		from := sc.RemoteAddr().(*net.TCPAddr).AddrPort()
		if from != c.LocalAddr().(*net.TCPAddr).AddrPort() || from.Port() == 0 {
			t.Errorf("server saw %v, client bound %v", from, c.LocalAddr())
		}
		got = append(got, from.Addr().String())
		c.Close()
		sc.Close()
	}
	// ::1 is skipped for an IPv4 server; the IPv4 addresses alternate.
	want := []string{"127.0.0.2", "127.0.0.3", "127.0.0.2", "127.0.0.3"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("sources %v; want %v", got, want)
		}
	}
	if _, err := srcs.dialer(netip.MustParseAddr("::1")); err != nil {
		t.Errorf("an IPv6 server: %v; want ::1 as the source", err)
	}
	v6only, _ := NewSourceAddrs([]netip.Addr{netip.MustParseAddr("::1")})
	if _, err := v6only.dialer(netip.MustParseAddr("127.0.0.1")); err == nil {
		t.Error("an IPv4 server with only IPv6 sources: no error")
	}
	if d, err := (*SourceAddrs)(nil).dialer(dst.Addr()); err != nil || d.LocalAddr != nil {
		t.Errorf("no sources: %+v, %v; want the kernel's choice", d, err)
	}
}

func TestNewSourceAddrsRefuses(t *testing.T) {
	a := netip.MustParseAddr("127.0.0.2")
	for name, addrs := range map[string][]netip.Addr{
		"none":        nil,
		"twice":       {a, a},
		"unspecified": {netip.IPv4Unspecified()},
		"multicast":   {netip.MustParseAddr("224.0.0.1")},
	} {
		if _, err := NewSourceAddrs(addrs); err == nil {
			t.Errorf("%s %v: accepted", name, addrs)
		}
	}
}

// A load's connections (h1: up to six to one origin; h1s: TLS over them) leave from the
// Config.Sources addresses in turn.
func TestLoadFromSourceAddrs(t *testing.T) {
	pg, err := page.Load("synthetic:24x1kB", 1)
	if err != nil {
		t.Fatal(err)
	}
	srv, resolver := startBuiltin(t, pg, nil)
	srcs, err := NewSourceAddrs([]netip.Addr{netip.MustParseAddr("127.0.0.21"), netip.MustParseAddr("127.0.0.22")})
	if err != nil {
		t.Fatal(err)
	}
	for _, proto := range []Protocol{H1, H1S, H2} {
		root, err := srv.RootURL(server.Protocol(proto), page.NewToken())
		if err != nil {
			t.Fatal(err)
		}
		l, err := New(Config{Protocol: proto, Resolver: resolver, RootCAs: srv.Certs().CAPool(), Timeout: 60 * time.Second, Sources: srcs})
		if err != nil {
			t.Fatal(err)
		}
		res, err := l.Load(context.Background(), root, nil)
		if err != nil || res.Err != nil {
			t.Fatalf("%s: %v %v", proto, err, res.Err)
		}
		from := map[string]int{}
		for _, c := range res.Conns {
			ap, err := netip.ParseAddrPort(c.Local)
			if err != nil {
				t.Fatalf("%s: local %q: %v", proto, c.Local, err)
			}
			from[ap.Addr().String()]++
		}
		if len(res.Conns) > 1 && (from["127.0.0.21"] == 0 || from["127.0.0.22"] == 0) || from["127.0.0.21"]+from["127.0.0.22"] != len(res.Conns) {
			t.Errorf("%s: %d connections from %v; want them all from the two sources, both used when more than one", proto, len(res.Conns), from)
		}
	}
}
