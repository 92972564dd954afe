package emulator

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/netns"
)

// refusedFast dials addr from the client namespace and checks that the egress router rejected it
// at once (ICMP administratively prohibited: EHOSTUNREACH), well before any timeout.
func refusedFast(t *testing.T, e *Emulator, network, addr string) {
	t.Helper()
	err := e.Topo.Do(netns.Client, func() error { return roottest.RefusedAtOnce(network, addr) })
	if err != nil {
		t.Errorf("%s %s: want an immediate refusal: %v", network, addr, err)
	}
}

// echoOnce accepts one connection, sends first, then writes back what it reads; the peer's address
// goes to peer.
func echoOnce(ln net.Listener, peer chan<- string, first []byte) {
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(peer)
			return
		}
		defer c.Close()
		peer <- c.RemoteAddr().(*net.TCPAddr).IP.String()
		c.Write(first)
		io.Copy(c, c)
	}()
}

// roundTrip sends n random bytes over c and checks they come back whole.
func roundTrip(t *testing.T, c net.Conn, n int) {
	t.Helper()
	out := make([]byte, n)
	rand.Read(out)
	errc := make(chan error, 1)
	go func() { _, err := c.Write(out); errc <- err }()
	in := make([]byte, n)
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.ReadFull(c, in); err != nil {
		t.Fatalf("read back %d bytes: %v", n, err)
	}
	if err := <-errc; err != nil || !bytes.Equal(in, out) {
		t.Fatalf("round trip of %d bytes: write %v, equal %v", n, err, bytes.Equal(in, out))
	}
}

