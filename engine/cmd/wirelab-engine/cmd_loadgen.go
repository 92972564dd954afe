package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/client"
	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/internal/version"
	"github.com/wirelab/wirelab/engine/loadgen"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/policy"
)

const loadgenUsage = `usage: wirelab-engine loadgen --spec SPEC.json --target URL [flags]

Runs the spec's virtual users (docs/loadtest.md) in this process's network namespace against the
page at URL, loading it as the engine's loader does (flat mode), and prints one JSON line per
interval ({"event":"interval",…}) and a final {"event":"summary",…} on stdout.

  --spec FILE              the loadtest spec (JSON, schemas/loadtest-spec.schema.json)
  --target URL             the page's root URL; its scheme must suit the spec's protocol (http for
                           h1 and h2c). Only loopback addresses: names are resolved first, and every
                           address a VU contacts (discovered origins included) must be loopback
  --resolve NAME=IP,...    resolve these names (e.g. s1.wirelab.test=127.0.0.1); otherwise only
                           localhost and IP literals resolve (no DNS traffic)
  --ca FILE                PEM certificates to trust (the built-in server's ca.pem); default: the system's
  --start-ns N             the run's start on CLOCK_MONOTONIC (default: now): stages and intervals
                           count from it (interval k = [N + k·interval_s, …)); at most 60 s ahead,
                           at most one interval past
  --allow-remote-target    allow addresses outside loopback, resolving unknown names with the
                           system's resolver: public addresses, and a private (RFC 1918) one only
                           when named (the --target URL's IP literal, a --resolve value, an
                           --origins literal); special-purpose ones (link-local and 169.254.169.254,
                           multicast, documentation, …) never. Only the target's host and --origins
                           are contacted. Point it only at servers you may load.
  --origins HOST,...       the hosts besides the target's that a VU may contact (a page's other
                           origins); default: none. A spec's target.origins are used with --lab
  --preflight              load the target once before the start: a target that cannot be loaded
                           (unreachable, a certificate that fails, an answer ≥ 400) is bad input —
                           one line naming the cause, exit 2, no VU started. Without --start-ns the
                           run starts 0.2 s after it; the first line, {"event":"start","start_ns":N},
                           says when
  --lab RUNID              run inside lab run RUNID (wirelab-engine loadtest starts it so in the
                           client namespace, bench loadgen in the server namespace): the lab's
                           addresses (10.77.0.0/16, *.wirelab.test) are allowed instead of loopback —
                           accepted only in that run's client or server namespace while the run
                           lives. With a spec's target: the target's policy (its host and
                           target.origins; the run's namespaces, public addresses with the spec's
                           allow_internet, private ones only when named, never special-purpose)
  --dns IP[:PORT]          with --lab: resolve names with the lab's DNS server (client.dns = server)
  --max-open-files N       cap the generator's open files (connections) at N; default: as many as the
                           machine allows — the soft RLIMIT_NOFILE raised to the hard one, and as
                           root the hard one to fs.nr_open (docs/loadtest.md)
  --source IP,...          open the VUs' TCP connections from these local addresses, in turn (each
                           must be this namespace's own): every address has its own ephemeral port
                           range per server address and port (net.ipv4.ip_local_port_range), so
                           more connections than one range holds (28,232 by default) need more
                           addresses; default: the kernel's choice
  --part K/N               run generator K's share (K from 0) of a run spread over N generators:
                           the VUs whose run-wide index i has i mod N = K (open model: the arrivals
                           k with k mod N = K, and that share of max_vus); the summary says part
  --histograms             add each interval's HDR histograms (page_hist, request_hist: HdrHistogram
                           V2 compressed, base64) to its line, for wirelab-engine loadmerge
  --run-server IP          with --lab and a spec's target: IP is this run's own lab server on a
                           cluster worker (wirelab-engine loadtest --serve; docs/loadtest.md, "A Dask
                           cluster"), admitted as the run's own without allow_internet
  --pprof ADDR             serve the Go runtime's profiles (net/http/pprof) on ADDR, a loopback
                           address and port (e.g. 127.0.0.1:6060): go tool pprof
                           http://ADDR/debug/pprof/heap (or /profile) while the VUs run

A limit of the generator's own machine (open files, local ports, socket memory) that a VU's
connection still meets stops the run at once with one line naming it (exit 1, after the summary of
what was measured before it): the pages after it would time the generator's machine, not the server.

Exit status: 0 run complete, every threshold passed; 1 a threshold failed (after the summary) or
the run failed (a limit of the generator's machine: its line on stderr); 2 bad input (one line naming the field or flag; nothing run); 130 SIGINT/SIGTERM
(the VUs are stopped, the last partial interval and the summary are printed).
`

