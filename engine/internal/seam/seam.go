// Package seam declares, once, what a trial exchanges with the processes it starts: the command
// lines of `serve`, `fetch` and `browse` (one struct each, whose Args builds the argv a parent runs
// and whose Bind binds the child's flag set to the same fields — the flag names, their types and
// their defaults written in one place), serve's ready line, and the JSON line a loader prints
// (LoaderResult). Parent and child import this package; a round-trip test keeps Args and Bind in
// step. It imports nothing of the engine: the children's packages (the server, the loader) sit
// above it.
package seam

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Serve is `wirelab-engine serve`'s command line.
type Serve struct {
	Page                 string   // corpus name, synthetic name or page JSON file
	Seed                 int64    // page seed (1)
	Shards               int      // origins (1)
	ShardMode            string   // round-robin | tld | domain
	Addrs                []string // one address per origin
	Protocols            []string // what is served (all six)
	PortHTTP             int      // 80 (0: pick one)
	PortHTTPS            int      // 443
	PortQUIC             int      // 443
	MaxConcurrentStreams int      // 100
	WriteChunkBytes      int      // 0
	TLSVersion           string   // 1.3
	SessionResumption    bool
	KeepAlive            bool   // true
	Push                 string // none
	CertDir              string // where new certificates go ("" = a temporary directory)
	Certs                string // serve the certificates already in this directory instead
	ReadyFile            string
	DNS                  string   // also answer DNS on this host:port
	Records              string   // request records file, written at exit
	Conns                string   // connection records file, written at exit
	QUICStats            bool     // print quic_closed and h2_closed lines
	AltSvc               string   // the Alt-Svc field value of every response ("": none)
	HTTPSALPN            []string // with DNS: an HTTPS record (RFC 9460) of every origin name listing these ALPN ids
}

// DefaultServe is serve's flags' defaults.
func DefaultServe() Serve {
	return Serve{Seed: 1, Shards: 1, ShardMode: "round-robin", Protocols: []string{"h1", "h1s", "h2", "h2c", "h3", "spdy3"},
		PortHTTP: 80, PortHTTPS: 443, PortQUIC: 443, MaxConcurrentStreams: 100, TLSVersion: "1.3", KeepAlive: true, Push: "none"}
}

// Args is the argv after the binary: "serve" and every flag.
func (s Serve) Args() []string {
	a := []string{"serve",
		"--page", s.Page,
		"--seed", strconv.FormatInt(s.Seed, 10),
		"--shards", strconv.Itoa(s.Shards),
		"--shard-mode", s.ShardMode,
		"--addrs", strings.Join(s.Addrs, ","),
		"--protocols", strings.Join(s.Protocols, ","),
		"--port-http", strconv.Itoa(s.PortHTTP),
		"--port-https", strconv.Itoa(s.PortHTTPS),
		"--port-quic", strconv.Itoa(s.PortQUIC),
		"--max-concurrent-streams", strconv.Itoa(s.MaxConcurrentStreams),
		"--write-chunk-bytes", strconv.Itoa(s.WriteChunkBytes),
		"--tls-version", s.TLSVersion,
		"--session-resumption=" + strconv.FormatBool(s.SessionResumption),
		"--keep-alive=" + strconv.FormatBool(s.KeepAlive),
		"--push", s.Push,
	}
	a = appendIf(a, "--cert-dir", s.CertDir)
	a = appendIf(a, "--certs", s.Certs)
	a = appendIf(a, "--ready-file", s.ReadyFile)
	a = appendIf(a, "--dns", s.DNS)
	a = appendIf(a, "--records", s.Records)
	a = appendIf(a, "--conns", s.Conns)
	a = appendOn(a, "--quic-stats", s.QUICStats)
	a = appendIf(a, "--alt-svc", s.AltSvc)
	if len(s.HTTPSALPN) > 0 {
		a = append(a, "--https-alpn", strings.Join(s.HTTPSALPN, ","))
	}
	return a
}

