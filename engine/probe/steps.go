package probe

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"github.com/wirelab/wirelab/engine/internal/altsvc"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/wirelab/wirelab/engine/spdy"
)

// siteProbe runs the steps of one site against one address (docs/probe.md, "What a probe sends").
type siteProbe struct {
	cfg   *Config
	pacer *pacer
	site  Site
	addr  netip.Addr
	rec   *Record
	// altSvcs are the Alt-Svc values of the responses so far.
	altSvcs []string
}

// run does every step in order; each waits for the host's rate and has its own timeout.
func (p *siteProbe) run(ctx context.Context) {
	prot := p.rec.Protocols
	p.announceFromDNS()

	// 1. TLS, offering h2 and http/1.1: the server's choice; a request over it.
	first := p.tlsStep(ctx, []string{"h2", "http/1.1"}, prot[H2])
	gotH1S := false
	switch first {
	case "h2":
		prot[H2].announce(ByALPN)
	case "http/1.1", "":
		// The server prefers HTTP/1.1 (or ignores ALPN: HTTP/1.1 by default): the step's request
		// went over HTTP/1.1, which is h1s's answer.
		p.moveTLSResult(prot[H2], prot[H1S], first)
		gotH1S = true
	}
	// 2. TLS offering only http/1.1, unless step 1 already spoke it.
	if !gotH1S {
		p.tlsStep(ctx, []string{"http/1.1"}, prot[H1S])
	}
	// 3. TLS offering only spdy/3.1.
	p.tlsStep(ctx, []string{spdy.NextProtoTLS}, prot[SPDY3])
	// 4. Cleartext HTTP/1.1.
	p.h1Step(ctx, prot[H1])
	// 5. The h2c upgrade on the cleartext port.
	p.h2cStep(ctx, prot[H2C])
	// 6. QUIC and HTTP/3, at the announced port.
	p.announceH3()
	p.h3Step(ctx, prot[H3])
}

func (p *siteProbe) tlsPort() int {
	if p.site.URL.Scheme == "https" && p.site.Port != 0 {
		return p.site.Port
	}
	return p.cfg.Ports.HTTPS
}

func (p *siteProbe) httpPort() int {
	if p.site.URL.Scheme == "http" && p.site.Port != 0 {
		return p.site.Port
	}
	return p.cfg.Ports.HTTP
}

// announceFromDNS: an HTTPS record's alpn announces h2, http/1.1 and h3; a service-mode record
// without no-default-alpn implies http/1.1 (RFC 9460 §7.1.2).
func (p *siteProbe) announceFromDNS() {
	if p.rec.DNS == nil {
		return
	}
	prot := p.rec.Protocols
	for _, h := range p.rec.DNS.HTTPS {
		if h.Priority == 0 {
			continue
		}
		for _, id := range h.ALPN {
			switch id {
			case "h2":
				prot[H2].announce(ByHTTPSRR)
			case "http/1.1":
				prot[H1S].announce(ByHTTPSRR)
			case "h3":
				prot[H3].announce(ByHTTPSRR)
			}
		}
		if !h.NoDefaultALPN {
			prot[H1S].announce(ByDefault)
		}
	}
}

// announceH3 reads the Alt-Svc values collected so far.
func (p *siteProbe) announceH3() {
	for _, v := range p.altSvcs {
		for _, alt := range altsvc.Parse(v) {
			if alt.ProtocolID == "h3" {
				p.rec.Protocols[H3].announce(ByAltSvc)
			}
		}
	}
}

