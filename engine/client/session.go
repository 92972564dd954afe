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

	"github.com/wirelab/wirelab/engine/internal/quicloss"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// session is the state shared by the origin pools of one load (Loader.Load) or of a Tab's loads:
// the clock, the name cache and the registry of connections (so that an aborted load closes them
// all). A Loader.Load session serves one load; a Tab's keeps its connections and names from one
// load to the next (keep) until the Tab closes it.
type session struct {
	cfg    Config
	t0     time.Time // monotonic origin of the session clock
	wall0  time.Time // the same instant, wall clock
	dns    *lookupCache
	pri    *prioritiser
	pushes *pushCache // pushed responses of the current load (when Config.AcceptPush and the protocol has push)
	// profile is Config.Profile, or the load's own (no session caches) when that is nil.
	profile *Profile
	keep    bool       // a Tab's: connections outlive a load
	gauge   *ConnGauge // counts the connections opened and closed (nil: not counted)
	// load numbers the session's loads from 1; it changes only between loads (no request in
	// flight), before the next load's request goroutines start.
	load int

	mu      sync.Mutex
	conns   []*connRecord // registered during the current load
	nextID  int           // the next connection id
	aborted bool
}

// handshakeMaxWait bounds how long a load's end waits for handshakes still completing.
const handshakeMaxWait = 2 * time.Second

// awaitHandshakes waits (at most d in all) for the connections' h3 handshakes still completing
// behind 0-RTT requests, so that their resumption and 0-RTT are known when a load is summarised:
// a repeat view whose only request is answered as 0.5-RTT data can end before its handshake has
// been noted. The load's PLT is not affected (its last response has arrived).
func awaitHandshakes(conns []*connRecord, d time.Duration) {
	var deadline <-chan time.Time
	for _, c := range conns {
		c.mu.Lock()
		ch := c.handshaking
		c.mu.Unlock()
		if ch == nil {
			continue
		}
		if deadline == nil {
			timer := time.NewTimer(d)
			defer timer.Stop()
			deadline = timer.C
		}
		select {
		case <-ch:
		case <-deadline:
			return
		}
	}
}

// handshakePending marks the connection's h3 handshake as still completing (see
// awaitHandshakes); the caller closes the channel once it is noted or the connection ended.
func (rec *connRecord) handshakePending() chan struct{} {
	ch := make(chan struct{})
	rec.mu.Lock()
	rec.handshaking = ch
	rec.mu.Unlock()
	return ch
}

// connRecord is a registered connection: its public description and how to close it.
type connRecord struct {
	info   Conn
	closer io.Closer
	load   int           // the session load that opened it
	mu     sync.Mutex    // guards info, lost and arrivals after registration
	lost   func() uint64 // h3: packets the QUIC stack declared lost so far
	loss   *quicloss.Recorder
	// arrivals are, for an h3 connection of a single load (not a Tab's), the STREAM frames it
	// received: stream, session time (ns), offset, length.
	arrivals [][4]int64
	// handshaking is, for an h3 connection whose first requests went before its handshake had
	// completed (0-RTT), closed once its resumption and 0-RTT are noted (or it ended); nil when
	// nothing is pending. awaitHandshakes waits for it.
	handshaking chan struct{}
}

func newSession(cfg Config) *session {
	now := time.Now()
	prof := cfg.Profile
	if prof == nil {
		prof = freshProfile()
	}
	return &session{cfg: cfg, t0: now, wall0: now, dns: newLookupCache(cfg.Resolver),
		pri: newPrioritiser(cfg), pushes: newPushCache(), profile: prof, load: 1, nextID: 1}
}

// nextLoad starts the session's next load (a Tab's): closed connections leave the registry and
// the push cache starts empty.
func (s *session) nextLoad() {
	s.mu.Lock()
	s.conns = slices.DeleteFunc(s.conns, (*connRecord).isClosed)
	s.mu.Unlock()
	s.pushes.reset()
	s.load++
}

// track wraps a new connection so that its Close is seen (a Tab's registry, a ConnGauge). A
// Loader.Load session needs neither and keeps the connection as it is.
func (s *session) track(c net.Conn) net.Conn {
	if !s.keep && s.gauge == nil {
		return c
	}
	s.gauge.count(1, 0)
	return &trackedConn{Conn: c, gauge: s.gauge}
}

