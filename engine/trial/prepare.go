package trial

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/emulator"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/link/profile"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/sites"
)

// Prepared is a spec checked against everything it refers to — page, shards, profile, traces, the
// kernel's congestion controls — with what running it needs. Nothing has been created yet.
type Prepared struct {
	Spec     *Spec
	Page     *page.Page       // loaded (seeded) and sharded: what the server serves; nil for a live page
	Live     *Live            // a live page (url:…); nil otherwise
	PageArg  string           // the page argument for `serve --page` (absolute for files)
	Profile  profile.Resolved // the resolved network profile
	Emulator emulator.Config  // links and route knobs; the caller adds what it captures
	Sequence []Load           // every load in order
}

// Origins is the number of origin addresses the topology needs.
func (p *Prepared) Origins() int {
	if p.Live != nil {
		return len(sites.Served(sites.Catalog())) // the local internet's
	}
	return len(p.Page.Origins)
}

// Prepare checks s against everything it refers to. Every error is bad input (a *fielderr.Error
// or a *profile.Error) naming the field, except a failure to read the machine's settings.
func Prepare(s *Spec) (*Prepared, error) {
	if err := checkSupported(s); err != nil {
		return nil, err
	}
	if IsLive(s.Page) {
		return prepareLive(s)
	}
	p := &Prepared{Spec: s, PageArg: s.Page}
	pg, err := page.Load(s.Page, s.Seed)
	if err != nil {
		return nil, pageError(s.Page, err)
	}
	if page.IsSynthetic(s.Page) || !isPageFile(s.Page) {
		p.PageArg = s.Page
	} else if abs, err := filepath.Abs(s.Page); err == nil {
		p.PageArg = abs
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
		if err := checkServerConfig(s, pg); err != nil {
			return nil, err
		}
	}
	r, err := profile.Parse(s.Network)
	if err != nil {
		return nil, networkError(err)
	}
	if err := checkCongestionControl(r.CC); err != nil {
		return nil, err
	}
	cfg, err := emulator.ConfigFromProfile(r, len(pg.Origins), uint64(s.Seed))
	if err != nil {
		return nil, networkError(err)
	}
	p.Profile, p.Emulator = r, cfg
	rs := r
	s.NetworkRes = &rs
	p.Sequence = Sequence(s)
	return p, nil
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

// maxDelay is the longest one-way path of the profile: the base delay, the jitter and the
// largest per-origin extra (half of its RTT each way).
func maxDelay(r profile.Resolved) (up, down time.Duration) {
	var extra time.Duration
	for _, x := range r.OriginExtraRTT {
		extra = max(extra, x)
	}
	return r.Up.Delay + r.Up.Jitter + extra/2, r.Down.Delay + r.Down.Jitter + extra - extra/2
}