// h3Port is the port of the first h3 alternative on the same host (Alt-Svc, then the HTTPS
// record's port when it announces h3), else the default.
func (p *siteProbe) h3Port() int {
	for _, v := range p.altSvcs {
		for _, alt := range altsvc.Parse(v) {
			if alt.ProtocolID == "h3" && (alt.Host == "" || alt.Host == p.site.Host) {
				return alt.Port
			}
		}
	}
	if p.rec.DNS != nil {
		for _, h := range p.rec.DNS.HTTPS {
			if h.Port != 0 && h.Priority != 0 && contains(h.ALPN, "h3") {
				return h.Port
			}
		}
	}
	if p.site.URL.Scheme == "https" && p.site.Port != 0 {
		return p.site.Port
	}
	return p.cfg.Ports.QUIC
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// step begins a step: the host's rate, then a context bounded by the step timeout.
func (p *siteProbe) step(ctx context.Context, r *ProtocolResult) (context.Context, context.CancelFunc, bool) {
	if err := p.pacer.wait(ctx, p.site.Host); err != nil {
		fail(ctx, r, "wait", err)
		return nil, nil, false
	}
	sctx, cancel := context.WithTimeoutCause(ctx, p.cfg.Timeout, fmt.Errorf("timeout after %s", p.cfg.Timeout))
	return sctx, cancel, true
}

// fail records a step's error, preferring the context's cause (a timeout) to what it caused.
func fail(ctx context.Context, r *ProtocolResult, what string, err error) {
	if cause := context.Cause(ctx); cause != nil {
		err = cause
	}
	msg := what + ": " + err.Error()
	if len(msg) > 300 {
		msg = msg[:297] + "..."
	}
	r.Error = msg
}

func (p *siteProbe) dialTCP(ctx context.Context, r *ProtocolResult, port int) (net.Conn, error) {
	r.Port = port
	start := time.Now()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(p.addr, uint16(port)).String())
	if err != nil {
		fail(ctx, r, "connect", err)
		return nil, err
	}
	r.ConnectMS = ms(time.Since(start))
	// A step's deadline bounds every read and write on the connection.
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	return c, nil
}

// tlsConfig verifies certificates against RootCAs for the site's name but lets the handshake go
// on either way (recording why it failed), so that protocol support is known for sites with bad
// certificates too. Nothing secret is ever sent.
func (p *siteProbe) tlsConfig(r *ProtocolResult, alpn []string) *tls.Config {
	name := p.site.Host
	if p.site.IsIP() {
		name = ""
	}
	return &tls.Config{
		ServerName:         name,
		NextProtos:         alpn,
		InsecureSkipVerify: true,
		MinVersion:         tls.VersionTLS12,
		VerifyConnection: func(cs tls.ConnectionState) error {
			r.CertError = verify(cs, p.cfg.RootCAs, p.site.Host)
			return nil
		},
	}
}

func verify(cs tls.ConnectionState, roots *x509.CertPool, host string) string {
	if len(cs.PeerCertificates) == 0 {
		return "no certificate"
	}
	opts := x509.VerifyOptions{Roots: roots, DNSName: host, Intermediates: x509.NewCertPool()}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		return err.Error()
	}
	return ""
}

// tlsStep connects, offers alpn and, for a protocol the probe speaks, sends the request over the
// negotiated protocol. It returns the negotiated ALPN ("" none; "-" no handshake).
func (p *siteProbe) tlsStep(ctx context.Context, alpn []string, r *ProtocolResult) string {
	negotiated := "-"
	p.tcpStep(ctx, r, p.tlsPort(), func(sctx context.Context, raw net.Conn) {
		tc := tls.Client(raw, p.tlsConfig(r, alpn))
		start := time.Now()
		if err := tc.HandshakeContext(sctx); err != nil {
			fail(sctx, r, "tls", err)
			return
		}
		r.HandshakeMS = ms(time.Since(start))
		cs := tc.ConnectionState()
		r.ALPN, r.TLSVersion = cs.NegotiatedProtocol, tlsVersion(cs.Version)
		negotiated = cs.NegotiatedProtocol
		switch {
		case cs.NegotiatedProtocol == "h2" && contains(alpn, "h2"):
			p.h2Request(sctx, tc, r)
		case cs.NegotiatedProtocol == spdy.NextProtoTLS:
			r.announce(ByALPN)
			p.spdyRequest(sctx, tc, r)
		case cs.NegotiatedProtocol == "http/1.1" || (cs.NegotiatedProtocol == "" && contains(alpn, "http/1.1")):
			if cs.NegotiatedProtocol == "http/1.1" && len(alpn) == 1 {
				r.announce(ByALPN)
			}
			p.h1Request(sctx, tc, r)
		}
	})
	return negotiated
}

// tcpStep is a step over a TCP connection to port (paced, with its own timeout): do runs with the
// step's context on the connection, closed after it. A failure to wait or connect is r's error.
func (p *siteProbe) tcpStep(ctx context.Context, r *ProtocolResult, port int, do func(ctx context.Context, c net.Conn)) {
	sctx, cancel, ok := p.step(ctx, r)
	if !ok {
		return
	}
	defer cancel()
	c, err := p.dialTCP(sctx, r, port)
	if err != nil {
		return
	}
	defer c.Close()
	do(sctx, c)
}

