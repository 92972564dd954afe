// Package egress is the egress path's DNS forwarder (docs/egress.md): it answers the client
// namespace's queries at the run's resolver address (labaddr.DNSAddr, on the egress router) by
// asking the far side's resolver, and admits into the router's set every IPv4 address an answer
// carries that passes the address policy — before it relays the answer. So the client can reach
// exactly the addresses its own lookups returned and the policy passed; the router rejects the
// rest. Answers are relayed as the upstream gave them (the loaders check every address against the
// same policy before dialling, with the exact refusal).
//
//	f, _ := egress.New(egress.Config{Upstream: "10.77.2.54:53", Policy: p, Admit: admit})
//	f.Serve(udpConn, tcpListener)   // in the router namespace
//	defer f.Close()
//
// Run as a process by `wirelab-engine dns --forward` (Start), on the far side.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	mdns "github.com/miekg/dns"

	"github.com/wirelab/wirelab/engine/internal/dnsserve"
	"github.com/wirelab/wirelab/engine/policy"
)

// DefaultTimeout bounds one exchange with the upstream resolver.
const DefaultTimeout = 5 * time.Second

// tcpTimeout bounds reading a query from, and writing an answer to, a client's TCP connection.
const tcpTimeout = 10 * time.Second

// Config is a forwarder's configuration.
type Config struct {
	// Upstream is the resolver asked (IP:port).
	Upstream string
	// Policy decides which answered addresses are admitted; a name it refuses is answered REFUSED
	// without asking the upstream.
	Policy policy.Policy
	// Admit makes addresses reachable (the router's set); an error is the query's SERVFAIL.
	Admit func([]netip.Addr) error
	// OnEvent, when set, receives every admission and refusal (from any goroutine, one at a time).
	OnEvent func(Event)
	// Timeout bounds one exchange with the upstream (default DefaultTimeout).
	Timeout time.Duration
}

// Event is an admission or a refusal, as `dns --forward` prints it (one JSON line).
type Event struct {
	Event  string `json:"event"` // admitted | refused
	Name   string `json:"name"`  // the name asked (as asked)
	Addr   string `json:"addr,omitempty"`
	Reason string `json:"reason,omitempty"` // the policy's, for a refusal
}

// Stats count what a forwarder did.
type Stats struct {
	Queries  int `json:"queries"`  // queries received
	Admitted int `json:"admitted"` // distinct addresses admitted
	Refused  int `json:"refused"`  // addresses (or names) the policy refused
	Failed   int `json:"failed"`   // queries answered SERVFAIL (upstream unreachable, admission failed)
}

// Forwarder is a running DNS forwarder.
type Forwarder struct {
	cfg     Config
	srv     *dnsserve.Servers
	once    sync.Once
	evMu    sync.Mutex // OnEvent one at a time
	mu      sync.Mutex
	stats   Stats
	seen    map[netip.Addr]bool // admitted already
	ctx     context.Context
	stopAll context.CancelFunc
}

