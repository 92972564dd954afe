package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/loadgen"
	"github.com/wirelab/wirelab/engine/loadtest"
)

func init() {
	register("loadtest", command{
		Runs:    true,
		Summary: "run a load test in the lab: the server under test behind the emulated path, VUs, server samples",
		Run:     runLoadtest,
	})
}

const loadtestUsage = `usage: wirelab-engine loadtest --spec SPEC.json --out DIR [--progress] [--generators N]
       wirelab-engine loadtest --check --spec SPEC.json
       wirelab-engine loadtest --spec SPEC.json --out DIR --serve ADDR --allow-from IP[/BITS],… --await-start
       wirelab-engine loadtest --spec SPEC.json --out DIR --serving FILE --part K/N --await-start [--progress]

Runs one load test (docs/loadtest.md) in the lab a trial runs in: the spec's page served by its
server under test (server.impl) behind its emulated network, the virtual users as a loadgen child
in the client namespace, and the server sampled at every interval boundary (its control group's
CPU, memory, processes and threads; its own gauges: mod_status, stub_status, …). Writes
DIR/intervals.jsonl (the generator's intervals), DIR/server.jsonl (one server sample per interval),
DIR/engine.log and, last, DIR/loadtest.json (spec, provenance, emulator summary, the generator's
summary, outcomes with server_at, thresholds including the server's). Needs root.

  --spec FILE   the loadtest spec (JSON; schemas/loadtest-spec.schema.json; page or target required; - reads stdin)
  --out DIR     the load test's directory (created when missing)
  --progress    print {"event":"ready"}, every interval line and {"event":"done"} on stdout
  --check       check the spec exactly as a run would (page, network, server) and create nothing
  --generators N  run the VUs as N loadgen processes in the client namespace (each its part:
                loadgen --part K/N --histograms), their intervals merged exactly (loadmerge's
                merge: counts summed, HDR histograms merged); each one's lines are kept in
                DIR/generators/local-K.jsonl. One process holds at most RLIMIT_NOFILE connections
                (docs/loadtest.md). A generator lost mid-run marks the intervals after the loss
                degraded and fails the load test (exit 1, loadtest.json degraded true). Default 1
  --allow-internet  a target (spec.target) may be outside loopback and the run's local internet:
                public addresses, and private (RFC 1918) ones the spec names; never special-purpose
                ones (link-local, metadata 169.254.169.254, multicast, documentation, …). Without
                it such a target is refused before anything is sent (the control plane sets the
                spec's allow_internet only from its own --allow-internet flag)

A load test spread over a Dask cluster (docs/loadtest.md, "A Dask cluster"; wirelab loadtest
--cluster runs these on its workers):
  --serve ADDR  the server task: the lab's server half (the server under test, its control group,
                no emulator) reachable at ADDR:443 (80 for h1, h2c) — an address of this machine —
                through a relay that serves only --allow-from's addresses (others are closed and
                counted). Prints {"event":"serving","url","addr","port","names","ca"} on stdout,
                samples the server from the start instant (--await-start) into DIR/server.jsonl,
                runs until SIGINT/SIGTERM, writes DIR/serve.json; exit 0 (1: the server exited)
  --allow-from IP,…  with --serve: the generators' addresses (or prefixes, IP/BITS)
  --serving FILE  a generator task: FILE is the server task's serving line; the spec's network is
                this generator's users' access link (a live lab, far side the host, docs/egress.md)
                and loadgen runs --part K/N --histograms against the server at its addr (admitted
                as the run's own: --run-server). DIR/intervals.jsonl keeps its lines with histograms
  --part K/N    with --serving, or with a spec's target (an external target loaded over the
                cluster: the same live lab, no server task): this generator's share of the VUs
  --await-start after {"event":"ready"} (or serving), read the run's shared start instant from
                stdin: one line, Unix nanoseconds, at most 60 s ahead; mapped onto CLOCK_MONOTONIC

Exit status: 0 complete and every threshold passed; 1 a threshold failed, or the run could not run;
2 bad spec (nothing created); 130 interrupted (SIGINT/SIGTERM: the VUs are stopped, what was
measured is written — loadtest.json with interrupted true — and everything else removed).
`