// Bind registers serve's flags on fs, bound to s's fields with s's values as defaults.
func (s *Serve) Bind(fs *flag.FlagSet) {
	fs.StringVar(&s.Page, "page", s.Page, "corpus name, synthetic:NxS or page JSON file (required)")
	fs.Int64Var(&s.Seed, "seed", s.Seed, "seed of the page sizes and content")
	fs.IntVar(&s.Shards, "shards", s.Shards, "number of origins (1–64)")
	fs.StringVar(&s.ShardMode, "shard-mode", s.ShardMode, "round-robin, tld or domain")
	fs.Func("addrs", "comma-separated origin addresses, one per origin (required)", func(v string) error { s.Addrs = split(v); return nil })
	listVar(fs, &s.Protocols, "protocols", "protocols to serve")
	fs.IntVar(&s.PortHTTP, "port-http", s.PortHTTP, "TCP port of h1 and h2c (0: pick one)")
	fs.IntVar(&s.PortHTTPS, "port-https", s.PortHTTPS, "TCP port of h1s and h2 (0: pick one)")
	fs.IntVar(&s.PortQUIC, "port-quic", s.PortQUIC, "UDP port of h3 (0: pick one)")
	fs.IntVar(&s.MaxConcurrentStreams, "max-concurrent-streams", s.MaxConcurrentStreams, "h2/h3 concurrent streams (1–1000)")
	fs.IntVar(&s.WriteChunkBytes, "write-chunk-bytes", s.WriteChunkBytes, "cap on each body write / DATA frame (0 or 256–1048576)")
	fs.StringVar(&s.TLSVersion, "tls-version", s.TLSVersion, "1.2 or 1.3 (h1s, h2)")
	fs.BoolVar(&s.SessionResumption, "session-resumption", s.SessionResumption, "issue TLS session tickets (and allow 0-RTT)")
	fs.BoolVar(&s.KeepAlive, "keep-alive", s.KeepAlive, "HTTP/1.x persistent connections")
	fs.StringVar(&s.Push, "push", s.Push, "server push policy (h2, h2c, spdy3): none, all, embedding-level, dependency-level:N")
	fs.StringVar(&s.CertDir, "cert-dir", s.CertDir, "directory for ca.pem, cert.pem, key.pem (default: a temporary one); removed at exit")
	fs.StringVar(&s.Certs, "certs", s.Certs, "serve the certificates already in this directory (ca.pem, cert.pem, key.pem; left in place) instead of making new ones")
	fs.StringVar(&s.ReadyFile, "ready-file", s.ReadyFile, "also write the ready line to this file (atomically)")
	fs.StringVar(&s.DNS, "dns", s.DNS, "also answer DNS for *.wirelab.test on this host:port")
	fs.StringVar(&s.Records, "records", s.Records, "write the request records (JSON lines) to this file at exit")
	fs.StringVar(&s.Conns, "conns", s.Conns, "write the connection records (JSON lines: streams, most open at once, DATA frames) to this file at exit")
	fs.StringVar(&s.AltSvc, "alt-svc", s.AltSvc, `send this Alt-Svc field value with every response (RFC 7838), e.g. h3=":443"; ma=86400 ("": none)`)
	fs.Func("https-alpn", "with --dns: give every origin name an HTTPS record (RFC 9460) listing these ALPN ids, e.g. h3,h2", func(v string) error { s.HTTPSALPN = split(v); return nil })
	fs.BoolVar(&s.QUICStats, "quic-stats", s.QUICStats, `print {"event":"quic_closed",…} with the QUIC stack's packets sent and declared lost when an h3 connection ends, and {"event":"h2_closed",…} with its stream map when an h2 or h2c connection ends`)
}