// trackedConn reports its first Close to the session's gauge and registry.
type trackedConn struct {
	net.Conn
	closed atomic.Bool
	peer   atomic.Int32 // peerUnseen, peerOpen or peerEndedFirst
	gauge  *ConnGauge
}

func (c *trackedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.gauge.count(0, 1)
		if c.gauge != nil && (c.peer.Load() == peerEndedFirst || c.peer.Load() == peerUnseen && peerEnded(c.Conn)) {
			c.gauge.byPeer.Add(1)
		}
	}
	return c.Conn.Close()
}

func (c *trackedConn) isClosed() bool { return c.closed.Load() }

// What trackedConn.peer knows of the server's end of the connection.
const (
	peerUnseen     int32 = iota // not looked at yet: Close looks
	peerOpen                    // open when the client said goodbye
	peerEndedFirst              // ended before the client said goodbye
)

// notePeer looks, once, whether the server has ended the connection; goodbye calls it before the
// client's own closing message.
func (c *trackedConn) notePeer() {
	if c.gauge == nil || c.closed.Load() {
		return
	}
	v := peerOpen
	if peerEnded(c.Conn) {
		v = peerEndedFirst
	}
	c.peer.CompareAndSwap(peerUnseen, v)
}

// Read notes the server's end of the connection as the client meets it: EOF (its FIN) or a reset.
func (c *trackedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
		c.peer.CompareAndSwap(peerUnseen, peerEndedFirst)
	}
	return n, err
}

// trackedOf is the tracked socket beneath conn as the pools hold it (itself, or under its TLS);
// nil when conn is not tracked.
func trackedOf(conn net.Conn) *trackedConn {
	switch t := conn.(type) {
	case *tlsTracked:
		return t.raw
	case *trackedConn:
		return t
	}
	return nil
}

// serverSaidGoodbye notes that the server has ended conn with a message of its own (HTTP/2 or
// SPDY GOAWAY) — unless the client had said goodbye first.
func serverSaidGoodbye(conn net.Conn) {
	if t := trackedOf(conn); t != nil {
		t.peer.CompareAndSwap(peerUnseen, peerEndedFirst)
	}
}

// goodbye is called before the client ends conn with a message of its own (TLS close_notify, SPDY
// GOAWAY): the server may answer it with its FIN before the socket is closed, so whether the
// server had ended the connection is looked at now.
func goodbye(conn net.Conn) {
	if t := trackedOf(conn); t != nil {
		t.notePeer()
	}
}

// tlsTracked is a tracked connection's TLS: its Close sends close_notify, so it says goodbye first.
type tlsTracked struct {
	*tls.Conn
	raw *trackedConn
}

func (c *tlsTracked) Close() error {
	c.raw.notePeer()
	return c.Conn.Close()
}

// Read notes the server's close_notify (io.EOF), which may come a moment before its FIN.
func (c *tlsTracked) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if errors.Is(err, io.EOF) {
		c.raw.peer.CompareAndSwap(peerUnseen, peerEndedFirst)
	}
	return n, err
}

// peerEnded reports whether the server had ended a TCP connection that the client has not closed
// yet: the kernel's state of the socket (TCP_INFO) is CLOSE_WAIT (the server's FIN came) or CLOSE
// (its RST came). Whether the client noticed it by reading does not matter: TLS stops reading at
// the server's close_notify, before the FIN behind it.
func peerEnded(c net.Conn) bool {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return false
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return false
	}
	var state uint8
	if rc.Control(func(fd uintptr) {
		if info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			state = info.State
		}
	}) != nil {
		return false
	}
	return state == tcpCloseWait || state == tcpClose
}

// serverEnded is peerEnded for a connection as the pools hold it (a tracked one, its TLS).
func serverEnded(c net.Conn) bool {
	if t := trackedOf(c); t != nil {
		return peerEnded(t.Conn)
	}
	return peerEnded(c)
}

// The kernel's TCP states (include/net/tcp_states.h) that peerEnded looks for.
const (
	tcpClose     = 7
	tcpCloseWait = 8
)

// ConnGauge counts the transport connections (TCP connections; h3: QUIC connections, each on its
// own UDP socket) that Tabs sharing it open and close, and of the closed ones those the server had
// ended first. Safe for concurrent use; a nil *ConnGauge counts nothing.
type ConnGauge struct{ opened, closed, byPeer atomic.Int64 }

