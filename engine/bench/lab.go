package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/wirelab/wirelab/engine/lab"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/spec"
)

// LabConfig describes a benchmark's lab: an emulated path with the built-in server and DNS, where
// loads run as `browse` or `fetch` processes in the client namespace (Browse, Fetch) — bench
// variability, `pages record --net` and the browser's root tests. It is a trial's lab
// (engine/lab), with a loader that runs commands instead of a trial's load sequence.
type LabConfig struct {
	Profile   string // network profile (docs/profile-grammar.md)
	Page      string // page name or file, as serve --page takes it
	Seed      int64  // page seed (default 1)
	Engine    string // wirelab-engine binary
	Env       []string
	Protocols string // what the server serves (default h1,h1s,h2,h3)
}

// StartLab prepares and starts the lab: topology, emulator, DNS and the built-in server, ready;
// the page served from one origin, as serve serves it with --shards 1. Env is added to this
// process's environment for the lab's children and the commands run in it.
func StartLab(c LabConfig) (*lab.Lab, error) {
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Protocols == "" {
		c.Protocols = "h1,h1s,h2,h3"
	}
	s := &spec.Lab{Page: c.Page, Shards: 1, ShardMode: string(page.ShardRoundRobin), Network: c.Profile, Server: spec.DefaultServer("builtin")}
	p, err := lab.Prepare(s, c.Seed, strings.Split(c.Protocols, ","))
	if err != nil {
		return nil, err
	}
	return lab.Start(context.Background(), p, lab.Options{Engine: c.Engine, Env: append(os.Environ(), c.Env...), DNS: true,
		Log: func(format string, args ...any) {
			if strings.HasPrefix(format, "server:") {
				fmt.Fprintf(os.Stderr, format+"\n", args...)
			}
		},
	})
}

// RootURL is the root document's URL for a fresh token over proto (default ports): the built-in
// server generates every response, so any token is served.
func RootURL(proto string) string {
	return page.Scheme(proto) + "://" + page.OriginHost(0) + page.LoadPrefix + page.NewToken() + "/"
}

// Browse loads the page in Chromium over proto in the lab's client namespace and returns the
// load's JSON summary.
func Browse(l *lab.Lab, proto string, extra ...string) (map[string]any, []byte, error) {
	args := append([]string{"browse", RootURL(proto), "--proto", proto, "--dns", labaddr.DNSAddr.String(), "--spki", l.SPKIHash, "--json"}, extra...)
	return decodeSummary(l.RunEngine(args...))
}

// Fetch loads the page with the engine's loader over proto (extra: --mode replay …).
func Fetch(l *lab.Lab, proto string, extra ...string) (map[string]any, []byte, error) {
	args := append([]string{"fetch", RootURL(proto), "--proto", proto, "--dns", labaddr.DNSAddr.String(), "--ca", l.CAFile, "--json"}, extra...)
	return decodeSummary(l.RunEngine(args...))
}

func decodeSummary(out []byte, err error) (map[string]any, []byte, error) {
	var m map[string]any
	if jerr := json.Unmarshal(out, &m); jerr != nil && err == nil {
		err = fmt.Errorf("not a JSON summary: %q", out)
	}
	return m, out, err
}
