package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wirelab/wirelab/engine/emulator"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/internal/userpath"
	"github.com/wirelab/wirelab/engine/link/profile"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server/impl"
	"github.com/wirelab/wirelab/engine/sites"
	"github.com/wirelab/wirelab/engine/spec"
)

// Far is what stands behind a lab's emulated path.
type Far int

// What can stand behind the path.
const (
	// FarServer: the page, served by the server under test (engine/server/impl) on the page's
	// origin addresses in the server namespace, with the lab's DNS server when asked for.
	FarServer Far = iota
	// FarInternet: the run's local internet (engine/sites: the catalog's sites and their DNS
	// server in a namespace of their own) behind the egress router and its DNS forwarder.
	FarInternet
	// FarHost: the host's way out, for public sites, behind the egress router and its DNS
	// forwarder (which asks the host's resolver).
	FarHost
)

// Prepared is a lab checked against everything it refers to — the page and its shards, the server
// under test (its implementation, knobs, configuration and binary), the network profile and its
// traces, the kernel's congestion controls — with what starting it needs. Nothing exists yet.
type Prepared struct {
	Far Far
	// Spec is the lab's part of the spec as it runs: server.config made absolute and the
	// implementation's own table in its canonical form (Prepare changes them in place, so that the
	// spec a run records is the one it ran). nil behind a live far side.
	Spec      *spec.Lab
	Seed      int64
	Protocols []string         // what the run loads over
	Page      *page.Page       // loaded (seeded) and sharded: what the server serves; nil behind a live far side
	PageArg   string           // the page as `serve --page` takes it (absolute for files)
	Impl      impl.Server      // the server under test; nil behind a live far side
	Profile   profile.Resolved // the path's profile, resolved
	Emulator  emulator.Config  // its links and route knobs; Start adds what the run captures
}

// Origins is the number of origin addresses the topology carries.
func (p *Prepared) Origins() int {
	if p.Far == FarServer {
		return len(p.Page.Origins)
	}
	return len(sites.Served(sites.Catalog())) // the local internet's (a public site has no origin number)
}

// Prepare checks a page lab (FarServer) as a run would, creating nothing: the server under test
// first (Check, its binary, a readable server.config), then the page and its shards, the user's
// configuration rendered for the page and tested by the server itself, the profile and the
// congestion control. Every error is bad input naming the field (a *fielderr.Error) except a
// failure to read the machine's settings. s is completed in place (Prepared.Spec).
func Prepare(s *spec.Lab, seed int64, protocols []string) (*Prepared, error) {
	srv, err := checkServer(s.Server, protocols)
	if err != nil {
		return nil, err
	}
	if err := impl.Canonical(&s.Server); err != nil {
		return nil, err
	}
	p := &Prepared{Far: FarServer, Spec: s, Seed: seed, Protocols: protocols, PageArg: s.Page, Impl: srv}
	pg, err := page.Load(s.Page, seed)
	if err != nil {
		return nil, pageError(s.Page, err)
	}
	if !page.IsSynthetic(s.Page) && isPageFile(s.Page) {
		if abs, err := filepath.Abs(s.Page); err == nil {
			p.PageArg = abs
		}
	}
	// The same rule as `serve --shards`: a one-origin page is served as it is; otherwise sharded.
	if !(s.Shards == 1 && s.ShardMode == string(page.ShardRoundRobin) && len(pg.Origins) == 1) {
		if pg, err = pg.Shard(s.Shards, page.ShardMode(s.ShardMode)); err != nil {
			return nil, err
		}
	}
	p.Page = pg
	if s.Server.Config != "" {
		if abs, err := filepath.Abs(s.Server.Config); err == nil {
			s.Server.Config = abs
		}
		// The user's configuration, rendered for the page as served and tested by the server in a
		// scratch directory removed again: one it refuses is bad input, found before anything exists.
		if err := impl.DryRun(context.Background(), srv, s.Server, protocols, pg); err != nil {
			return nil, err
		}
	}
	r, err := profile.Parse(s.Network)
	if err != nil {
		return nil, networkError(err)
	}
	if err := p.path(r); err != nil {
		return nil, err
	}
	return p, nil
}

