package probe

import "time"

// Protocols are the protocols a probe reports on, in report order. Every record has an entry for
// each of them.
var Protocols = []string{H1, H1S, H2, H2C, H3, SPDY3}

// Protocol names (the trial contract's).
const (
	H1    = "h1"    // HTTP/1.1 over TCP, port 80
	H1S   = "h1s"   // HTTP/1.1 over TLS (ALPN http/1.1), port 443
	H2    = "h2"    // HTTP/2 over TLS (ALPN h2)
	H2C   = "h2c"   // HTTP/2 cleartext by the HTTP/1.1 Upgrade on port 80 (RFC 7540 §3.2)
	H3    = "h3"    // HTTP/3 over QUIC, UDP 443 (or the announced port)
	SPDY3 = "spdy3" // SPDY/3.1 over TLS (ALPN spdy/3.1)
)

// How a protocol can be announced (ProtocolResult.AnnouncedBy).
const (
	ByALPN    = "alpn"     // the TLS server selected it from the probe's ALPN offer
	ByAltSvc  = "alt-svc"  // an Alt-Svc header field of a response named it (h3)
	ByHTTPSRR = "https-rr" // the name's DNS HTTPS record lists it in alpn
	ByUpgrade = "upgrade"  // the server answered the h2c Upgrade with 101 Switching Protocols
	ByDefault = "default"  // an HTTPS record without no-default-alpn implies http/1.1 (RFC 9460 §7.1.2)
)

// Record is the result of probing one site: one JSON line of `wirelab-engine probe`, the schema
// schemas/probe-record.schema.json, stored by the control plane in its probes tables. Times are
// milliseconds from the start of the step they belong to.
type Record struct {
	// Index is the site's position in the input list (0-based).
	Index int `json:"index"`
	// Site is the site as given; URL its normalised form (scheme, host, port, path).
	Site string `json:"site"`
	URL  string `json:"url"`
	// Host is the URL's host name (lower case) or IP address.
	Host string `json:"host"`
	// StartedAt is when the site's probe began (after the run's resolution), UTC.
	StartedAt time.Time `json:"started_at"`
	// DurationMS is how long the site's probe took, steps and waits for the per-host rate
	// included.
	DurationMS float64 `json:"duration_ms"`
	// DNS is the name's resolution; null when Host is an IP address.
	DNS *DNSResult `json:"dns"`
	// Addr is the address every step contacted; "" when none was (refused, unresolved).
	Addr string `json:"addr"`
	// Refused says why the site was not contacted at all (the address policy); "" otherwise.
	Refused string `json:"refused"`
	// AltSvc is the first Alt-Svc header field value any response carried ("" none).
	AltSvc string `json:"alt_svc"`
	// Protocols holds one result per protocol of Protocols.
	Protocols map[string]*ProtocolResult `json:"protocols"`
	// Error is a site-level failure (resolution, the run's deadline); "" otherwise. Failures of
	// single steps are in the protocol's Error.
	Error string `json:"error"`
}

// DNSResult is a name's resolution: A, AAAA and HTTPS queries, sent at once.
type DNSResult struct {
	// Server is the resolver asked (host:port).
	Server string `json:"server"`
	// MS is the time until the last of the three answers.
	MS    float64       `json:"ms"`
	A     []string      `json:"a"`
	AAAA  []string      `json:"aaaa"`
	HTTPS []HTTPSRecord `json:"https"`
	Error string        `json:"error"` // the A/AAAA lookup's failure (e.g. NXDOMAIN); "" on success
}

// HTTPSRecord is one DNS HTTPS record (RFC 9460) as the probe saw it.
type HTTPSRecord struct {
	Priority      int      `json:"priority"` // 0: alias mode
	Target        string   `json:"target"`   // "." = the owner name
	ALPN          []string `json:"alpn"`
	NoDefaultALPN bool     `json:"no_default_alpn"`
	Port          int      `json:"port"` // 0: none
	ECH           bool     `json:"ech"`  // an ech parameter (an ECHConfigList) is present
}

// ProtocolResult is what the probe learnt about one protocol of one site.
type ProtocolResult struct {
	// Announced: the site said it speaks the protocol (AnnouncedBy says how). null for h1, which
	// has no way of being announced.
	Announced *bool `json:"announced"`
	// AnnouncedBy lists the announcements seen: alpn, alt-svc, https-rr, upgrade, default.
	AnnouncedBy []string `json:"announced_by"`
	// Served: a request over the protocol got an HTTP response (any status).
	Served bool `json:"served"`
	// Status is that response's status code; 0 when none came.
	Status int `json:"status"`
	// Server is the response's Server header field.
	Server string `json:"server"`
	// ALPN is what TLS negotiated on the step's connection ("" none or not TLS).
	ALPN string `json:"alpn"`
	// TLSVersion is the negotiated TLS version ("1.2", "1.3"; "" not TLS or no handshake).
	TLSVersion string `json:"tls_version"`
	// CertError is why the certificate did not verify ("" verified or no TLS); the probe goes on
	// regardless, so that protocol support is known for sites with bad certificates too.
	CertError string `json:"cert_error"`
	// ConnectMS is the TCP connect time (null for h3 and when no connection was made).
	ConnectMS *float64 `json:"connect_ms"`
	// HandshakeMS is the TLS handshake (h3: the whole QUIC handshake), null when none completed.
	HandshakeMS *float64 `json:"handshake_ms"`
	// FirstByteMS is from the request's sending to its response header block, null when none came.
	FirstByteMS *float64 `json:"first_byte_ms"`
	// Port is the port the step contacted (0: not attempted).
	Port int `json:"port"`
	// Error is why the step failed ("" none).
	Error string `json:"error"`
}

func newRecord() map[string]*ProtocolResult {
	m := make(map[string]*ProtocolResult, len(Protocols))
	for _, p := range Protocols {
		r := &ProtocolResult{AnnouncedBy: []string{}}
		if p != H1 {
			f := false
			r.Announced = &f
		}
		m[p] = r
	}
	return m
}

// announce marks the protocol announced by how (once per source).
func (r *ProtocolResult) announce(how string) {
	if r.Announced == nil {
		return
	}
	for _, x := range r.AnnouncedBy {
		if x == how {
			return
		}
	}
	t := true
	r.Announced = &t
	r.AnnouncedBy = append(r.AnnouncedBy, how)
}

func ms(d time.Duration) *float64 {
	v := float64(d.Microseconds()) / 1000
	return &v
}
