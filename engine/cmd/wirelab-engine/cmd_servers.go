package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/internal/conformance"
	"github.com/wirelab/wirelab/engine/internal/version"
	"github.com/wirelab/wirelab/engine/lab"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server/impl"
	"github.com/wirelab/wirelab/engine/spec"
)

func init() {
	register("servers", command{
		Runs:    true,
		Summary: "the servers under test (server.impl): what each serves, which knobs it honours; h2spec conformance",
		Run:     func(args []string) error { return runServers(args, os.Stdout) },
	})
}

const serversUsage = `usage: wirelab-engine servers ls [--json | --markdown]
       wirelab-engine servers conformance [--servers builtin,apache,…] [--markdown]

ls lists the implementations a trial's server.impl can name (docs/server.md, "Servers under test"):
the protocols each serves, how it honours the common knobs, its own table of knobs, its status
gauges and the version installed here. --markdown prints the tables of docs/server.md.

conformance runs the HTTP/2 conformance suite h2spec (v2.2.1, 145 cases without --strict) against
every server's h2 and h2c, each started as in a trial (native network) — needs root.
`

func runServers(args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, serversUsage)
		if len(args) == 0 {
			return cli.Usagef("servers: give a subcommand: ls or conformance")
		}
		return nil
	}
	switch args[0] {
	case "ls":
		return runServersLs(args[1:], stdout)
	case "conformance":
		return runServersConformance(args[1:], stdout)
	}
	return cli.Usagef("servers: got %q; the subcommands are ls and conformance", args[0])
}

// serverInfo is one line of `servers ls --json`.
type serverInfo struct {
	impl.Support
	Version   string `json:"version"`   // installed here ("" when it is not)
	Installed bool   `json:"installed"` // its binary exists
}

func listServers() []serverInfo {
	var out []serverInfo
	for _, s := range impl.All {
		info := serverInfo{Support: s.Support(), Installed: true}
		if info.Binary != "" {
			_, err := os.Stat(info.Binary)
			info.Installed = err == nil
			info.Version = s.Version()
		}
		out = append(out, info)
	}
	return out
}

func runServersLs(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("servers ls", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "one JSON array of the implementations")
	markdown := fs.Bool("markdown", false, "the tables of docs/server.md")
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	if fs.NArg() != 0 {
		return cli.Usagef("servers ls: unexpected argument %q", fs.Arg(0))
	}
	servers := listServers()
	switch {
	case *asJSON:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", " ")
		return enc.Encode(servers)
	case *markdown:
		fmt.Fprint(stdout, serversMarkdown(servers))
		return nil
	}
	for _, s := range servers {
		version := s.Version
		switch {
		case s.Binary == "":
			version = "(wirelab-engine)"
		case !s.Installed:
			version = "not installed (make setup)"
		}
		fmt.Fprintf(stdout, "%-8s %-24s %s\n", s.Name, strings.Join(s.Protocols, " "), version)
		fmt.Fprintf(stdout, "         %s\n", s.Description)
		for _, k := range s.Knobs {
			how := k.How
			if how == "" {
				how = "cannot be set: " + strings.Join(k.Accepts, ", ") + " only (" + k.Own + ")"
			}
			fmt.Fprintf(stdout, "         %-23s %s\n", k.Name, how)
		}
		if s.OwnKnobs != "" {
			fmt.Fprintf(stdout, "         %-23s %s\n", "own knobs", s.OwnKnobs)
		}
		fmt.Fprintf(stdout, "         %-23s %s\n", "status", s.Status)
	}
	return nil
}

