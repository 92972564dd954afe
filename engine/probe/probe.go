// Package probe finds out which protocols web sites announce and which they serve (study E's
// live crawl; docs/probe.md). Per site it resolves the name (A, AAAA, HTTPS records), then —
// paced per host and bounded in time — connects over TLS offering h2 and http/1.1, only http/1.1
// and only spdy/3.1, sends HTTP/1.1 and the h2c upgrade to the cleartext port, and makes a QUIC
// handshake and an HTTP/3 request: one GET of the site's URL per protocol, response headers only.
//
// Nothing is contacted before the address policy (Policy) has passed it: without AllowInternet
// only the run's own namespaces; with it, no special-purpose address either.
package probe

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/policy"
)

// Ports are the default ports of the steps (a site URL's explicit port replaces its scheme's).
type Ports struct {
	HTTP  int // h1, h2c upgrade; default 80
	HTTPS int // TLS steps; default 443
	QUIC  int // h3 unless announced elsewhere; default 443
}

// Config is a probe run's configuration. Start from DefaultConfig.
type Config struct {
	Policy   policy.Policy
	Resolver Resolver // required when a site is given by name
	// Timeout bounds each step (connect, handshake and response headers). Default 5 s; 100 ms–60 s.
	Timeout time.Duration
	// Rate spaces the connections to one host. Default 2/s.
	Rate Rate
	// Concurrency is how many sites are probed at once. Default 8; 1–64.
	Concurrency int
	// MaxDuration bounds the whole run; sites not finished by then are recorded as not probed.
	// Default 1 h; 1 s–24 h.
	MaxDuration time.Duration
	// RootCAs verify certificates (nil: the system's). Verification failures are recorded, not fatal.
	RootCAs *x509.CertPool
	Ports   Ports
	// UserAgent of every request.
	UserAgent string
}

// Defaults of the knobs (DefaultConfig; the rate's is DefaultRate, the list's DefaultMaxSites).
const (
	DefaultTimeout     = 5 * time.Second
	DefaultConcurrency = 8
	DefaultMaxDuration = time.Hour
)

// Limits of the knobs.
const (
	MinTimeout     = 100 * time.Millisecond
	MaxTimeout     = time.Minute
	MaxConcurrency = 64
	MinDuration    = time.Second
	MaxDuration    = 24 * time.Hour
)

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	r, _ := ParseRate(DefaultRate)
	return Config{Timeout: DefaultTimeout, Rate: r, Concurrency: DefaultConcurrency, MaxDuration: DefaultMaxDuration,
		Ports: Ports{HTTP: 80, HTTPS: 443, QUIC: 443}, UserAgent: "wirelab-probe"}
}

// Check validates the knobs; the error names the flag.
func (c Config) Check() error {
	switch {
	case c.Timeout < MinTimeout || c.Timeout > MaxTimeout:
		return fielderr.New("timeout", c.Timeout.String(), "must be %s–%s", MinTimeout, MaxTimeout)
	case c.Concurrency < 1 || c.Concurrency > MaxConcurrency:
		return fielderr.New("concurrency", c.Concurrency, "must be 1–%d", MaxConcurrency)
	case c.MaxDuration < MinDuration || c.MaxDuration > MaxDuration:
		return fielderr.New("max-duration", c.MaxDuration.String(), "must be %s–%s", MinDuration, MaxDuration)
	case c.Rate.N < 1 || c.Rate.Per <= 0:
		return fielderr.New("rate", c.Rate.String(), "must be N/s, N/min or N/h")
	}
	for _, p := range []int{c.Ports.HTTP, c.Ports.HTTPS, c.Ports.QUIC} {
		if p < 1 || p > 65535 {
			return fielderr.New("ports", p, "must be 1–65535")
		}
	}
	return nil
}

// Target is a site after planning: resolved and judged by the policy, not yet contacted.
type Target struct {
	Index   int
	Site    Site
	DNS     *DNSResult // nil for an address
	Addr    netip.Addr // the address to probe (invalid when none)
	Refused string     // the policy's reason, when refused (AllowInternet only; else Plan fails)
	Error   string     // resolution failure
}