func init() {
	register("loadgen", command{
		Summary: "run a load test's virtual users against a URL (JSON lines per interval, a summary)",
		Run:     func(args []string) error { return runLoadgen(args, os.Stdout) },
	})
}

// loadgenArgs are loadgen's validated flags.
type loadgenArgs struct {
	spec   *loadgen.Spec
	target string
	cfg    client.Config
	start  time.Time
	mono   int64 // start on CLOCK_MONOTONIC
	// maxOpenFiles caps RLIMIT_NOFILE (--max-open-files; 0: raise it as far as the machine allows)
	maxOpenFiles uint64
	part         loadgen.Part
	histograms   bool
	pprof        string // --pprof: the profiles' loopback address ("" none)
	preflight    bool   // --preflight: load the target once before the start
	startGiven   bool   // --start-ns was given
}

// preflightLead is how far after a preflight load the run starts (without --start-ns).
const preflightLead = 200 * time.Millisecond

func runLoadgen(args []string, stdout io.Writer) error {
	la, err := parseLoadgenArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, loadgenUsage)
		return nil
	}
	if err != nil {
		return err
	}
	loader, err := client.New(la.cfg)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	if _, err := loadgen.RaiseOpenFiles(la.maxOpenFiles); err != nil {
		return fmt.Errorf("loadgen: setting the open-files limit: %w", err)
	}
	if os.Getenv("GOGC") == "" { // the environment's GOGC wins
		debug.SetGCPercent(loadgen.GCPercent(la.spec))
	}
	if la.pprof != "" {
		if err := servePprof(la.pprof); err != nil {
			return fmt.Errorf("loadgen --pprof %s: %w", la.pprof, err)
		}
	}
	ctx, stop := cli.RunContext()
	defer stop()
	enc := json.NewEncoder(stdout)
	if la.preflight {
		if err := preflight(ctx, loader, la.target, la.spec.Timeout()); err != nil {
			return err
		}
		if !la.startGiven {
			// the run starts a moment after the preflight; the first line says when
			la.start, la.mono, _ = loadgenStart("", la.spec.Interval())
			la.start, la.mono = la.start.Add(preflightLead), la.mono+int64(preflightLead)
		}
		_ = enc.Encode(map[string]any{"event": "start", "start_ns": la.mono})
	}
	gauge := &client.ConnGauge{}
	sum, err := loadgen.Run(ctx, loadgen.Config{
		Spec:       la.spec,
		NewUser:    loadgen.TabUsers(loader, la.target, la.spec, gauge),
		Start:      la.start,
		Interval:   func(iv loadgen.Interval) { _ = enc.Encode(iv) },
		Conns:      gauge,
		Probe:      loadgen.NewProbe(),
		Part:       la.part,
		Histograms: la.histograms,
	})
	if sum == nil { // interrupted before the start
		fmt.Fprintln(os.Stderr, "wirelab-engine: loadgen interrupted before its start")
		return &cli.ExitError{Code: 130}
	}
	sum.Target, sum.StartNs = la.target, la.mono
	if werr := enc.Encode(sum); werr != nil {
		return fmt.Errorf("loadgen: writing the summary: %w", werr)
	}
	if errors.Is(err, loadgen.ErrInterrupted) {
		fmt.Fprintf(os.Stderr, "wirelab-engine: loadgen %s interrupted after %.1f s; the summary covers what was measured\n", la.spec.LoadtestID, sum.DurationS)
		return &cli.ExitError{Code: 130}
	}
	var le *loadgen.LimitError
	var re *loadgen.RateCapError
	if errors.As(err, &le) || errors.As(err, &re) {
		return fmt.Errorf("loadgen %s: %v", la.spec.LoadtestID, err)
	}
	if err != nil {
		return fmt.Errorf("loadgen: %w", err)
	}
	if !sum.ThresholdsPassed {
		var failed []string
		for _, r := range sum.Thresholds {
			if !r.Pass {
				failed = append(failed, r.Expr)
			}
		}
		return fmt.Errorf("loadgen %s: %d of %d thresholds failed: %s", la.spec.LoadtestID, len(failed), len(sum.Thresholds), strings.Join(failed, "; "))
	}
	return nil
}

