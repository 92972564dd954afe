// Package sites is the probe's local internet: a fixed catalog of named sites in a run's server
// namespace, behind the run's DNS server (*.wirelab.test, with HTTPS records), each showing one
// behaviour a probe must classify — HTTP/1.1 only, HTTP/2, HTTP/3 announced and served, HTTP/3
// announced but not served, an HTTPS DNS record, a TLS port that resets, a slow path, and a name
// that resolves to a documentation address (docs/probe.md, "The local internet").
//
// Each site is described by what it does (protocols, announcements, path), not by how: the
// built-in server (engine/server) serves them now; a real server implementation can serve the
// same description later. Expected derives what a correct probe must report from the
// description alone.
package sites

import (
	"net/netip"
	"slices"
	"time"

	"github.com/wirelab/wirelab/engine/dns"
	"github.com/wirelab/wirelab/engine/server"
)

// Site is one site of the local internet.
type Site struct {
	// Name is its host name (under wirelab.test).
	Name string `json:"name"`
	// Role says what it stands for.
	Role string `json:"role"`
	// Protocols are what its server serves (none: no server at all).
	Protocols []server.Protocol `json:"protocols"`
	// AltSvc is the Alt-Svc header field of its every response ("" none).
	AltSvc string `json:"alt_svc,omitempty"`
	// H2CUpgrade: its cleartext port honours the Upgrade to h2c.
	H2CUpgrade bool `json:"h2c_upgrade,omitempty"`
	// HTTPS are its DNS HTTPS records.
	HTTPS []dns.HTTPSRecord `json:"https_records,omitempty"`
	// TLSReset: its TLS port (TCP 443) accepts connections and resets each one when the
	// ClientHello arrives, instead of serving TLS.
	TLSReset bool `json:"tls_reset,omitempty"`
	// ExtraRTT is added to its path's round trip by the emulator.
	ExtraRTT time.Duration `json:"extra_rtt_ns,omitempty"`
	// Addr, when set, is its DNS address outside the run (nothing serves it); else the site gets
	// the next origin address of the run's server namespace.
	Addr netip.Addr `json:"addr,omitzero"`
}

// Path is the URL path the catalog's URLs name: the built-in server's root document for the
// load token "fixture" (any other path is a 404, equally an HTTP answer).
const Path = "/L/fixture/"

// URL is the site's URL as a probe is given it.
func (s Site) URL() string { return "https://" + s.Name + Path }

// DocumentationAddr is where doc.wirelab.test points: TEST-NET-1 (RFC 5737), never routed.
var DocumentationAddr = netip.MustParseAddr("192.0.2.1")

// SlowExtraRTT is the slow site's extra round trip.
const SlowExtraRTT = 200 * time.Millisecond

// exampleECH is a well-framed ECHConfigList (one config of version 0xfe0d) whose contents are
// not a usable key: the HTTPS record only has to carry an ech parameter, whose presence is what
// the probe reports.
var exampleECH = []byte{0x00, 0x0d, 0xfe, 0x0d, 0x00, 0x09, 0x01, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}

// Catalog is the local internet, in address order.
func Catalog() []Site {
	const h3AltSvc = `h3=":443"; ma=86400`
	tcp := []server.Protocol{server.H1, server.H1S, server.H2}
	return []Site{
		{Name: "h1.wirelab.test", Role: "HTTP/1.1 only (cleartext and TLS; ALPN http/1.1)",
			Protocols: []server.Protocol{server.H1, server.H1S}},
		{Name: "h2.wirelab.test", Role: "HTTP/2 over TLS, the h2c upgrade on port 80, and SPDY/3.1",
			Protocols: []server.Protocol{server.H1, server.H1S, server.H2, server.H2C, server.SPDY3}, H2CUpgrade: true},
		{Name: "h3.wirelab.test", Role: "HTTP/3 announced by Alt-Svc and served",
			Protocols: append(slices.Clone(tcp), server.H3), AltSvc: h3AltSvc},
		{Name: "h3-unserved.wirelab.test", Role: "HTTP/3 announced by Alt-Svc but not served (nothing on UDP 443)",
			Protocols: slices.Clone(tcp), AltSvc: h3AltSvc},
		{Name: "https-rr.wirelab.test", Role: "an HTTPS DNS record (alpn h3,h2; ech) instead of Alt-Svc; HTTP/3 served",
			Protocols: append(slices.Clone(tcp), server.H3),
			HTTPS:     []dns.HTTPSRecord{{Priority: 1, ALPN: []string{"h3", "h2"}, ECH: exampleECH}}},
		{Name: "tls-reset.wirelab.test", Role: "resets every TLS connection at its ClientHello; HTTP/1.1 on port 80",
			Protocols: []server.Protocol{server.H1}, TLSReset: true},
		{Name: "slow.wirelab.test", Role: "HTTP/2 and HTTP/3 (Alt-Svc) behind 200 ms of extra round trip",
			Protocols: append(slices.Clone(tcp), server.H3), AltSvc: h3AltSvc, ExtraRTT: SlowExtraRTT},
		{Name: "doc.wirelab.test", Role: "resolves to 192.0.2.1 (documentation, RFC 5737): refused before any packet",
			Addr: DocumentationAddr},
	}
}

// Served are the sites that get an origin address of the run (those without Addr), in order.
func Served(all []Site) []Site {
	var out []Site
	for _, s := range all {
		if !s.Addr.IsValid() {
			out = append(out, s)
		}
	}
	return out
}

// Find returns the catalog's site of that name.
func Find(name string) (Site, bool) {
	for _, s := range Catalog() {
		if s.Name == name {
			return s, true
		}
	}
	return Site{}, false
}