// An egress topology to the local internet (docs/egress.md): the router rejects every flow until
// its address is admitted, then passes TCP 80/443 and UDP 443 to it, with the router's uplink
// address as the source; the DNS forwarder's address is the router's own; the counters say what
// was admitted and refused; nothing is left.
func TestEgressLocalInternet(t *testing.T) {
	roottest.RequireTUN(t)
	e := startDelay(t, 2*time.Millisecond, Config{Topology: netns.Config{Origins: 2, Egress: &netns.Egress{Far: netns.FarInternet}}})
	topo := e.Topo
	up := topo.Uplink()
	if up.Far != netns.FarInternet || up.Router != netip.MustParseAddr("10.77.3.2") {
		t.Fatalf("uplink %+v", up)
	}
	var ln, other, alt net.Listener
	var udp net.PacketConn
	err := topo.Do(netns.Internet, func() (err error) {
		if ln, err = net.Listen("tcp4", "10.77.1.1:443"); err != nil {
			return err
		}
		if other, err = net.Listen("tcp4", "10.77.1.2:443"); err != nil {
			return err
		}
		if alt, err = net.Listen("tcp4", "10.77.1.1:8443"); err != nil {
			return err
		}
		udp, err = net.ListenPacket("udp4", "10.77.1.1:443")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	defer other.Close()
	defer alt.Close()
	defer udp.Close()

	refusedFast(t, e, "tcp4", "10.77.1.1:443")
	if err := topo.Admit(netip.MustParseAddr("10.77.1.1")); err != nil {
		t.Fatal(err)
	}
	peer := make(chan string, 1)
	echoOnce(ln, peer, nil)
	c, _ := dial(t, e, "10.77.1.1:443")
	roundTrip(t, c, 1<<20)
	c.Close()
	if got := <-peer; got != up.Router.String() {
		t.Errorf("the site saw the client as %s, want the router's uplink address %s", got, up.Router)
	}
	refusedFast(t, e, "tcp4", "10.77.1.2:443")  // not admitted
	refusedFast(t, e, "tcp4", "10.77.1.1:8443") // admitted, not a web port

	// QUIC's port: a datagram there and back.
	go func() {
		buf := make([]byte, 64)
		n, from, err := udp.ReadFrom(buf)
		if err == nil {
			udp.WriteTo(buf[:n], from)
		}
	}()
	err = topo.Do(netns.Client, func() error {
		u, err := net.Dial("udp4", "10.77.1.1:443")
		if err != nil {
			return err
		}
		defer u.Close()
		u.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := u.Write([]byte("quic?")); err != nil {
			return err
		}
		buf := make([]byte, 64)
		n, err := u.Read(buf)
		if err == nil && string(buf[:n]) != "quic?" {
			err = errors.New("wrong echo")
		}
		return err
	})
	if err != nil {
		t.Errorf("UDP 443 to an admitted address: %v", err)
	}

	// The client's resolver is the router's own address: not forwarded, so not filtered.
	var dns net.PacketConn
	if err := topo.Do(netns.Server, func() (err error) { dns, err = net.ListenPacket("udp4", labaddr.DNSAddr.String()+":53"); return err }); err != nil {
		t.Fatal(err)
	}
	defer dns.Close()
	err = topo.Do(netns.Client, func() error {
		u, err := net.Dial("udp4", labaddr.DNSAddr.String()+":53")
		if err != nil {
			return err
		}
		defer u.Close()
		_, err = u.Write([]byte("query"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	dns.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := dns.ReadFrom(make([]byte, 64)); err != nil {
		t.Errorf("a query to %s did not reach the router namespace: %v", labaddr.DNSAddr, err)
	}

	rc, err := topo.RouterCounters()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rc.Admitted, []netip.Addr{netip.MustParseAddr("10.77.1.1")}) || rc.Refused < 3 {
		t.Errorf("counters %+v: want 10.77.1.1 admitted and at least 3 packets refused", rc)
	}
	id := topo.ID
	if _, err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, side := range []netns.Side{netns.Client, netns.Server, netns.Internet} {
		if _, err := os.Stat(filepath.Join("/run/netns", netns.NamespaceName(id, side))); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("namespace %s left", netns.NamespaceName(id, side))
		}
	}
}

// An egress topology to the host — here a stand-in host with no route off the machine
// (roottest.StandIn): the run's traffic leaves through the host's way out with the host's address
// (NAT), TCP segments fit the way out's smaller MTU (MSS clamped: the far end's own MTU is larger,
// so without the clamp full-size segments would be lost), forwarding on the way out is switched on
// for the run and restored after it, and the host keeps nothing of the run.
func TestEgressHost(t *testing.T) {
	s := roottest.NewStandIn(t)
	if got := s.Forwarding(t, s.WayOut); got != "0" {
		t.Fatalf("forwarding on the stand-in's way out is %s before the run", got)
	}
	e := startDelay(t, 2*time.Millisecond, Config{Topology: netns.Config{Egress: &netns.Egress{Far: netns.FarHost, HostNetns: s.World}}})
	topo := e.Topo
	up := topo.Uplink()
	if up.HostIface != s.WayOut || !netns.HostUplinks.Contains(up.Router) || up.FarLink != netns.HostLinkName(topo.ID) {
		t.Fatalf("uplink %+v", up)
	}
	if got := s.Forwarding(t, s.WayOut); got != "1" {
		t.Errorf("forwarding on the way out is %s during the run", got)
	}
	ln := s.Listen(t, 443)
	refusedFast(t, e, "tcp4", s.UpstreamAddr.String()+":443")
	if err := topo.Admit(s.UpstreamAddr); err != nil {
		t.Fatal(err)
	}
	// One segment of 1,400 bytes from upstream, as a single packet (no GSO): 1,452 bytes with TCP
	// timestamps, which the way out's 1,400-byte MTU drops silently — unless the SYN's MSS was
	// clamped to the route's MTU. Then a bulk exchange both ways.
	first := make([]byte, 1400)
	rand.Read(first)
	peer := make(chan string, 1)
	echoOnce(ln, peer, first)
	c, _ := dial(t, e, s.UpstreamAddr.String()+":443")
	got := make([]byte, len(first))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, first) {
		t.Fatalf("a full-size segment from upstream: %v (is the MSS clamped to the way out's MTU?)", err)
	}
	roundTrip(t, c, 2<<20)
	c.Close()
	if got := <-peer; got != s.WorldAddr.String() {
		t.Errorf("upstream saw the client as %s, want the host's address %s", got, s.WorldAddr)
	}
	id := topo.ID
	if _, err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := s.Forwarding(t, s.WayOut); got != "0" {
		t.Errorf("forwarding on the way out is %s after the run, want 0 restored", got)
	}
	s.Do(t, s.World, func() error {
		if _, err := net.InterfaceByName(netns.HostLinkName(id)); err == nil {
			t.Errorf("the run's veth end is left on the host")
		}
		return nil
	})
	if entries, _ := os.ReadDir(netns.UplinkDir); len(entries) > 0 {
		for _, en := range entries {
			if strings.HasPrefix(en.Name(), "slot-") {
				if b, _ := os.ReadFile(filepath.Join(netns.UplinkDir, en.Name())); strings.TrimSpace(string(b)) == id {
					t.Errorf("slot %s of the run is left", en.Name())
				}
			}
		}
	}
}