// Fetch is `wirelab-engine fetch`'s command line: one load by the engine's loader.
type Fetch struct {
	URL            string
	Proto          string
	Mode           string // flat (default) | objects | replay
	Page           string // the page model (replay, priorities)
	Seed           int64  // its seed (1)
	ComputeScale   string // replay: "" = default
	URLs           string // objects mode: the URL list file
	MaxConns       int    // HTTP/1.x connections per origin (6)
	Priority       string // none (default) | chrome | dependency
	AcceptPush     bool   // true
	DNS            string // resolve with this DNS server
	Resolve        string // or this static map
	CA             string // the run's CA file
	Timeout        time.Duration
	JSON           bool // print one JSON line (LoaderResult)
	HAR            string
	KeyLog         string
	AllowAnyTarget bool
	AllowInternet  bool   // public sites through the egress router (client.Config.Internet)
	H3             string // forced (default) | alt-svc | https-rr: how an h3 load finds HTTP/3
	View           string // first (default) | repeat: the page loaded twice with one profile, the second recorded
}

// DefaultFetch is fetch's flags' defaults.
func DefaultFetch() Fetch {
	return Fetch{Mode: "flat", Seed: 1, MaxConns: 6, Priority: "none", AcceptPush: true, Timeout: 120 * time.Second,
		H3: "forced", View: "first"}
}

// Args is the argv after the binary: "fetch", the URL and every flag that differs from its default
// (those that matter to a trial always).
func (f Fetch) Args() []string {
	d := DefaultFetch()
	a := []string{"fetch", f.URL, "--proto", f.Proto, "--mode", f.Mode, "--max-conns", strconv.Itoa(f.MaxConns),
		"--timeout", f.Timeout.String(), "--priority", f.Priority, "--accept-push=" + strconv.FormatBool(f.AcceptPush)}
	a = appendIf(a, "--page", f.Page)
	if f.Seed != d.Seed {
		a = append(a, "--seed", strconv.FormatInt(f.Seed, 10))
	}
	a = appendIf(a, "--compute-scale", f.ComputeScale)
	a = appendIf(a, "--urls", f.URLs)
	a = appendIf(a, "--dns", f.DNS)
	a = appendIf(a, "--resolve", f.Resolve)
	a = appendIf(a, "--ca", f.CA)
	a = appendOn(a, "--json", f.JSON)
	a = appendIf(a, "--har", f.HAR)
	a = appendIf(a, "--keylog", f.KeyLog)
	a = appendOn(a, "--allow-any-target", f.AllowAnyTarget)
	a = appendOn(a, "--allow-internet", f.AllowInternet)
	if f.H3 != "" && f.H3 != d.H3 {
		a = append(a, "--h3", f.H3)
	}
	if f.View != "" && f.View != d.View {
		a = append(a, "--view", f.View)
	}
	return a
}

// Bind registers fetch's flags on fs, bound to f's fields (the URL is positional). A value out of
// its flag's domain is refused at parsing, naming the flag and what is allowed — maxConns is the
// loader's limit of --max-conns (client.MaxConnectionsPerOriginLimit: the loader's fact, given by
// fetch, which links the loader); what depends on several flags is fetch's to check.
func (f *Fetch) Bind(fs *flag.FlagSet, maxConns int) {
	fs.StringVar(&f.Proto, "proto", f.Proto, "")
	fs.StringVar(&f.Mode, "mode", f.Mode, "")
	fs.StringVar(&f.Page, "page", f.Page, "")
	fs.Int64Var(&f.Seed, "seed", f.Seed, "")
	fs.Func("compute-scale", "", func(v string) error {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || x > MaxComputeScale {
			return fmt.Errorf("allowed: a number 0–%d such as 0, 0.5, 1 or 2", MaxComputeScale)
		}
		f.ComputeScale = v
		return nil
	})
	fs.StringVar(&f.URLs, "urls", f.URLs, "")
	fs.Func("max-conns", "", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxConns {
			return fmt.Errorf("allowed: an integer 1–%d", maxConns)
		}
		f.MaxConns = n
		return nil
	})
	fs.StringVar(&f.Priority, "priority", f.Priority, "")
	fs.BoolVar(&f.AcceptPush, "accept-push", f.AcceptPush, "")
	fs.StringVar(&f.DNS, "dns", f.DNS, "")
	fs.StringVar(&f.Resolve, "resolve", f.Resolve, "")
	fs.StringVar(&f.CA, "ca", f.CA, "")
	positiveDuration(fs, &f.Timeout, "timeout")
	fs.BoolVar(&f.JSON, "json", f.JSON, "")
	fs.StringVar(&f.HAR, "har", f.HAR, "")
	fs.StringVar(&f.KeyLog, "keylog", f.KeyLog, "")
	fs.BoolVar(&f.AllowAnyTarget, "allow-any-target", f.AllowAnyTarget, "")
	fs.BoolVar(&f.AllowInternet, "allow-internet", f.AllowInternet, "")
	fs.Func("h3", "", h3Flag(&f.H3))
	fs.Func("view", "", viewFlag(&f.View))
}

