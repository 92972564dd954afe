package impl

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"golang.org/x/net/http2"

	"github.com/wirelab/wirelab/engine/netns"
)

// ProbeSet is the readiness check of a server that serves files: one request per (origin,
// protocol) of the run, made from inside the server namespace (so nothing crosses the emulated
// link), each expecting 200, the protocol asked for (ALPN) and exactly the object's size.
type ProbeSet struct {
	Targets   []ProbeTarget
	Protocols []string
	Ports     Ports
	RootCAs   *x509.CertPool
}

// ProbeTarget is one origin and a path on it whose body has a known size.
type ProbeTarget struct {
	Host string     // sN.wirelab.test (SNI and Host)
	Addr netip.Addr // the origin's address
	Path string     // /L/<token>/…; "" when the origin serves no object (then any answer will do)
	Size int64
}

// Probe timing: each attempt is bounded; after a failure the next waits a little longer.
const (
	probeAttempt  = 3 * time.Second
	probeFirstGap = 5 * time.Millisecond
	probeMaxGap   = 200 * time.Millisecond
)

// run probes every (target, protocol) until all answered, the server exited, or ctx ended.
func (p *ProbeSet) run(ctx context.Context, topo *netns.Topology, exited <-chan struct{}, exitErr func() error) error {
	for _, t := range p.Targets {
		for _, proto := range p.Protocols {
			gap := probeFirstGap
			for {
				err := p.one(ctx, topo, t, proto)
				if err == nil {
					break
				}
				select {
				case <-exited:
					return exitErr()
				case <-ctx.Done():
					return fmt.Errorf("not ready: %s over %s: %w", t.Host, proto, err)
				case <-time.After(gap):
				}
				gap = min(2*gap, probeMaxGap)
			}
		}
	}
	return nil
}

// one makes one request over proto to target t.
func (p *ProbeSet) one(ctx context.Context, topo *netns.Topology, t ProbeTarget, proto string) error {
	ctx, cancel := context.WithTimeout(ctx, probeAttempt)
	defer cancel()
	path := t.Path
	if path == "" {
		path = "/"
	}
	status, body, alpn, err := Request(ctx, topo, proto, t.Host, t.Addr, p.Ports, path, p.RootCAs)
	if err != nil {
		return err
	}
	want := map[string]string{"h1s": "http/1.1", "h2": "h2", "h3": "h3"}[proto]
	if want != "" && alpn != want {
		return fmt.Errorf("negotiated %q, not %s", alpn, want)
	}
	if t.Path == "" {
		return nil
	}
	if status != http.StatusOK {
		return fmt.Errorf("%s: status %d", path, status)
	}
	if int64(len(body)) != t.Size {
		return fmt.Errorf("%s: %d bytes, want %d", path, len(body), t.Size)
	}
	return nil
}

