package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/wirelab/wirelab/engine/browser"
	"github.com/wirelab/wirelab/engine/client"
	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/internal/seam"
	"github.com/wirelab/wirelab/engine/internal/suggest"
)

const browseUsage = `usage: wirelab-engine browse URL --proto P [flags]

Loads one page in a fresh headless Chromium (new profile, empty cache, DNS prefetching off) driven
over the DevTools protocol, and prints what it measured. Run it inside the client namespace (the
trial does: ip netns exec), where Chromium resolves names with the run's DNS server.

  URL                      the page (http URLs for h1, https otherwise)
  --proto P                h1 | h1s | h2 | h3 (required); Chromium does not speak h2c
  --dns IP                 check that the resolver configuration (/etc/resolv.conf) names IP and
                           only IP, as ip netns exec provides it in a run's client namespace
  --resolve NAME=IP,...    resolve names with this static map (--host-resolver-rules) instead
  --spki H[,H...]          accept server certificates with these SPKI hashes (base64 sha256),
                           the run's spki_sha256 (serve's ready line)
  --cert FILE              accept the leaf certificate(s) in this PEM file (its SPKI hash)
  --timeout D              abort the load after D (default 120s)
  --json                   print one JSON line (the load record's fields, browser extras in client,
                           monotonic_start_ns/monotonic_end_ns as fetch --json)
  --har FILE               write the load as HAR 1.2 with Chrome's extensions (also when it failed)
  --chromium PATH          the Chromium binary (default $WIRELAB_CHROMIUM or /usr/bin/chromium)
  --chromium-log           copy Chromium's own output to stderr
  --view first|repeat     first (default): a fresh profile; repeat: load the page, close every
                           connection, load it again in the same profile and report the second load
  --h3 MODE                for --proto h3: forced (default: QUIC from the first request), alt-svc
                           (TCP first, QUIC once Alt-Svc announces it), https-rr (QUIC when the
                           origin's HTTPS DNS record lists h3; needs --dns)
  --quic-hosts H[,H...]    alt-svc, https-rr: hosts whose certificate QUIC accepts without a known
                           root (default: the URL's host; given as --origin-to-force-quic-on=H:1,
                           a port nothing uses: Chromium refuses the run's certificate over QUIC
                           for other hosts, even with --spki)
  --cpu-slowdown N         slow the renderer N times (1–100; default 1: none)
  --viewport WxH[@DPR][,mobile]  the emulated screen (default 1350x940)
  --screenshots            capture the frames: Speed Index, visually complete, visual progress
  --frames DIR             also write the frames to DIR (000.jpg, 001.jpg … as visual_progress
                           lists them); implies --screenshots
  --visual-trace FILE      also write the load's visual trace events (LCP, layout shifts, the
                           screenshots) as a Chrome trace, {"traceEvents": […], "metadata":
                           {"wirelab_time_origin_us": the load's zero on the trace clock}}, the
                           input Lighthouse's speedline reads (scripts/speedline); implies --screenshots
  --allow-internet         allow public sites (a live trial's loads through the egress router):
                           names resolve through /etc/resolv.conf with no rule narrowing them,
                           certificates are checked against Chromium's roots, IP literals must be
                           10.77.0.0/16 or public

An https load runs Chromium with its NetLog in the load's profile: tls_handshakes (full),
tls_resumed and client.zero_rtt_connections come from it (CDP does not report resumption).

Without --allow-internet names outside *.wirelab.test never resolve in Chromium, and URLs outside
loopback, 10.77.0.0/16 and *.wirelab.test are refused. Exit status: 0 the load completed, 1 it failed (the result is still
printed), 2 bad flags, 130 interrupted.
`

func init() {
	register("browse", command{
		Summary: "load one page in Chromium (CDP) and print its measurements",
		Run:     func(args []string) error { return runBrowse(args, os.Stdout) },
	})
}

type browseArgs struct {
	url    string
	cfg    browser.Config
	json   bool
	har    string
	frames string
	trace  string
}

