// Package browser drives Chromium over the DevTools protocol (CDP) for one page load at a time:
// a fresh profile and an empty cache per load, every request measured from CDP's Network events,
// a HAR with Chrome's extensions, the browser's own load and paint events, and — for recording a
// dependency graph — a devtools.timeline trace. docs/browser.md describes the flags, the HAR
// mapping and the definitions of every number.
//
// The package starts Chromium as a child of the calling process, connected over
// --remote-debugging-pipe (no DevTools port exists). To load through an emulated path, run the
// caller itself in the client namespace (`wirelab-engine browse` under `ip netns exec`): Chromium
// inherits the namespace and the run's resolv.conf.
package browser

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/client"
)

// Protocol is the protocol Chromium is restricted to for a load.
type Protocol string

// The protocols Chromium can be made to use. h2c has no browser support.
const (
	H1  Protocol = "h1"  // HTTP/1.1 over cleartext TCP (http URLs)
	H1S Protocol = "h1s" // HTTP/1.1 over TLS: --disable-http2
	H2  Protocol = "h2"  // HTTP/2 over TLS, chosen by ALPN
	H3  Protocol = "h3"  // HTTP/3: --origin-to-force-quic-on
)

// Protocols lists the supported protocols.
var Protocols = []Protocol{H1, H1S, H2, H3}

// ParseProtocol validates a protocol name.
func ParseProtocol(s string) (Protocol, error) {
	for _, p := range Protocols {
		if string(p) == s {
			return p, nil
		}
	}
	if s == "h2c" || s == "spdy3" {
		return "", fmt.Errorf("%s: Chromium does not speak %s; allowed: h1, h1s, h2, h3", s, s)
	}
	return "", fmt.Errorf("%s: allowed: h1, h1s, h2, h3", s)
}

// Scheme is the URL scheme of the protocol.
func (p Protocol) Scheme() string {
	if p == H1 {
		return "http"
	}
	return "https"
}

// WireName is the protocol as the HAR's _protocol names it: HTTP/1.1, h2 or h3.
func (p Protocol) WireName() string {
	switch p {
	case H1, H1S:
		return "HTTP/1.1"
	case H2:
		return "h2"
	}
	return "h3"
}

// DefaultExecPath is Debian's Chromium.
const DefaultExecPath = "/usr/bin/chromium"

// DefaultTimeout bounds one load (the trial's client.timeout_s default).
const DefaultTimeout = 120 * time.Second

// PaintGrace is how long a load waits, once the page has loaded and the network is idle, for the
// first-contentful-paint event that has not arrived yet. A page that paints nothing contentful
// never sends it; its first_contentful_paint_ms is then null.
const PaintGrace = 3 * time.Second

// Config is one load's browser configuration. The zero value of a field means its default.
type Config struct {
	// Protocol restricts Chromium to one protocol (required).
	Protocol Protocol
	// ExecPath is the Chromium binary (default /usr/bin/chromium, or $WIRELAB_CHROMIUM).
	ExecPath string
	// Resolve maps host names to addresses (--host-resolver-rules MAP). Empty: names are resolved
	// by Chromium's resolver from /etc/resolv.conf — in the client namespace the run's DNS server
	// across the emulated path. Either way, any name outside *.wirelab.test fails to resolve.
	Resolve map[string]netip.Addr
	// SPKIHashes are base64(sha256(SubjectPublicKeyInfo)) of the server certificates Chromium
	// accepts without a trusted chain (--ignore-certificate-errors-spki-list): the run's leaf.
	SPKIHashes []string
	// Timeout aborts a load that has not completed (default 120 s).
	Timeout time.Duration
	// Trace records a devtools.timeline trace of the load (for dependency-graph recording).
	Trace bool
	// ProfileParent is the directory in which the per-load profile directory is created
	// (default os.TempDir()). The profile is removed when the load ends.
	ProfileParent string
	// AllowAnyTarget lets the load's URL and its sub-resources be outside the lab (loopback,
	// 10.77.0.0/16, *.wirelab.test). Even then, names outside *.wirelab.test do not resolve
	// unless mapped by Resolve. Default false: such URLs fail the load.
	AllowAnyTarget bool
	// Internet lets the load reach public sites through the egress router (docs/egress.md): names
	// are resolved by the system resolver (in a live trial's client namespace the run's DNS
	// forwarder) with no rule narrowing them, the certificates are checked against Chromium's own
	// roots, and a URL's host must be a name, a lab address or a public address (engine/policy).
	// Default false.
	Internet bool
	// Stderr, when set, receives Chromium's own output.
	Stderr func(line string)
}

