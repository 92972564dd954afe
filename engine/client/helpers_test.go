package client

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"golang.org/x/net/http2"

	"github.com/wirelab/wirelab/engine/spdy"
)

// Test doubles: a CA and a certificate for *.wirelab.test, in-process origin servers for every
// protocol that count what they see, and generated pages.

type pki struct {
	pool *x509.CertPool
	cert tls.Certificate
}

var testPKI = sync.OnceValue(func() pki {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "wirelab test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		panic(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "*.wirelab.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames:    []string{"*.wirelab.test", "localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		panic(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pki{pool, tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: key}}
})

// testObject is one object of a test page.
type testObject struct {
	contentType string
	body        []byte
}

// testPage maps paths to objects; every origin of a site serves the same map. Servers read it
// through get, under a lock: the race detector cannot see the ordering that sockets provide
// between a test building or changing the page and a handler serving it.
type testPage struct {
	mu      sync.RWMutex
	objects map[string]*testObject
	want    map[string]int // URL → body size, every URL a flat load must fetch
}

func (p *testPage) get(path string) *testObject {
	if p == nil {
		return nil
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.objects[path]
}

// edit changes the page while servers may be serving it.
func (p *testPage) edit(f func(objects map[string]*testObject)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p.objects)
}

func (p *testPage) add(base, path, contentType string, body []byte) string {
	p.objects[path] = &testObject{contentType: contentType, body: body}
	u := base + path
	p.want[u] = len(body)
	return u
}

func randomBytes(rng *mrand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// buildPage makes a page whose root is origins[0]+"/": a stylesheet (with url() and relative
// references), an @import-ed stylesheet, a script, nImages images spread round robin over the
// origins, a srcset-only image, a picture, an iframe with its own image, inline style urls, a
// preload and an icon — plus references a load must not fetch (a data: URI, a link, a duplicate).
func buildPage(origins []string, nImages int, seed uint64) *testPage {
	rng := mrand.New(mrand.NewPCG(seed, 1))
	p := &testPage{objects: map[string]*testObject{}, want: map[string]int{}}
	b0 := origins[0]
	img := func(path string) string {
		return p.add(b0, path, "image/png", randomBytes(rng, 200+rng.IntN(4000)))
	}
	img("/img/css2.png")
	img("/img/css1.png")
	img("/img/imp.png")
	img("/img/bg.png")
	img("/img/styled.png")
	img("/img/srcset.png")
	img("/img/pic.png")
	img("/img/frame.png")
	img("/img/icon.png")
	p.add(b0, "/css/main.css", "text/css", []byte(`/* url(/img/not-in-comment.png) */
body { background: url(/img/css1.png) }
.a { background-image: URL( "../img/css2.png" ) }
.b { content: "url(/img/not-a-url.png)" }
.c { background: url(data:image/png;base64,AAAA) }
`))
	p.add(b0, "/css/imported.css", "text/css", []byte(`.i { background: url('/img/imp.png') }`))
	p.add(b0, "/js/app.js", "application/javascript", randomBytes(rng, 3000))
	p.add(b0, "/fonts/f.woff2", "font/woff2", randomBytes(rng, 1500))
	p.add(b0, "/frame.html", "text/html; charset=utf-8", []byte(`<!doctype html><img src="img/frame.png"><img src="/img/css1.png">`))
	var imgs strings.Builder
	for i := range nImages {
		base := origins[i%len(origins)]
		path := fmt.Sprintf("/img/%03d.png", i)
		u := p.add(base, path, "image/png", randomBytes(rng, 500+rng.IntN(12000)))
		fmt.Fprintf(&imgs, "<img src=%q>\n", u)
	}
	root := fmt.Sprintf(`<!doctype html>
<html><head>
<link rel="stylesheet" href="/css/main.css">
<link rel="preload" as="font" href="/fonts/f.woff2" crossorigin>
<link rel="shortcut icon" href="/img/icon.png">
<link rel="dns-prefetch" href="//not-fetched.wirelab.test">
<script src="/js/app.js"></script>
<style>@import "/css/imported.css"; .s { background: url('/img/styled.png') }</style>
</head><body style="background-image: url(/img/bg.png)">
<a href="/not-fetched.html">link</a>
<img srcset="/img/srcset.png 1x, /img/srcset-2x.png 2x">
<picture><source srcset="/img/pic.png"><img src="/img/not-chosen.png"></picture>
<img src="data:image/png;base64,AAAA">
<img src="/img/css1.png#dup">
<iframe src="/frame.html"></iframe>
%s
</body></html>`, imgs.String())
	p.add(b0, "/", "text/html; charset=utf-8", []byte(root))
	return p
}

// serverStats counts what one origin server saw.
type serverStats struct {
	conns      atomic.Int64 // transport connections accepted
	handshakes atomic.Int64 // TLS handshakes completed (full or resumed)
	resumed    atomic.Int64
	requests   atomic.Int64

	mu         sync.Mutex
	openConns  int
	peakConns  int
	active     int // handlers running
	peakActive int
	arrivals   map[string]time.Time // path → when its handler started
	finished   map[string]time.Time // path → when its handler returned
	connOf     map[string]string    // path → remote address of the connection it came on
}

func (st *serverStats) connOpened() {
	st.conns.Add(1)
	st.mu.Lock()
	st.openConns++
	st.peakConns = max(st.peakConns, st.openConns)
	st.mu.Unlock()
}

func (st *serverStats) connClosed() {
	st.mu.Lock()
	st.openConns--
	st.mu.Unlock()
}

func (st *serverStats) peaks() (conns, active int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.peakConns, st.peakActive
}

// serverOpts shapes a test server.
type serverOpts struct {
	maxStreams  int                   // h2/h3 concurrent streams (0 = library default)
	noKeepAlive bool                  // h1: Connection: close on every response
	before      func(r *http.Request) // runs in the handler before the response (delays, barriers)
	rootSplit   time.Duration         // write the root document in two halves this far apart
	streamBody  bool                  // no Content-Length; bodies written in 1000-byte flushed pieces (h1: chunked)
	goAwayAfter int                   // h2/h2c: a connection's server sends GOAWAY after this many requests (as nginx's keepalive_requests does)
}

type testServer struct {
	addr  netip.AddrPort
	stats *serverStats
	// closeConns closes every connection the server has accepted so far (as a server does with
	// idle keep-alive connections).
	closeConns func()
}

// startServer serves page over proto on 127.0.0.1 until the test ends.
func startServer(t testing.TB, proto Protocol, page *atomic.Pointer[testPage], opts serverOpts) *testServer {
	t.Helper()
	st := &serverStats{arrivals: map[string]time.Time{}, finished: map[string]time.Time{}, connOf: map[string]string{}}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st.requests.Add(1)
		st.mu.Lock()
		st.active++
		st.peakActive = max(st.peakActive, st.active)
		st.arrivals[r.URL.Path] = time.Now()
		st.connOf[r.URL.Path] = r.RemoteAddr
		st.mu.Unlock()
		defer func() {
			st.mu.Lock()
			st.active--
			st.finished[r.URL.Path] = time.Now()
			st.mu.Unlock()
		}()
		if opts.before != nil {
			opts.before(r)
		}
		obj := page.Load().get(r.URL.Path)
		if obj == nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", obj.contentType)
		if opts.streamBody {
			for b := obj.body; len(b) > 0; {
				n := min(len(b), 1000)
				w.Write(b[:n])
				w.(http.Flusher).Flush()
				b = b[n:]
			}
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(obj.body)))
		if r.URL.Path == "/" && opts.rootSplit > 0 {
			half := len(obj.body) / 2
			w.Write(obj.body[:half])
			w.(http.Flusher).Flush()
			time.Sleep(opts.rootSplit)
			w.Write(obj.body[half:])
			return
		}
		w.Write(obj.body)
	})
	pki := testPKI()
	tlsConf := func(alpn ...string) *tls.Config {
		return &tls.Config{
			Certificates: []tls.Certificate{pki.cert},
			NextProtos:   alpn,
			VerifyConnection: func(cs tls.ConnectionState) error {
				st.handshakes.Add(1)
				if cs.DidResume {
					st.resumed.Add(1)
				}
				return nil
			},
		}
	}
	srv := &testServer{stats: st}
	if proto == H3 {
		udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		qconf := &quic.Config{}
		if opts.maxStreams > 0 {
			qconf.MaxIncomingStreams = int64(opts.maxStreams)
		}
		var mu sync.Mutex
		var qconns []*quic.Conn
		h3 := &http3.Server{
			Handler: handler, TLSConfig: http3.ConfigureTLSConfig(tlsConf("h3")), QUICConfig: qconf,
			ConnContext: func(ctx context.Context, c *quic.Conn) context.Context {
				st.connOpened()
				context.AfterFunc(c.Context(), st.connClosed)
				mu.Lock()
				qconns = append(qconns, c)
				mu.Unlock()
				return ctx
			},
		}
		srv.closeConns = func() {
			mu.Lock()
			defer mu.Unlock()
			for _, c := range qconns {
				c.CloseWithError(0, "idle")
			}
		}
		go h3.Serve(udp)
		t.Cleanup(func() { h3.Close(); udp.Close() })
		srv.addr = udp.LocalAddr().(*net.UDPAddr).AddrPort()
		return srv
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.addr = netip.MustParseAddrPort(ln.Addr().String())
	var conns sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	srv.closeConns = func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range open {
			c.Close()
		}
	}
	serveConn := map[Protocol]func(net.Conn){}
	h1 := &http.Server{Handler: handler}
	h1.SetKeepAlivesEnabled(!opts.noKeepAlive)
	h1ln := newChanListener(ln.Addr())
	go h1.Serve(h1ln)
	serveConn[H1] = func(c net.Conn) { h1ln.ch <- c }
	// One tls.Config per server: session ticket keys live in it, so resumption works across
	// connections (the fresh-state test relies on the server being able to resume).
	h1sConf, h2Conf := tlsConf("http/1.1"), tlsConf("h2")
	serveConn[H1S] = func(c net.Conn) { h1ln.ch <- tls.Server(c, h1sConf) }
	h2s := &http2.Server{MaxConcurrentStreams: uint32(opts.maxStreams)}
	// serveH2 serves one HTTP/2 connection; with goAwayAfter, its own http.Server's Shutdown
	// (which x/net/http2 answers with a graceful GOAWAY naming the last stream it processes) is
	// called when the connection's goAwayAfter-th request arrives.
	serveH2 := func(c net.Conn) {
		if opts.goAwayAfter == 0 {
			h2s.ServeConn(c, &http2.ServeConnOpts{Handler: handler})
			return
		}
		base := &http.Server{}
		own := &http2.Server{MaxConcurrentStreams: uint32(opts.maxStreams)}
		if err := http2.ConfigureServer(base, own); err != nil {
			panic(err)
		}
		var n atomic.Int64
		counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == int64(opts.goAwayAfter) {
				go base.Shutdown(context.Background())
			}
			handler(w, r)
		})
		own.ServeConn(c, &http2.ServeConnOpts{Handler: counted, BaseConfig: base})
	}
	serveConn[H2C] = func(c net.Conn) {
		serveH2(c)
		c.Close()
	}
	spdyConf := tlsConf(spdy.NextProtoTLS)
	spdySrv := &spdy.Server{Handler: handler, Config: spdy.Config{MaxConcurrentStreams: uint32(opts.maxStreams)}}
	serveConn[SPDY3] = func(c net.Conn) { _ = spdySrv.ServeConn(tls.Server(c, spdyConf)) }
	serveConn[H2] = func(c net.Conn) {
		tc := tls.Server(c, h2Conf)
		if tc.Handshake() == nil {
			serveH2(tc)
		}
		tc.Close()
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			st.connOpened()
			c = &countedConn{Conn: c, onClose: st.connClosed}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			conns.Add(1)
			go func() {
				defer conns.Done()
				serveConn[proto](c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		h1.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		conns.Wait()
	})
	return srv
}