func runBrowse(args []string, stdout io.Writer) error {
	ba, err := parseBrowseArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, browseUsage)
		return nil
	}
	if err != nil {
		return err
	}
	ctx, stop := cli.SignalContext(context.Background())
	defer stop()
	clock := newMonotonicRef()
	res, err := browser.Load(ctx, ba.cfg, ba.url)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	if err := writeHAR(ba.har, res); err != nil {
		return err
	}
	if ba.frames != "" {
		if err := writeFrames(ba.frames, res.Visual.Frames); err != nil {
			return err
		}
	}
	if ba.trace != "" {
		if err := writeVisualTrace(ba.trace, res); err != nil {
			return err
		}
	}
	if ba.json {
		if err := clock.printLoaderLine(stdout, res.Summary(), res.StartedAt, res.PLT); err != nil {
			return err
		}
	} else {
		printBrowseResult(stdout, res)
	}
	if ctx.Err() != nil {
		fmt.Fprintf(os.Stderr, "wirelab-engine: browse interrupted\n")
		return &cli.ExitError{Code: 130}
	}
	if res.Err != nil {
		return fmt.Errorf("load failed: %w", res.Err)
	}
	return nil
}

// spkiHashes are the certificates Chromium accepts without a known root: --spki's hashes and
// those of --cert's PEM file (nil when neither is given).
func spkiHashes(spki, certFile string) ([]string, error) {
	var hashes []string
	if spki != "" {
		hashes = strings.Split(spki, ",")
	}
	if certFile != "" {
		h, err := browser.SPKIHashesFromPEMFile(certFile)
		if err != nil {
			return nil, certError(certFile, err)
		}
		hashes = append(hashes, h...)
	}
	return hashes, nil
}

// writeVisualTrace writes the load's visual trace events as a Chrome trace (--visual-trace), with
// the load's zero (the T0 of PLT and the visual metrics) on the trace's clock in its metadata.
func writeVisualTrace(path string, res *browser.Result) error {
	events := res.VisualTrace
	if events == nil {
		events = []browser.TraceEvent{}
	}
	b, err := json.Marshal(struct {
		TraceEvents []browser.TraceEvent `json:"traceEvents"`
		Metadata    map[string]float64   `json:"metadata"`
	}{events, map[string]float64{"wirelab_time_origin_us": math.Round(res.T0() * 1e6)}})
	if err != nil {
		return fmt.Errorf("--visual-trace: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("--visual-trace: %w", err)
	}
	return nil
}

// writeFrames writes a load's frames to dir (created), one JPEG per frame in visual_progress order.
func writeFrames(dir string, frames []browser.Frame) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--frames: %w", err)
	}
	for i, f := range frames {
		if err := os.WriteFile(filepath.Join(dir, browser.FrameFile(i)), f.JPEG, 0o644); err != nil {
			return fmt.Errorf("--frames: %w", err)
		}
	}
	return nil
}

