package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/client"
	"github.com/wirelab/wirelab/engine/har"
	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/internal/seam"
	"github.com/wirelab/wirelab/engine/internal/suggest"
	"github.com/wirelab/wirelab/engine/internal/version"
	"github.com/wirelab/wirelab/engine/page"
)

const fetchUsage = `usage: wirelab-engine fetch URL --proto P [flags]

Loads one page with the engine's page loader and prints what it measured. One process per load:
nothing (connection, TLS session, name) is carried from one load to the next — except within
--view repeat, which loads the page twice.

  URL                      the page (flat mode) or the base of relative --urls entries (objects mode)
  --proto P                h1 | h1s | h2 | h2c | h3 | spdy3 (required); http URLs for h1/h2c, https otherwise
  --mode M                 flat (root, then everything it references; default) | objects (--urls, all at once)
                           | replay (follow --page's dependency graph; computations are waits)
  --page NAME|FILE         the page model (corpus name, synthetic name or page JSON file): the graph a
                           replay follows (required there); object types (chrome) and depths
                           (dependency) for --priority, which match objects by path
  --seed N                 seed of a corpus or synthetic --page's sizes (default 1)
  --compute-scale X        replay: multiply recorded computation times by X ≥ 0 (default 1)
  --urls FILE              objects mode: one URL per line ('-' = stdin; blank lines and # comments skipped)
  --max-conns N            HTTP/1.x connections per origin, 1–64 (default 6)
  --priority P             none (default) | chrome (HTML > CSS/JS > rest) | dependency (depth in the
                           page's dependency graph; needs --page): RFC 9218 priority header (h2, h3),
                           PRIORITY_UPDATE for pushed streams (h2), SYN_STREAM priority (spdy3)
  --accept-push=false      refuse server push (default: accepted on h2, h2c and spdy3; a request for
                           a pushed URL uses the pushed response)
  --dns IP[:PORT]          resolve names with this DNS server over UDP (port 53 by default)
  --resolve NAME=IP,...    resolve names with this static map instead
  --ca FILE                PEM certificates to trust (the run's CA); default: the system's roots
  --timeout D              abort the load after D (default 120s)
  --json                   print one JSON line (the load record's fields) instead of a table
  --har FILE               write the load as HAR 1.2 (also when it failed)
  --keylog FILE            append TLS secrets in NSS key log format (to decrypt pcaps)
  --allow-internet         allow public sites (a live trial's loads through the egress router):
                           any name; IP literals and resolved addresses must be 10.77.0.0/16 or
                           public — private, loopback, link-local, documentation … are refused
  --h3 MODE                for --proto h3, how HTTP/3 is found: forced (default: QUIC from the first
                           request), alt-svc (each origin over h2 until a response's Alt-Svc announces
                           h3 on its host and port, then QUIC), https-rr (ask the --dns server for
                           the host's HTTPS record beside its A record; QUIC when its alpn lists h3)
  --view first|repeat      first (default); repeat: load the page, close every connection, load it
                           again with the same profile (TLS session tickets, Alt-Svc cache, HTTP
                           cache) and report the second load — cached and revalidated objects as
                           the responses' Cache-Control says (cache_hits, cache_revalidated), resumed
                           TLS, h3 0-RTT where the server allows it (tls_resumed, zero_rtt)
  --allow-any-target       allow hosts outside loopback, 10.77.0.0/16 and *.wirelab.test (no check)

Without --dns or --resolve, names go to the system resolver. Exit status: 0 the load completed,
1 it failed (the result is still printed, with its error), 2 bad flags.
`

func init() {
	register("fetch", command{
		Summary: "load one page with the engine's loader and print its measurements",
		Run:     func(args []string) error { return runFetch(args, os.Stdin, os.Stdout) },
	})
}

// fetchArgs are fetch's validated flags.
type fetchArgs struct {
	url     string
	cfg     client.Config
	objects []string
	json    bool
	har     string
	keylog  string
	repeat  bool // --view repeat: load twice with one profile, report the second load
}

