package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/loadgen"
	"github.com/wirelab/wirelab/engine/loadtest"
)

func init() {
	register("loadtest", command{
		Summary: "run a load test in the lab: the server under test behind the emulated path, VUs, server samples",
		Run:     runLoadtest,
	})
}

const loadtestUsage = `usage: wirelab-engine loadtest --spec SPEC.json --out DIR [--progress] [--generators N]
       wirelab-engine loadtest --check --spec SPEC.json

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

Exit status: 0 complete and every threshold passed; 1 a threshold failed, or the run could not run;
2 bad spec (nothing created); 130 interrupted (SIGINT/SIGTERM: the VUs are stopped, what was
measured is written — loadtest.json with interrupted true — and everything else removed).
`

func runLoadtest(args []string) error {
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	specFile := fs.String("spec", "", "")
	out := fs.String("out", "", "")
	progress := fs.Bool("progress", false, "")
	check := fs.Bool("check", false, "")
	generators := fs.Int("generators", 1, "")
	allowInternet := fs.Bool("allow-internet", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Print(loadtestUsage)
			return nil
		}
		return cli.Usagef("loadtest: %v (wirelab-engine loadtest -h lists the flags)", err)
	}
	if fs.NArg() != 0 {
		return cli.Usagef("loadtest: unexpected argument %q", fs.Arg(0))
	}
	if *specFile == "" {
		return cli.Usagef("--spec: required: the loadtest spec (JSON file)")
	}
	if *generators < 1 || *generators > loadgen.MaxParts {
		return cli.Usagef("--generators %d: want 1 to %d loadgen processes", *generators, loadgen.MaxParts)
	}
	data, err := readInput("--spec", *specFile, maxSpecBytes, os.Stdin)
	if err != nil {
		return err
	}
	spec, err := loadgen.Decode(data)
	if err != nil {
		return usageIfField(err)
	}
	spec.AllowInternet = spec.AllowInternet || *allowInternet
	if spec.Target != nil && *generators > 1 {
		return cli.Usagef("--generators %d: an external target is loaded by one generator (several are not built for targets yet)", *generators)
	}
	p, err := loadtest.Prepare(spec)
	if err != nil {
		return usageIfField(err)
	}
	if *check {
		return nil
	}
	if *out == "" {
		return cli.Usagef("--out: required: the load test's directory")
	}
	if err := checkOutputDir("--out", *out); err != nil {
		return err
	}
	if _, err := os.Stat(*out + "/" + loadtest.ResultFile); err == nil {
		return cli.Usagef("--out %s: already holds %s of another run; give a new directory", *out, loadtest.ResultFile)
	}
	if err := cli.NeedRoot("loadtest"); err != nil {
		return err
	}
	ctx, stop := cli.RunContext()
	defer stop()
	opts := loadtest.Options{OutDir: *out, Warn: os.Stderr, Generators: *generators}
	if *progress {
		opts.Progress = os.Stdout
	}
	res, err := loadtest.Run(ctx, p, opts)
	if errors.Is(err, loadtest.ErrInterrupted) {
		fmt.Fprintf(os.Stderr, "wirelab-engine: loadtest %s interrupted; what was measured is in %s\n", spec.LoadtestID, *out)
		return &cli.ExitError{Code: 130}
	}
	if err != nil {
		if _, ok := fielderr.As(err); ok { // a server.config the server refused once it ran
			return usageIfField(err)
		}
		return fmt.Errorf("loadtest %s: %w", spec.LoadtestID, err)
	}
	if !res.ThresholdsPassed {
		var failed []string
		for _, t := range res.Thresholds {
			if !t.Pass {
				failed = append(failed, t.Expr)
			}
		}
		return fmt.Errorf("loadtest %s: %d of %d thresholds failed: %s", spec.LoadtestID, len(failed), len(res.Thresholds), strings.Join(failed, "; "))
	}
	return nil
}
