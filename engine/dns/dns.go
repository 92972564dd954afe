// Package dns is a small authoritative DNS server for the wirelab.test zone: it answers A (and
// AAAA) queries for the origin names (s1.wirelab.test …, www.wirelab.test) with the origin
// addresses, and HTTPS queries (RFC 9460) for names given HTTPS records, over UDP and TCP. The trial runs it in the server namespace at 10.77.2.53 so that
// name lookups cross the emulated path, as in study E.
package dns

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	mdns "github.com/miekg/dns"
	"github.com/wirelab/wirelab/engine/internal/dnsserve"
)

// Zone is the zone the server is authoritative for.
const Zone = "wirelab.test."

// TTL of every answer, in seconds: 0, so no resolver or browser cache carries an answer from
// one load to the next.
const TTL = 0

const (
	// tcpTimeout bounds reading a query from, and writing an answer to, a TCP connection.
	tcpTimeout = 10 * time.Second
)

// HTTPSRecord is one HTTPS resource record (RFC 9460) of a name.
type HTTPSRecord struct {
	// Priority is 0 for alias mode (Target names the service's real name) or 1… for service
	// mode (lower is preferred).
	Priority uint16 `json:"priority"`
	// Target is the target name; "" or "." means the record's own name.
	Target string `json:"target,omitempty"`
	// ALPN lists the protocol ids the service offers (SvcParam alpn), e.g. h3, h2.
	ALPN []string `json:"alpn,omitempty"`
	// NoDefaultALPN is SvcParam no-default-alpn (http/1.1 is then not implied).
	NoDefaultALPN bool `json:"no_default_alpn,omitempty"`
	// Port is SvcParam port; 0: none.
	Port uint16 `json:"port,omitempty"`
	// ECH is SvcParam ech, an ECHConfigList; nil: none.
	ECH []byte `json:"ech,omitempty"`
}

// Records are what a server answers: an address per name (A, or AAAA for an IPv6 address) and
// HTTPS records per name. Names are within wirelab.test, with or without the final dot, any case.
type Records struct {
	Addrs map[string]netip.Addr
	HTTPS map[string][]HTTPSRecord
}

// Server answers queries for one set of Records.
type Server struct {
	records map[string]netip.Addr // FQDN, lower case → address
	https   map[string][]mdns.RR  // FQDN, lower case → HTTPS records
	srv     *dnsserve.Servers
	addr    string

	mu      sync.Mutex
	queries int
}

// Listen binds UDP and TCP on addr (host:port; port 0 picks one, the same for both) and starts
// answering. records maps names (with or without the final dot, any case, within wirelab.test)
// to addresses. It returns once both sockets accept queries.
func Listen(addr string, records map[string]netip.Addr) (*Server, error) {
	return ListenRecords(addr, Records{Addrs: records})
}

// ListenRecords is Listen with Records: addresses and HTTPS records. A name with HTTPS records but no
// address exists (A and AAAA queries get NODATA).
func ListenRecords(addr string, z Records) (*Server, error) {
	s := &Server{records: map[string]netip.Addr{}, https: map[string][]mdns.RR{}}
	for name, recs := range z.HTTPS {
		fq := mdns.CanonicalName(name)
		if !mdns.IsSubDomain(Zone, fq) {
			return nil, fmt.Errorf("dns: %q is outside the zone %s", name, Zone)
		}
		for _, r := range recs {
			rr, err := r.rr(fq)
			if err != nil {
				return nil, fmt.Errorf("dns: HTTPS record of %q: %w", name, err)
			}
			s.https[fq] = append(s.https[fq], rr)
		}
	}
	for name, a := range z.Addrs {
		fq := mdns.CanonicalName(name)
		if !mdns.IsSubDomain(Zone, fq) {
			return nil, fmt.Errorf("dns: %q is outside the zone %s", name, Zone)
		}
		if !a.IsValid() {
			return nil, fmt.Errorf("dns: %q has no valid address", name)
		}
		s.records[fq] = a
	}
	pc, ln, err := dnsserve.Listen(addr)
	if err != nil {
		return nil, err
	}
	s.addr = pc.LocalAddr().String()
	if s.srv, err = dnsserve.Start(pc, ln, mdns.HandlerFunc(s.serveDNS), tcpTimeout); err != nil {
		return nil, err
	}
	return s, nil
}

// Serve runs a server on addr until ctx is done.
func Serve(ctx context.Context, addr string, records map[string]netip.Addr) error {
	s, err := Listen(addr, records)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return s.Close()
}

// Addr is the address the server answers on (UDP and TCP).
func (s *Server) Addr() string { return s.addr }

// Queries counts the queries answered.
func (s *Server) Queries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries
}

// Close stops both sockets and waits for the server goroutines.
func (s *Server) Close() error { return s.srv.Close() }

func (s *Server) soa() mdns.RR {
	return &mdns.SOA{Hdr: mdns.RR_Header{Name: Zone, Rrtype: mdns.TypeSOA, Class: mdns.ClassINET, Ttl: TTL},
		Ns: "ns." + Zone, Mbox: "hostmaster." + Zone, Serial: 1, Refresh: 3600, Retry: 600, Expire: 86400, Minttl: TTL}
}

