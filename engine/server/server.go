package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"golang.org/x/net/http2"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/internal/quicloss"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/spdy"
)

// Server serves one page on every origin address. Start it with Start; Close stops everything
// it started and removes its certificate files.
type Server struct {
	cfg   Config
	page  *page.Page
	index map[string]int
	certs *Certs
	ports Ports

	tcpListeners   []net.Listener
	udpConns       []net.PacketConn
	httpServers    []*http.Server
	h3Servers      []*http3.Server
	quicTransports []*quic.Transport
	h2             *http2.Server
	errorLog       *log.Logger
	pushSet        []int // objects pushed with the root (cfg.Push)
	hooks          testHooks

	wg       sync.WaitGroup
	handlers sync.WaitGroup // requests being handled: Close waits for their records
	mu       sync.Mutex
	closed   bool
	rawConns map[net.Conn]struct{} // cleartext connections (h2c is served outside any http.Server)
	pending  sync.Map              // net.Conn → *connInfo, from ConnContext until its protocol is known
	conns    []*connInfo
	records  []Record
	dropped  int64
	connSeq  atomic.Uint64
}

// Ports are the ports the server listens on (the same on every origin address); 0 = not used.
type Ports struct {
	HTTP  int `json:"http"`  // h1, h2c
	HTTPS int `json:"https"` // h1s, h2, spdy3
	QUIC  int `json:"quic"`  // h3
}

// Port returns the port serving protocol p.
func (p Ports) Port(proto Protocol) int {
	switch proto {
	case H1, H2C:
		return p.HTTP
	case H3:
		return p.QUIC
	}
	return p.HTTPS
}

// Start validates cfg, writes the certificates and starts every listener; it returns once all of
// them accept connections. pg must have one origin per address.
func Start(pg *page.Page, cfg Config) (*Server, error) {
	return start(pg, cfg, testHooks{})
}

// testHooks let tests stand between the server and its sockets (e.g. a rate-limited connection
// that makes the write schedulers' choices visible on loopback). Zero: none.
type testHooks struct {
	wrapConn       func(net.Conn) net.Conn             // every accepted TCP connection
	wrapPacketConn func(net.PacketConn) net.PacketConn // every h3 UDP socket
}

