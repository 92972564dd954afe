package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/trial"
)

func init() {
	register("trial", command{
		Summary: "run one trial (all protocols × repetitions of a spec) and write its directory",
		Run:     runTrial,
	})
}

const trialUsage = `usage: wirelab-engine trial --spec SPEC.json --out DIR [--progress]

Runs one trial end to end (docs/trial-contract.md): the emulated path of the spec's network profile,
one built-in server for every origin, then every protocol × repetition as a fresh page load in the
client namespace. Writes DIR/loads.jsonl (one record per load, as each finishes), DIR/har/,
DIR/pcap/ (capture.pcap), DIR/server/, DIR/engine.log and, last, DIR/trial.json. Needs root.

  --spec FILE   the trial spec (JSON; unknown fields are errors)
  --out DIR     the trial directory (created when missing; may hold spec.json and engine.stderr)
  --progress    print one JSON line per event on stdout: ready, load, done

Exit status: 0 trial complete (loads may have errors), 1 the trial could not run, 2 bad spec
(nothing created), 130 interrupted (SIGINT/SIGTERM; everything removed, no trial.json).
`

func runTrial(args []string) error {
	fs := flag.NewFlagSet("trial", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	specFile := fs.String("spec", "", "")
	out := fs.String("out", "", "")
	progress := fs.Bool("progress", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Print(trialUsage)
			return nil
		}
		return cli.Usagef("trial: %v (wirelab-engine trial -h lists the flags)", err)
	}
	if fs.NArg() != 0 {
		return cli.Usagef("trial: unexpected argument %q", fs.Arg(0))
	}
	p, err := prepareTrial(*specFile, *out)
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("trial: needs root (network namespaces and TUN devices)")
	}
	// The control plane may die and leave stdout and stderr as broken pipes while this process
	// cleans up (it gets SIGTERM then): writes must fail with EPIPE instead of killing it.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	opts := trial.Options{OutDir: *out, Warn: os.Stderr}
	if *progress {
		opts.Progress = os.Stdout
	}
	if _, err := trial.Run(ctx, p, opts); err != nil {
		if errors.Is(err, trial.ErrInterrupted) {
			fmt.Fprintf(os.Stderr, "wirelab-engine: trial %s interrupted; everything removed, no trial.json\n", p.Spec.TrialID)
			return &cli.ExitError{Code: 130}
		}
		if _, ok := fielderr.As(err); ok {
			// found only once the server ran (a server.config it refused): bad input all the same
			return usageIfField(err)
		}
		return fmt.Errorf("trial %s: %w", p.Spec.TrialID, err)
	}
	return nil
}

// prepareTrial reads and checks everything before anything is created: every problem with the
// spec or the output directory is a usage error (exit 2).
func prepareTrial(specFile, out string) (*trial.Prepared, error) {
	if specFile == "" {
		return nil, cli.Usagef("--spec: required: the trial spec (JSON file)")
	}
	if out == "" {
		return nil, cli.Usagef("--out: required: the trial directory")
	}
	data, err := os.ReadFile(specFile)
	if err != nil {
		return nil, cli.Usagef("--spec %s: %v", specFile, errors.Unwrap(err))
	}
	spec, err := trial.DecodeSpec(data)
	if err != nil {
		return nil, usageIfField(err)
	}
	if err := checkTrialDir(out); err != nil {
		return nil, err
	}
	p, err := trial.Prepare(spec)
	if err != nil {
		return nil, usageIfField(err)
	}
	return p, nil
}

// checkTrialDir accepts a missing directory (created later) or one holding no trial output yet
// (the control plane writes spec.json and engine.stderr there first).
func checkTrialDir(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return cli.Usagef("--out %s: %v", dir, err)
	}
	if !st.IsDir() {
		return cli.Usagef("--out %s: is a file; give a directory", dir)
	}
	for _, name := range []string{trial.TrialFile, trial.LoadsFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return cli.Usagef("--out %s: already holds %s of another run; give a new directory", dir, name)
		}
	}
	return nil
}
