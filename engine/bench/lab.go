package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/wirelab/wirelab/engine/emulator"
	"github.com/wirelab/wirelab/engine/lab"
	"github.com/wirelab/wirelab/engine/link/profile"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server/impl"
)

// Lab is an emulated path with the built-in server and DNS, where loads run as `browse` or
// `fetch` processes in the client namespace: bench variability, `pages record --net` and the
// browser's root tests. It is the trial's lab (engine/lab) — one lifecycle — with a loader that
// runs commands instead of a trial's load sequence.
type Lab struct {
	E      *emulator.Emulator
	Engine string // wirelab-engine binary (or a test binary acting as one)
	Env    []string
	Page   string // the page argument given to serve
	SPKI   string // the server certificate's SPKI hash (Chromium)
	CAFile string // the run's CA (fetch --ca)

	lab *lab.Lab
}

// LabConfig describes a Lab.
type LabConfig struct {
	Profile   string // network profile (docs/profile-grammar.md)
	Page      string // page name or file, as serve --page takes it
	Seed      int64  // page seed (default 1)
	Engine    string // wirelab-engine binary
	Env       []string
	Protocols string // what the server serves (default h1,h1s,h2,h3)
}

// StartLab builds the lab: topology, emulator, DNS and the built-in server, ready.
func StartLab(c LabConfig) (*Lab, error) {
	r, err := profile.Parse(c.Profile)
	if err != nil {
		return nil, err
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Protocols == "" {
		c.Protocols = "h1,h1s,h2,h3"
	}
	pg, err := page.Load(c.Page, c.Seed)
	if err != nil {
		return nil, err
	}
	if len(pg.Origins) != 1 { // served from one origin, as serve serves it with --shards 1
		if pg, err = pg.Shard(1, page.ShardRoundRobin); err != nil {
			return nil, err
		}
	}
	cfg, err := emulator.ConfigFromProfile(r, len(pg.Origins), uint64(c.Seed))
	if err != nil {
		return nil, err
	}
	cfg.Topology.Resolver = true
	env := append(os.Environ(), c.Env...)
	l, err := lab.Start(context.Background(), lab.Config{
		Page: pg, PageArg: c.Page, Seed: c.Seed, Shards: 1, ShardMode: string(page.ShardRoundRobin),
		Protocols: strings.Split(c.Protocols, ","), Server: impl.DefaultKnobs("builtin"), DNS: true,
		Emulator: cfg, Engine: c.Engine, Env: env,
		Log: func(format string, args ...any) {
			if strings.HasPrefix(format, "server:") {
				fmt.Fprintf(os.Stderr, format+"\n", args...)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	return &Lab{E: l.Emu, Engine: c.Engine, Env: c.Env, Page: c.Page, SPKI: l.Certs.SPKIHash, CAFile: l.Certs.CAPath(), lab: l}, nil
}

// RootURL is the root document's URL for a fresh token over proto (default ports).
func (l *Lab) RootURL(proto string) string {
	scheme := "https"
	if proto == "h1" || proto == "h2c" {
		scheme = "http"
	}
	return scheme + "://" + page.OriginHost(0) + page.LoadPrefix + page.NewToken() + "/"
}

// Run runs one `wirelab-engine ARGS…` in the client namespace and returns its stdout. A non-zero
// exit status is an error carrying the last stderr line (the stdout is returned all the same).
func (l *Lab) Run(args ...string) ([]byte, error) {
	cmd := l.E.Topo.Command(netns.Client, append([]string{l.Engine}, args...)...)
	cmd.Env = append(os.Environ(), l.Env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		return out, fmt.Errorf("%s %s: %w: %s", l.Engine, args[0], err, lines[len(lines)-1])
	}
	return out, nil
}

// Browse loads the page in Chromium over proto and returns the load's JSON summary.
func (l *Lab) Browse(proto string, extra ...string) (map[string]any, []byte, error) {
	args := append([]string{"browse", l.RootURL(proto), "--proto", proto, "--dns", netns.DNSAddr.String(), "--spki", l.SPKI, "--json"}, extra...)
	out, err := l.Run(args...)
	return decodeSummary(out, err)
}

// Fetch loads the page with the engine's loader over proto (extra: --mode replay …).
func (l *Lab) Fetch(proto string, extra ...string) (map[string]any, []byte, error) {
	args := append([]string{"fetch", l.RootURL(proto), "--proto", proto, "--dns", netns.DNSAddr.String(), "--ca", l.CAFile, "--json"}, extra...)
	out, err := l.Run(args...)
	return decodeSummary(out, err)
}

func decodeSummary(out []byte, err error) (map[string]any, []byte, error) {
	var m map[string]any
	if jerr := json.Unmarshal(out, &m); jerr != nil && err == nil {
		err = fmt.Errorf("not a JSON summary: %q", out)
	}
	return m, out, err
}

// Close stops the server and removes everything (the lab's Close).
func (l *Lab) Close() error {
	_, err := l.lab.Close()
	return err
}
