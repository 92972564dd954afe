package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/internal/version"
	"github.com/wirelab/wirelab/engine/policy"
	"github.com/wirelab/wirelab/engine/probe"
)

func init() {
	register("probe", command{
		Summary: "which protocols sites announce and serve (one JSON line per site); live sites only with --allow-internet",
		Run:     func(args []string) error { return runProbe(args, os.Stdout) },
	})
}

const probeUsage = `usage: wirelab-engine probe [flags] SITE… | --list FILE

Per site (a host name or an http(s):// URL): DNS (A, AAAA, HTTPS records), TLS offering h2 and
http/1.1, only http/1.1 and only spdy/3.1, HTTP/1.1 and the h2c upgrade on port 80, QUIC + HTTP/3:
one GET of the site's URL per protocol, response headers only. Prints one JSON line per site
(schemas/probe-record.schema.json) as each finishes.

Without --allow-internet only names under wirelab.test whose addresses belong to this run's
namespaces are probed (run it inside "wirelab-engine sites -- …" or "wirelab-engine shell");
anything else is refused with exit 2 before a packet is sent to it. With --allow-internet,
special-purpose addresses (private, loopback, link-local, documentation, …) are still refused.
When no site can be probed — every one refused or without an address — nothing is sent and no
record printed: one line per site on stderr, exit 2. docs/probe.md says exactly what is sent.

flags:`

type probeOptions struct {
	list          string
	allowInternet bool
	concurrency   int
	rate          string
	timeout       time.Duration
	maxDuration   time.Duration
	maxSites      int
	dns           string
	ca            string
	plan          bool
	sites         []string
}

func probeFlags(o *probeOptions) *flag.FlagSet {
	def := probe.DefaultConfig()
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	fs.StringVar(&o.list, "list", "", "read the sites from FILE, one a line (# comments); instead of SITE arguments")
	fs.BoolVar(&o.allowInternet, "allow-internet", false, "allow live sites: public names and addresses (never special-purpose ones)")
	fs.IntVar(&o.concurrency, "concurrency", def.Concurrency, fmt.Sprintf("sites probed at once (1–%d)", probe.MaxConcurrency))
	fs.StringVar(&o.rate, "rate", probe.DefaultRate, fmt.Sprintf("connections per host: N/s, N/min or N/h (at most %d/s)", probe.MaxRatePerSecond))
	fs.DurationVar(&o.timeout, "timeout", def.Timeout, fmt.Sprintf("bound on each step: connect, handshake and response headers (%s–%s)", probe.MinTimeout, probe.MaxTimeout))
	fs.DurationVar(&o.maxDuration, "max-duration", def.MaxDuration, "bound on the whole run; sites not finished by then are recorded as not probed")
	fs.IntVar(&o.maxSites, "max-sites", probe.DefaultMaxSites, fmt.Sprintf("most sites accepted (at most %d); a longer list is refused", probe.MaxSites))
	fs.StringVar(&o.dns, "dns", "", "resolver IP[:PORT] (default: the first nameserver of /etc/resolv.conf)")
	fs.BoolVar(&o.plan, "plan", false, "only resolve every site and check it against the address policy: one JSON line per site\n(site, host, addrs, addr, refused, error); nothing is sent to any site")
	fs.StringVar(&o.ca, "ca", os.Getenv("WIRELAB_CA_FILE"), "also trust the certificates of this PEM file (default $WIRELAB_CA_FILE, set by wirelab-engine sites)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), probeUsage)
		fs.PrintDefaults()
	}
	return fs
}