func runFetch(args []string, stdin io.Reader, stdout io.Writer) error {
	fa, err := parseFetchArgs(args, stdin)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, fetchUsage)
		return nil
	}
	if err != nil {
		return err
	}
	if fa.keylog != "" {
		f, err := os.OpenFile(fa.keylog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return cli.Usagef("--keylog %s: %v", fa.keylog, err)
		}
		defer f.Close()
		fa.cfg.KeyLogWriter = f
	}
	loader, err := client.New(fa.cfg)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	ctx, stop := cli.SignalContext(context.Background())
	defer stop()
	clock := newMonotonicRef()
	view := "first"
	if fa.repeat {
		// The first view: its connections are closed when it ends (Load closes them); what the
		// profile keeps — session tickets, Alt-Svc — is what the repeat view starts from.
		view = "repeat"
		first, err := loader.Load(ctx, fa.url, fa.objects)
		if err != nil {
			return cli.Usagef("%v", err)
		}
		if first.Err != nil && ctx.Err() == nil {
			return fmt.Errorf("first view: %w", first.Err)
		}
	}
	res, err := loader.Load(ctx, fa.url, fa.objects)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	if err := writeHAR(fa.har, res); err != nil {
		return err
	}
	if fa.json {
		summary := struct {
			client.Summary
			View string `json:"view"`
		}{res.Summary(), view}
		if err := clock.printLoaderLine(stdout, summary, res.StartedAt, res.PLT); err != nil {
			return err
		}
	} else {
		printResult(stdout, res)
	}
	if ctx.Err() != nil { // interrupted: the partial result is printed
		fmt.Fprintf(os.Stderr, "wirelab-engine: fetch interrupted\n")
		return &cli.ExitError{Code: 130}
	}
	if res.Err != nil {
		return fmt.Errorf("load failed: %w", res.Err)
	}
	return nil
}

// monotonicRef maps Go times (which carry a monotonic reading) to CLOCK_MONOTONIC nanoseconds.
type monotonicRef struct {
	t    time.Time
	mono int64
}

func newMonotonicRef() monotonicRef {
	var ts unix.Timespec
	t := time.Now()
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return monotonicRef{t: t, mono: ts.Nano()}
}

// ns is t on CLOCK_MONOTONIC (t must carry a monotonic reading: taken with time.Now, not UTC()).
func (r monotonicRef) ns(t time.Time) int64 { return r.mono + t.Sub(r.t).Nanoseconds() }

// printLoaderLine prints a load's result as the one JSON line of fetch --json and browse --json
// (seam.LoaderResult): the load record's loader fields, its start and end on CLOCK_MONOTONIC.
func (r monotonicRef) printLoaderLine(w io.Writer, summary any, started time.Time, plt time.Duration) error {
	res, err := seam.NewLoaderResult(summary, r.ns(started), r.ns(started)+plt.Nanoseconds())
	if err != nil {
		return err
	}
	line, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, string(line))
	return nil
}

// harSource is a load's result that makes its HAR (fetch's and browse's).
type harSource interface {
	HAR(creatorVersion string) *har.Log
}

// writeHAR writes a load's HAR to path (--har; "" none).
func writeHAR(path string, res harSource) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--har: %w", err)
	}
	if err := har.Write(f, res.HAR(version.String())); err != nil {
		f.Close()
		return fmt.Errorf("--har %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--har %s: %w", path, err)
	}
	return nil
}

