package egress

import (
	"errors"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mdns "github.com/miekg/dns"

	"github.com/wirelab/wirelab/engine/internal/dnsserve"
	"github.com/wirelab/wirelab/engine/policy"
)

// upstream is a resolver on loopback answering from a fixed zone: A records (several per name),
// a CNAME, an AAAA and an HTTPS record; "big." answers 100 A records (truncated over UDP).
func upstream(t *testing.T) (addr string, queries *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	zone := map[string][]string{
		"www.example.org.":   {"www.example.org. 60 IN A 93.184.215.14", "www.example.org. 60 IN AAAA 2606:2800:21f:cb07:6820:80da:af6b:8b2c"},
		"cdn.example.org.":   {"cdn.example.org. 60 IN CNAME edge.example.net.", "edge.example.net. 60 IN A 151.101.1.1", "edge.example.net. 60 IN A 151.101.65.1"},
		"mixed.example.org.": {"mixed.example.org. 60 IN A 10.1.2.3", "mixed.example.org. 60 IN A 8.8.4.4"},
		"doc.example.org.":   {"doc.example.org. 60 IN A 192.0.2.1"},
		"h3.example.org.":    {`h3.example.org. 60 IN HTTPS 1 . alpn="h3,h2"`},
	}
	var big []string
	for i := range 100 {
		big = append(big, "big.example.org. 60 IN A 203.1.113."+strconv.Itoa(i+1))
	}
	zone["big.example.org."] = big
	h := func(w mdns.ResponseWriter, r *mdns.Msg) {
		n.Add(1)
		m := new(mdns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		for _, s := range zone[strings.ToLower(q.Name)] {
			rr, err := mdns.NewRR(s)
			if err != nil {
				t.Error(err)
				continue
			}
			if rr.Header().Rrtype == q.Qtype || rr.Header().Rrtype == mdns.TypeCNAME || (q.Qtype == mdns.TypeA && rr.Header().Rrtype == mdns.TypeA) {
				m.Answer = append(m.Answer, rr)
			}
		}
		if w.LocalAddr().Network() == "udp" {
			m.Truncate(udpSize(r))
		}
		w.WriteMsg(m)
	}
	pc, ln := loopback(t)
	srv, err := dnsserve.Start(pc, ln, mdns.HandlerFunc(h), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return pc.LocalAddr().String(), &n
}

// loopback opens a UDP socket and a TCP listener on the same loopback port.
func loopback(t *testing.T) (net.PacketConn, net.Listener) {
	t.Helper()
	pc, ln, err := dnsserve.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return pc, ln
}

type admitted struct {
	mu    sync.Mutex
	addrs []netip.Addr
	calls int
	fail  bool
}

func (a *admitted) admit(addrs []netip.Addr) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	if a.fail {
		return errors.New("nftables says no")
	}
	for _, x := range addrs {
		if !slices.Contains(a.addrs, x) {
			a.addrs = append(a.addrs, x)
		}
	}
	return nil
}

func (a *admitted) has(s string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Contains(a.addrs, netip.MustParseAddr(s))
}

// counts are how many addresses were admitted and how many calls admitted them.
func (a *admitted) counts() (addrs, calls int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.addrs), a.calls
}

// events records a forwarder's events.
type events struct {
	mu  sync.Mutex
	all []Event
}

func (e *events) on(ev Event) { e.mu.Lock(); e.all = append(e.all, ev); e.mu.Unlock() }

// refused are the addresses of the refusals so far.
func (e *events) refused() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.all {
		if ev.Event == "refused" {
			out = append(out, ev.Addr)
		}
	}
	return out
}

// start runs a forwarder on loopback in front of upstream with the public policy.
func start(t *testing.T, up string, p policy.Policy, adm *admitted) (addr string, f *Forwarder, evs *events) {
	t.Helper()
	evs = &events{}
	f, err := New(Config{Upstream: up, Policy: p, Admit: adm.admit, Timeout: time.Second, OnEvent: evs.on})
	if err != nil {
		t.Fatal(err)
	}
	pc, ln := loopback(t)
	if err := f.Serve(pc, ln); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return pc.LocalAddr().String(), f, evs
}

func ask(t *testing.T, server, name string, qtype uint16, network string) *mdns.Msg {
	t.Helper()
	q := new(mdns.Msg)
	q.SetQuestion(name, qtype)
	c := &mdns.Client{Net: network, Timeout: 3 * time.Second}
	m, _, err := c.Exchange(q, server)
	if err != nil {
		t.Fatalf("%s %s over %s: %v", name, mdns.TypeToString[qtype], network, err)
	}
	return m
}

var public = policy.Policy{AllowInternet: true, Own: func(netip.Addr) bool { return false }}

