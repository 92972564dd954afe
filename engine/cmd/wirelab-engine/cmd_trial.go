package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/trial"
)

func init() {
	register("trial", command{
		Runs:    true,
		Summary: "run one trial (all protocols × repetitions of a spec) and write its directory",
		Run:     runTrial,
	})
}

const trialUsage = `usage: wirelab-engine trial --spec SPEC.json --out DIR [--progress]
       wirelab-engine trial --check (--spec SPEC.json | --specs SPECS.jsonl|-)

Runs one trial end to end (docs/trial-contract.md): the emulated path of the spec's network profile,
one built-in server for every origin, then every protocol × repetition as a fresh page load in the
client namespace. Writes DIR/loads.jsonl (one record per load, as each finishes), DIR/har/,
DIR/pcap/ (capture.pcap), DIR/frames/ (Chromium's screenshots), DIR/server/, DIR/engine.log and,
last, DIR/trial.json. Needs root.
A live page (page "url:https://h3.wirelab.test/…") is loaded as its site serves it, through the
egress router (docs/egress.md): from the local internet's sites (wirelab-engine sites), or — only
with "allow_internet": true, which wirelab sets for --allow-internet — from a public site through
this host's default route, at least 1 s between loads (docs/live.md).

  --spec FILE   the trial spec (JSON; unknown fields are errors)
  --out DIR     the trial directory (created when missing; may hold spec.json and engine.stderr)
  --progress    print one JSON line per event on stdout: ready, load, done
  --check       only validate, exactly as a run does before it creates anything (the spec, its
                page and page files, traces, server and client knobs); creates nothing, needs
                no root; with --out, the directory is checked too
  --specs FILE  with --check: several specs, one JSON object per line ("-": standard input);
                the first bad one is reported as "spec N (trial_id …): field: …"

Exit status: 0 trial complete (loads may have errors) or, with --check, every spec is valid;
1 the trial could not run, 2 bad spec (one line naming the field; nothing created), 130
interrupted (SIGINT/SIGTERM; everything removed, no trial.json).
`

func runTrial(args []string) error {
	fs := flag.NewFlagSet("trial", flag.ContinueOnError)
	rf := bindRunFlags(fs)
	specs := fs.String("specs", "", "")
	if err := parseOwnUsage(fs, args, trialUsage); err != nil {
		return helpOK(err)
	}
	if rf.check {
		return checkTrials(rf.spec, *specs, rf.out, os.Stdin)
	}
	if *specs != "" {
		return cli.Usagef("--specs: only with --check (a run takes one --spec)")
	}
	p, err := prepareTrial(rf.spec, rf.out)
	if err != nil {
		return err
	}
	if err := cli.NeedRoot("trial"); err != nil {
		return err
	}
	ctx, stop := cli.RunContext()
	defer stop()
	opts := trial.Options{OutDir: rf.out, Warn: os.Stderr}
	if rf.progress {
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
	data, err := readSpecFile(specFile)
	if err != nil {
		return nil, err
	}
	if err := checkTrialDir(out); err != nil {
		return nil, err
	}
	return decodeAndPrepare(data)
}

// decodeAndPrepare is the whole validation of one spec: what trial --check and a run both do.
func decodeAndPrepare(data []byte) (*trial.Prepared, error) {
	spec, err := trial.DecodeSpec(data)
	if err != nil {
		return nil, usageIfField(err)
	}
	p, err := trial.Prepare(spec)
	if err != nil {
		return nil, usageIfField(err)
	}
	return p, nil
}

func readSpecFile(specFile string) ([]byte, error) {
	return readInput("--spec", specFile, maxSpecBytes, nil)
}

// maxSpecBytes bounds a trial or loadtest spec (a spec names its page and traces; it does not
// hold them).
const maxSpecBytes = 1 << 20

// checkTrials is trial --check: one spec (--spec) or several (--specs, JSON lines), each decoded
// and prepared exactly as a run does; nothing is created. The first bad spec is a usage error.
func checkTrials(specFile, specsFile, out string, stdin io.Reader) error {
	if (specFile == "") == (specsFile == "") {
		return cli.Usagef("trial --check: give --spec FILE or --specs FILE|- (one of them)")
	}
	if out != "" {
		if err := checkTrialDir(out); err != nil {
			return err
		}
	}
	if specFile != "" {
		data, err := readSpecFile(specFile)
		if err != nil {
			return err
		}
		_, err = decodeAndPrepare(data)
		return err
	}
	// any size: each line is bounded by maxSpecBytes
	r, err := openInput("--specs", specsFile, 0, stdin)
	if err != nil {
		return err
	}
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxSpecBytes)
	n := 0
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		n++
		if _, err := decodeAndPrepare(line); err != nil {
			var id struct {
				TrialID string `json:"trial_id"`
			}
			_ = json.Unmarshal(line, &id)
			which := fmt.Sprintf("spec %d (trial_id %s)", n, fielderr.Quote(id.TrialID))
			if cli.IsUsage(err) {
				return cli.Usagef("%s: %v", which, err)
			}
			return fmt.Errorf("%s: %w", which, err)
		}
	}
	if err := sc.Err(); err != nil {
		return cli.Usagef("--specs %s: line %d: %v", specsFile, n+1, err)
	}
	if n == 0 {
		return cli.Usagef("--specs %s: no spec (one JSON object per line)", specsFile)
	}
	return nil
}

// checkTrialDir accepts a missing directory in an existing one (created later) or a directory
// holding no trial output yet (the control plane writes spec.json and engine.stderr there first).
func checkTrialDir(dir string) error {
	if err := checkOutputDir("--out", dir); err != nil {
		return err
	}
	for _, name := range []string{trial.TrialFile, trial.LoadsFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return cli.Usagef("--out %s: already holds %s of another run; give a new directory", dir, name)
		}
	}
	return nil
}