func parseBrowseArgs(args []string) (*browseArgs, error) {
	fs := flag.NewFlagSet("browse", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	sb := seam.DefaultBrowse()
	sb.Timeout = browser.DefaultTimeout
	sb.Bind(fs)
	proto, dnsAddr, resolve, spki, certFile := &sb.Proto, &sb.DNS, &sb.Resolve, &sb.SPKI, &sb.Cert
	asJSON, harFile, chromium, chromiumLog := &sb.JSON, &sb.HAR, &sb.Chromium, &sb.ChromiumLog
	target, err := parseOneURL(fs, args)
	if err != nil {
		return nil, err
	}
	ba := &browseArgs{url: target, json: *asJSON, har: *harFile, frames: sb.Frames, trace: sb.VisualTrace}
	if err := checkOutput("--har", ba.har); err != nil {
		return nil, err
	}
	if err := checkOutput("--visual-trace", ba.trace); err != nil {
		return nil, err
	}
	timeout := sb.Timeout
	if *proto == "" {
		return nil, cli.Usagef("--proto: required; allowed: %s", suggest.Join(browser.Protocols))
	}
	p, err := browser.ParseProtocol(*proto)
	if err != nil {
		return nil, cli.Usagef("--proto %v", err)
	}
	cfg := &ba.cfg
	cfg.Protocol, cfg.Timeout, cfg.ExecPath = p, timeout, *chromium
	if *chromiumLog {
		cfg.Stderr = func(line string) { fmt.Fprintln(os.Stderr, "chromium: "+line) }
	}
	server, static, err := parseResolution(*dnsAddr, *resolve)
	if err != nil {
		return nil, err
	}
	if server.IsValid() {
		if err := browser.CheckResolvConf("/etc/resolv.conf", server.Addr()); err != nil {
			return nil, cli.Usagef("--dns %s: %v", *dnsAddr, err)
		}
	}
	cfg.Resolve = static
	if cfg.SPKIHashes, err = spkiHashes(*spki, *certFile); err != nil {
		return nil, err
	}
	cfg.Internet = sb.AllowInternet
	cfg.View, cfg.H3, cfg.QUICHosts, cfg.CPUSlowdown = browser.View(sb.View), browser.H3Mode(sb.H3), sb.QUICHosts, sb.CPUSlowdown
	cfg.Screenshots = sb.Screenshots || sb.Frames != "" || sb.VisualTrace != ""
	cfg.KeepVisualTrace = sb.VisualTrace != ""
	if sb.Viewport != "" {
		vp, err := browser.ParseViewport(sb.Viewport)
		if err != nil {
			return nil, cli.Usagef("--viewport %v", err)
		}
		cfg.Viewport = vp
	}
	if cfg.H3 != browser.H3Forced && cfg.Protocol != browser.H3 {
		return nil, cli.Usagef("--h3 %s: only for --proto h3", cfg.H3)
	}
	if err := checkFetchURL(ba.url, client.TargetCheck(false, sb.AllowInternet)); err != nil {
		return nil, err
	}
	return ba, nil
}

func printBrowseResult(w io.Writer, res *browser.Result) {
	s := res.Summary()
	f := msOrDash
	fmt.Fprintf(w, "%s chromium %s (%s view): plt %.1f ms, onload %s ms, fcp %s ms, %d objects, %d body bytes, %d connections, %d TLS handshakes\n",
		s.Protocol, s.URL, s.View, s.PLTms, f(res.OnLoadMS), f(res.FirstContentfulPaintMS), s.Objects, s.BodyBytes, s.Connections, s.TLSHandshakes)
	p := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%.1f", *v)
	}
	lcpOf := ""
	if s.LCPType != nil {
		lcpOf = " (" + *s.LCPType
		if s.LCPURL != nil {
			lcpOf += " " + *s.LCPURL
		}
		lcpOf += ")"
	}
	cls := "-"
	if s.CLS != nil {
		cls = fmt.Sprintf("%.4f", *s.CLS)
	}
	fmt.Fprintf(w, "visual: lcp %s ms%s, cls %s, speed index %s ms, visually complete %s ms, %d frames\n",
		p(s.LCPMs), lcpOf, cls, p(s.SpeedIndexMs), p(s.VisuallyCompleteMs), len(s.VisualProgress))
	fmt.Fprintf(w, "phases (ms, summed): blocked %.1f dns %.1f connect %.1f ssl %.1f send %.1f wait %.1f receive %.1f\n",
		s.Phases.Blocked, s.Phases.DNS, s.Phases.Connect, s.Phases.SSL, s.Phases.Send, s.Phases.Wait, s.Phases.Receive)
	rows := make([]waterfallRow, len(res.Entries))
	for i, e := range res.Entries {
		rows[i] = waterfallRow{e.StartMS, e.Timings, fmt.Sprintf("%s\t%s\t%s\t%d\t%d\t %s",
			e.Connection, e.Protocol, e.Priority, e.Status, e.BodyBytes, e.URL), e.Error}
	}
	printWaterfall(w, "conn\tproto\tprio\tstatus\tbytes\t url", rows, res.Err)
}