// parseFetchArgs parses fetch's flags, which may come before or after the URL. Every error is a
// usage error naming the flag, the value and what is allowed.
func parseFetchArgs(args []string, stdin io.Reader) (*fetchArgs, error) {
	fs := flag.NewFlagSet("fetch", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	sf := seam.DefaultFetch()
	sf.MaxConns, sf.Timeout = client.DefaultMaxConnectionsPerOrigin, client.DefaultTimeout
	sf.Bind(fs, client.MaxConnectionsPerOriginLimit)
	proto, mode, urls, dnsAddr, resolve, caFile := &sf.Proto, &sf.Mode, &sf.URLs, &sf.DNS, &sf.Resolve, &sf.CA
	prio, acceptPush, asJSON, harFile, keylog := &sf.Priority, &sf.AcceptPush, &sf.JSON, &sf.HAR, &sf.KeyLog
	anyTarget, pageName, seed := &sf.AllowAnyTarget, &sf.Page, &sf.Seed
	target, err := parseOneURL(fs, args)
	if err != nil {
		return nil, err
	}
	fa := &fetchArgs{url: target, json: *asJSON, har: *harFile, keylog: *keylog}
	if err := checkOutput("--har", fa.har); err != nil {
		return nil, err
	}
	if err := checkOutput("--keylog", fa.keylog); err != nil {
		return nil, err
	}
	cfg := &fa.cfg
	maxConns, timeout := sf.MaxConns, sf.Timeout
	computeScale, computeSet := 1.0, sf.ComputeScale != ""
	if computeSet {
		computeScale, _ = strconv.ParseFloat(sf.ComputeScale, 64) // checked by the flag
	}

	if *proto == "" {
		return nil, cli.Usagef("--proto: required; allowed: %s", suggest.Join(client.Protocols))
	}
	p, err := client.ParseProtocol(*proto)
	if err != nil {
		return nil, cli.Usagef("--proto %v", err)
	}
	cfg.Protocol = p
	m, err := client.ParseMode(*mode)
	if err != nil {
		return nil, cli.Usagef("--mode %v", err)
	}
	cfg.Mode = m
	switch {
	case m == client.ModeReplay && *pageName == "":
		return nil, cli.Usagef("--page: required with --mode replay (the page model whose graph is replayed)")
	case m != client.ModeReplay && computeSet:
		return nil, cli.Usagef("--compute-scale: only with --mode replay")
	case m == client.ModeReplay:
		cfg.ComputeScale = computeScale
	}
	if *pageName != "" {
		pg, err := page.Load(*pageName, *seed)
		if err != nil {
			return nil, cli.Usagef("--page %s: %v", *pageName, err)
		}
		cfg.Page = pg
	}
	cfg.MaxConnectionsPerOrigin = maxConns
	cfg.Timeout = timeout
	cfg.AllowAnyTarget = *anyTarget
	cfg.Internet = sf.AllowInternet
	cfg.UserAgent = "wirelab-engine/" + version.Version
	cfg.AcceptPush = *acceptPush
	cfg.H3 = client.H3Discovery(sf.H3)
	fa.repeat = sf.View == "repeat"
	if fa.repeat {
		cfg.Profile = client.NewProfile()
	}
	if cfg.Priority, err = client.ParsePriorityPolicy(*prio); err != nil {
		return nil, cli.Usagef("--priority %v", err)
	}
	if cfg.Priority == client.PriorityDependency && cfg.Page == nil {
		return nil, cli.Usagef("--priority dependency: needs --page (object depths come from its dependency graph)")
	}

	server, static, err := parseResolution(*dnsAddr, *resolve)
	switch {
	case err != nil:
		return nil, err
	case server.IsValid():
		if !*anyTarget && !client.IsLabAddr(server.Addr()) {
			return nil, cli.Usagef("--dns %s: %v", *dnsAddr, client.ErrNotLabTarget)
		}
		cfg.Resolver = &client.DNSResolver{Server: server.String()}
	case static != nil:
		cfg.Resolver = static
	}

	if *caFile != "" {
		if cfg.RootCAs, err = caPool("--ca", *caFile, nil); err != nil {
			return nil, err
		}
	}

	switch {
	case m == client.ModeObjects && *urls == "":
		return nil, cli.Usagef("--urls: required with --mode objects")
	case m != client.ModeObjects && *urls != "":
		return nil, cli.Usagef("--urls %s: only with --mode objects (flat mode discovers the objects)", *urls)
	case *urls != "":
		if fa.objects, err = readURLList(*urls, stdin); err != nil {
			if cli.IsUsage(err) {
				return nil, err
			}
			return nil, cli.Usagef("--urls %s: %v", *urls, err)
		}
	}

	if err := checkFetchURL(fa.url, client.TargetCheck(*anyTarget, sf.AllowInternet)); err != nil {
		return nil, err
	}
	return fa, nil
}

// checkFetchURL refuses a URL whose host check refuses before anything is sent.
func checkFetchURL(raw string, check func(host string) error) error {
	u, err := url.Parse(raw)
	if err != nil {
		return cli.Usagef("URL %q: %v", raw, err)
	}
	if err := check(u.Hostname()); err != nil {
		return cli.Usagef("URL %s: %v", raw, err)
	}
	return nil
}

// parseOneURL parses the flags of a command that loads one URL, given before, between or after
// them: the URL.
func parseOneURL(fs *flag.FlagSet, args []string) (string, error) {
	var positional []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return "", err
			}
			return "", cli.Usagef("%s: %v (wirelab-engine %s -h lists the flags)", fs.Name(), err, fs.Name())
		}
		rest = fs.Args()
		if len(rest) == 0 {
			break
		}
		positional = append(positional, rest[0])
		rest = rest[1:]
	}
	if len(positional) != 1 {
		return "", cli.Usagef("%s: want exactly one URL, got %d arguments (%s)", fs.Name(), len(positional), strings.Join(positional, " "))
	}
	return positional[0], nil
}