// parseInterspersed parses flags that may come after positional arguments too.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// parseProbe checks every input before anything is resolved or sent: bad input is a UsageError.
func parseProbe(args []string, o *probeOptions) (probe.Config, []probe.Site, error) {
	fs := probeFlags(o)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return probe.Config{}, nil, err
	}
	o.sites = pos
	cfg := probe.DefaultConfig()
	cfg.Policy.AllowInternet = o.allowInternet
	cfg.Concurrency, cfg.Timeout, cfg.MaxDuration = o.concurrency, o.timeout, o.maxDuration
	cfg.UserAgent = "wirelab-probe/" + version.String()
	if cfg.Rate, err = probe.ParseRate(o.rate); err != nil {
		return cfg, nil, usageIfField(err)
	}
	if err := cfg.Check(); err != nil {
		return cfg, nil, usageIfField(err)
	}
	if o.maxSites < 1 || o.maxSites > probe.MaxSites {
		return cfg, nil, cli.Usagef("max-sites: got %d; must be 1–%d", o.maxSites, probe.MaxSites)
	}
	var sites []probe.Site
	switch {
	case o.list != "" && len(o.sites) > 0:
		return cfg, nil, cli.Usagef("probe: got --list %q and %d SITE arguments; give one or the other", o.list, len(o.sites))
	case o.list != "":
		// any size: ReadList stops one site past --max-sites
		f, err := openInput("--list", o.list, 0, nil)
		if err != nil {
			return cfg, nil, err
		}
		defer f.Close()
		sites, err = probe.ReadList(f, o.list, o.maxSites)
		if err != nil {
			return cfg, nil, usageIfField(err)
		}
	case len(o.sites) == 0:
		return cfg, nil, cli.Usagef("sites: none given; give SITE arguments or --list FILE")
	default:
		if sites, err = probe.ParseSites(o.sites, o.maxSites); err != nil {
			return cfg, nil, usageIfField(err)
		}
	}
	if o.ca != "" {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if cfg.RootCAs, err = caPool("--ca", o.ca, pool); err != nil {
			return cfg, nil, err
		}
	}
	needDNS := false
	for _, s := range sites {
		needDNS = needDNS || !s.IsIP()
	}
	if !needDNS {
		return cfg, sites, nil
	}
	server := o.dns
	if server == "" {
		if server, err = probe.SystemResolverAddr(); err != nil {
			return cfg, nil, cli.Usagef("dns: %v", err)
		}
	} else if _, _, err := net.SplitHostPort(server); err != nil {
		server = net.JoinHostPort(server, "53")
	}
	if host, _, err := net.SplitHostPort(server); err != nil || net.ParseIP(host) == nil {
		return cfg, nil, cli.Usagef("dns: got %q; must be IP[:PORT]", o.dns)
	}
	cfg.Resolver = &probe.DNSResolver{Addr: server}
	return cfg, sites, nil
}

func runProbe(args []string, stdout io.Writer) error {
	var o probeOptions
	cfg, sites, err := parseProbe(args, &o)
	if err != nil {
		return helpOK(err)
	}
	ctx, stop := cli.SignalContext(context.Background())
	defer stop()
	targets, err := probe.Plan(ctx, cfg, sites)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(os.Stderr, "wirelab-engine: probe: interrupted")
			return &cli.ExitError{Code: 130}
		}
		var re *policy.RefusedError
		if errors.As(err, &re) {
			return cli.Usagef("probe: %v", err)
		}
		return fmt.Errorf("probe: %w", err)
	}
	enc := json.NewEncoder(stdout)
	if o.plan {
		for i := range targets {
			if err := enc.Encode(targets[i].Plan()); err != nil {
				return err
			}
		}
		return nil
	}
	// Nothing to contact (every site refused or without an address): one line per site, exit 2,
	// no record — a run that probed nothing is the user's input, not a result.
	if reasons := probe.Uncontactable(targets); reasons != nil {
		for _, r := range reasons {
			fmt.Fprintln(os.Stderr, "wirelab-engine: probe: "+cli.Printable(r))
		}
		return &cli.ExitError{Code: 2}
	}
	err = probe.Run(ctx, cfg, targets, func(r probe.Record) error { return enc.Encode(r) })
	if errors.Is(err, probe.ErrInterrupted) {
		fmt.Fprintln(os.Stderr, "wirelab-engine: probe: interrupted")
		return &cli.ExitError{Code: 130}
	}
	if err != nil {
		if _, ok := fielderr.As(err); ok {
			return usageIfField(err)
		}
		return fmt.Errorf("probe: %w", err)
	}
	return nil
}