// New checks cfg and makes a forwarder.
func New(cfg Config) (*Forwarder, error) {
	if _, err := netip.ParseAddrPort(cfg.Upstream); err != nil {
		return nil, fmt.Errorf("egress: upstream %q: want IP:port", cfg.Upstream)
	}
	if cfg.Admit == nil {
		return nil, errors.New("egress: no Admit")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Forwarder{cfg: cfg, seen: map[netip.Addr]bool{}, ctx: ctx, stopAll: cancel}, nil
}

// Serve answers on pc (UDP) and ln (TCP) — sockets the caller opened where the client reaches them
// — and returns once both serve.
func (f *Forwarder) Serve(pc net.PacketConn, ln net.Listener) error {
	srv, err := dnsserve.Start(pc, ln, mdns.HandlerFunc(f.serve), tcpTimeout)
	if err != nil {
		return fmt.Errorf("egress: %w", err)
	}
	f.srv = srv
	return nil
}

// Close stops serving and waits for the server goroutines.
func (f *Forwarder) Close() error {
	var err error
	f.once.Do(func() {
		f.stopAll()
		if f.srv != nil {
			err = f.srv.Close()
		}
	})
	return err
}

// Stats are the counts so far.
func (f *Forwarder) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

func (f *Forwarder) count(fn func(*Stats)) {
	f.mu.Lock()
	fn(&f.stats)
	f.mu.Unlock()
}

func (f *Forwarder) event(ev Event) {
	if f.cfg.OnEvent == nil {
		return
	}
	f.evMu.Lock()
	defer f.evMu.Unlock()
	f.cfg.OnEvent(ev)
}

// serve answers one query (over UDP or TCP, as it came): refused by name, or asked upstream and its
// addresses judged and admitted before the answer goes back.
func (f *Forwarder) serve(w mdns.ResponseWriter, req *mdns.Msg) {
	network := w.LocalAddr().Network()
	f.count(func(s *Stats) { s.Queries++ })
	fail := func(rcode int) {
		m := new(mdns.Msg)
		m.SetRcode(req, rcode)
		_ = w.WriteMsg(m)
	}
	if req.Opcode != mdns.OpcodeQuery || len(req.Question) != 1 {
		fail(mdns.RcodeNotImplemented)
		return
	}
	q := req.Question[0]
	name := strings.TrimSuffix(q.Name, ".")
	if err := f.cfg.Policy.CheckName(name, name); err != nil {
		f.count(func(s *Stats) { s.Refused++ })
		f.event(Event{Event: "refused", Name: name, Reason: err.Error()})
		fail(mdns.RcodeRefused)
		return
	}
	resp, err := f.exchange(req, network)
	if err != nil {
		f.count(func(s *Stats) { s.Failed++ })
		fail(mdns.RcodeServerFailure)
		return
	}
	if err := f.admitFrom(name, resp); err != nil {
		f.count(func(s *Stats) { s.Failed++ })
		fail(mdns.RcodeServerFailure)
		return
	}
	resp.Id = req.Id
	if network == "udp" {
		resp.Truncate(udpSize(req)) // the client's limit, not the upstream's
	}
	_ = w.WriteMsg(resp)
}

// udpSize is the largest UDP answer the client accepts (EDNS0, else 512).
func udpSize(req *mdns.Msg) int {
	if o := req.IsEdns0(); o != nil && o.UDPSize() > mdns.MinMsgSize {
		return int(o.UDPSize())
	}
	return mdns.MinMsgSize
}

// exchange asks the upstream, over UDP and again over TCP when the answer is truncated (or over TCP
// when the client asked over TCP).
func (f *Forwarder) exchange(req *mdns.Msg, network string) (*mdns.Msg, error) {
	ctx, cancel := context.WithTimeout(f.ctx, f.cfg.Timeout)
	defer cancel()
	q := req.Copy()
	if network == "udp" {
		c := &mdns.Client{Net: "udp", Timeout: f.cfg.Timeout, UDPSize: mdns.DefaultMsgSize}
		m, _, err := c.ExchangeContext(ctx, q, f.cfg.Upstream)
		if err != nil || !m.Truncated {
			return m, err
		}
	}
	c := &mdns.Client{Net: "tcp", Timeout: f.cfg.Timeout}
	m, _, err := c.ExchangeContext(ctx, q, f.cfg.Upstream)
	return m, err
}

// admitFrom judges every A record of the answer and admits those that pass, in one call; each
// address is reported once.
func (f *Forwarder) admitFrom(name string, resp *mdns.Msg) error {
	var pass []netip.Addr
	for _, rr := range resp.Answer {
		a, ok := rr.(*mdns.A)
		if !ok {
			continue
		}
		addr, ok := netip.AddrFromSlice(a.A)
		if !ok {
			continue
		}
		addr = addr.Unmap()
		if err := f.cfg.Policy.CheckAddr(name, addr); err != nil {
			f.count(func(s *Stats) { s.Refused++ })
			f.event(Event{Event: "refused", Name: name, Addr: addr.String(), Reason: err.Error()})
			continue
		}
		pass = append(pass, addr)
	}
	if len(pass) == 0 {
		return nil
	}
	f.mu.Lock()
	known := true
	for _, a := range pass {
		known = known && f.seen[a] // seen only once admitted: a concurrent query for the same name admits again
	}
	f.mu.Unlock()
	if known {
		return nil
	}
	if err := f.cfg.Admit(pass); err != nil {
		return err
	}
	for _, a := range pass {
		f.mu.Lock()
		fresh := !f.seen[a]
		if fresh {
			f.seen[a] = true
			f.stats.Admitted++
		}
		f.mu.Unlock()
		if fresh {
			f.event(Event{Event: "admitted", Name: name, Addr: a.String()})
		}
	}
	return nil
}