// Request makes one GET over proto to a server in the run's server namespace (its sockets are
// made there, so the request does not cross the emulated link) and returns the status, the body,
// the protocol TLS negotiated and an error for anything that prevented an answer. The status
// endpoints and the conformance tests use it too.
func Request(ctx context.Context, topo *netns.Topology, proto, host string, addr netip.Addr, ports Ports, path string, roots *x509.CertPool) (int, []byte, string, error) {
	tlsConf := func(alpn string) *tls.Config {
		return &tls.Config{ServerName: host, RootCAs: roots, NextProtos: []string{alpn}, MinVersion: tls.VersionTLS12}
	}
	url := "http://" + host + path
	if proto != "h1" && proto != "h2c" {
		url = "https://" + host + path
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, "", err
	}
	req.Header.Set("User-Agent", "wirelab-engine ready probe")
	switch proto {
	case "h1", "h1s", "h2", "h2c":
		port := ports.HTTP
		if proto == "h1s" || proto == "h2" {
			port = ports.HTTPS
		}
		conn, err := dialIn(ctx, topo, "tcp", netip.AddrPortFrom(addr, uint16(port)))
		if err != nil {
			return 0, nil, "", err
		}
		defer conn.Close()
		if d, ok := ctx.Deadline(); ok {
			_ = conn.SetDeadline(d)
		}
		alpn := ""
		if proto == "h1s" || proto == "h2" {
			tc := tls.Client(conn, tlsConf(map[string]string{"h1s": "http/1.1", "h2": "h2"}[proto]))
			if err := tc.HandshakeContext(ctx); err != nil {
				return 0, nil, "", fmt.Errorf("TLS: %w", err)
			}
			alpn = tc.ConnectionState().NegotiatedProtocol
			conn = tc
		}
		var resp *http.Response
		if proto == "h2" || proto == "h2c" {
			if proto == "h2" && alpn != "h2" {
				return 0, nil, alpn, fmt.Errorf("negotiated %q, not h2", alpn)
			}
			cc, err := (&http2.Transport{AllowHTTP: true}).NewClientConn(conn)
			if err != nil {
				return 0, nil, alpn, err
			}
			defer cc.Close()
			if resp, err = cc.RoundTrip(req); err != nil {
				return 0, nil, alpn, err
			}
		} else {
			req.Close = true
			if err := req.Write(conn); err != nil {
				return 0, nil, alpn, err
			}
			if resp, err = http.ReadResponse(bufio.NewReader(conn), req); err != nil {
				return 0, nil, alpn, err
			}
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, body, alpn, err
	case "h3":
		pc, err := listenUDPIn(topo)
		if err != nil {
			return 0, nil, "", err
		}
		defer pc.Close()
		raddr := net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, uint16(ports.QUIC)))
		qc, err := quic.Dial(ctx, pc, raddr, tlsConf("h3"), &quic.Config{HandshakeIdleTimeout: probeAttempt})
		if err != nil {
			return 0, nil, "", fmt.Errorf("QUIC: %w", err)
		}
		defer qc.CloseWithError(0, "")
		alpn := qc.ConnectionState().TLS.NegotiatedProtocol
		cc := (&http3.Transport{}).NewClientConn(qc)
		resp, err := cc.RoundTrip(req)
		if err != nil {
			return 0, nil, alpn, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, body, alpn, err
	}
	return 0, nil, "", fmt.Errorf("probe: protocol %q", proto)
}

// dialIn opens a connection from inside the server namespace (nil topology: this namespace).
func dialIn(ctx context.Context, topo *netns.Topology, network string, to netip.AddrPort) (net.Conn, error) {
	var conn net.Conn
	dial := func() error {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, to.String())
		conn = c
		return err
	}
	if topo == nil {
		return conn, dial()
	}
	err := topo.Do(netns.Server, dial)
	return conn, err
}

func listenUDPIn(topo *netns.Topology) (*net.UDPConn, error) {
	var pc *net.UDPConn
	listen := func() error {
		c, err := net.ListenUDP("udp", nil)
		pc = c
		return err
	}
	if topo == nil {
		return pc, listen()
	}
	return pc, topo.Do(netns.Server, listen)
}

// unixGet makes a plain HTTP/1.1 GET over a unix socket (status endpoints on sockets).
func unixGet(ctx context.Context, socket, host, path string) ([]byte, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return httpGet(ctx, conn, host, path)
}

// unixStatus is a Launch.Status that reads a status endpoint on a unix socket with parse.
func unixStatus(socket, host, path string, parse func([]byte) (map[string]float64, error)) func(context.Context, *Instance) (map[string]float64, error) {
	return func(ctx context.Context, _ *Instance) (map[string]float64, error) {
		body, err := unixGet(ctx, socket, host, path)
		if err != nil {
			return nil, err
		}
		return parse(body)
	}
}

// tcpGetIn makes a plain HTTP/1.1 GET to an address inside the server namespace.
func tcpGetIn(ctx context.Context, topo *netns.Topology, to netip.AddrPort, host, path string) ([]byte, error) {
	conn, err := dialIn(ctx, topo, "tcp", to)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return httpGet(ctx, conn, host, path)
}

func httpGet(ctx context.Context, conn net.Conn, host, path string) ([]byte, error) {
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+path, nil)
	if err != nil {
		return nil, err
	}
	req.Close = true
	if err := req.Write(conn); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("%s: status %d: %s", path, resp.StatusCode, strings.TrimSpace(string(body[:min(len(body), 200)])))
	}
	return body, nil
}