// Plan resolves every site and judges every address, sending nothing to any site: first the
// names (without AllowInternet only names under wirelab.test, through a resolver in the run's
// namespaces), then the resolved addresses. Without AllowInternet the first refusal is returned
// as a *RefusedError (the run must not start); with it, refused sites are marked and skipped.
func Plan(ctx context.Context, cfg Config, sites []Site) ([]Target, error) {
	targets := make([]Target, len(sites))
	var refusals []error
	needDNS := false
	for i, s := range sites {
		targets[i] = Target{Index: i, Site: s}
		if err := checkSite(cfg.Policy, s); err != nil {
			refusals = append(refusals, err)
			targets[i].Refused = err.Error()
			continue
		}
		if s.IsIP() {
			targets[i].Addr = s.Addr
		} else {
			needDNS = true
		}
	}
	if needDNS {
		if cfg.Resolver == nil {
			return nil, errors.New("probe: sites given by name need a resolver")
		}
		if server := cfg.Resolver.Server(); server != "" { // "" sends nothing (StaticResolver)
			if err := cfg.Policy.CheckResolver(server); err != nil {
				return nil, err
			}
		}
	}
	if !cfg.Policy.AllowInternet && len(refusals) > 0 {
		return nil, withMore(refusals)
	}
	// Resolve names, Concurrency at a time.
	sem := make(chan struct{}, cfg.Concurrency)
	var wg sync.WaitGroup
	for i := range targets {
		t := &targets[i]
		if t.Refused != "" || t.Site.IsIP() {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			t.DNS = cfg.Resolver.Resolve(ctx, t.Site.Host)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i := range targets {
		t := &targets[i]
		if t.Refused != "" || t.DNS == nil {
			continue
		}
		if t.DNS.Error != "" {
			t.Error = t.DNS.Error
			continue
		}
		addrs, err := t.DNS.addrs()
		if err != nil {
			t.Error = err.Error()
			continue
		}
		// Every address must pass: a name that mixes public and special-purpose addresses is
		// refused whole.
		for _, a := range addrs {
			if err := cfg.Policy.CheckAddr(t.Site.Input, a); err != nil {
				refusals = append(refusals, err)
				t.Refused = err.Error()
				break
			}
		}
		if t.Refused == "" {
			t.Addr = addrs[0]
		}
	}
	if !cfg.Policy.AllowInternet && len(refusals) > 0 {
		return nil, withMore(refusals)
	}
	return targets, nil
}

// Uncontactable is, when no target of a plan can be probed (every site refused by the policy or
// without an address), one reason per site, each naming it; nil when at least one can be probed.
// `wirelab-engine probe` then prints them and exits 2, sending nothing and printing no record.
func Uncontactable(targets []Target) []string {
	var reasons []string
	for _, t := range targets {
		switch {
		case t.Refused != "":
			reasons = append(reasons, t.Refused)
		case t.Error != "":
			reasons = append(reasons, fmt.Sprintf("%s: no address to probe (%s)", t.Site.Input, t.Error))
		case !t.Addr.IsValid():
			reasons = append(reasons, t.Site.Input+": no address to probe")
		default:
			return nil
		}
	}
	return reasons
}

// checkSite is the policy's check of a site before resolution: an IP address is checked as the
// address it is, a name as a name.
func checkSite(p policy.Policy, s Site) error {
	if s.IsIP() {
		return p.CheckAddr(s.Input, s.Addr)
	}
	return p.CheckName(s.Input, s.Host)
}

// withMore is the first refusal, counting the others.
func withMore(refusals []error) error {
	if len(refusals) == 1 {
		return refusals[0]
	}
	more := "sites"
	if len(refusals) == 2 {
		more = "site"
	}
	return fmt.Errorf("%w (and %d more %s refused)", refusals[0], len(refusals)-1, more)
}

// ErrInterrupted is returned by Run when its context was cancelled (not by MaxDuration).
var ErrInterrupted = errors.New("probe interrupted")

var errDeadline = errors.New("not probed: the run's --max-duration ended first")

// Run probes the targets, Concurrency at a time, and calls emit with each site's record as it
// finishes (never concurrently). Targets without an address get their record without any
// packet being sent. When MaxDuration ends, the sites not finished are emitted with an error; when
// ctx is cancelled, Run returns ErrInterrupted after the sites in progress.
func Run(ctx context.Context, cfg Config, targets []Target, emit func(Record) error) error {
	if err := cfg.Check(); err != nil {
		return err
	}
	runCtx, cancel := context.WithTimeoutCause(ctx, cfg.MaxDuration, errDeadline)
	defer cancel()
	pace := newPacer(cfg.Rate.Interval())
	var emitMu sync.Mutex
	var emitErr error
	send := func(r Record) {
		emitMu.Lock()
		defer emitMu.Unlock()
		if emitErr == nil {
			emitErr = emit(r)
		}
	}
	work := make(chan *Target)
	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Go(func() {
			for t := range work {
				send(probeTarget(runCtx, &cfg, pace, t))
			}
		})
	}
feed:
	for i := range targets {
		select {
		case work <- &targets[i]:
		case <-runCtx.Done():
			if ctx.Err() != nil {
				break feed
			}
			send(unprobed(&targets[i], errDeadline.Error()))
		}
	}
	close(work)
	wg.Wait()
	if ctx.Err() != nil {
		return ErrInterrupted
	}
	return emitErr
}

func unprobed(t *Target, why string) Record {
	r := baseRecord(t)
	r.StartedAt = time.Now().UTC()
	r.Error = why
	return r
}

func baseRecord(t *Target) Record {
	return Record{Index: t.Index, Site: t.Site.Input, URL: t.Site.URL.String(), Host: t.Site.Host,
		DNS: t.DNS, Refused: t.Refused, Error: t.Error, Protocols: newRecord()}
}

func probeTarget(ctx context.Context, cfg *Config, pace *pacer, t *Target) Record {
	rec := baseRecord(t)
	start := time.Now()
	rec.StartedAt = start.UTC()
	if ctx.Err() != nil {
		rec.Error = context.Cause(ctx).Error()
		return rec
	}
	if t.Refused == "" && t.Error == "" && t.Addr.IsValid() {
		rec.Addr = t.Addr.String()
		p := &siteProbe{cfg: cfg, pacer: pace, site: t.Site, addr: t.Addr, rec: &rec}
		p.run(ctx)
		if ctx.Err() != nil && rec.Error == "" {
			rec.Error = context.Cause(ctx).Error()
			if errors.Is(context.Cause(ctx), errDeadline) {
				rec.Error = "stopped: the run's --max-duration ended during this site's probe"
			}
		}
	}
	rec.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	return rec
}
