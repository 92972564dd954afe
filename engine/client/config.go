package client

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"slices"
	"time"

	"github.com/wirelab/wirelab/engine/internal/suggest"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/policy"
)

// Protocol is the wire protocol a load uses for every origin.
type Protocol string

// The protocols the loader speaks. The URL scheme must match: http for h1 and h2c, https otherwise.
const (
	H1  Protocol = "h1"  // HTTP/1.1 over cleartext TCP
	H1S Protocol = "h1s" // HTTP/1.1 over TLS (ALPN http/1.1)
	H2  Protocol = "h2"  // HTTP/2 over TLS (ALPN h2)
	H2C Protocol = "h2c" // HTTP/2 over cleartext TCP with prior knowledge
	H3  Protocol = "h3"  // HTTP/3 over QUIC (ALPN h3)
	// SPDY3 is SPDY/3.1 over TLS (ALPN spdy/3.1), engine/spdy's client.
	SPDY3 Protocol = "spdy3"
)

// Protocols lists every protocol in the order the CLI documents them.
var Protocols = []Protocol{H1, H1S, H2, H2C, H3, SPDY3}

// ParseProtocol validates a protocol name.
func ParseProtocol(s string) (Protocol, error) {
	return suggest.Parse(Protocols, s)
}

// Scheme is the URL scheme the protocol serves.
func (p Protocol) Scheme() string {
	if p == H1 || p == H2C {
		return "http"
	}
	return "https"
}

// usesTLS reports whether connections carry a TLS handshake over TCP (h3's TLS runs inside QUIC).
func (p Protocol) usesTLS() bool { return p == H1S || p == H2 || p == SPDY3 }

// pushes reports whether the protocol has server push (h2, h2c, spdy3).
func (p Protocol) pushes() bool { return p == H2 || p == H2C || p == SPDY3 }

// wireName is the protocol as HAR and the load record name it: HTTP/1.1, h2, h3 or spdy/3.1.
func (p Protocol) wireName() string {
	switch p {
	case H1, H1S:
		return "HTTP/1.1"
	case H2, H2C:
		return "h2"
	case SPDY3:
		return "spdy/3.1"
	default:
		return "h3"
	}
}

// H3Discovery is how an h3 load comes to speak HTTP/3 to an origin (docs/vitals.md, "HTTP/3 as
// browsers find it").
type H3Discovery string

// The ways to find HTTP/3.
const (
	// H3Forced: QUIC from the first request to every origin (the load's protocol, as before).
	H3Forced H3Discovery = "forced"
	// H3AltSvc: an origin's first connection is HTTP/2 over TCP+TLS; once a response from it
	// carries an Alt-Svc field announcing h3 on the same host, its later requests go over QUIC.
	// The announcement is remembered by a Tab (Alt-Svc cache), so a repeat view starts on QUIC.
	H3AltSvc H3Discovery = "alt-svc"
	// H3HTTPSRR: before an origin's first connection the loader asks the DNS server for the host's
	// HTTPS record (RFC 9460) beside its A record; QUIC when the record's alpn lists h3, else
	// HTTP/2 over TCP+TLS. Needs a Resolver that answers HTTPS queries (DNSResolver).
	H3HTTPSRR H3Discovery = "https-rr"
)

// H3Discoveries lists them.
var H3Discoveries = []H3Discovery{H3Forced, H3AltSvc, H3HTTPSRR}

// Mode decides which requests a load issues and when.
type Mode string

// Load modes, each a planner (planner.go).
const (
	ModeFlat    Mode = "flat"    // root document, then every sub-resource it references once it has arrived
	ModeObjects Mode = "objects" // every URL of an explicit list at once, no parsing
	ModeReplay  Mode = "replay"  // follow Config.Page's dependency graph, computations as waits (Epload)
)

// Modes lists the modes in the order the CLI documents them.
var Modes = []Mode{ModeFlat, ModeObjects, ModeReplay}

// ParseMode validates a mode name.
func ParseMode(s string) (Mode, error) {
	return suggest.Parse(Modes, s)
}

// Defaults of Config. Window sizes follow Chromium, the browser the studies used.
const (
	DefaultMaxConnectionsPerOrigin = 6
	DefaultTimeout                 = 120 * time.Second
	DefaultH2AssumedMaxStreams     = 100
	DefaultStreamReceiveWindow     = 6 << 20  // 6 MiB, Chromium's (h2 SETTINGS_INITIAL_WINDOW_SIZE, QUIC stream window)
	DefaultConnReceiveWindow       = 15 << 20 // 15 MiB, Chromium's connection receive window
	MaxConnectionsPerOriginLimit   = 64
	maxReceiveWindow               = 1<<31 - 1 // HTTP/2's largest window
)