// Browse is `wirelab-engine browse`'s command line: one load by Chromium.
type Browse struct {
	URL         string
	Proto       string
	DNS         string
	Resolve     string
	SPKI        string // the server certificate's SPKI hash (what Chromium trusts)
	Cert        string // or the certificate file it is computed from
	Timeout     time.Duration
	JSON        bool
	HAR         string
	Chromium    string // the browser binary ("" = chromium on PATH)
	ChromiumLog bool
	// AllowInternet: public sites through the egress router (browser.Config.Internet).
	AllowInternet bool
	View          string   // first (default) | repeat
	H3            string   // forced (default) | alt-svc | https-rr
	QUICHosts     []string // alt-svc, https-rr: the hosts whose run certificate QUIC accepts
	CPUSlowdown   float64  // 1 (default): none
	Viewport      string   // WIDTHxHEIGHT[@DPR][,mobile] ("": 1350x940)
	Screenshots   bool     // capture the frames (Speed Index, visual progress)
	Frames        string   // write the frames to this directory (implies Screenshots)
	VisualTrace   string   // write the visual trace events to this file (implies Screenshots)
}

// DefaultBrowse is browse's flags' defaults.
func DefaultBrowse() Browse {
	return Browse{Timeout: 120 * time.Second, View: "first", H3: "forced", CPUSlowdown: 1}
}

// Args is the argv after the binary: "browse", the URL and its flags.
func (b Browse) Args() []string {
	a := []string{"browse", b.URL, "--proto", b.Proto, "--timeout", b.Timeout.String()}
	a = appendIf(a, "--dns", b.DNS)
	a = appendIf(a, "--resolve", b.Resolve)
	a = appendIf(a, "--spki", b.SPKI)
	a = appendIf(a, "--cert", b.Cert)
	a = appendOn(a, "--json", b.JSON)
	a = appendIf(a, "--har", b.HAR)
	a = appendIf(a, "--chromium", b.Chromium)
	a = appendOn(a, "--chromium-log", b.ChromiumLog)
	a = appendOn(a, "--allow-internet", b.AllowInternet)
	d := DefaultBrowse()
	if b.View != "" && b.View != d.View {
		a = append(a, "--view", b.View)
	}
	if b.H3 != "" && b.H3 != d.H3 {
		a = append(a, "--h3", b.H3)
	}
	if len(b.QUICHosts) > 0 {
		a = append(a, "--quic-hosts", strings.Join(b.QUICHosts, ","))
	}
	if b.CPUSlowdown != 0 && b.CPUSlowdown != d.CPUSlowdown {
		a = append(a, "--cpu-slowdown", strconv.FormatFloat(b.CPUSlowdown, 'g', -1, 64))
	}
	a = appendIf(a, "--viewport", b.Viewport)
	a = appendOn(a, "--screenshots", b.Screenshots)
	a = appendIf(a, "--frames", b.Frames)
	a = appendIf(a, "--visual-trace", b.VisualTrace)
	return a
}

