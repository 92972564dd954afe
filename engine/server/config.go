// Package server is wirelab's built-in origin server. It serves one page on every origin address
// over h1 (cleartext HTTP/1.1), h1s (HTTP/1.1 over TLS), h2 (HTTP/2 over TLS, ALPN h2), h2c
// (HTTP/2 cleartext, prior knowledge), h3 (HTTP/3 over QUIC) and spdy3 (SPDY/3.1 over TLS, ALPN
// spdy/3.1), with the knobs of Config: server push policies (h2, h2c, spdy3) and client priorities
// honoured by every multiplexed protocol. It owns a per-run CA and certificate, records every
// request it serves and, per connection, the order in which it sent response data.
package server

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/why"
)

// Protocol is a wire protocol the server speaks.
type Protocol string

// The protocols.
const (
	H1  Protocol = "h1"  // HTTP/1.1 over TCP
	H1S Protocol = "h1s" // HTTP/1.1 over TLS (ALPN http/1.1)
	H2  Protocol = "h2"  // HTTP/2 over TLS (ALPN h2)
	H2C Protocol = "h2c" // HTTP/2 over TCP with prior knowledge
	H3  Protocol = "h3"  // HTTP/3 over QUIC (always TLS 1.3)
	// SPDY3 is SPDY/3.1 over TLS (ALPN spdy/3.1), on the TLS port beside h1s and h2.
	SPDY3 Protocol = "spdy3"
)

// AllProtocols lists every protocol, in the order they are documented.
var AllProtocols = []Protocol{H1, H1S, H2, H2C, H3, SPDY3}

// protocolList is the error messages' list of protocols.
const protocolList = "h1, h1s, h2, h2c, h3, spdy3"