// clusterSide is what the cluster flags ask for: a server task (serve valid) or a generator task
// (serving set, genSpec its target spec), or neither.
type clusterSide struct {
	serve   netip.Addr
	allow   []netip.Prefix
	serving *loadtest.Serving
	genSpec *loadgen.Spec
}

func clusterRole(spec *loadgen.Spec, serve, allowFrom, servingFile, part string, await bool, generators int, out string) (clusterSide, error) {
	var c clusterSide
	switch {
	case serve != "" && servingFile != "":
		return c, cli.Usagef("--serve and --serving: a task is the server or a generator, not both")
	case (serve != "" || servingFile != "") && generators > 1:
		return c, cli.Usagef("--generators %d: a cluster task runs one generator (its --part)", generators)
	case (serve != "" || servingFile != "") && !await:
		return c, cli.Usagef("--await-start: required with --serve and --serving (the run's shared start comes on stdin)")
	case await && serve == "" && servingFile == "" && spec.Target == nil:
		return c, cli.Usagef("--await-start: only with --serve, --serving or a spec's target (a cluster run's tasks)")
	case part != "" && servingFile == "" && spec.Target == nil:
		return c, cli.Usagef("--part %s: only with --serving or a spec's target (loadtest --generators N splits the VUs on one machine)", part)
	case part != "" && !await:
		return c, cli.Usagef("--part %s: needs --await-start (the run's generators share one start)", part)
	case allowFrom != "" && serve == "":
		return c, cli.Usagef("--allow-from: only with --serve")
	}
	if serve != "" {
		a, err := loadgen.ParseRunServer(serve)
		if err != nil {
			return c, cli.Usagef("--serve %s: %v", serve, err)
		}
		c.serve = a
		if allowFrom == "" {
			return c, cli.Usagef("--allow-from: required with --serve: the generators' addresses (the only ones the server answers)")
		}
		for _, f := range strings.Split(allowFrom, ",") {
			f = strings.TrimSpace(f)
			p, err := netip.ParsePrefix(f)
			if a, aerr := netip.ParseAddr(f); aerr == nil {
				p, err = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
			}
			if err != nil {
				return c, cli.Usagef("--allow-from %s: %q is not an IP address or prefix", allowFrom, f)
			}
			c.allow = append(c.allow, p.Masked())
		}
		if spec.Target != nil {
			return c, cli.Usagef("--serve: the spec names a target; a cluster run's server serves the spec's page (an external target over the cluster is not built)")
		}
	}
	if part != "" {
		if _, err := loadgen.ParsePart(part); err != nil {
			return c, cli.Usagef("--part %s: %v", part, err)
		}
	}
	if servingFile != "" {
		data, err := readInput("--serving", servingFile, maxSpecBytes, nil)
		if err != nil {
			return c, err
		}
		var sv loadtest.Serving
		if err := json.Unmarshal(data, &sv); err != nil || sv.Event != "serving" || sv.URL == "" || len(sv.Names) == 0 {
			return c, cli.Usagef("--serving %s: not a server task's serving line (wirelab-engine loadtest --serve prints it)", servingFile)
		}
		addr, err := loadgen.ParseRunServer(sv.Addr)
		if err != nil {
			return c, cli.Usagef("--serving %s: addr %s: %v", servingFile, sv.Addr, err)
		}
		ca := ""
		if sv.CA != "" {
			if out == "" {
				return c, cli.Usagef("--out: required: the load test's directory")
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return c, err
			}
			ca = filepath.Join(out, "serving-ca.pem")
			if err := os.WriteFile(ca, []byte(sv.CA), 0o644); err != nil {
				return c, err
			}
		}
		g, err := loadtest.GeneratorSpec(spec, sv.URL, sv.Names, addr.Unmap(), ca)
		if err != nil {
			return c, cli.Usagef("--serving %s: %v", servingFile, err)
		}
		c.serving, c.genSpec = &sv, g
	}
	return c, nil
}

