package main

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	mdns "github.com/miekg/dns"

	"github.com/wirelab/wirelab/engine/egress"
	"github.com/wirelab/wirelab/engine/emulator"
	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/link/profile"
	"github.com/wirelab/wirelab/engine/netns"
)

// The egress router's DNS forwarder on the host's side (a public run's, FarHost), with a stand-in
// host (roottest.StandIn: no route off the machine): `dns --forward system` runs in the host's
// namespace, asks the resolver of the host's resolv.conf (here a server in the stand-in's upstream),
// answers the client at 10.77.2.53 in the router, and judges the answer by the public policy. The
// stand-in's address is private — as every address a test may use — so it is refused: the answer is
// relayed, nothing is admitted, and a connection to the address is rejected at once by the router.
func TestEgressForwarderOnTheHost(t *testing.T) {
	s := roottest.NewStandIn(t)
	const name = "www.standin.example."
	var upstream *mdns.Server
	s.Do(t, s.Upstream, func() error {
		pc, err := net.ListenPacket("udp4", netip.AddrPortFrom(s.UpstreamAddr, 53).String())
		if err != nil {
			return err
		}
		upstream = &mdns.Server{PacketConn: pc, Handler: mdns.HandlerFunc(func(w mdns.ResponseWriter, r *mdns.Msg) {
			m := new(mdns.Msg)
			m.SetReply(r)
			if r.Question[0].Name == name && r.Question[0].Qtype == mdns.TypeA {
				m.Answer = []mdns.RR{&mdns.A{Hdr: mdns.RR_Header{Name: name, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 60}, A: s.UpstreamAddr.AsSlice()}}
			}
			w.WriteMsg(m)
		})}
		go upstream.ActivateAndServe()
		return nil
	})
	defer upstream.Shutdown()
	// The host's resolv.conf as `ip netns exec` shows it to a process in the stand-in host.
	etc := filepath.Join("/etc/netns", s.World)
	if err := os.MkdirAll(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(etc)
	if err := os.WriteFile(filepath.Join(etc, "resolv.conf"), []byte("nameserver "+s.UpstreamAddr.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	r, err := profile.Parse("rtt=2ms")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := emulator.ConfigFromProfile(r, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Topology.Resolver = true
	cfg.Topology.Egress = &netns.Egress{Far: netns.FarHost, HostNetns: s.World}
	e, err := emulator.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	var mu sync.Mutex
	var events []egress.Event
	p, err := egress.Start(e.Topo, os.Args[0], append(os.Environ(), testMainEnv+"=1"), func(ev egress.Event) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	var answer *mdns.Msg
	err = e.Topo.Do(netns.Client, func() (err error) {
		q := new(mdns.Msg)
		q.SetQuestion(name, mdns.TypeA)
		answer, _, err = (&mdns.Client{Timeout: 5 * time.Second}).Exchange(q, netip.AddrPortFrom(labaddr.DNSAddr, 53).String())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(answer.Answer) != 1 || answer.Answer[0].(*mdns.A).A.String() != s.UpstreamAddr.String() {
		t.Errorf("the client's answer %v; want the upstream's, relayed", answer.Answer)
	}
	err = e.Topo.Do(netns.Client, func() error {
		return roottest.RefusedAtOnce("tcp4", netip.AddrPortFrom(s.UpstreamAddr, 443).String())
	})
	if err != nil {
		t.Errorf("a connection to the refused address: %v; want an immediate rejection", err)
	}
	stats, err := p.Stop()
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 1 || events[0].Event != "refused" || events[0].Addr != s.UpstreamAddr.String() || stats.Refused != 1 || stats.Admitted != 0 {
		t.Errorf("events %+v, stats %+v; want one refusal of %s, nothing admitted", events, stats, s.UpstreamAddr)
	}
	if rc, err := e.Topo.RouterCounters(); err != nil || len(rc.Admitted) != 0 || rc.Refused == 0 {
		t.Errorf("router %+v %v: want nothing admitted and the connection's packets refused", rc, err)
	}
}