// ParseProtocols parses a comma-separated protocol list.
func ParseProtocols(s string) ([]Protocol, error) {
	var out []Protocol
	seen := map[Protocol]bool{}
	for _, f := range strings.Split(s, ",") {
		p := Protocol(strings.TrimSpace(f))
		if !p.valid() {
			return nil, fielderr.New("protocols", string(p), "must be a comma-separated list of "+protocolList)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

func (p Protocol) valid() bool {
	for _, x := range AllProtocols {
		if x == p {
			return true
		}
	}
	return false
}

// pushes reports whether the protocol has server push (h2, h2c, spdy3).
func (p Protocol) pushes() bool { return p == H2 || p == H2C || p == SPDY3 }

// Scheme is the URL scheme of the protocol.
func (p Protocol) Scheme() string {
	if p == H1 || p == H2C {
		return "http"
	}
	return "https"
}

// Limits of the knobs.
const (
	MinConcurrentStreams = 1
	MaxConcurrentStreams = 1000
	MinWriteChunkBytes   = 256
	MaxWriteChunkBytes   = 1 << 20
)

// Config holds the server's knobs. Start from DefaultConfig(): its zero value differs for
// KeepAlive and the ports.
type Config struct {
	// Addrs are the origin addresses, one per origin of the page, in origin order: Addrs[i]
	// serves s<i+1>.wirelab.test. Required; distinct.
	Addrs []netip.Addr
	// Protocols to serve. Default: all six.
	Protocols []Protocol
	// PortHTTP is the TCP port of h1 and h2c (told apart by the h2 connection preface).
	// Default 80; 0 picks one free port, the same on every origin address.
	PortHTTP int
	// PortHTTPS is the TCP port of h1s, h2 and spdy3 (told apart by ALPN). Default 443; 0 picks
	// one.
	PortHTTPS int
	// PortQUIC is the UDP port of h3. Default 443; 0 picks one.
	PortQUIC int
	// MaxConcurrentStreams is SETTINGS_MAX_CONCURRENT_STREAMS for h2/h2c and spdy3 and the
	// QUIC limit on concurrent bidirectional streams for h3 (the client's requests). 1–1000;
	// default (and 0) 100, Apache mod_spdy's default.
	MaxConcurrentStreams int
	// WriteChunkBytes caps every body write. 0 (default): the implementation's own sizes
	// (32 KiB writes; h2 DATA frames of the peer's max frame size, 16 KiB). Else 256–1048576:
	// the body is written and flushed in chunks of this size: h1/h1s one write to the
	// connection per chunk; h2/h2c one DATA frame per chunk at most (a frame can still be
	// smaller: the peer's SETTINGS_MAX_FRAME_SIZE and flow control split it); h3 one HTTP/3
	// DATA frame per chunk; spdy3 one DATA frame per chunk at most (0: SPDY's 4096-byte frames,
	// mod_spdy's). 4096 reproduces mod_spdy.
	WriteChunkBytes int
	// Push is the server push policy, applied when the root document is served over h2, h2c or
	// spdy3 (h3 and HTTP/1.x have no push). Default none.
	Push PushPolicy
	// TLSVersion is "1.2" or "1.3" (default, and ""): the only version h1s and h2 accept.
	// h3 always uses TLS 1.3.
	TLSVersion string
	// SessionResumption allows TLS session tickets (and QUIC 0-RTT) so that a client can
	// resume. Default false: no tickets are issued and every connection does a full handshake.
	SessionResumption bool
	// KeepAlive lets HTTP/1.x connections carry several requests. Default true.
	KeepAlive bool
	// CertDir is where the per-run CA and certificate are written (ca.pem, cert.pem, key.pem
	// with mode 0600). Default "": a new temporary directory. The files (and a directory the
	// server created) are removed on Close.
	CertDir string
	// Certs, when set, are served instead of new ones (LoadCerts); CertDir is then ignored and the
	// files are left in place by Close.
	Certs *Certs
	// MaxRecords bounds the request records kept in memory (oldest kept, later ones counted as
	// dropped). Default (and 0) 1,000,000.
	MaxRecords int
	// AltSvc, when set, is sent as the Alt-Svc header field (RFC 7838) of every response over
	// every protocol, e.g. `h3=":443"; ma=86400`: how a site announces HTTP/3. It is sent whether
	// or not h3 is served (the probe's fixture has a site that announces h3 without serving it).
	// Default "": none.
	AltSvc string
	// H2CUpgrade answers an HTTP/1.1 request on the cleartext port that asks to upgrade to h2c
	// (`Upgrade: h2c`, `Connection: Upgrade, HTTP2-Settings`; RFC 7540 §3.2) with 101 Switching
	// Protocols and serves the connection as h2c from then on, the request itself as stream 1.
	// Needs h1 and h2c among Protocols. Default false: such a request gets an HTTP/1.1 answer.
	H2CUpgrade bool
	// Host, when set, is the host name of every URL the server renders (page.Base.Host): a page
	// served under a site's own name rather than its origins' sN.wirelab.test (the probe's local
	// internet, whose live loads discover the objects by following the root's references).
	// Default "": the origins' names.
	Host string
	// OnQUICClosed, when set, is called (from its own goroutine) each time an h3 connection has
	// ended, with what its QUIC stack counted — QUIC encrypts packet numbers, so these counts are
	// the only measure of its losses. Close waits for the calls.
	OnQUICClosed func(QUICStats)
	// OnH2Closed, when set, is called (from the connection's goroutine) each time an h2 or h2c
	// connection has ended, with its stream map: which TCP bytes carried which stream's DATA
	// (engine/why's head-of-line blocking needs it; TLS hides frames from the packet log).
	OnH2Closed func(H2Closed)
}

// H2Closed is an HTTP/2 connection that ended.
type H2Closed struct {
	Origin int    `json:"origin"`
	Remote string `json:"remote"` // the client's address and port
	// StreamMap is [stream, start, end) per run of one stream's DATA payload, in TCP payload
	// offsets from the server's first byte on the connection (its TLS handshake included).
	StreamMap [][3]int64 `json:"stream_map"`
}

// QUICStats is what the server's QUIC stack counted on one connection.
type QUICStats struct {
	Origin      int    `json:"origin"` // origin index (0 = s1)
	Remote      string `json:"remote"` // the client's address and UDP port
	PacketsSent uint64 `json:"packets_sent"`
	PacketsLost uint64 `json:"packets_lost"` // packets declared lost (retransmitted in new packets)
	BytesSent   uint64 `json:"bytes_sent"`
	BytesLost   uint64 `json:"bytes_lost"`
	// Loss is the connection's loss recovery by kind (engine/internal/quicloss): packets declared
	// lost (fast) or found spurious, probe timeouts (tlp, timeout).
	Loss why.Retx `json:"loss"`
}

// DefaultConfig returns the documented defaults for addrs.
func DefaultConfig(addrs ...netip.Addr) Config {
	return Config{
		Addrs:                addrs,
		Protocols:            append([]Protocol(nil), AllProtocols...),
		PortHTTP:             80,
		PortHTTPS:            443,
		PortQUIC:             443,
		MaxConcurrentStreams: 100,
		TLSVersion:           "1.3",
		KeepAlive:            true,
		Push:                 PushPolicy{Kind: PushNone},
		MaxRecords:           1_000_000,
	}
}

// resolved fills defaults and validates; the error names the field.
func (c Config) resolved() (Config, error) {
	if c.MaxConcurrentStreams == 0 {
		c.MaxConcurrentStreams = 100
	}
	if c.TLSVersion == "" {
		c.TLSVersion = "1.3"
	}
	if c.MaxRecords == 0 {
		c.MaxRecords = 1_000_000
	}
	if len(c.Protocols) == 0 {
		c.Protocols = append([]Protocol(nil), AllProtocols...)
	}
	if len(c.Addrs) == 0 {
		return c, fielderr.New("addrs", nil, "at least one origin address is required")
	}
	seen := map[netip.Addr]int{}
	for i, a := range c.Addrs {
		if !a.IsValid() {
			return c, fielderr.New(fmt.Sprintf("addrs[%d]", i), a.String(), "must be an IP address")
		}
		if j, dup := seen[a]; dup {
			return c, fielderr.New(fmt.Sprintf("addrs[%d]", i), a.String(), "must differ from addrs[%d]: each origin needs its own address", j)
		}
		seen[a] = i
	}
	if c.Push.Kind == "" {
		c.Push.Kind = PushNone
	}
	if err := c.Push.validate(); err != nil {
		return c, err
	}
	for _, p := range c.Protocols {
		if !p.valid() {
			return c, fielderr.New("protocols", string(p), "must be one of "+protocolList)
		}
	}
	for _, port := range []struct {
		name string
		v    int
	}{{"port_http", c.PortHTTP}, {"port_https", c.PortHTTPS}, {"port_quic", c.PortQUIC}} {
		if port.v < 0 || port.v > 65535 {
			return c, fielderr.New(port.name, port.v, "must be 0–65535 (0: pick a free port)")
		}
	}
	if c.has(H1, H2C) && c.has(H1S, H2, SPDY3) && c.PortHTTP == c.PortHTTPS && c.PortHTTP != 0 {
		return c, fielderr.New("port_https", c.PortHTTPS, "must differ from port_http")
	}
	if c.MaxConcurrentStreams < MinConcurrentStreams || c.MaxConcurrentStreams > MaxConcurrentStreams {
		return c, fielderr.New("max_concurrent_streams", c.MaxConcurrentStreams, "must be %d–%d", MinConcurrentStreams, MaxConcurrentStreams)
	}
	if c.WriteChunkBytes != 0 && (c.WriteChunkBytes < MinWriteChunkBytes || c.WriteChunkBytes > MaxWriteChunkBytes) {
		return c, fielderr.New("write_chunk_bytes", c.WriteChunkBytes, "must be 0 (implementation default) or %d–%d", MinWriteChunkBytes, MaxWriteChunkBytes)
	}
	if c.TLSVersion != "1.2" && c.TLSVersion != "1.3" {
		return c, fielderr.New("tls_version", c.TLSVersion, "must be 1.2 or 1.3")
	}
	if c.Host != "" && !page.ValidHost(c.Host) {
		return c, fielderr.New("host", c.Host, "must be a host name (letters, digits, - and . only)")
	}
	if strings.ContainsAny(c.AltSvc, "\r\n\x00") {
		return c, fielderr.New("alt_svc", c.AltSvc, "must be one header field value, without CR, LF or NUL")
	}
	if c.H2CUpgrade && !(c.has(H1) && c.has(H2C)) {
		return c, fielderr.New("h2c_upgrade", true, "needs h1 and h2c among the protocols")
	}
	if c.MaxRecords < 0 {
		return c, fielderr.New("max_records", c.MaxRecords, "must be ≥ 0")
	}
	return c, nil
}

// has reports whether any of ps is served.
func (c Config) has(ps ...Protocol) bool {
	for _, x := range c.Protocols {
		for _, p := range ps {
			if x == p {
				return true
			}
		}
	}
	return false
}