// moveTLSResult gives h1s the first TLS step's connection facts and response (the server chose
// HTTP/1.1 over h2) and leaves h2 with the connection facts only.
func (p *siteProbe) moveTLSResult(h2, h1s *ProtocolResult, alpn string) {
	*h1s = ProtocolResult{Announced: h1s.Announced, AnnouncedBy: h1s.AnnouncedBy, Served: h2.Served,
		Status: h2.Status, Server: h2.Server, ALPN: h2.ALPN, TLSVersion: h2.TLSVersion, CertError: h2.CertError,
		ConnectMS: h2.ConnectMS, HandshakeMS: h2.HandshakeMS, FirstByteMS: h2.FirstByteMS, Port: h2.Port, Error: h2.Error}
	if alpn == "http/1.1" {
		h1s.announce(ByALPN)
	}
	h2.Served, h2.Status, h2.Server, h2.FirstByteMS, h2.Error = false, 0, "", nil, ""
}

func tlsVersion(v uint16) string {
	switch v {
	case tls.VersionTLS10:
		return "1.0"
	case tls.VersionTLS11:
		return "1.1"
	case tls.VersionTLS12:
		return "1.2"
	case tls.VersionTLS13:
		return "1.3"
	}
	return fmt.Sprintf("0x%04x", v)
}

func (p *siteProbe) newRequest(ctx context.Context, scheme string) *http.Request {
	u := *p.site.URL
	u.Scheme = scheme
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	req.Host = p.site.URL.Host
	req.Header.Set("User-Agent", p.cfg.UserAgent)
	req.Header.Set("Accept", "*/*")
	return req
}

// answered records a response (headers only; the body is never read).
func (p *siteProbe) answered(r *ProtocolResult, resp *http.Response, sent time.Time) {
	r.FirstByteMS = ms(time.Since(sent))
	r.Served, r.Status, r.Server = true, resp.StatusCode, resp.Header.Get("Server")
	if v := resp.Header.Get("Alt-Svc"); v != "" {
		p.altSvcs = append(p.altSvcs, v)
		if p.rec.AltSvc == "" {
			p.rec.AltSvc = v
		}
	}
}

// h1Request sends one HTTP/1.1 GET on c and reads the response's header block.
func (p *siteProbe) h1Request(ctx context.Context, c net.Conn, r *ProtocolResult) {
	scheme := "http"
	if _, ok := c.(*tls.Conn); ok {
		scheme = "https"
	}
	req := p.newRequest(ctx, scheme)
	req.Close = true // Connection: close
	sent := time.Now()
	if err := req.Write(c); err != nil {
		fail(ctx, r, "request", err)
		return
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		fail(ctx, r, "response", err)
		return
	}
	p.answered(r, resp, sent)
}

func (p *siteProbe) h2Request(ctx context.Context, tc *tls.Conn, r *ProtocolResult) {
	cc, err := (&http2.Transport{}).NewClientConn(tc)
	if err != nil {
		fail(ctx, r, "h2", err)
		return
	}
	defer cc.Close()
	p.roundTrip(ctx, r, "h2", cc)
}

func (p *siteProbe) spdyRequest(ctx context.Context, tc *tls.Conn, r *ProtocolResult) {
	cc, err := spdy.NewClientConn(tc, spdy.ClientConfig{})
	if err != nil {
		fail(ctx, r, "spdy", err)
		return
	}
	defer cc.Close()
	p.roundTrip(ctx, r, "spdy", cc)
}

// roundTrip sends one GET over a client connection of a multiplexed protocol (what: its name in
// errors) and records the response's headers.
func (p *siteProbe) roundTrip(ctx context.Context, r *ProtocolResult, what string, cc interface {
	RoundTrip(*http.Request) (*http.Response, error)
}) {
	sent := time.Now()
	resp, err := cc.RoundTrip(p.newRequest(ctx, "https"))
	if err != nil {
		fail(ctx, r, what+" request", err)
		return
	}
	resp.Body.Close()
	p.answered(r, resp, sent)
}

// h1Step: one HTTP/1.1 GET on the cleartext port.
func (p *siteProbe) h1Step(ctx context.Context, r *ProtocolResult) {
	p.tcpStep(ctx, r, p.httpPort(), func(sctx context.Context, c net.Conn) { p.h1Request(sctx, c, r) })
}

