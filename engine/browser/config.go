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
	"math"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/client"
	"github.com/wirelab/wirelab/engine/internal/suggest"
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
	if s == "h2c" || s == "spdy3" {
		return "", fmt.Errorf("%s: Chromium does not speak %s; allowed: %s", s, s, suggest.Join(Protocols))
	}
	return suggest.Parse(Protocols, s)
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

// View is which view of the page a load records (docs/vitals.md, "Views").
type View string

// The views.
const (
	FirstView  View = "first"  // a fresh profile: nothing cached, no session to resume
	RepeatView View = "repeat" // the page loaded once, connections closed, then loaded again and recorded
)

// Views lists the views.
var Views = []View{FirstView, RepeatView}

// H3Mode is how Chromium comes to speak HTTP/3 in an h3 load (docs/vitals.md, "HTTP/3 as
// browsers find it"): the engine loader's modes, one list for both loaders.
type H3Mode = client.H3Discovery

// The h3 modes.
const (
	H3Forced  = client.H3Forced  // QUIC from the first request (--origin-to-force-quic-on)
	H3AltSvc  = client.H3AltSvc  // TCP first; QUIC once an origin's Alt-Svc announces h3
	H3HTTPSRR = client.H3HTTPSRR // QUIC when the origin's HTTPS DNS record lists h3
)

// H3Modes lists the h3 modes.
var H3Modes = client.H3Discoveries

// Viewport is the emulated screen: CSS pixels, device pixel ratio, mobile (meta viewport, overlay
// scrollbars).
type Viewport struct {
	Width, Height int
	DPR           float64
	Mobile        bool
}

// DefaultViewport is Lighthouse's desktop screen (1350 × 940, DPR 1).
var DefaultViewport = Viewport{Width: 1350, Height: 940, DPR: 1}

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
	// KeepVisualTrace keeps the trace events the visual metrics were computed from
	// (Result.VisualTrace): what another implementation (Lighthouse's speedline) reads.
	KeepVisualTrace bool
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
	// View is the view recorded (default first). A repeat view loads the page, closes every
	// connection and loads it again in the same profile, recording the second load.
	View View
	// H3 is how an h3 load finds HTTP/3 (default forced).
	H3 H3Mode
	// QUICHosts are the hosts whose certificate QUIC may accept without a known root in the alt-svc
	// and https-rr modes (Chromium allows unknown roots over QUIC only for hosts it was told to force
	// QUIC on: they are forced on port 1, which nothing uses). Default: the URL's host.
	QUICHosts []string
	// CPUSlowdown slows Chromium's renderer this many times (Emulation.setCPUThrottlingRate); 0 or
	// 1: none.
	CPUSlowdown float64
	// Viewport is the emulated screen (default DefaultViewport).
	Viewport Viewport
	// Screenshots captures the frames of the load (a trace of screenshots) for Speed Index, the
	// visually-complete time, the visual progress and the filmstrip.
	Screenshots bool
	// Stderr, when set, receives Chromium's own output.
	Stderr func(line string)
}