// MaxCPUSlowdown bounds --cpu-slowdown (the trial spec's client.cpu_slowdown maximum).
const MaxCPUSlowdown = 100

// Bind registers browse's flags on fs, bound to b's fields (the URL is positional).
func (b *Browse) Bind(fs *flag.FlagSet) {
	fs.StringVar(&b.Proto, "proto", b.Proto, "")
	fs.StringVar(&b.DNS, "dns", b.DNS, "")
	fs.StringVar(&b.Resolve, "resolve", b.Resolve, "")
	fs.StringVar(&b.SPKI, "spki", b.SPKI, "")
	fs.StringVar(&b.Cert, "cert", b.Cert, "")
	positiveDuration(fs, &b.Timeout, "timeout")
	fs.BoolVar(&b.JSON, "json", b.JSON, "")
	fs.StringVar(&b.HAR, "har", b.HAR, "")
	fs.StringVar(&b.Chromium, "chromium", b.Chromium, "")
	fs.BoolVar(&b.ChromiumLog, "chromium-log", b.ChromiumLog, "")
	fs.BoolVar(&b.AllowInternet, "allow-internet", b.AllowInternet, "")
	fs.Func("view", "", viewFlag(&b.View))
	fs.Func("h3", "", h3Flag(&b.H3))
	fs.Func("quic-hosts", "", func(v string) error { b.QUICHosts = split(v); return nil })
	fs.Func("cpu-slowdown", "", func(v string) error {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) || x < 1 || x > MaxCPUSlowdown {
			return fmt.Errorf("allowed: a number 1–%d (1 = no slowdown)", MaxCPUSlowdown)
		}
		b.CPUSlowdown = x
		return nil
	})
	fs.StringVar(&b.Viewport, "viewport", b.Viewport, "")
	fs.BoolVar(&b.Screenshots, "screenshots", b.Screenshots, "")
	fs.StringVar(&b.Frames, "frames", b.Frames, "")
	fs.StringVar(&b.VisualTrace, "visual-trace", b.VisualTrace, "")
}

func appendIf(a []string, flag, v string) []string {
	if v == "" {
		return a
	}
	return append(a, flag, v)
}

// appendOn appends a boolean flag that is set.
func appendOn(a []string, flag string, on bool) []string {
	if !on {
		return a
	}
	return append(a, flag)
}

func split(v string) []string {
	var out []string
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// MaxComputeScale and MaxTimeout bound --compute-scale and --timeout as the trial spec bounds
// client.compute_scale and client.timeout_s (its schema's maximum).
const (
	MaxComputeScale = 100
	MaxTimeout      = time.Hour
)

// positiveDuration binds a duration flag that must be > 0 and at most MaxTimeout.
func positiveDuration(fs *flag.FlagSet, dst *time.Duration, name string) {
	fs.Func(name, "", func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > MaxTimeout {
			return errors.New("allowed: a duration > 0 and ≤ 1h, such as 120s or 2m")
		}
		*dst = d
		return nil
	})
}

// listVar binds a comma-separated list flag.
func listVar(fs *flag.FlagSet, dst *[]string, name, usage string) {
	fs.Func(name, usage+" (default "+strings.Join(*dst, ",")+")", func(v string) error { *dst = split(v); return nil })
}

// h3Flag parses --h3 of fetch and browse into dst: how an h3 load finds HTTP/3 (the values of the
// contract's client.h3).
func h3Flag(dst *string) func(string) error {
	return func(v string) error {
		if v != "forced" && v != "alt-svc" && v != "https-rr" {
			return errors.New("allowed: forced, alt-svc, https-rr")
		}
		*dst = v
		return nil
	}
}

// viewFlag parses --view: first (a first view) or repeat (the page loaded twice with one profile).
func viewFlag(dst *string) func(string) error {
	return func(v string) error {
		if v != "first" && v != "repeat" {
			return errors.New("allowed: first, repeat")
		}
		*dst = v
		return nil
	}
}