func TestForwarderAdmitsWhatPasses(t *testing.T) {
	up, _ := upstream(t)
	adm := &admitted{}
	srv, f, events := start(t, up, public, adm)

	m := ask(t, srv, "www.example.org.", mdns.TypeA, "udp")
	if len(m.Answer) != 1 || !adm.has("93.184.215.14") {
		t.Fatalf("www: answer %v, 93.184.215.14 not admitted", m.Answer)
	}
	// The chain's addresses are admitted under the name asked.
	m = ask(t, srv, "cdn.example.org.", mdns.TypeA, "udp")
	if len(m.Answer) != 3 || !adm.has("151.101.1.1") || !adm.has("151.101.65.1") {
		t.Errorf("cdn: answer %v; want both of the chain's addresses admitted", m.Answer)
	}
	// A name with a private and a public address: the answer is relayed whole, only the public
	// address is admitted, the private one reported.
	m = ask(t, srv, "mixed.example.org.", mdns.TypeA, "udp")
	if len(m.Answer) != 2 || adm.has("10.1.2.3") || !adm.has("8.8.4.4") {
		t.Errorf("mixed: answer %v; want the public address admitted, the private one not", m.Answer)
	}
	ask(t, srv, "doc.example.org.", mdns.TypeA, "tcp")
	if adm.has("192.0.2.1") {
		t.Error("a documentation address was admitted")
	}
	// AAAA and HTTPS are relayed and admit nothing.
	before, _ := adm.counts()
	if m := ask(t, srv, "www.example.org.", mdns.TypeAAAA, "udp"); len(m.Answer) != 1 {
		t.Errorf("AAAA: %v", m.Answer)
	}
	if m := ask(t, srv, "h3.example.org.", mdns.TypeHTTPS, "udp"); len(m.Answer) != 1 {
		t.Errorf("HTTPS: %v", m.Answer)
	}
	if after, _ := adm.counts(); after != before {
		t.Errorf("AAAA/HTTPS admitted %d addresses", after-before)
	}
	// Asked again: nothing to admit anew.
	_, calls := adm.counts()
	ask(t, srv, "www.example.org.", mdns.TypeA, "udp")
	if _, again := adm.counts(); again != calls {
		t.Errorf("admitted an address again (%d calls, were %d)", again, calls)
	}
	// A big answer: truncated to the client over UDP (it retries over TCP), every address
	// admitted since the forwarder asked over TCP itself.
	if m := ask(t, srv, "big.example.org.", mdns.TypeA, "udp"); !m.Truncated {
		t.Errorf("100 A records over UDP without EDNS: not truncated (%d answers)", len(m.Answer))
	}
	if m := ask(t, srv, "big.example.org.", mdns.TypeA, "tcp"); len(m.Answer) != 100 || !adm.has("203.1.113.100") {
		t.Errorf("big over TCP: %d answers", len(m.Answer))
	}
	st := f.Stats()
	if refused := events.refused(); !slices.Equal(refused, []string{"10.1.2.3", "192.0.2.1"}) || st.Refused != 2 || st.Admitted != 104 {
		t.Errorf("refused %v, stats %+v", events.refused(), st)
	}
}

// Without AllowInternet a public name is refused without a query upstream; a failing upstream or
// admission is SERVFAIL, never an answer whose addresses the client could not reach.
func TestForwarderRefusesAndFails(t *testing.T) {
	up, queries := upstream(t)
	adm := &admitted{}
	lab := policy.Policy{Own: netip.MustParsePrefix("10.77.1.0/24").Contains}
	srv, f, _ := start(t, up, lab, adm)
	if m := ask(t, srv, "www.example.org.", mdns.TypeA, "udp"); m.Rcode != mdns.RcodeRefused || queries.Load() != 0 {
		t.Errorf("a public name without AllowInternet: rcode %s, %d upstream queries", mdns.RcodeToString[m.Rcode], queries.Load())
	}
	adm2 := &admitted{fail: true}
	srv2, _, _ := start(t, up, public, adm2)
	if m := ask(t, srv2, "www.example.org.", mdns.TypeA, "udp"); m.Rcode != mdns.RcodeServerFailure || len(m.Answer) != 0 {
		t.Errorf("admission failed: rcode %s, %d answers", mdns.RcodeToString[m.Rcode], len(m.Answer))
	}
	// An upstream that does not answer.
	dead, _ := net.ListenPacket("udp", "127.0.0.1:0")
	defer dead.Close()
	srv3, f3, _ := start(t, dead.LocalAddr().String(), public, &admitted{})
	if m := ask(t, srv3, "www.example.org.", mdns.TypeA, "udp"); m.Rcode != mdns.RcodeServerFailure {
		t.Errorf("no upstream: rcode %s", mdns.RcodeToString[m.Rcode])
	}
	if f.Stats().Refused != 1 || f3.Stats().Failed != 1 {
		t.Errorf("stats %+v %+v", f.Stats(), f3.Stats())
	}
	if _, err := New(Config{Upstream: "resolver", Admit: adm.admit}); err == nil {
		t.Error("an upstream that is not IP:port")
	}
}