// serversMarkdown renders the tables of docs/server.md from the registry (a test keeps the doc
// equal to it): what each implementation serves, and how it honours each common knob.
func serversMarkdown(servers []serverInfo) string {
	var b strings.Builder
	protocols := []string{"h1", "h1s", "h2", "h2c", "h3", "spdy3"}
	b.WriteString("| server.impl | package | " + strings.Join(protocols, " | ") + " | not served | status gauges |\n")
	b.WriteString("|---|---|" + strings.Repeat("---|", len(protocols)) + "---|---|\n")
	for _, s := range servers {
		pkg := s.Package
		if pkg == "" {
			pkg = "(wirelab-engine)"
		}
		fmt.Fprintf(&b, "| `%s` | %s |", s.Name, pkg)
		for _, p := range protocols {
			mark := " – |"
			for _, q := range s.Protocols {
				if q == p {
					mark = " ✓ |"
				}
			}
			b.WriteString(mark)
		}
		fmt.Fprintf(&b, " %s | %s |\n", s.NotServed, s.Status)
	}
	b.WriteString("\n| knob | " + strings.Join(names(servers), " | ") + " |\n")
	b.WriteString("|---|" + strings.Repeat("---|", len(servers)) + "\n")
	for i, k := range servers[0].Knobs {
		fmt.Fprintf(&b, "| `%s` |", k.Name)
		for _, s := range servers {
			kn := s.Knobs[i]
			cell := kn.How
			if cell == "" {
				cell = "only " + strings.Join(kn.Accepts, ", ") + ": " + kn.Own
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func names(servers []serverInfo) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = "`" + s.Name + "`"
	}
	return out
}

// conformanceResult is one (server, protocol) row of `servers conformance`.
type conformanceResult struct {
	Server   string   `json:"server"`
	Version  string   `json:"version"`
	Protocol string   `json:"protocol"`
	Passed   int      `json:"passed"`
	Failed   int      `json:"failed"`
	Skipped  int      `json:"skipped"`
	Failures []string `json:"failures"`
}

func runServersConformance(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("servers conformance", flag.ContinueOnError)
	only := fs.String("servers", strings.Join(impl.Names(), ","), "the implementations to test")
	markdown := fs.Bool("markdown", false, "a table for docs/server.md instead of JSON lines")
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	if fs.NArg() != 0 {
		return cli.Usagef("servers conformance: unexpected argument %q", fs.Arg(0))
	}
	var servers []impl.Server
	for i, name := range strings.Split(*only, ",") {
		s, err := impl.Lookup(strings.TrimSpace(name))
		if err != nil {
			return cli.Usagef("servers[%d]: got %q; must be one of %s", i, name, strings.Join(impl.Names(), ", "))
		}
		servers = append(servers, s)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("servers conformance: needs root (each server runs in a lab's namespaces)")
	}
	ctx, stop := cli.SignalContext(context.Background())
	defer stop()
	var rows []conformanceResult
	for _, s := range servers {
		res, err := conformanceOf(ctx, s)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name(), err)
		}
		for _, r := range res {
			if *markdown {
				rows = append(rows, r)
				continue
			}
			line, _ := json.Marshal(r)
			fmt.Fprintf(stdout, "%s\n", line)
		}
	}
	if *markdown {
		fmt.Fprintln(stdout, "| server.impl | version | protocol | passed | failed | failed cases |")
		fmt.Fprintln(stdout, "|---|---|---|---|---|---|")
		for _, r := range rows {
			var ids []string
			for _, f := range r.Failures {
				ids = append(ids, strings.Fields(f)[0])
			}
			fmt.Fprintf(stdout, "| `%s` | %s | %s | %d | %d | %s |\n", r.Server, r.Version, r.Protocol, r.Passed, r.Failed, strings.Join(ids, ", "))
		}
	}
	return nil
}

// conformanceOf starts s in a lab (native network, one origin serving a 200 kB object) and runs
// h2spec from the client namespace against each of its h2 and h2c.
func conformanceOf(ctx context.Context, s impl.Server) ([]conformanceResult, error) {
	var protocols []string
	for _, p := range s.Support().Protocols {
		if p == "h2" || p == "h2c" {
			protocols = append(protocols, p)
		}
	}
	if len(protocols) == 0 {
		return nil, nil
	}
	// One origin serving a 200 kB object, the server's defaults with its own stream limit (0),
	// which every implementation accepts.
	server, err := spec.DecodeServer([]byte(`{"impl":"` + s.Name() + `","max_concurrent_streams":0}`))
	if err != nil {
		return nil, err
	}
	p, err := lab.Prepare(&spec.Lab{Page: "synthetic:1x200kB", Shards: 1, ShardMode: "round-robin", Network: "native", Server: server}, 1, protocols)
	if err != nil {
		return nil, err
	}
	engine, err := os.Executable()
	if err != nil {
		return nil, err
	}
	l, err := lab.Start(ctx, p, lab.Options{Engine: engine})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	pg := p.Page
	const token = "h2spec"
	if err := l.Serve(token, "h2"); err != nil {
		return nil, err
	}
	ver := l.Version
	if s.Support().Binary == "" { // the built-in server is the engine's
		ver = "wirelab-engine " + version.String()
	}
	var out []conformanceResult
	for _, p := range protocols {
		port := "80"
		args := []string{engine, "h2spec", "--host", labaddr.OriginAddr(1).String(), "--path", page.LoadPrefix + token + pg.Objects[1].Path}
		if p == "h2" {
			port = "443"
			args = append(args, "--tls")
		}
		args = append(args, "--port", port)
		cmd := l.Topo.Command(netns.Client, args...)
		// h2spec waits at most 2 s per case (145 cases); a run that takes 10 minutes is stuck.
		timer := time.AfterFunc(10*time.Minute, func() { _ = cmd.Process.Kill() })
		b, err := cmd.Output()
		timer.Stop()
		if err != nil {
			return nil, fmt.Errorf("h2spec over %s: %w", p, err)
		}
		var res conformance.Result
		if err := json.Unmarshal(b, &res); err != nil {
			return nil, fmt.Errorf("h2spec over %s: %w", p, err)
		}
		out = append(out, conformanceResult{Server: s.Name(), Version: ver, Protocol: p, Passed: res.Passed,
			Failed: res.Failed, Skipped: res.Skipped, Failures: res.Failures})
	}
	return out, nil
}

func init() {
	register("h2spec", command{
		Summary: "run the HTTP/2 conformance suite h2spec against HOST:PORT (one JSON line; servers conformance runs it)",
		Run: func(args []string) error {
			fs := flag.NewFlagSet("h2spec", flag.ContinueOnError)
			host := fs.String("host", "", "the server's address (required)")
			port := fs.Int("port", 443, "its port")
			tls := fs.Bool("tls", false, "h2 over TLS (else h2c with prior knowledge)")
			path := fs.String("path", "/", "the path requested (a body above 64 KiB)")
			if err := parseFlags(fs, args); err != nil {
				return helpOK(err)
			}
			if *host == "" {
				return cli.Usagef("h2spec: --host is required")
			}
			res, err := conformance.H2Spec(*host, *port, *tls, *path)
			if err != nil {
				return err
			}
			return json.NewEncoder(os.Stdout).Encode(res)
		},
	})
}
