package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"golang.org/x/net/http2"

	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/spdy"
)

// loopback returns n distinct loopback addresses for n origins.
func loopback(n int) []netip.Addr {
	out := make([]netip.Addr, n)
	for i := range out {
		out[i] = netip.AddrFrom4([4]byte{127, 0, 0, byte(1 + i)})
	}
	return out
}

// startTest starts a server for pg on loopback with ephemeral ports; mutate adjusts the config.
func startTest(t testing.TB, pg *page.Page, mutate func(*Config)) *Server {
	t.Helper()
	cfg := DefaultConfig(loopback(len(pg.Origins))...)
	cfg.PortHTTP, cfg.PortHTTPS, cfg.PortQUIC = 0, 0, 0
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := Start(pg, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// hostAddr maps host:port of a wirelab URL to the server's address for that origin.
func hostAddr(s *Server, hostport string) (string, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", err
	}
	for i, o := range s.page.Origins {
		if o.Host == host {
			return net.JoinHostPort(s.cfg.Addrs[i].String(), port), nil
		}
	}
	if host == page.WWWHost {
		return net.JoinHostPort(s.cfg.Addrs[0].String(), port), nil
	}
	return "", fmt.Errorf("unknown host %s", host)
}

// dialHost opens a TCP connection to a wirelab host:port of s (hostAddr).
func dialHost(t *testing.T, s *Server, hostport string) net.Conn {
	t.Helper()
	addr, err := hostAddr(s, hostport)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testClient is a plain Go client for one protocol, resolving wirelab names to the server's
// loopback addresses.
type testClient struct {
	*http.Client
	close func()
}

func newClient(t testing.TB, s *Server, proto Protocol, tweak func(any)) *testClient {
	t.Helper()
	tlsConf := &tls.Config{RootCAs: s.certs.CAPool()}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		a, err := hostAddr(s, addr)
		if err != nil {
			return nil, err
		}
		var d net.Dialer
		return d.DialContext(ctx, network, a)
	}
	var rt http.RoundTripper
	var closeFn func()
	switch proto {
	case H1, H1S:
		tlsConf.NextProtos = []string{"http/1.1"}
		tr := &http.Transport{DialContext: dial, TLSClientConfig: tlsConf, MaxConnsPerHost: 6,
			TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
		if tweak != nil {
			tweak(tr)
		}
		rt, closeFn = tr, tr.CloseIdleConnections
	case H2:
		tr := &http2.Transport{TLSClientConfig: tlsConf, DialTLSContext: func(ctx context.Context, network, addr string, cfg *tls.Config) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			tc := tls.Client(c, cfg)
			if err := tc.HandshakeContext(ctx); err != nil {
				c.Close()
				return nil, err
			}
			return tc, nil
		}}
		if tweak != nil {
			tweak(tr)
		}
		rt, closeFn = tr, tr.CloseIdleConnections
	case H2C:
		tr := &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			return dial(ctx, network, addr)
		}}
		if tweak != nil {
			tweak(tr)
		}
		rt, closeFn = tr, tr.CloseIdleConnections
	case H3:
		tr := &http3.Transport{TLSClientConfig: tlsConf, Dial: func(ctx context.Context, addr string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
			a, err := hostAddr(s, addr)
			if err != nil {
				return nil, err
			}
			return quic.DialAddrEarly(ctx, a, tc, qc)
		}}
		if tweak != nil {
			tweak(tr)
		}
		rt, closeFn = tr, func() { tr.Close() }
	case SPDY3:
		tr := &spdyTransport{tls: tlsConf, dial: dial, conns: map[string]*spdy.ClientConn{}}
		if tweak != nil {
			tweak(tr)
		}
		rt, closeFn = tr, tr.close
	}
	c := &testClient{Client: &http.Client{Transport: rt, Timeout: 60 * time.Second}, close: closeFn}
	t.Cleanup(closeFn)
	return c
}

// spdyTransport is a test RoundTripper over SPDY/3.1: one spdy.ClientConn per host:port.
type spdyTransport struct {
	tls   *tls.Config
	dial  func(ctx context.Context, network, addr string) (net.Conn, error)
	cfg   spdy.ClientConfig
	mu    sync.Mutex
	conns map[string]*spdy.ClientConn
}

func (t *spdyTransport) conn(ctx context.Context, hostport string) (*spdy.ClientConn, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.conns[hostport]; c != nil {
		return c, nil
	}
	raw, err := t.dial(ctx, "tcp", hostport)
	if err != nil {
		return nil, err
	}
	cfg := spdy.ClientTLSConfig(t.tls)
	cfg.ServerName, _, _ = net.SplitHostPort(hostport)
	c, err := spdy.NewClientConn(tls.Client(raw, cfg), t.cfg)
	if err != nil {
		raw.Close()
		return nil, err
	}
	t.conns[hostport] = c
	return c, nil
}

func (t *spdyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	hostport := req.URL.Host
	if req.URL.Port() == "" {
		hostport = net.JoinHostPort(req.URL.Hostname(), "443")
	}
	c, err := t.conn(req.Context(), hostport)
	if err != nil {
		return nil, err
	}
	resp, err := c.RoundTrip(req)
	if err == nil {
		// The response's :version is HTTP/1.1; the connection negotiated spdy/3.1 (NewClientConn
		// checks ALPN): name the protocol for the tests.
		resp.Proto = "SPDY/3.1"
	}
	return resp, err
}

func (t *spdyTransport) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, c := range t.conns {
		c.Close()
		delete(t.conns, k)
	}
}

// result of fetching one URL.
type result struct {
	url    string
	status int
	body   []byte
	header http.Header
	proto  string
	err    error
}

func fetch(c *testClient, url string) result {
	resp, err := c.Get(url)
	if err != nil {
		return result{url: url, err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return result{url: url, status: resp.StatusCode, body: body, header: resp.Header, proto: resp.Proto, err: err}
}

// fetchAll fetches urls with at most par requests in flight and returns results in url order.
func fetchAll(c *testClient, urls []string, par int) []result {
	out := make([]result, len(urls))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i] = fetch(c, u)
		})
	}
	wg.Wait()
	return out
}