// parseResolution reads --dns IP[:PORT] and --resolve NAME=IP,…, which exclude each other: the DNS
// server (valid when --dns is given) or the static map (nil unless --resolve is given).
func parseResolution(dnsAddr, resolve string) (server netip.AddrPort, static client.StaticResolver, err error) {
	switch {
	case dnsAddr != "" && resolve != "":
		return server, nil, cli.Usagef("--dns and --resolve: choose one")
	case dnsAddr != "":
		if server, err = dnsServerAddr(dnsAddr); err != nil {
			return server, nil, cli.Usagef("--dns %s: %v", dnsAddr, err)
		}
	case resolve != "":
		if static, err = client.ParseStaticResolver(resolve); err != nil {
			return server, nil, cli.Usagef("--resolve %s: %v; want name=ip,name=ip", resolve, err)
		}
	}
	return server, static, nil
}

// dnsServerAddr parses IP or IP:port (port 53 by default).
func dnsServerAddr(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap, nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.AddrPortFrom(a, 53), nil
	}
	if _, _, err := net.SplitHostPort(s); err == nil {
		return netip.AddrPort{}, errors.New("want an IP address and optional port, not a name")
	}
	return netip.AddrPort{}, errors.New("want IP or IP:PORT")
}

// readURLList reads one URL per line; blank lines and lines starting with # are skipped.
func readURLList(path string, stdin io.Reader) ([]string, error) {
	r, err := openInput("--urls", path, maxListBytes, stdin)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no URLs in the list")
	}
	return out, nil
}

// printResult prints a summary line and one line per object.
func printResult(w io.Writer, res *client.Result) {
	s := res.Summary()
	fmt.Fprintf(w, "%s %s %s: plt %.1f ms, %d objects, %d body bytes, %d connections, %d TLS handshakes (%d resumed), %d DNS queries\n",
		s.Protocol, s.Mode, s.URL, s.PLTms, s.Objects, s.BodyBytes, s.Connections, s.TLSHandshakes, s.TLSResumed, s.DNSQueries)
	fmt.Fprintf(w, "phases (ms, summed): blocked %.1f dns %.1f connect %.1f ssl %.1f send %.1f wait %.1f receive %.1f\n",
		s.Phases.Blocked, s.Phases.DNS, s.Phases.Connect, s.Phases.SSL, s.Phases.Send, s.Phases.Wait, s.Phases.Receive)
	if s.PushesUsed+s.PushesUnused > 0 {
		fmt.Fprintf(w, "server push: %d pushes used, %d unused, %d body bytes pushed\n", s.PushesUsed, s.PushesUnused, s.PushedBytes)
	}
	rows := make([]waterfallRow, len(res.Entries))
	for i, e := range res.Entries {
		stream := "-"
		if e.StreamID >= 0 {
			stream = fmt.Sprint(e.StreamID)
		}
		if e.Pushed {
			stream += " (push)"
		}
		prio := e.Priority
		if prio == "" {
			prio = "-"
		}
		rows[i] = waterfallRow{float64(e.Start) / float64(time.Millisecond), e.Timings, fmt.Sprintf("%d\t%s\t%s\t%d\t%d\t %s",
			e.Connection, stream, prio, e.Status, e.BodyBytes, e.URL), e.Error}
	}
	printWaterfall(w, "conn\tstream\tprio\tstatus\tbytes\t url", rows, res.Err)
}

// waterfallRow is one request of a load as fetch and browse print it: its start (ms), phases,
// the loader's own columns (tab-separated) and its error.
type waterfallRow struct {
	startMS float64
	timings seam.Timings
	columns string
	err     string
}

// printWaterfall prints a load's requests, right-aligned: start and phases, then the loader's own
// columns (named by header), a request's error after its row; then the load's error.
func printWaterfall(w io.Writer, header string, rows []waterfallRow, loadErr error) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "start\tblocked\tdns\tconnect\tssl\tsend\twait\treceive\t"+header)
	f := msOrDash
	for _, r := range rows {
		t := r.timings
		line := fmt.Sprintf("%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", r.startMS,
			f(t.Blocked), f(t.DNS), f(t.Connect), f(t.SSL), f(t.Send), f(t.Wait), f(t.Receive), r.columns)
		if r.err != "" {
			line += "  ERROR " + r.err
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	if loadErr != nil {
		fmt.Fprintf(w, "error: %v\n", loadErr)
	}
}

// msOrDash is a time in ms, "-" where it does not apply (negative: HAR's -1).
func msOrDash(v float64) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}