// parseLoadgenArgs reads and checks everything before anything runs: every problem is a usage
// error (exit 2) naming the flag or the spec field.
func parseLoadgenArgs(args []string) (*loadgenArgs, error) {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	specFile := fs.String("spec", "", "")
	target := fs.String("target", "", "")
	resolve := fs.String("resolve", "", "")
	caFile := fs.String("ca", "", "")
	startNs := fs.String("start-ns", "", "")
	remote := fs.Bool("allow-remote-target", false, "")
	originsFlag := fs.String("origins", "", "")
	pre := fs.Bool("preflight", false, "")
	labID := fs.String("lab", "", "")
	dnsAddr := fs.String("dns", "", "")
	maxFiles := fs.Uint64("max-open-files", 0, "")
	sources := fs.String("source", "", "")
	part := fs.String("part", "", "")
	histograms := fs.Bool("histograms", false, "")
	pprofAddr := fs.String("pprof", "", "")
	runServer := fs.String("run-server", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, cli.Usagef("loadgen: %v (wirelab-engine loadgen -h lists the flags)", err)
	}
	if fs.NArg() != 0 {
		return nil, cli.Usagef("loadgen: unexpected argument %q", fs.Arg(0))
	}
	if *specFile == "" {
		return nil, cli.Usagef("--spec: required: the loadtest spec (JSON file)")
	}
	data, err := readInput("--spec", *specFile, maxSpecBytes, nil)
	if err != nil {
		return nil, err
	}
	spec, err := loadgen.Decode(data)
	if err != nil {
		return nil, usageIfField(err)
	}
	if *labID != "" {
		// The client namespace routes only to the run's servers; the server namespace only to the
		// run's client, and delivers its own addresses locally (bench loadgen beside a real server).
		if err := netns.InRun(*labID, netns.Client, netns.Server); err != nil {
			return nil, cli.Usagef("--lab %s: %v", *labID, err)
		}
		if *remote {
			return nil, cli.Usagef("--lab and --allow-remote-target: a lab's load stays in the lab")
		}
	} else if err := standaloneChecks(spec); err != nil {
		return nil, usageIfField(err)
	}
	if *dnsAddr != "" && *labID == "" {
		return nil, cli.Usagef("--dns: only with --lab (the lab's DNS server)")
	}
	if *target == "" {
		return nil, cli.Usagef("--target: required: the page's root URL (a loopback address)")
	}
	if *maxFiles != 0 && *maxFiles < 16 {
		return nil, cli.Usagef("--max-open-files %d: at least 16 (the generator's own files), or 0 for the machine's limit", *maxFiles)
	}
	if *pprofAddr != "" {
		if err := checkPprofAddr(*pprofAddr); err != nil {
			return nil, cli.Usagef("--pprof %s: %v", *pprofAddr, err)
		}
	}
	la := &loadgenArgs{spec: spec, target: *target, maxOpenFiles: *maxFiles, histograms: *histograms, pprof: *pprofAddr, preflight: *pre}
	if *part != "" {
		if la.part, err = loadgen.ParsePart(*part); err != nil {
			return nil, cli.Usagef("--part %s: %v", *part, err)
		}
	}
	cfg := &la.cfg
	cfg.Protocol = client.Protocol(spec.Protocol)
	cfg.MaxConnectionsPerOrigin = spec.Client.MaxConnectionsPerOrigin
	cfg.Timeout = spec.Timeout()
	cfg.UserAgent = "wirelab-engine/" + version.Version
	cfg.LoopbackOnly = !*remote && *labID == "" // in a lab: the client's lab policy (10.77.0.0/16, *.wirelab.test)
	static := client.StaticResolver{"localhost": netip.MustParseAddr("127.0.0.1")}
	if *resolve != "" {
		r, err := client.ParseStaticResolver(*resolve)
		if err != nil {
			return nil, cli.Usagef("--resolve %s: %v; want name=ip,name=ip", *resolve, err)
		}
		for name, a := range r {
			static[name] = a
		}
	}
	var origins []string
	if *originsFlag != "" {
		if *labID != "" {
			return nil, cli.Usagef("--origins: not with --lab (a load test's origins are its spec's target.origins)")
		}
		origins = strings.Split(*originsFlag, ",")
	}
	if *runServer != "" && (*labID == "" || spec.Target == nil) {
		return nil, cli.Usagef("--run-server %s: only with --lab and a spec's target (wirelab-engine loadtest --run-server runs it so)", *runServer)
	}
	switch {
	case *remote:
		tp, err := loadgen.TargetPolicy(*target, origins, static, true, nil)
		if err != nil {
			return nil, cli.Usagef("--target %s: %v", *target, err)
		}
		cfg.Target = tp
	case *labID != "" && spec.Target != nil:
		if *target != spec.Target.URL {
			return nil, cli.Usagef("--target %s: the spec's target is %s", *target, spec.Target.URL)
		}
		own := policy.OwnRoute
		if *runServer != "" {
			a, err := loadgen.ParseRunServer(*runServer)
			if err != nil {
				return nil, cli.Usagef("--run-server %s: %v", *runServer, err)
			}
			own = loadgen.RunServerOwn(a, own)
		}
		tp, err := loadgen.TargetPolicy(*target, spec.Target.Origins, static, spec.AllowInternet, own)
		if err != nil {
			return nil, usageIfField(err)
		}
		cfg.Target = tp
	case len(origins) > 0:
		return nil, cli.Usagef("--origins: only with --allow-remote-target (loopback loads contact any loopback origin)")
	}
	if *sources != "" {
		if cfg.Sources, err = parseSources(*sources); err != nil {
			return nil, cli.Usagef("--source %s: %v; want local addresses of this namespace, comma-separated", *sources, err)
		}
	}
	cfg.Resolver = static
	if *remote {
		cfg.Resolver = staticThen{static, client.SystemResolver{}}
	}
	if *dnsAddr != "" {
		server, err := dnsServerAddr(*dnsAddr)
		if err != nil {
			return nil, cli.Usagef("--dns %s: %v", *dnsAddr, err)
		}
		if !client.IsLabAddr(server.Addr()) {
			return nil, cli.Usagef("--dns %s: %v", *dnsAddr, client.ErrNotLabTarget)
		}
		cfg.Resolver = &client.DNSResolver{Server: server.String()}
		if cfg.Target != nil && *resolve != "" {
			cfg.Resolver = staticThen{static, cfg.Resolver} // a target's resolve names, then the router's forwarder
		}
	}
	if *caFile != "" {
		pool, err := caPool("--ca", *caFile, nil)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if err := checkLoadgenTarget(*target, cfg, *remote || *labID != ""); err != nil {
		return nil, err
	}
	if cfg.Target != nil {
		// the target's own host, before anything is sent: a literal or a --resolve value now,
		// a name's addresses when it is resolved (each checked before it is dialled)
		if err := targetAddrCheck(*target, cfg.Target, static); err != nil {
			return nil, err
		}
	}
	la.startGiven = *startNs != ""
	if la.start, la.mono, err = loadgenStart(*startNs, spec.Interval()); err != nil {
		return nil, err
	}
	return la, nil
}

// parseSources reads --source: addresses this namespace owns (a socket cannot be bound to another),
// each given once.
func parseSources(list string) (*client.SourceAddrs, error) {
	var addrs []netip.Addr
	for _, f := range strings.Split(list, ",") {
		a, err := netip.ParseAddr(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		addrs = append(addrs, a)
	}
	srcs, err := client.NewSourceAddrs(addrs)
	if err != nil {
		return nil, err
	}
	return srcs, srcs.CheckOwned()
}

// standaloneChecks refuses what only the lab's `loadtest` can provide.
func standaloneChecks(spec *loadgen.Spec) error {
	if spec.Target != nil {
		return fielderr.New("target", spec.Target.URL, "is loaded by wirelab-engine loadtest (through the access link and the egress router); loadgen alone takes --target, --resolve, --ca and --origins")
	}
	if spec.Client.DNS == "server" {
		return fielderr.New("client.dns", "server", "needs the lab's DNS server (wirelab-engine loadtest); loadgen --target resolves names with --resolve")
	}
	for i, expr := range spec.Thresholds {
		th, _ := loadgen.ParseThreshold(expr)
		if th.NeedsServer() {
			return fielderr.New(fmt.Sprintf("thresholds[%d]", i), expr, "%s needs the lab's server samples (wirelab-engine loadtest)", th.Metric)
		}
	}
	return nil
}

// checkLoadgenTarget refuses a target URL that does not suit the protocol or whose address is not
// loopback, before anything is sent: names are resolved with the VUs' resolver first.
func checkLoadgenTarget(raw string, cfg *client.Config, remote bool) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return cli.Usagef("--target %s: want an http:// or https:// URL", raw)
	}
	if want := cfg.Protocol.Scheme(); u.Scheme != want {
		return cli.Usagef("--target %s: protocol %s needs an %s:// URL", raw, cfg.Protocol, want)
	}
	if remote {
		return nil
	}
	host := u.Hostname()
	addrs := []netip.Addr{}
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = append(addrs, a)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if addrs, err = cfg.Resolver.Lookup(ctx, host); err != nil {
			return cli.Usagef("--target %s: %v (names resolve through --resolve and localhost only, unless --allow-remote-target)", raw, err)
		}
	}
	for _, a := range addrs {
		if !a.Unmap().IsLoopback() {
			return cli.Usagef("--target %s: %s is not a loopback address; loadgen loads only loopback servers unless --allow-remote-target is given", raw, a)
		}
	}
	return nil
}

