package client

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/wirelab/wirelab/engine/internal/altsvc"
)

// discoverPool is an h3 load's pool for one origin when HTTP/3 is discovered rather than forced
// (Config.H3 alt-svc or https-rr): requests go over HTTP/2 (TCP+TLS, ALPN h2) until the origin is
// known to serve h3, then over QUIC. A request already on its way over HTTP/2 stays there, as in
// Chromium, where a request bound to a stream is not moved.
//
//   - alt-svc: a response carrying an Alt-Svc field with an h3 alternative on the origin's own
//     host (the lab's servers announce h3=":443"; another port is followed) makes every later
//     request of the origin go over QUIC to that port; the profile remembers it (Profile), so a
//     repeat view starts on QUIC.
//   - https-rr: the first request asks for the host's HTTPS record beside its A record (both in
//     its dns phase, in parallel, as Chromium's resolver does); QUIC if its alpn lists h3.
type discoverPool struct {
	s *session
	o origin

	mu   sync.Mutex
	tcp  *h2Pool // nil until a request goes over HTTP/2
	quic *h3Pool // nil until a request goes over QUIC
	// rr is closed once the https-rr lookup has answered; rrH3 is its verdict.
	rr    chan struct{}
	rrH3  bool
	rrErr error
}

var _ originPool = (*discoverPool)(nil)

func newDiscoverPool(s *session, o origin) *discoverPool { return &discoverPool{s: s, o: o} }

func (p *discoverPool) do(ctx context.Context, r *request) {
	if p.s.cfg.H3 == H3HTTPSRR {
		if err := p.lookupHTTPS(ctx, r); err != nil {
			r.finish(p.s.now(), err)
			return
		}
	}
	pool, proto := p.pick()
	r.proto = proto
	pool.do(ctx, r)
	if proto == H2 && p.s.cfg.H3 == H3AltSvc {
		if port, ok := announcedH3(r.altSvc, p.o); ok {
			p.s.profile.announce(p.o, port)
		}
	}
}

// pick is the pool the next request of the origin goes to.
func (p *discoverPool) pick() (originPool, Protocol) {
	h3, alt := false, p.o
	switch p.s.cfg.H3 {
	case H3AltSvc:
		alt.port, h3 = p.s.profile.announced(p.o)
	case H3HTTPSRR:
		h3 = p.rrH3 // the record's port parameter is not followed: the lab's records have none
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if h3 {
		if p.quic == nil {
			// the alternative's port (Alt-Svc may name another one); requests keep the
			// origin's authority (RFC 7838 §2)
			p.quic = newH3Pool(p.s, alt)
		}
		return p.quic, H3
	}
	if p.tcp == nil {
		p.tcp = newH2Pool(p.s, p.o)
	}
	return p.tcp, H2
}

// lookupHTTPS asks, once per origin, for the host's HTTPS record; the first request carries the
// lookup in its dns phase (the A query runs beside it through the load's name cache), later ones
// wait for its answer (blocked).
func (p *discoverPool) lookupHTTPS(ctx context.Context, r *request) error {
	p.mu.Lock()
	first := p.rr == nil
	if first {
		p.rr = make(chan struct{})
	}
	ch := p.rr
	p.mu.Unlock()
	if !first {
		select {
		case <-ch:
			return p.rrErr
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer close(ch)
	r.dnsStart = p.s.now()
	a := make(chan struct{})
	go func() { // the A query in parallel: its answer waits in the name cache for the dial
		defer close(a)
		_, _ = p.s.dns.lookup(ctx, p.o.host)
	}()
	alpn, err := p.s.httpsLookup(ctx, p.o.host)
	<-a
	if err != nil && ctx.Err() != nil {
		p.rrErr = ctx.Err()
		return p.rrErr
	}
	// No answer (lost on the path after every attempt, refused, malformed) is no HTTP/3: the
	// origin goes over HTTP/2 on its A record, as a browser does — not a failed request.
	p.rrH3 = err == nil && slices.Contains(alpn, "h3")
	return nil
}

func (p *discoverPool) close() {
	p.mu.Lock()
	tcp, quic := p.tcp, p.quic
	p.mu.Unlock()
	if tcp != nil {
		tcp.close()
	}
	if quic != nil {
		quic.close()
	}
}

func (p *discoverPool) usable() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return (p.tcp == nil || p.tcp.usable()) && (p.quic == nil || p.quic.usable())
}

// announcedH3 returns the port of the first h3 alternative an Alt-Svc field value names on o's own
// host (RFC 7838 §3: an empty host is the origin's). An alternative on another host is not
// followed: it would need its own name and certificate.
func announcedH3(altSvc string, o origin) (port string, ok bool) {
	if altSvc == "" {
		return "", false
	}
	for _, alt := range altsvc.Parse(altSvc) {
		if alt.ProtocolID == "h3" && (alt.Host == "" || strings.EqualFold(alt.Host, o.host)) {
			return strconv.Itoa(alt.Port), true
		}
	}
	return "", false
}
