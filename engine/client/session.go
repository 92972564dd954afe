package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"
)

// session is the state of one load shared by its origin pools: the load clock, the name cache
// and the registry of connections (so that an aborted load closes them all). Nothing in it
// outlives the load.
type session struct {
	cfg    Config
	t0     time.Time // monotonic origin of the load clock
	wall0  time.Time // the same instant, wall clock
	dns    *lookupCache
	pri    *prioritiser
	pushes *pushCache // pushed responses (when Config.AcceptPush and the protocol has push)

	mu      sync.Mutex
	conns   []*connRecord
	aborted bool
}

// connRecord is a registered connection: its public description and how to close it.
type connRecord struct {
	info   Conn
	closer io.Closer
	mu     sync.Mutex    // guards info and lost after registration
	lost   func() uint64 // h3: packets the QUIC stack declared lost so far
}

func newSession(cfg Config) *session {
	now := time.Now()
	return &session{cfg: cfg, t0: now, wall0: now, dns: newLookupCache(cfg.Resolver),
		pri: newPrioritiser(cfg), pushes: newPushCache()}
}

// now is the load clock: time since the load started, monotonic.
func (s *session) now() time.Duration { return time.Since(s.t0) }

var errAborted = errors.New("load aborted")

// register assigns the next connection id. If the load was aborted meanwhile, it closes c and
// fails.
func (s *session) register(o origin, opened time.Duration, c io.Closer, local, remote net.Addr) (*connRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aborted {
		c.Close()
		return nil, errAborted
	}
	rec := &connRecord{closer: c, info: Conn{
		ID: len(s.conns) + 1, Origin: o.String(), Protocol: s.cfg.Protocol.wireName(),
		Local: local.String(), Remote: remote.String(), OpenedMS: ms(opened),
	}}
	s.conns = append(s.conns, rec)
	return rec, nil
}

// abort closes every connection, now and as they register; blocked I/O then fails at once.
func (s *session) abort() {
	s.mu.Lock()
	s.aborted = true
	conns := s.conns
	s.mu.Unlock()
	for _, c := range conns {
		c.closer.Close()
	}
}

// snapshot describes the connections opened so far, in the order they were opened.
func (s *session) snapshot() []Conn {
	s.mu.Lock()
	conns := slices.Clone(s.conns)
	s.mu.Unlock()
	out := make([]Conn, len(conns))
	for i, c := range conns {
		out[i] = c.snapshot()
	}
	return out
}

// closing reports whether the load is closing its connections (ended or aborted): connection
// errors are then expected and not recorded.
func (s *session) closing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.aborted
}

func (rec *connRecord) update(f func(*Conn)) {
	rec.mu.Lock()
	f(&rec.info)
	rec.mu.Unlock()
}

func (rec *connRecord) snapshot() Conn {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	c := rec.info
	if rec.lost != nil {
		c.PacketsLost = rec.lost()
	}
	return c
}

// resolve finds the address to dial for o and records the dns phase on r (none for IP literals).
func (s *session) resolve(ctx context.Context, o origin, r *request) (netip.Addr, error) {
	if a, err := netip.ParseAddr(o.host); err == nil {
		return a, s.checkAddr(a, o.host)
	}
	r.dnsStart = s.now()
	addrs, err := s.dns.lookup(ctx, o.host)
	if err != nil {
		return netip.Addr{}, err
	}
	return addrs[0], s.checkAddr(addrs[0], o.host)
}

func (s *session) checkAddr(a netip.Addr, host string) error {
	if s.cfg.AllowAnyTarget {
		return nil
	}
	return checkAddr(a, host)
}

// tlsConfig is a fresh client TLS configuration: no session cache, so every handshake is full.
func (s *session) tlsConfig(o origin, alpn string) *tls.Config {
	return &tls.Config{
		ServerName:   o.host,
		RootCAs:      s.cfg.RootCAs,
		NextProtos:   []string{alpn},
		MinVersion:   tls.VersionTLS12,
		KeyLogWriter: s.cfg.KeyLogWriter,
	}
}

// dialTCP opens a TCP connection to o on behalf of r (which then carries dns, connect and ssl),
// with TLS and the given ALPN protocol if alpn is not "". It registers the connection.
func (s *session) dialTCP(ctx context.Context, o origin, r *request, alpn string) (net.Conn, *connRecord, error) {
	addr, err := s.resolve(ctx, o, r)
	if err != nil {
		return nil, nil, err
	}
	r.connectStart = s.now()
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", netipAddrPort(addr, o.port).String())
	if err != nil {
		return nil, nil, err
	}
	rec, err := s.register(o, r.connectStart, raw, raw.LocalAddr(), raw.RemoteAddr())
	if err != nil {
		return nil, nil, err
	}
	r.conn = rec.info.ID
	if alpn == "" {
		r.connectEnd = s.now()
		return raw, rec, nil
	}
	r.sslStart = s.now()
	tc := tls.Client(raw, s.tlsConfig(o, alpn))
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		rec.update(func(c *Conn) { c.Error = err.Error() })
		return nil, nil, fmt.Errorf("tls handshake: %w", err)
	}
	r.connectEnd = s.now()
	st := tc.ConnectionState()
	rec.update(func(c *Conn) {
		c.TLSVersion, c.ALPN, c.TLSResumed = tls.VersionName(st.Version), st.NegotiatedProtocol, st.DidResume
	})
	if st.NegotiatedProtocol != alpn && (alpn != "http/1.1" || st.NegotiatedProtocol != "") {
		tc.Close()
		err := fmt.Errorf("server did not negotiate ALPN %q (got %q)", alpn, st.NegotiatedProtocol)
		rec.update(func(c *Conn) { c.Error = err.Error() })
		return nil, nil, err
	}
	// Abort must close the TLS conn's socket; raw is what was registered, which suffices.
	return tc, rec, nil
}

// netipAddrPort joins an address and a port validated by originOf.
func netipAddrPort(a netip.Addr, port string) netip.AddrPort {
	n, _ := strconv.ParseUint(port, 10, 16)
	return netip.AddrPortFrom(a, uint16(n))
}