// Config is everything a Loader needs besides the URLs. The zero value of each field means its
// documented default; New validates the whole Config once.
type Config struct {
	// Protocol used for every origin of the load. Required.
	Protocol Protocol
	// Mode: ModeFlat (default) or ModeObjects.
	Mode Mode
	// MaxConnectionsPerOrigin caps HTTP/1.x connections per origin (1–64, default 6). Ignored by
	// h2, h2c and h3, which use exactly one connection per origin.
	MaxConnectionsPerOrigin int
	// Resolver turns host names into addresses. Default: SystemResolver. IP literals in URLs are
	// never resolved.
	Resolver Resolver
	// RootCAs verifies servers' certificates (the run's CA). nil = the system roots.
	RootCAs *x509.CertPool
	// Timeout aborts a load that has not completed (default 120 s, the trial's client.timeout_s).
	Timeout time.Duration
	// H2AssumedMaxStreams is how many concurrent streams an HTTP/2 connection may open before the
	// server's first SETTINGS frame arrives (default 100, as Chromium and RFC 9113's recommended
	// minimum). Streams the server refuses (REFUSED_STREAM) are retried once its limit is known.
	// 1 never exceeds any server limit but delays the second request by up to one RTT.
	H2AssumedMaxStreams int
	// StreamReceiveWindow is each stream's flow-control receive window (default 6 MiB): h2's
	// SETTINGS_INITIAL_WINDOW_SIZE; for h3 QUIC's initial_max_stream_data with auto-tuning off
	// (initial = maximum), so that h2 and h3 are compared with the same windows. The client
	// returns credit once half a window has been consumed.
	StreamReceiveWindow int
	// ConnReceiveWindow is the connection's receive window (default 15 MiB): h2's connection
	// window (raised by a WINDOW_UPDATE after the preface), h3's initial_max_data (fixed).
	ConnReceiveWindow int
	// AllowAnyTarget lets the loader contact hosts outside loopback, 10.77.0.0/16 and
	// *.wirelab.test. Default false: such targets are refused.
	AllowAnyTarget bool
	// Internet lets the loader contact public sites (a live load through the egress router,
	// docs/egress.md): any host name may be requested; IP literals and resolved addresses must be
	// the lab's or public (engine/policy: special-purpose addresses are refused). The DNS server must
	// still be the lab's. Default false.
	Internet bool
	// Target is the address policy of a load test of an external target (policy.Target: the
	// target's host and the listed origins only; loopback, the run's namespaces, public addresses
	// with AllowInternet, private ones only when named). It replaces the other policies; nil: none.
	Target *policy.Target
	// LoopbackOnly narrows the targets to loopback addresses (a load generator outside the lab):
	// IP literals must be loopback, names pass the URL check and every address they resolve to
	// must be loopback, and so must the DNS server's. AllowAnyTarget overrides it.
	LoopbackOnly bool
	// KeyLogWriter, if set, receives TLS secrets in NSS key log format (to decrypt pcaps).
	KeyLogWriter io.Writer
	// UserAgent sent with every request (default "wirelab-engine").
	UserAgent string
	// Priority is the request prioritisation policy (default PriorityNone): each request's
	// urgency is signalled as RFC 9218's priority header (h2, h2c, h3; on h2 also in
	// PRIORITY_UPDATE frames for pushed streams) and as the SYN_STREAM priority (spdy3). See
	// priority.go.
	Priority PriorityPolicy
	// Page is the page being loaded. A replay follows it (ModeReplay; required there; a page
	// without activities is replayed with its structural graph, page.BuildGraph).
	// PriorityChrome takes object types from it (else from where a reference was found, or the
	// URL's extension) and PriorityDependency needs it for object depths (page.Depths); they
	// match objects by path (/L/<token><path>), so its seed and sharding do not matter for them.
	// nil: unknown.
	Page *page.Page
	// ComputeScale multiplies every computation's recorded duration in replay (≥ 0; the zero
	// value means 0: no computation). The trial's client.compute_scale (default 1.0) sets it.
	ComputeScale float64
	// AcceptPush accepts server pushes (h2, h2c: SETTINGS_ENABLE_PUSH 1; spdy3: pushed streams
	// are kept, not reset). Default false: h2 announces SETTINGS_ENABLE_PUSH 0 and spdy3 refuses
	// pushed streams. A request for a pushed URL uses the pushed response (waiting for it if it
	// is still arriving) instead of sending a request.
	AcceptPush bool
	// H3 is how an h3 load finds HTTP/3 (default H3Forced); other protocols ignore it.
	H3 H3Discovery
	// Profile, when set, is shared by loads as a browser profile is by a first and a repeat view:
	// TLS session tickets (a connection to an origin with a ticket resumes — h1s, h2, spdy3 over
	// TCP; h3 resumes its QUIC handshake and sends its first requests as 0-RTT data when the server
	// allows early data) and the Alt-Svc cache. nil: a fresh profile per load, every handshake full.
	Profile *Profile
	// Sources spreads the TCP connections over these local addresses, in turn (a load generator
	// holding more connections to one server than one address has ephemeral ports). nil: the
	// kernel's choice. h3's UDP sockets do not use it.
	Sources *SourceAddrs
}