func (c Config) withDefaults() (Config, error) {
	if c.Protocol == "" {
		return c, fmt.Errorf("client.protocol: required; allowed: %s", suggest.Join(Protocols))
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
	if c.View == "" {
		c.View = FirstView
	}
	if !slices.Contains(Views, c.View) {
		return c, fmt.Errorf("client.view: %q: allowed: first, repeat", c.View)
	}
	if c.H3 == "" {
		c.H3 = H3Forced
	}
	if !slices.Contains(H3Modes, c.H3) {
		return c, fmt.Errorf("client.h3: %q: allowed: forced, alt-svc, https-rr", c.H3)
	}
	if c.CPUSlowdown == 0 {
		c.CPUSlowdown = 1
	}
	if c.CPUSlowdown < 1 || math.IsNaN(c.CPUSlowdown) || math.IsInf(c.CPUSlowdown, 0) {
		return c, fmt.Errorf("client.cpu_slowdown: %v: must be a number ≥ 1 (1 = no slowdown)", c.CPUSlowdown)
	}
	if c.Viewport == (Viewport{}) {
		c.Viewport = DefaultViewport
	}
	if err := c.Viewport.validate(); err != nil {
		return c, err
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
	if c.View == RepeatView {
		// chrome.benchmarking.closeConnections() between the views
		f = append(f, "--enable-net-benchmarking")
	}
	switch c.Protocol {
	case H1:
		f = append(f, "--disable-quic")
	case H1S:
		f = append(f, "--disable-http2", "--disable-quic")
	case H2:
		f = append(f, "--disable-quic")
	case H3:
		switch c.H3 {
		case H3AltSvc, H3HTTPSRR:
			f = append(f, "--enable-quic", "--origin-to-force-quic-on="+strings.Join(c.unknownRootHosts(), ","))
			if c.H3 == H3HTTPSRR {
				f = append(f, "--enable-features="+strings.Join(httpsRRFeatures, ","))
			}
		default:
			f = append(f, "--enable-quic", "--origin-to-force-quic-on=*")
		}
	}
	return f
}

// httpsRRFeatures make Chromium ask its own DNS client for HTTPS records (RFC 9460) and start
// on QUIC when one lists h3.
var httpsRRFeatures = []string{"AsyncDns", "UseDnsHttpsSvcb", "UseDnsHttpsSvcbAlpn"}

// unknownRootPort is the port QUIC is "forced" on for the hosts whose run certificate it must
// accept in the alt-svc and https-rr modes: nothing listens on it, so nothing is forced.
const unknownRootPort = "1"

// unknownRootHosts are the QUICHosts forced on port 1.
func (c Config) unknownRootHosts() []string {
	out := make([]string, 0, len(c.QUICHosts))
	for _, h := range c.QUICHosts {
		out = append(out, h+":"+unknownRootPort)
	}
	return out
}

func (v Viewport) validate() error {
	if v.Width < 1 || v.Width > 10000 || v.Height < 1 || v.Height > 10000 || !(v.DPR > 0 && v.DPR <= 10) {
		return fmt.Errorf("client.viewport: %s: must be WIDTHxHEIGHT[@DPR][,mobile] with sizes 1–10000 and DPR > 0–10", v)
	}
	return nil
}

// String is the viewport as client.viewport writes it: 1350x940, 412x823@1.75,mobile.
func (v Viewport) String() string {
	s := fmt.Sprintf("%dx%d", v.Width, v.Height)
	if v.DPR != 1 {
		s += "@" + strconv.FormatFloat(v.DPR, 'f', -1, 64)
	}
	if v.Mobile {
		s += ",mobile"
	}
	return s
}

// ParseViewport reads WIDTHxHEIGHT[@DPR][,mobile].
func ParseViewport(s string) (Viewport, error) {
	v := Viewport{DPR: 1}
	body, flag, hasFlag := strings.Cut(s, ",")
	if hasFlag {
		if flag != "mobile" {
			return v, fmt.Errorf("client.viewport: %q: the only flag after the size is mobile", s)
		}
		v.Mobile = true
	}
	size, dpr, hasDPR := strings.Cut(body, "@")
	w, h, ok := strings.Cut(size, "x")
	var err error
	if ok {
		if v.Width, err = strconv.Atoi(w); err == nil {
			v.Height, err = strconv.Atoi(h)
		}
	}
	if hasDPR && err == nil && ok {
		v.DPR, err = strconv.ParseFloat(dpr, 64)
	}
	if !ok || err != nil {
		return v, fmt.Errorf("client.viewport: %q: must be WIDTHxHEIGHT[@DPR][,mobile] such as 1350x940 or 412x823@1.75,mobile", s)
	}
	return v, v.validate()
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