func (s *Server) serveDNS(w mdns.ResponseWriter, req *mdns.Msg) {
	s.mu.Lock()
	s.queries++
	s.mu.Unlock()
	m := new(mdns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	if req.Opcode != mdns.OpcodeQuery || len(req.Question) != 1 {
		m.SetRcode(req, mdns.RcodeNotImplemented)
		_ = w.WriteMsg(m)
		return
	}
	q := req.Question[0]
	name := mdns.CanonicalName(q.Name)
	if q.Qclass != mdns.ClassINET || !mdns.IsSubDomain(Zone, name) {
		m.Authoritative = false
		m.SetRcode(req, mdns.RcodeRefused)
		_ = w.WriteMsg(m)
		return
	}
	addr, ok := s.records[name]
	https, hasHTTPS := s.https[name]
	switch {
	case !ok && !hasHTTPS && name != Zone:
		m.SetRcode(req, mdns.RcodeNameError)
		m.Ns = []mdns.RR{s.soa()}
	case q.Qtype == mdns.TypeSOA && name == Zone:
		m.Answer = []mdns.RR{s.soa()}
	case ok && q.Qtype == mdns.TypeA && addr.Is4():
		m.Answer = []mdns.RR{&mdns.A{Hdr: mdns.RR_Header{Name: q.Name, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: TTL}, A: addr.AsSlice()}}
	case ok && q.Qtype == mdns.TypeAAAA && addr.Is6() && !addr.Is4In6():
		m.Answer = []mdns.RR{&mdns.AAAA{Hdr: mdns.RR_Header{Name: q.Name, Rrtype: mdns.TypeAAAA, Class: mdns.ClassINET, Ttl: TTL}, AAAA: addr.AsSlice()}}
	case hasHTTPS && q.Qtype == mdns.TypeHTTPS:
		for _, rr := range https {
			c := mdns.Copy(rr)
			c.Header().Name = q.Name
			m.Answer = append(m.Answer, c)
		}
	default: // the name exists, without data of this type (NODATA)
		m.Ns = []mdns.RR{s.soa()}
	}
	_ = w.WriteMsg(m)
}

// OriginRecords is the usual map: s<i+1>.wirelab.test → addrs[i], and www.wirelab.test → addrs[0].
func OriginRecords(addrs []netip.Addr) map[string]netip.Addr {
	m := map[string]netip.Addr{}
	for i, a := range addrs {
		m[fmt.Sprintf("s%d.wirelab.test", i+1)] = a
	}
	if len(addrs) > 0 {
		m["www.wirelab.test"] = addrs[0]
	}
	return m
}

// rr builds the resource record for owner name fq.
func (r HTTPSRecord) rr(fq string) (mdns.RR, error) {
	target := r.Target
	if target == "" {
		target = "."
	}
	if _, ok := mdns.IsDomainName(target); !ok {
		return nil, fmt.Errorf("target %q is not a domain name", r.Target)
	}
	if r.Priority == 0 && (len(r.ALPN) > 0 || r.NoDefaultALPN || r.Port != 0 || r.ECH != nil) {
		return nil, errors.New("an alias-mode record (priority 0) has no parameters")
	}
	rec := &mdns.HTTPS{SVCB: mdns.SVCB{
		Hdr:      mdns.RR_Header{Name: fq, Rrtype: mdns.TypeHTTPS, Class: mdns.ClassINET, Ttl: TTL},
		Priority: r.Priority, Target: mdns.Fqdn(target),
	}}
	// SvcParams in increasing key order (RFC 9460 §2.2).
	if len(r.ALPN) > 0 {
		rec.Value = append(rec.Value, &mdns.SVCBAlpn{Alpn: r.ALPN})
	}
	if r.NoDefaultALPN {
		rec.Value = append(rec.Value, &mdns.SVCBNoDefaultAlpn{})
	}
	if r.Port != 0 {
		rec.Value = append(rec.Value, &mdns.SVCBPort{Port: r.Port})
	}
	if r.ECH != nil {
		rec.Value = append(rec.Value, &mdns.SVCBECHConfig{ECH: r.ECH})
	}
	return rec, nil
}

// OriginZone is OriginRecords with, when alpn is not empty, one service-mode HTTPS record per
// name (priority 1, the name itself as target, SvcParam alpn): how a client.h3 = https-rr trial
// announces HTTP/3 (docs/vitals.md, "HTTP/3 as browsers find it").
func OriginZone(addrs []netip.Addr, alpn []string) Records {
	z := Records{Addrs: OriginRecords(addrs)}
	if len(alpn) == 0 {
		return z
	}
	z.HTTPS = map[string][]HTTPSRecord{}
	for name := range z.Addrs {
		z.HTTPS[name] = []HTTPSRecord{{Priority: 1, ALPN: slices.Clone(alpn)}}
	}
	return z
}