// withDefaults returns c with zero fields replaced by their defaults, or an error naming the
// first invalid field.
func (c Config) withDefaults() (Config, error) {
	if c.Protocol == "" {
		return c, fmt.Errorf("client.protocol: required; allowed: %s", suggest.Join(Protocols))
	}
	if _, err := ParseProtocol(string(c.Protocol)); err != nil {
		return c, fmt.Errorf("client.protocol: %w", err)
	}
	if c.Mode == "" {
		c.Mode = ModeFlat
	}
	if _, err := ParseMode(string(c.Mode)); err != nil {
		return c, fmt.Errorf("client.mode: %w", err)
	}
	if c.Mode == ModeReplay {
		if c.Page == nil {
			return c, errors.New("client.page: mode replay needs the page model")
		}
		if math.IsNaN(c.ComputeScale) || math.IsInf(c.ComputeScale, 0) || c.ComputeScale < 0 {
			return c, fmt.Errorf("client.compute_scale: %v: must be a number ≥ 0", c.ComputeScale)
		}
	}
	if c.MaxConnectionsPerOrigin == 0 {
		c.MaxConnectionsPerOrigin = DefaultMaxConnectionsPerOrigin
	}
	if c.MaxConnectionsPerOrigin < 1 || c.MaxConnectionsPerOrigin > MaxConnectionsPerOriginLimit {
		return c, fmt.Errorf("client.max_connections_per_origin: %d: allowed 1–%d", c.MaxConnectionsPerOrigin, MaxConnectionsPerOriginLimit)
	}
	if c.Resolver == nil {
		c.Resolver = SystemResolver{}
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Timeout < 0 {
		return c, fmt.Errorf("client.timeout_s: %v: must be > 0", c.Timeout)
	}
	if c.H2AssumedMaxStreams == 0 {
		c.H2AssumedMaxStreams = DefaultH2AssumedMaxStreams
	}
	if c.H2AssumedMaxStreams < 1 {
		return c, fmt.Errorf("client.h2_assumed_max_streams: %d: must be ≥ 1", c.H2AssumedMaxStreams)
	}
	if c.StreamReceiveWindow == 0 {
		c.StreamReceiveWindow = DefaultStreamReceiveWindow
	}
	if c.StreamReceiveWindow < 65535 || c.StreamReceiveWindow > maxReceiveWindow {
		return c, fmt.Errorf("client.stream_receive_window: %d: allowed 65535–%d", c.StreamReceiveWindow, maxReceiveWindow)
	}
	if c.ConnReceiveWindow == 0 {
		c.ConnReceiveWindow = DefaultConnReceiveWindow
	}
	if c.ConnReceiveWindow < 65535 || c.ConnReceiveWindow > maxReceiveWindow {
		return c, fmt.Errorf("client.conn_receive_window: %d: allowed 65535–%d", c.ConnReceiveWindow, maxReceiveWindow)
	}
	if c.H3 == "" {
		c.H3 = H3Forced
	}
	if !slices.Contains(H3Discoveries, c.H3) {
		return c, fmt.Errorf("client.h3: %s: allowed: forced, alt-svc, https-rr", c.H3)
	}
	if c.H3 == H3HTTPSRR && c.Protocol == H3 {
		if _, ok := c.Resolver.(HTTPSResolver); !ok {
			return c, errors.New("client.h3: https-rr: needs a DNS server to ask for HTTPS records (client.dns server; fetch --dns)")
		}
	}
	if c.UserAgent == "" {
		c.UserAgent = "wirelab-engine"
	}
	if c.Priority == "" {
		c.Priority = PriorityNone
	}
	if _, err := ParsePriorityPolicy(string(c.Priority)); err != nil {
		return c, fmt.Errorf("client.priority: %w", err)
	}
	if c.Priority == PriorityDependency && c.Page == nil {
		return c, errors.New("client.priority: dependency: needs the page (object depths come from its dependency graph; fetch --page)")
	}
	if d, ok := c.Resolver.(*DNSResolver); ok && !c.AllowAnyTarget {
		if err := checkTargetAddrPort(d.Server); err != nil {
			return c, fmt.Errorf("client.dns: %w", err)
		}
		if c.LoopbackOnly {
			if ap, err := netip.ParseAddrPort(d.Server); err != nil || !ap.Addr().Unmap().IsLoopback() {
				return c, fmt.Errorf("client.dns: %s: %w", d.Server, ErrNotLoopback)
			}
		}
	}
	return c, nil
}