// h2cStep asks the cleartext port to upgrade to h2c (RFC 7540 §3.2). 101 announces h2c; the
// response that then arrives on stream 1 serves it.
func (p *siteProbe) h2cStep(ctx context.Context, r *ProtocolResult) {
	p.tcpStep(ctx, r, p.httpPort(), func(sctx context.Context, c net.Conn) { p.h2cUpgrade(sctx, c, r) })
}

func (p *siteProbe) h2cUpgrade(sctx context.Context, c net.Conn, r *ProtocolResult) {
	req := p.newRequest(sctx, "http")
	req.Header.Set("Connection", "Upgrade, HTTP2-Settings")
	req.Header.Set("Upgrade", "h2c")
	var settings bytes.Buffer
	if err := http2.NewFramer(&settings, nil).WriteSettings(); err != nil {
		fail(sctx, r, "h2c", err)
		return
	}
	req.Header.Set("HTTP2-Settings", base64.RawURLEncoding.EncodeToString(settings.Bytes()[9:]))
	sent := time.Now()
	if err := req.Write(c); err != nil {
		fail(sctx, r, "request", err)
		return
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		fail(sctx, r, "response", err)
		return
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || !strings.EqualFold(resp.Header.Get("Upgrade"), "h2c") {
		return // answered over HTTP/1.1: no upgrade
	}
	r.announce(ByUpgrade)
	if err := readUpgradedResponse(c, br, r); err != nil {
		fail(sctx, r, "h2c stream 1", err)
		return
	}
	r.FirstByteMS = ms(time.Since(sent))
	r.Served = true
}

// readUpgradedResponse speaks HTTP/2 after a 101: the preface and SETTINGS, then frames until
// stream 1's response headers.
func readUpgradedResponse(c net.Conn, br *bufio.Reader, r *ProtocolResult) error {
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		return err
	}
	fr := http2.NewFramer(c, br)
	if err := fr.WriteSettings(); err != nil {
		return err
	}
	var block []byte
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return err
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if err := fr.WriteSettingsAck(); err != nil {
					return err
				}
			}
		case *http2.GoAwayFrame:
			return fmt.Errorf("GOAWAY %v", f.ErrCode)
		case *http2.RSTStreamFrame:
			if f.StreamID == 1 {
				return fmt.Errorf("RST_STREAM %v", f.ErrCode)
			}
		case *http2.HeadersFrame, *http2.ContinuationFrame: // the header block and its continuations
			if f.Header().StreamID != 1 {
				continue
			}
			hf := f.(interface {
				HeaderBlockFragment() []byte
				HeadersEnded() bool
			})
			block = append(block, hf.HeaderBlockFragment()...)
			if hf.HeadersEnded() {
				return decodeStatus(block, r)
			}
		}
	}
}

func decodeStatus(block []byte, r *ProtocolResult) error {
	fields, err := hpack.NewDecoder(4096, nil).DecodeFull(block)
	if err != nil {
		return err
	}
	for _, f := range fields {
		switch f.Name {
		case ":status":
			fmt.Sscan(f.Value, &r.Status)
		case "server":
			r.Server = f.Value
		}
	}
	if r.Status == 0 {
		return errors.New("response without :status")
	}
	return nil
}

// h3Step: a QUIC handshake offering h3, then one HTTP/3 GET.
func (p *siteProbe) h3Step(ctx context.Context, r *ProtocolResult) {
	sctx, cancel, ok := p.step(ctx, r)
	if !ok {
		return
	}
	defer cancel()
	r.Port = p.h3Port()
	network := "udp4"
	if p.addr.Is6() {
		network = "udp6"
	}
	udp, err := net.ListenUDP(network, nil)
	if err != nil {
		fail(sctx, r, "udp", err)
		return
	}
	defer udp.Close()
	start := time.Now()
	qconf := &quic.Config{HandshakeIdleTimeout: p.cfg.Timeout, MaxIdleTimeout: p.cfg.Timeout}
	raddr := net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.addr, uint16(r.Port)))
	qc, err := quic.Dial(sctx, udp, raddr, p.tlsConfig(r, []string{http3.NextProtoH3}), qconf)
	if err != nil {
		fail(sctx, r, "quic", err)
		return
	}
	defer qc.CloseWithError(0, "")
	r.HandshakeMS = ms(time.Since(start))
	st := qc.ConnectionState().TLS
	r.ALPN, r.TLSVersion = st.NegotiatedProtocol, tlsVersion(st.Version)
	p.roundTrip(sctx, r, "h3", (&http3.Transport{}).NewClientConn(qc))
}