func runLoadtest(args []string) error {
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	rf := bindRunFlags(fs)
	generators := fs.Int("generators", 1, "")
	allowInternet := fs.Bool("allow-internet", false, "")
	serveAddr := fs.String("serve", "", "")
	allowFrom := fs.String("allow-from", "", "")
	servingFile := fs.String("serving", "", "")
	part := fs.String("part", "", "")
	awaitStart := fs.Bool("await-start", false, "")
	if err := parseOwnUsage(fs, args, loadtestUsage); err != nil {
		return helpOK(err)
	}
	if rf.spec == "" {
		return cli.Usagef("--spec: required: the loadtest spec (JSON file)")
	}
	if *generators < 1 || *generators > loadgen.MaxParts {
		return cli.Usagef("--generators %d: want 1 to %d loadgen processes", *generators, loadgen.MaxParts)
	}
	data, err := readInput("--spec", rf.spec, maxSpecBytes, os.Stdin)
	if err != nil {
		return err
	}
	spec, err := loadgen.Decode(data)
	if err != nil {
		return usageIfField(err)
	}
	spec.AllowInternet = spec.AllowInternet || *allowInternet
	cl, err := clusterRole(spec, *serveAddr, *allowFrom, *servingFile, *part, *awaitStart, *generators, rf.out)
	if err != nil {
		return err
	}
	if cl.serving != nil {
		spec = cl.genSpec
	}
	if spec.Target != nil && *generators > 1 {
		return cli.Usagef("--generators %d: an external target is loaded by one generator (several are not built for targets yet)", *generators)
	}
	p, err := loadtest.Prepare(spec)
	if err != nil {
		return usageIfField(err)
	}
	if rf.check {
		return nil
	}
	if rf.out == "" {
		return cli.Usagef("--out: required: the load test's directory")
	}
	if err := checkOutputDir("--out", rf.out); err != nil {
		return err
	}
	if _, err := os.Stat(rf.out + "/" + loadtest.ResultFile); err == nil {
		return cli.Usagef("--out %s: already holds %s of another run; give a new directory", rf.out, loadtest.ResultFile)
	}
	if err := cli.NeedRoot("loadtest"); err != nil {
		return err
	}
	ctx, stop := cli.RunContext()
	defer stop()
	opts := loadtest.Options{OutDir: rf.out, Warn: os.Stderr, Generators: *generators, Part: *part}
	if rf.progress || cl.serve.IsValid() {
		opts.Progress = os.Stdout
	}
	if *awaitStart {
		opts.AwaitStart = os.Stdin
	}
	if cl.serve.IsValid() {
		_, err := loadtest.Serve(ctx, p, loadtest.ServeOptions{Options: opts, Listen: cl.serve, AllowFrom: cl.allow})
		if errors.Is(err, loadtest.ErrInterrupted) || (err == nil && ctx.Err() != nil) {
			return nil // stopped by its worker: the run's end
		}
		if err != nil {
			return fmt.Errorf("loadtest %s --serve: %w", spec.LoadtestID, err)
		}
		return nil
	}
	res, err := loadtest.Run(ctx, p, opts)
	if errors.Is(err, loadtest.ErrInterrupted) {
		fmt.Fprintf(os.Stderr, "wirelab-engine: loadtest %s interrupted; what was measured is in %s\n", spec.LoadtestID, rf.out)
		return &cli.ExitError{Code: 130}
	}
	if err != nil {
		if _, ok := fielderr.As(err); ok { // a server.config the server refused once it ran
			return usageIfField(err)
		}
		return fmt.Errorf("loadtest %s: %w", spec.LoadtestID, err)
	}
	return thresholdsFailed(spec.LoadtestID, res)
}

// thresholdsFailed is the one line of a load test whose thresholds did not all pass (exit 1), or nil.
func thresholdsFailed(id string, res *loadtest.Result) error {
	if res.ThresholdsPassed {
		return nil
	}
	var failed []string
	for _, t := range res.Thresholds {
		if !t.Pass {
			failed = append(failed, t.Expr)
		}
	}
	return fmt.Errorf("loadtest %s: %d of %d thresholds failed: %s", id, len(failed), len(res.Thresholds), strings.Join(failed, "; "))
}