// countedConn reports its first Close.
type countedConn struct {
	net.Conn
	once    sync.Once
	onClose func()
}

func (c *countedConn) Close() error {
	c.once.Do(c.onClose)
	return c.Conn.Close()
}

// chanListener hands accepted connections to an http.Server.
type chanListener struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *chanListener) Addr() net.Addr { return l.addr }

// site is a page served by one server per origin (s1.wirelab.test, s2.wirelab.test …), all on
// 127.0.0.1 with their own ports, resolved by a static map.
type site struct {
	proto    Protocol
	servers  []*testServer
	origins  []string
	page     *testPage
	served   *atomic.Pointer[testPage] // what the servers serve
	resolver StaticResolver
}

// setPage replaces the page the site serves.
func (s *site) setPage(p *testPage) {
	s.page = p
	s.served.Store(p)
}

// serveRaw is a loopback TCP listener (closed when the test ends) whose every connection serve
// handles in a goroutine of its own, the connection closed after; accepted counts them.
func serveRaw(t testing.TB, serve func(c net.Conn)) (ln net.Listener, accepted *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = &atomic.Int64{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln, accepted
}

func newSite(t testing.TB, proto Protocol, nOrigins, nImages int, opts serverOpts) *site {
	t.Helper()
	s := &site{proto: proto, resolver: StaticResolver{}, served: &atomic.Pointer[testPage]{}}
	for i := range nOrigins {
		srv := startServer(t, proto, s.served, opts)
		s.servers = append(s.servers, srv)
		name := fmt.Sprintf("s%d.wirelab.test", i+1)
		s.resolver[name] = srv.addr.Addr()
		s.origins = append(s.origins, fmt.Sprintf("%s://%s:%d", proto.Scheme(), name, srv.addr.Port()))
	}
	s.setPage(buildPage(s.origins, nImages, 7))
	return s
}

func (s *site) root() string { return s.origins[0] + "/" }

func (s *site) config() Config {
	return Config{Protocol: s.proto, Resolver: s.resolver, RootCAs: testPKI().pool, Timeout: 20 * time.Second}
}

func (s *site) load(t testing.TB, cfg Config, objects []string) *Result {
	t.Helper()
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.Load(context.Background(), s.root(), objects)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// checkComplete asserts that res fetched exactly the page's objects with their exact sizes.
func checkComplete(t *testing.T, res *Result, want map[string]int) {
	t.Helper()
	if res.Err != nil {
		t.Fatalf("load error: %v", res.Err)
	}
	got := map[string]int{}
	total := 0
	for _, e := range res.Entries {
		if _, dup := got[e.URL]; dup {
			t.Errorf("%s requested twice", e.URL)
		}
		got[e.URL] = int(e.BodyBytes)
		if e.Status != 200 || e.Error != "" {
			t.Errorf("%s: status %d error %q", e.URL, e.Status, e.Error)
		}
	}
	for u, n := range want {
		total += n
		if g, ok := got[u]; !ok {
			t.Errorf("%s not fetched", u)
		} else if g != n {
			t.Errorf("%s: %d body bytes, want %d", u, g, n)
		}
	}
	for u := range got {
		if _, ok := want[u]; !ok {
			t.Errorf("%s fetched but not part of the page", u)
		}
	}
	if res.Objects != len(want) || res.BodyBytes != int64(total) {
		t.Errorf("objects %d body_bytes %d, want %d and %d", res.Objects, res.BodyBytes, len(want), total)
	}
}

// checkTimings asserts the HAR invariants of every entry and connection.
func checkTimings(t *testing.T, res *Result) {
	t.Helper()
	opener := map[int]int{} // connection id → entries carrying its connect phase
	ids := map[int]bool{}
	for _, c := range res.Conns {
		ids[c.ID] = true
	}
	for _, e := range res.Entries {
		if e.Error == "" && !ids[e.Connection] {
			t.Errorf("%s: connection id %d is not one of the load's connections", e.URL, e.Connection)
		}
		tm := e.Timings
		if d := tm.Total() - e.Time; d > 1e-6 || d < -1e-6 {
			t.Errorf("%s: phases sum to %.6f ms, entry time %.6f ms", e.URL, tm.Total(), e.Time)
		}
		for name, v := range map[string]float64{"blocked": tm.Blocked, "send": tm.Send, "wait": tm.Wait, "receive": tm.Receive} {
			if v < 0 {
				t.Errorf("%s: %s = %v < 0", e.URL, name, v)
			}
		}
		if tm.Connect >= 0 {
			opener[e.Connection]++
		} else if tm.DNS != -1 || tm.SSL != -1 {
			t.Errorf("%s: dns %v ssl %v on a request that did not open its connection", e.URL, tm.DNS, tm.SSL)
		}
		switch res.Protocol {
		case H1, H2C:
			if tm.SSL != -1 {
				t.Errorf("%s: ssl %v without TLS", e.URL, tm.SSL)
			}
		case H1S, H2:
			if tm.Connect >= 0 && (tm.SSL < 0 || tm.SSL > tm.Connect) {
				t.Errorf("%s: ssl %v not within connect %v", e.URL, tm.SSL, tm.Connect)
			}
		case H3:
			if tm.SSL != tm.Connect {
				t.Errorf("%s: h3 ssl %v != connect %v", e.URL, tm.SSL, tm.Connect)
			}
		}
		if (res.Protocol == H1 || res.Protocol == H1S) != (e.StreamID == -1) {
			t.Errorf("%s: stream id %d over %s", e.URL, e.StreamID, res.Protocol)
		}
		if e.Protocol != res.Protocol.wireName() {
			t.Errorf("%s: protocol %q", e.URL, e.Protocol)
		}
	}
	opened := 0
	for _, c := range res.Conns {
		if c.Kept { // a Tab's connection from an earlier load
			if opener[c.ID] != 0 {
				t.Errorf("kept connection %d: %d entries carry its connect phase, want 0", c.ID, opener[c.ID])
			}
			continue
		}
		opened++
		if opener[c.ID] != 1 {
			t.Errorf("connection %d: %d entries carry its connect phase, want 1", c.ID, opener[c.ID])
		}
	}
	if len(opener) != opened {
		t.Errorf("%d connections carry connect phases, %d connections opened", len(opener), opened)
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// tlsClientWithCache is a TLS client configuration that keeps sessions (the loader's never does).
func tlsClientWithCache() *tls.Config {
	return &tls.Config{RootCAs: testPKI().pool, ClientSessionCache: tls.NewLRUClientSessionCache(8)}
}

// staticDial dials names through a static map, for net/http clients in tests.
func staticDial(r StaticResolver) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if a, ok := r[host]; ok {
			addr = net.JoinHostPort(a.String(), port)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}