func (g *ConnGauge) count(opened, closed int64) {
	if g != nil {
		g.opened.Add(opened)
		g.closed.Add(closed)
	}
}

// ClosedByServer is how many of the closed connections the server (or, for QUIC, the path: an
// idle timeout, a stateless reset) had ended before the client said goodbye: a TCP connection on
// which the server's FIN or RST came (met by a read, or the socket's state at the close), its TLS
// close_notify or its HTTP/2 or SPDY GOAWAY; a QUIC connection that had ended (the server's
// CONNECTION_CLOSE). Keep-alive connections a server drops show here (docs/loadtest.md).
func (g *ConnGauge) ClosedByServer() int64 {
	if g == nil {
		return 0
	}
	return g.byPeer.Load()
}

// Opened is how many connections were opened so far.
func (g *ConnGauge) Opened() int64 {
	if g == nil {
		return 0
	}
	return g.opened.Load()
}

// Open is how many are open now.
func (g *ConnGauge) Open() int64 {
	if g == nil {
		return 0
	}
	return g.opened.Load() - g.closed.Load()
}

// bufSize is the size of a connection's (or a response's) read or write buffer whose Loader.Load
// size is n: a Tab's are a quarter of it, since a load generator keeps thousands of connections
// (docs/loadtest.md: memory per VU). What is sent and received does not change.
func (s *session) bufSize(n int) int {
	if s.keep {
		return n / 4
	}
	return n
}

// opened is how many connections the session has registered.
func (s *session) opened() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextID - 1
}

// now is the session clock: time since the session started, monotonic.
func (s *session) now() time.Duration { return time.Since(s.t0) }

var errAborted = errors.New("load aborted")

// register assigns the next connection id. If the load was aborted meanwhile, it closes c and
// fails.
func (s *session) register(o origin, proto Protocol, opened time.Duration, c io.Closer, local, remote net.Addr) (*connRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aborted {
		c.Close()
		return nil, errAborted
	}
	rec := &connRecord{closer: c, load: s.load, info: Conn{
		ID: s.nextID, Origin: o.String(), Protocol: proto.wireName(),
		Local: local.String(), Remote: remote.String(), OpenedMS: ms(opened),
	}}
	s.nextID++
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

// snapshot describes the connections the current load opened and, of those kept from earlier
// loads (a Tab's), the ones in used, in the order they were opened — once their handshakes are
// noted (awaitHandshakes, at most handshakeMaxWait).
func (s *session) snapshot(used map[int]bool) []Conn {
	s.mu.Lock()
	conns := slices.DeleteFunc(slices.Clone(s.conns), func(c *connRecord) bool { return c.load != s.load && !used[c.info.ID] })
	s.mu.Unlock()
	awaitHandshakes(conns, handshakeMaxWait)
	out := make([]Conn, len(conns))
	for i, c := range conns {
		out[i] = c.snapshot()
		out[i].Kept = c.load != s.load
	}
	return out
}

// recordedArrivals gives each h3 connection of conns (a snapshot of this session's) the STREAM
// frames its trace recorded, once the connections are closed. quic-go records a received packet's
// frames after it has handed them to their streams, so a load can end (its reader at EOF) before
// the record of its last packet: a snapshot taken at the load's end can miss the response's last
// frames. A closed connection's trace has ended (quic-go closes it after the connection's last
// event, before CloseWithError returns), so what it holds then is every frame received.
// traceEndMaxWait bounds the wait for a closed h3 connection's trace to end (recordedArrivals).
const traceEndMaxWait = 250 * time.Millisecond

func (s *session) recordedArrivals(conns []Conn) {
	s.mu.Lock()
	byID := map[int]*connRecord{}
	for _, c := range s.conns {
		byID[c.info.ID] = c
	}
	s.mu.Unlock()
	for i := range conns {
		rec := byID[conns[i].ID]
		if rec == nil || rec.loss == nil {
			continue
		}
		if q, ok := rec.closer.(*quicCloser); ok && q.established() {
			select {
			case <-rec.loss.Closed(): // at once, but where a parent context ended the connection first
			case <-time.After(traceEndMaxWait):
			}
		}
		rec.mu.Lock()
		conns[i].arrivals = rec.arrivals
		rec.mu.Unlock()
	}
}

// closing reports whether the load is closing its connections (ended or aborted): connection
// errors are then expected and not recorded.
func (s *session) closing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.aborted
}