func start(pg *page.Page, cfg Config, hooks testHooks) (*Server, error) {
	cfg, err := cfg.resolved()
	if err != nil {
		return nil, err
	}
	if err := pg.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.Addrs) != len(pg.Origins) {
		return nil, fielderr.New("addrs", len(cfg.Addrs), "the page has %d origins; give one address per origin", len(pg.Origins))
	}
	s := &Server{cfg: cfg, page: pg, index: pg.ObjectIndex(), rawConns: map[net.Conn]struct{}{},
		errorLog: log.New(discard{}, "", 0), pushSet: cfg.Push.Objects(pg), hooks: hooks}
	if cfg.Certs != nil {
		s.certs = cfg.Certs
	} else if s.certs, err = NewCerts(cfg.CertDir, cfg.Addrs); err != nil {
		return nil, err
	}
	s.h2 = &http2.Server{
		MaxConcurrentStreams: uint32(cfg.MaxConcurrentStreams),
		// RFC 9113's initial SETTINGS_MAX_FRAME_SIZE (x/net would advertise 1 MiB): the
		// server receives only small request frames, and h2spec checks the limit.
		MaxReadFrameSize: 16384,
		IdleTimeout:      idleTimeout,
	}
	if err := s.listen(); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.serve(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// wrappedListener applies testHooks.wrapConn to accepted connections.
type wrappedListener struct {
	net.Listener
	wrap func(net.Conn) net.Conn
}

func (l wrappedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.wrap(c), nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Limits of the server's connections and start-up, for every protocol.
const (
	idleTimeout       = 120 * time.Second // an idle connection (TCP or QUIC) is closed after this
	readHeaderTimeout = 30 * time.Second  // HTTP/1.x: a request's header must arrive within this
	listenAttempts    = 20                // port 0: new ports tried when another process takes one
)

// listen binds every listener. A port of 0 is picked on the first address and reused on the
// others; if another process holds it there, the whole set is retried with a new port.
func (s *Server) listen() error {
	var lastErr error
	for range listenAttempts {
		err := s.tryListen()
		if err == nil {
			return nil
		}
		s.closeListeners()
		lastErr = err
		if !errors.Is(err, syscall.EADDRINUSE) || (s.cfg.PortHTTP != 0 && s.cfg.PortHTTPS != 0 && s.cfg.PortQUIC != 0) {
			break
		}
	}
	return lastErr
}

func (s *Server) tryListen() error {
	s.ports = Ports{}
	want := Ports{HTTP: s.cfg.PortHTTP, HTTPS: s.cfg.PortHTTPS, QUIC: s.cfg.PortQUIC}
	for _, a := range s.cfg.Addrs {
		if s.cfg.has(H1, H2C) {
			if err := s.listenTCP(a, &want.HTTP, &s.ports.HTTP, "h1/h2c"); err != nil {
				return err
			}
		}
		if s.cfg.has(H1S, H2, SPDY3) {
			if err := s.listenTCP(a, &want.HTTPS, &s.ports.HTTPS, "h1s/h2/spdy3"); err != nil {
				return err
			}
		}
		if s.cfg.has(H3) {
			pc, err := net.ListenPacket("udp", netip.AddrPortFrom(a, uint16(want.QUIC)).String())
			if err != nil {
				return fmt.Errorf("server: listen %s (h3): %w", a, err)
			}
			s.udpConns = append(s.udpConns, pc)
			want.QUIC = pc.LocalAddr().(*net.UDPAddr).Port
			s.ports.QUIC = want.QUIC
		}
	}
	return nil
}

// listenTCP listens on a at *want (0: a port the kernel picks, which the other addresses then
// take too) for the protocols named by what, and records the port in *want and *got.
func (s *Server) listenTCP(a netip.Addr, want, got *int, what string) error {
	ln, err := net.Listen("tcp", netip.AddrPortFrom(a, uint16(*want)).String())
	if err != nil {
		return fmt.Errorf("server: listen %s (%s): %w", a, what, err)
	}
	s.tcpListeners = append(s.tcpListeners, ln)
	*want = ln.Addr().(*net.TCPAddr).Port
	*got = *want
	return nil
}

func (s *Server) closeListeners() {
	for _, ln := range s.tcpListeners {
		ln.Close()
	}
	for _, pc := range s.udpConns {
		pc.Close()
	}
	s.tcpListeners, s.udpConns = nil, nil
}

// tlsConfig is the TCP TLS configuration for h1s, h2 and spdy3; ALPN prefers h2, then spdy/3.1,
// then http/1.1, as servers of SPDY's time did.
func (s *Server) tlsConfig() *tls.Config {
	v := uint16(tls.VersionTLS13)
	if s.cfg.TLSVersion == "1.2" {
		v = tls.VersionTLS12
	}
	c := &tls.Config{
		Certificates:           []tls.Certificate{s.certs.Leaf},
		MinVersion:             v,
		MaxVersion:             v,
		SessionTicketsDisabled: !s.cfg.SessionResumption,
	}
	if s.cfg.has(H2) {
		c.NextProtos = append(c.NextProtos, "h2")
	}
	if s.cfg.has(SPDY3) {
		c.NextProtos = append(c.NextProtos, spdy.NextProtoTLS)
	}
	if s.cfg.has(H1S) {
		c.NextProtos = append(c.NextProtos, "http/1.1")
	}
	return c
}

func (s *Server) serve() error {
	i := 0
	for origin := range s.cfg.Addrs {
		if s.cfg.has(H1, H2C) {
			s.serveCleartext(origin, s.tcpListeners[i])
			i++
		}
		if s.cfg.has(H1S, H2, SPDY3) {
			s.serveTLS(origin, s.tcpListeners[i])
			i++
		}
	}
	for origin, pc := range s.udpConns {
		if err := s.serveQUIC(origin, pc); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) newHTTPServer(origin int, proto Protocol) *http.Server {
	hs := &http.Server{
		Handler:           s.handler(origin, proto),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          s.errorLog,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			info := s.newConn(origin, proto, c.RemoteAddr())
			s.pending.Store(c, info)
			return withConn(ctx, info)
		},
		ConnState: func(c net.Conn, st http.ConnState) {
			if st == http.StateClosed || st == http.StateHijacked {
				s.pending.Delete(c)
			}
		},
		// A non-nil map keeps net/http from configuring its own HTTP/2.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	hs.SetKeepAlivesEnabled(s.cfg.KeepAlive)
	s.httpServers = append(s.httpServers, hs)
	return hs
}

// serveCleartext runs h1 and/or h2c on one TCP listener, telling them apart by the preface.
func (s *Server) serveCleartext(origin int, ln net.Listener) {
	var h1 *chanListener
	if s.cfg.has(H1) {
		h1 = newChanListener(ln.Addr())
		hs := s.newHTTPServer(origin, H1)
		s.wg.Go(func() { _ = hs.Serve(h1) })
	}
	s.wg.Go(func() {
		defer func() {
			if h1 != nil {
				h1.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if s.hooks.wrapConn != nil {
				c = s.hooks.wrapConn(c)
			}
			if !s.trackRaw(c, true) {
				c.Close()
				return
			}
			s.wg.Go(func() {
				isH2, br, err := sniffPreface(c)
				switch {
				case err != nil:
					s.trackRaw(c, false)
					c.Close()
				case isH2 && s.cfg.has(H2C):
					defer s.trackRaw(c, false)
					s.serveH2(origin, H2C, &bufferedConn{Conn: c, r: br}, nil)
				case !isH2 && h1 != nil:
					s.trackRaw(c, false) // the http.Server owns it now
					if !h1.deliver(&bufferedConn{Conn: c, r: br}) {
						c.Close()
					}
				default:
					s.trackRaw(c, false)
					c.Close()
				}
			})
		}
	})
}

// trackRaw adds (or removes) a cleartext connection from the set Close closes; false once closed.
func (s *Server) trackRaw(c net.Conn, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		delete(s.rawConns, c)
		return true
	}
	if s.closed {
		return false
	}
	s.rawConns[c] = struct{}{}
	return true
}

// serveTLS runs h1s, h2 and/or spdy3 on one TCP listener, told apart by ALPN.
func (s *Server) serveTLS(origin int, ln net.Listener) {
	hs := s.newHTTPServer(origin, H1S)
	hs.TLSConfig = s.tlsConfig()
	if s.cfg.has(H2) {
		hs.TLSNextProto["h2"] = func(_ *http.Server, tc *tls.Conn, _ http.Handler) {
			s.serveH2(origin, H2, tc, tc)
		}
	}
	if s.cfg.has(SPDY3) {
		hs.TLSNextProto[spdy.NextProtoTLS] = func(_ *http.Server, tc *tls.Conn, _ http.Handler) {
			s.serveSPDY(origin, tc)
		}
	}
	if s.hooks.wrapConn != nil {
		ln = wrappedListener{ln, s.hooks.wrapConn}
	}
	if s.cfg.OnH2Closed != nil && s.cfg.has(H2) {
		ln = wrappedListener{ln, newRawCounter} // under TLS: the stream maps' record offsets
	}
	tlsLn := tls.NewListener(ln, hs.TLSConfig)
	s.wg.Go(func() { _ = hs.Serve(tlsLn) })
}

// serveH2 serves one HTTP/2 connection (h2 over TLS, or h2c) through the frame observer.
func (s *Server) serveH2(origin int, proto Protocol, c net.Conn, tc *tls.Conn) {
	s.serveH2Upgraded(origin, proto, c, tc, nil, nil)
}

// serveH2Upgraded is serveH2 for a connection that may have been upgraded from HTTP/1.1
// (H2CUpgrade): upgrade is then the request that asked for it, served as stream 1, and settings
// the client's decoded HTTP2-Settings.
func (s *Server) serveH2Upgraded(origin int, proto Protocol, c net.Conn, tc *tls.Conn, upgrade *http.Request, settings []byte) {
	info, ok := s.pendingConn(tc)
	if !ok {
		info = s.newConn(origin, proto, c.RemoteAddr())
	}
	info.proto = proto
	info.sends = newSendLog()
	info.sched = newH2Scheduler()
	info.h2 = newH2Observer(info.sends, info.sched)
	if s.cfg.OnH2Closed != nil && upgrade == nil { // an upgraded connection wrote its 101 before any frame
		info.h2.bytes = newByteMap(c)
	}
	s.register(info)
	var conn net.Conn = &observedConn{Conn: c, obs: info.h2}
	if tc != nil {
		conn = &observedTLSConn{observedConn: observedConn{Conn: c, obs: info.h2}, tc: tc}
	}
	// One http2.Server per connection, for the connection's own write scheduler (x/net asks
	// NewWriteScheduler for it inside ServeConn); the settings are the server's.
	h2 := *s.h2
	h2.NewWriteScheduler = func() http2.WriteScheduler { return info.sched }
	h2.ServeConn(conn, &http2.ServeConnOpts{
		Context: withConn(context.Background(), info),
		Handler: s.handler(origin, proto),
		BaseConfig: &http.Server{
			ErrorLog: s.errorLog,
		},
		UpgradeRequest: upgrade,
		Settings:       settings,
	})
	if m := info.h2.bytes; m != nil {
		s.cfg.OnH2Closed(H2Closed{Origin: origin, Remote: info.remote, StreamMap: m.runs()})
	}
}

// serveSPDY serves one SPDY/3.1 connection (ALPN spdy/3.1 on the TLS port). Its DATA frames are at
// most WriteChunkBytes (0: SPDY's 4096, mod_spdy's), its streams are scheduled by their SPDY
// priority (spdy.PriorityScheduler), and every DATA frame is recorded in the send log.
func (s *Server) serveSPDY(origin int, tc *tls.Conn) {
	info, ok := s.pendingConn(tc)
	if !ok {
		info = s.newConn(origin, SPDY3, tc.RemoteAddr())
	}
	info.proto = SPDY3
	info.sends = newSendLog()
	s.register(info)
	srv := &spdy.Server{
		Handler:       s.handler(origin, SPDY3),
		Config:        spdy.Config{MaxConcurrentStreams: uint32(s.cfg.MaxConcurrentStreams)},
		DataChunkSize: s.cfg.WriteChunkBytes,
		DataSent: func(id uint32, _ uint8, n int) {
			info.sends.data(uint64(id), int64(n), time.Now())
		},
		BaseContext: func(net.Conn) context.Context { return withConn(context.Background(), info) },
		ErrorLog:    s.errorLog,
	}
	_ = srv.ServeConn(tc)
}

func (s *Server) pendingConn(tc *tls.Conn) (*connInfo, bool) {
	if tc == nil {
		return nil, false
	}
	v, ok := s.pending.LoadAndDelete(tc)
	if !ok {
		return nil, false
	}
	return v.(*connInfo), true
}

// serveQUIC runs h3 on one UDP socket.
func (s *Server) serveQUIC(origin int, pc net.PacketConn) error {
	tc := &tls.Config{
		Certificates:           []tls.Certificate{s.certs.Leaf},
		MinVersion:             tls.VersionTLS13,
		SessionTicketsDisabled: !s.cfg.SessionResumption,
	}
	qconf := &quic.Config{
		MaxIncomingStreams: int64(s.cfg.MaxConcurrentStreams),
		Allow0RTT:          s.cfg.SessionResumption,
		MaxIdleTimeout:     idleTimeout,
		Tracer:             sendTracer,
	}
	hs := &http3.Server{
		Handler:     s.handler(origin, H3),
		TLSConfig:   http3.ConfigureTLSConfig(tc),
		QUICConfig:  qconf,
		IdleTimeout: idleTimeout,
		ConnContext: func(ctx context.Context, c *quic.Conn) context.Context {
			info := s.newConn(origin, H3, c.RemoteAddr())
			info.sends = sendLogOf(c.Context())
			s.register(info)
			if report := s.cfg.OnQUICClosed; report != nil {
				s.wg.Go(func() {
					<-c.Context().Done()
					// The context can end before the connection's loop does (the server shutting
					// down cancels it from above): wait for the loop's end — its trace closed — so
					// that the stats and the loss counts below are both final and agree.
					if r := lossOf(c.Context()); r != nil {
						select {
						case <-r.Closed():
						case <-time.After(2 * time.Second):
						}
					}
					st := c.ConnectionStats()
					qs := QUICStats{Origin: origin, Remote: c.RemoteAddr().String(), PacketsSent: st.PacketsSent,
						PacketsLost: st.PacketsLost, BytesSent: st.BytesSent, BytesLost: st.BytesLost}
					if r := lossOf(c.Context()); r != nil {
						qs.Loss = r.Counts()
					}
					report(qs)
				})
			}
			return withConn(ctx, info)
		},
	}
	// Our own quic.Transport, for its ConnContext: it gives each connection's context (which the
	// Tracer and the http3 ConnContext both see) the send log the tracer fills.
	if s.hooks.wrapPacketConn != nil {
		pc = s.hooks.wrapPacketConn(pc)
	}
	tr := &quic.Transport{Conn: pc, ConnContext: func(ctx context.Context, _ *quic.ClientInfo) (context.Context, error) {
		return withLoss(withSendLog(ctx, newSendLog()), quicloss.New(nil)), nil
	}}
	s.quicTransports = append(s.quicTransports, tr)
	ln, err := tr.ListenEarly(hs.TLSConfig, qconf)
	if err != nil {
		return fmt.Errorf("server: h3 on %s: %w", pc.LocalAddr(), err)
	}
	s.h3Servers = append(s.h3Servers, hs)
	s.wg.Go(func() { _ = hs.ServeListener(ln) })
	return nil
}

// Close stops every listener and connection, waits for the server's goroutines and removes the
// certificate files. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	raw := make([]net.Conn, 0, len(s.rawConns))
	for c := range s.rawConns {
		raw = append(raw, c)
	}
	s.mu.Unlock()
	var errs []error
	for _, hs := range s.h3Servers {
		_ = hs.Close()
	}
	for _, tr := range s.quicTransports {
		_ = tr.Close()
	}
	for _, hs := range s.httpServers {
		_ = hs.Close()
	}
	s.closeListeners()
	for _, c := range raw {
		c.Close()
	}
	s.wg.Wait()
	// http.Server.Close does not wait for handlers; a handler finishing its response records it
	// after the client may already have seen the last byte, so wait for every record to be in.
	s.handlers.Wait()
	if s.certs != nil {
		if err := s.certs.Remove(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Ports returns the ports in use.
func (s *Server) Ports() Ports { return s.ports }

// Certs returns the run's certificates.
func (s *Server) Certs() *Certs { return s.certs }

// Page returns the page served.
func (s *Server) Page() *page.Page { return s.page }

// Config returns the resolved configuration.
func (s *Server) Config() Config { return s.cfg }

// Info describes a running server (the ready line of `wirelab-engine serve`).
type Info struct {
	Page       string       `json:"page"`
	Objects    int          `json:"objects"`
	TotalBytes int64        `json:"total_bytes"`
	Protocols  []Protocol   `json:"protocols"`
	Ports      Ports        `json:"ports"`
	Origins    []OriginInfo `json:"origins"`
	CertDir    string       `json:"cert_dir"`
	CAFile     string       `json:"ca_file"`
	SPKIHash   string       `json:"spki_sha256"`
}

// OriginInfo is one origin's name and address.
type OriginInfo struct {
	Host    string `json:"host"`
	Addr    string `json:"addr"`
	Objects int    `json:"objects"`
}

// Info describes the server.
func (s *Server) Info() Info {
	in := Info{Page: s.page.Name, Objects: len(s.page.Objects), TotalBytes: s.page.TotalBytes(),
		Protocols: s.cfg.Protocols, Ports: s.ports, CertDir: s.certs.Dir, CAFile: s.certs.CAPath(),
		SPKIHash: s.certs.SPKIHash}
	counts := s.page.ObjectsPerOrigin()
	for i, a := range s.cfg.Addrs {
		in.Origins = append(in.Origins, OriginInfo{Host: s.page.Origins[i].Host, Addr: a.String(), Objects: counts[i]})
	}
	return in
}

// RootURL is the URL of the root document for a load with token over proto.
func (s *Server) RootURL(proto Protocol, token string) (string, error) {
	return s.page.URL(0, page.Base{Scheme: proto.Scheme(), Port: s.ports.Port(proto), Token: token, Host: s.cfg.Host})
}

// URLs returns every object URL for a load with token over proto (ports as served).
func (s *Server) URLs(proto Protocol, token string) ([]string, error) {
	return s.page.URLsAt(page.Base{Scheme: proto.Scheme(), Port: s.ports.Port(proto), Token: token, Host: s.cfg.Host})
}