// PrepareLive checks a live lab's path, creating nothing: network is the profile in front of the
// egress router — for the local internet (far FarInternet) with each site's extra round trip as
// origin_delay (sites.Profile), for public sites (FarHost) on top of the real path.
func PrepareLive(far Far, network string, seed int64) (*Prepared, error) {
	var r profile.Resolved
	var err error
	switch far {
	case FarInternet:
		r, err = sites.Profile(network)
	case FarHost:
		if network == "" {
			network = "native"
		}
		r, err = profile.Parse(network)
	default:
		return nil, fmt.Errorf("lab: PrepareLive: far side %d is not a live one", far)
	}
	if err != nil {
		return nil, networkError(err)
	}
	p := &Prepared{Far: far, Seed: seed}
	if err := p.path(r); err != nil {
		return nil, err
	}
	return p, nil
}

// path completes p with the resolved profile r: the congestion control checked, the emulator's
// configuration made (traces loaded).
func (p *Prepared) path(r profile.Resolved) error {
	if err := checkCongestionControl(r.CC); err != nil {
		return err
	}
	cfg, err := emulator.ConfigFromProfile(r, p.Origins(), uint64(p.Seed))
	if err != nil {
		return networkError(err)
	}
	p.Profile, p.Emulator = r, cfg
	return nil
}

// checkServer refuses what the chosen server implementation cannot serve or honour (its Check),
// a server that is not installed, and a server.config that cannot be read.
func checkServer(s spec.Server, protocols []string) (impl.Server, error) {
	srv, err := impl.Lookup(s.Impl)
	if err != nil {
		return nil, err
	}
	if err := srv.Check(s, protocols); err != nil {
		return nil, err
	}
	if bin := srv.Support().Binary; bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return nil, fielderr.New("server.impl", s.Impl, "%s is not installed here (%s missing); make setup installs it (Debian package %s)",
				s.Impl, bin, srv.Support().Package)
		}
	}
	if s.Config != "" {
		// a regular file only, opened without blocking (docs/bad-input.md); rendered by DryRun later
		f, err := userpath.Open(s.Config, impl.MaxConfigBytes)
		if err != nil {
			return nil, userpath.Field("server.config", err)
		}
		f.Close()
	}
	return srv, nil
}

func isPageFile(name string) bool {
	return strings.ContainsAny(name, "/\\") || strings.HasSuffix(name, ".json")
}

// pageError names the page (and the file) in errors from inside a page.
func pageError(name string, err error) error {
	fe, ok := fielderr.As(err)
	if !ok {
		return &fielderr.Error{Field: "page", Value: fielderr.Quote(name), Allowed: err.Error()}
	}
	if fe.Field == "page" {
		return err
	}
	c := *fe
	c.Field = "page (" + fielderr.Cut(name) + "): " + fe.Field
	return &c
}

// networkError prefixes profile errors with the spec field.
func networkError(err error) error {
	var pe *profile.Error
	if errors.As(err, &pe) {
		return &fielderr.Error{Field: "network", Allowed: pe.Error()}
	}
	return err
}

// checkCongestionControl refuses a congestion control the kernel does not offer (the route
// would fail later, after the topology was built).
func checkCongestionControl(cc string) error {
	if cc == "" {
		return nil
	}
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if err != nil {
		return nil // cannot tell here; building the routes reports it
	}
	avail := strings.Fields(string(b))
	for _, a := range avail {
		if a == cc {
			return nil
		}
	}
	return &fielderr.Error{Field: "network", Value: fmt.Sprintf("%q", "cc="+cc), Allowed: "this kernel offers " + strings.Join(avail, ", ") + " (load the module, e.g. modprobe tcp_" + cc + ")"}
}