// isClosed reports whether the connection is known to be closed (tracked connections only).
func (rec *connRecord) isClosed() bool {
	c, ok := rec.closer.(interface{ isClosed() bool })
	return ok && c.isClosed()
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
	if rec.loss != nil {
		l := rec.loss.Counts()
		c.QUICLoss = &l
	}
	c.arrivals = rec.arrivals
	return c
}

// arrived records a STREAM frame the connection received now.
func (rec *connRecord) arrived(now time.Duration, stream, offset, length int64) {
	rec.mu.Lock()
	rec.arrivals = append(rec.arrivals, [4]int64{stream, int64(now), offset, length})
	rec.mu.Unlock()
}

// resolve finds the address to dial for o and records the dns phase on r (none for IP literals).
func (s *session) resolve(ctx context.Context, o origin, r *request) (netip.Addr, error) {
	if a, err := netip.ParseAddr(o.host); err == nil {
		return a, s.checkAddr(a, o.host)
	}
	if r.dnsStart == unset { // else the https-rr lookup (discoverPool) began the dns phase
		r.dnsStart = s.now()
	}
	addrs, err := s.dns.lookup(ctx, o.host)
	if err != nil {
		return netip.Addr{}, err
	}
	return addrs[0], s.checkAddr(addrs[0], o.host)
}

func (s *session) checkAddr(a netip.Addr, host string) error {
	switch {
	case s.cfg.Target != nil:
		return s.cfg.Target.CheckAddr(host, a)
	case s.cfg.AllowAnyTarget:
		return nil
	case s.cfg.LoopbackOnly:
		return checkLoopback(a, host)
	case s.cfg.Internet:
		return checkInternetAddr(a, host)
	}
	return checkAddr(a, host)
}

// tlsConfig is a client TLS configuration for o. Its session cache is the profile's (TCP's, or
// QUIC's for alpn h3): nil for a load without Config.Profile, so that every handshake is full.
func (s *session) tlsConfig(o origin, alpn string) *tls.Config {
	cache := s.profile.tcp
	if alpn == "h3" {
		cache = s.profile.quic
	}
	return &tls.Config{
		ServerName:         o.host,
		RootCAs:            s.cfg.RootCAs,
		NextProtos:         []string{alpn},
		MinVersion:         tls.VersionTLS12,
		KeyLogWriter:       s.cfg.KeyLogWriter,
		ClientSessionCache: cache,
	}
}

// httpsLookup asks the Resolver for host's HTTPS record (client.h3 = https-rr; Config checked
// that the Resolver answers such queries).
func (s *session) httpsLookup(ctx context.Context, host string) ([]string, error) {
	return s.cfg.Resolver.(HTTPSResolver).LookupHTTPS(ctx, host)
}

// tcpProtocol is the protocol a TCP connection of the load speaks: the load's, or HTTP/2 for an
// h3 load's connections before HTTP/3 is discovered (discoverPool).
func (s *session) tcpProtocol() Protocol {
	if s.cfg.Protocol == H3 {
		return H2
	}
	return s.cfg.Protocol
}

// dialTCP opens a TCP connection to o on behalf of r (which then carries dns, connect and ssl),
// with TLS and the given ALPN protocol if alpn is not "". It registers the connection.
func (s *session) dialTCP(ctx context.Context, o origin, r *request, alpn string) (net.Conn, *connRecord, error) {
	addr, err := s.resolve(ctx, o, r)
	if err != nil {
		return nil, nil, err
	}
	r.connectStart = s.now()
	d, err := s.cfg.Sources.dialer(addr)
	if err != nil {
		return nil, nil, err
	}
	raw, err := d.DialContext(ctx, "tcp", netipAddrPort(addr, o.port).String())
	if err != nil {
		return nil, nil, err
	}
	raw = s.track(raw)
	rec, err := s.register(o, s.tcpProtocol(), r.connectStart, raw, raw.LocalAddr(), raw.RemoteAddr())
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
	if tr, ok := raw.(*trackedConn); ok {
		return &tlsTracked{Conn: tc, raw: tr}, rec, nil
	}
	return tc, rec, nil
}

// netipAddrPort joins an address and a port validated by originOf.
func netipAddrPort(a netip.Addr, port string) netip.AddrPort {
	n, _ := strconv.ParseUint(port, 10, 16)
	return netip.AddrPortFrom(a, uint16(n))
}