func (c Config) withDefaults() (Config, error) {
	if c.Protocol == "" {
		return c, fmt.Errorf("client.protocol: required; allowed: h1, h1s, h2, h3")
	}
	if _, err := ParseProtocol(string(c.Protocol)); err != nil {
		return c, fmt.Errorf("client.protocol: %w", err)
	}
	if c.ExecPath == "" {
		c.ExecPath = os.Getenv("WIRELAB_CHROMIUM")
	}
	if c.ExecPath == "" {
		c.ExecPath = DefaultExecPath
	}
	if _, err := exec.LookPath(c.ExecPath); err != nil {
		return c, fmt.Errorf("chromium: %s: %w (install the Debian package chromium)", c.ExecPath, err)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Timeout < 0 {
		return c, fmt.Errorf("client.timeout_s: %v: must be > 0", c.Timeout)
	}
	for host := range c.Resolve {
		if strings.ContainsAny(host, ", ") {
			return c, fmt.Errorf("resolve: %q is not a host name", host)
		}
	}
	for _, h := range c.SPKIHashes {
		if h == "" || strings.ContainsAny(h, ", ") {
			return c, fmt.Errorf("spki: %q is not a base64 SHA-256 hash", h)
		}
	}
	return c, nil
}

// disabledFeatures are Chromium features turned off because they would send requests the page did
// not ask for, or change the protocol asked for:
//   - HttpsUpgrades, HttpsFirstBalancedModeAutoEnable: http:// navigations would first try https
//     (an h1 load would open a TLS connection).
//   - OptimizationHints, OptimizationGuideModelDownloading, MediaRouter, DialMediaRouteProvider,
//     Translate, AutofillServerCommunication, InterestFeedContentSuggestions,
//     CertificateTransparencyComponentUpdater: background fetches of Google services.
//   - NetworkPrediction-related preconnects are off through the profile (see writeProfile) and
//     --dns-prefetch-disable.
var disabledFeatures = []string{
	"HttpsUpgrades", "HttpsFirstBalancedModeAutoEnable", "OptimizationHints",
	"OptimizationGuideModelDownloading", "MediaRouter", "DialMediaRouteProvider", "Translate",
	"AutofillServerCommunication", "InterestFeedContentSuggestions",
	"CertificateTransparencyComponentUpdater",
}

// Flags returns Chromium's command line for a load (without --user-data-dir and the DevTools
// pipe, which the launcher adds). docs/browser.md explains each flag.
func (c Config) Flags() []string {
	f := []string{
		"--headless",
		"--no-sandbox", // root in a namespace: the setuid/user-namespace sandbox is unavailable
		"--disable-gpu",
		"--no-first-run",
		"--no-default-browser-check",
		"--disable-background-networking",
		"--disable-component-update",
		"--disable-sync",
		"--disable-default-apps",
		"--disable-extensions",
		"--disable-breakpad",
		"--disable-client-side-phishing-detection",
		"--disable-domain-reliability",
		"--disable-dev-shm-usage",
		"--no-pings",
		"--metrics-recording-only",
		"--password-store=basic",
		"--use-mock-keychain",
		"--mute-audio",
		"--disable-background-timer-throttling",
		"--disable-renderer-backgrounding",
		"--disable-backgrounding-occluded-windows",
		"--dns-prefetch-disable",
		"--disable-features=" + strings.Join(disabledFeatures, ","),
	}
	if !c.Internet {
		f = append(f, "--host-resolver-rules="+c.resolverRules())
	}
	if len(c.SPKIHashes) > 0 {
		f = append(f, "--ignore-certificate-errors-spki-list="+strings.Join(c.SPKIHashes, ","))
	}
	switch c.Protocol {
	case H1:
		f = append(f, "--disable-quic")
	case H1S:
		f = append(f, "--disable-http2", "--disable-quic")
	case H2:
		f = append(f, "--disable-quic")
	case H3:
		f = append(f, "--enable-quic", "--origin-to-force-quic-on=*")
	}
	return f
}

// checkHost is the check of a URL's host before the load and of every request's after it: the lab
// only unless Internet (then a name, a lab address or a public address) or AllowAnyTarget.
func (c Config) checkHost(host string) error {
	return client.TargetCheck(c.AllowAnyTarget, c.Internet)(host)
}

// resolverRules is the --host-resolver-rules value: the static map (if any), then every name
// outside the lab's zone fails to resolve (~NOTFOUND), so that Chromium cannot reach anything
// but the lab by name, whatever its background services try.
func (c Config) resolverRules() string {
	hosts := make([]string, 0, len(c.Resolve))
	for h := range c.Resolve {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	var rules []string
	for _, h := range hosts {
		rules = append(rules, "MAP "+h+" "+c.Resolve[h].String())
	}
	rules = append(rules, "MAP * ~NOTFOUND")
	if len(c.Resolve) == 0 {
		rules = append(rules, "EXCLUDE *.wirelab.test")
	}
	return strings.Join(rules, ", ")
}