// targetAddrCheck refuses a target whose host (an IP literal or a name of static: --resolve's and
// localhost) the target policy refuses: one line, exit 2, before any packet. Other names are
// checked when they are resolved, each address before it is dialled.
func targetAddrCheck(raw string, target *policy.Target, static client.StaticResolver) error {
	u, _ := url.Parse(raw)
	host := u.Hostname()
	a, err := netip.ParseAddr(host)
	if err != nil {
		var ok bool
		if a, ok = static[strings.ToLower(host)]; !ok {
			return nil
		}
	}
	if err := target.CheckAddr(host, a); err != nil {
		return cli.Usagef("--target %s: refused before any packet was sent: %v", raw, err)
	}
	return nil
}

// preflight loads the target once: a target that cannot be loaded is bad input, said in one line
// naming the cause (exit 2), before any VU starts.
func preflight(ctx context.Context, loader *client.Loader, target string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := loader.Load(ctx, target, nil)
	if err == nil && res.Err != nil {
		err = res.Err
	}
	if err == nil && len(res.Entries) > 0 && res.Entries[0].Status >= 400 {
		err = fmt.Errorf("answered %d", res.Entries[0].Status)
	}
	if err != nil {
		return cli.Usagef("--target %s: cannot be loaded: %v", target, err)
	}
	return nil
}

// loadgenStart maps --start-ns (CLOCK_MONOTONIC) onto Go's clock; without it the run starts now.
func loadgenStart(raw string, interval time.Duration) (time.Time, int64, error) {
	var ts unix.Timespec
	now := time.Now()
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	mono := ts.Nano()
	if raw == "" {
		return now, mono, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return time.Time{}, 0, cli.Usagef("--start-ns %s: want an integer (nanoseconds on CLOCK_MONOTONIC)", raw)
	}
	ahead := time.Duration(n - mono)
	if ahead > time.Minute || ahead < -interval {
		return time.Time{}, 0, cli.Usagef("--start-ns %s: %v from now; must be at most 60 s ahead and at most one interval (%v) past", raw, ahead.Round(time.Millisecond), interval)
	}
	return now.Add(ahead), n, nil
}

// staticThen resolves through a static map, then another resolver (the system's with
// --allow-remote-target; the egress router's forwarder for a load test's target).
type staticThen struct {
	static client.StaticResolver
	next   client.Resolver
}

func (r staticThen) Lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if addrs, err := r.static.Lookup(ctx, host); err == nil {
		return addrs, nil
	}
	return r.next.Lookup(ctx, host)
}

var _ client.Resolver = staticThen{}
