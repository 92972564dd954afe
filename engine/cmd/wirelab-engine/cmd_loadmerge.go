package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/loadgen"
	"github.com/wirelab/wirelab/engine/loadtest"
)

const loadmergeUsage = `usage: wirelab-engine loadmerge --spec SPEC.json [--out DIR [--server FILE] | --from K] NAME=FILE [NAME=FILE …]

Merges the outputs of the generators of one load test spread over several (docs/loadtest.md,
"Generators on a Dask cluster"): each FILE is what ` + "`wirelab-engine loadgen --part K/N --histograms`" + `
printed for generator NAME — its interval lines and, unless it was lost, its summary line. Prints
what one generator would have: one {"event":"interval",…} line per interval and the summary, with
every interval's counts summed over the generators, its latencies from the merged HDR histograms,
each generator's share, CPU and saturation (generators), and, when a generator ended without its
summary, the intervals it did not report marked degraded (generators_lost) and the summary degraded.

With --out, writes DIR as a lab run writes its directory instead (docs/loadtest.md, "A Dask
cluster"): DIR/intervals.jsonl (the merged intervals), DIR/server.jsonl (--server's samples, one
per interval: a server.jsonl of wirelab-engine loadtest --serve), last DIR/loadtest.json (outcomes
with server_at, the thresholds decided, degraded, generators); exit 1 after writing it when the
run is degraded (one line naming the lost generators) or a threshold failed.

With --from K, each FILE holds its generator's interval lines from index K on only (what it
reported since intervals 0…K−1 were merged; no summary line): prints the merged intervals K, …
and no summary — a cluster run's live progress merges each update's new intervals only, so an
update costs the same however long the run (a generator with fewer lines than another is taken
as lost from its last one: give every generator's lines up to the same interval).

Exit status: 0 merged (without --out a degraded run too: the summary says so); 2 bad input (one line naming the
file or line: a file that is not a generator's output, intervals without histograms).
`

func init() {
	register("loadmerge", command{
		Summary: "merge the interval lines of a load test's generators (HDR histograms merged exactly)",
		Run:     func(args []string) error { return runLoadmerge(args, os.Stdout) },
	})
}

func runLoadmerge(args []string, stdout io.Writer) error {
	started := time.Now()
	fs := flag.NewFlagSet("loadmerge", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), loadmergeUsage) } // -h: stdout (parseFlags)
	specFile := fs.String("spec", "", "")
	out := fs.String("out", "", "")
	serverFile := fs.String("server", "", "")
	from := fs.Int("from", -1, "")
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	if *specFile == "" {
		return cli.Usagef("--spec: required: the load test's spec (JSON), as its generators had it")
	}
	data, err := readInput("--spec", *specFile, maxSpecBytes, nil)
	if err != nil {
		return err
	}
	spec, err := loadgen.Decode(data)
	if err != nil {
		return usageIfField(err)
	}
	fromGiven := false
	fs.Visit(func(f *flag.Flag) { fromGiven = fromGiven || f.Name == "from" })
	if fromGiven && *from < 0 {
		return cli.Usagef("--from %d: want an interval index ≥ 0", *from)
	}
	if fromGiven && *out != "" {
		return cli.Usagef("--from %d: not with --out (the run's directory needs every interval and the summaries)", *from)
	}
	if *serverFile != "" && *out == "" {
		return cli.Usagef("--server %s: needs --out (the samples go into the directory written)", *serverFile)
	}
	if *out != "" {
		if err := checkOutputDir("--out", *out); err != nil {
			return err
		}
	}
	var samples []loadtest.Sample
	if *serverFile != "" {
		if samples, err = loadtest.ReadSamples(*serverFile); err != nil {
			return cli.Usagef("--server: %v", err)
		}
	}
	if fs.NArg() == 0 {
		return cli.Usagef("loadmerge: no generator given; want NAME=FILE for each")
	}
	var gens []loadgen.GeneratorOutput
	seen := map[string]bool{}
	for _, a := range fs.Args() {
		name, file, ok := strings.Cut(a, "=")
		if !ok || name == "" || file == "" {
			return cli.Usagef("loadmerge: %q: want NAME=FILE", a)
		}
		if seen[name] {
			return cli.Usagef("loadmerge: generator %s given twice", name)
		}
		seen[name] = true
		g, err := readGeneratorOutput(name, file)
		if err != nil {
			return cli.Usagef("loadmerge: %v", err)
		}
		gens = append(gens, g)
	}
	enc := json.NewEncoder(stdout)
	if fromGiven {
		ivs, err := loadgen.MergeFrom(spec, gens, *from)
		if err != nil {
			return cli.Usagef("loadmerge: %v", err)
		}
		for _, iv := range ivs {
			if err := enc.Encode(iv); err != nil {
				return err
			}
		}
		return nil
	}
	m, err := loadgen.Merge(spec, gens)
	if err != nil {
		return cli.Usagef("loadmerge: %v", err)
	}
	if *out != "" {
		res, err := loadtest.WriteMerged(*out, spec, m, samples, os.Args, started)
		var degraded *loadtest.DegradedError
		switch {
		case errors.As(err, &degraded):
			return err
		case err != nil:
			return fmt.Errorf("loadmerge: %w", err)
		}
		return thresholdsFailed(spec.LoadtestID, res)
	}
	for _, iv := range m.Intervals {
		if err := enc.Encode(iv); err != nil {
			return err
		}
	}
	return enc.Encode(m.Summary)
}

// readGeneratorOutput reads a loadgen's stdout: interval lines, then at most one summary. A last
// line cut short (a generator killed while writing) is left out; lines that are not JSON events
// are refused.
func readGeneratorOutput(name, file string) (loadgen.GeneratorOutput, error) {
	g := loadgen.GeneratorOutput{Name: name}
	f, err := os.Open(file)
	if err != nil {
		return g, fmt.Errorf("generator %s: %v", name, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var lines [][]byte
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	if err := sc.Err(); err != nil {
		return g, fmt.Errorf("generator %s: %s: %v", name, file, err)
	}
	for i, line := range lines {
		var ev struct {
			Event string `json:"event"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			if i == len(lines)-1 && g.Summary == nil {
				break // cut short by the generator's end
			}
			return g, fmt.Errorf("generator %s: %s line %d: not a JSON event", name, file, i+1)
		}
		switch {
		case g.Summary != nil:
			return g, fmt.Errorf("generator %s: %s line %d: a line after the summary", name, file, i+1)
		case ev.Event == "interval":
			var iv loadgen.Interval
			if err := json.Unmarshal(line, &iv); err != nil {
				return g, fmt.Errorf("generator %s: %s line %d: %v", name, file, i+1, err)
			}
			g.Intervals = append(g.Intervals, iv)
		case ev.Event == "summary":
			var s loadgen.Summary
			if err := json.Unmarshal(line, &s); err != nil {
				return g, fmt.Errorf("generator %s: %s line %d: %v", name, file, i+1, err)
			}
			g.Summary = &s
		default:
			return g, fmt.Errorf("generator %s: %s line %d: event %q is not a generator's", name, file, i+1, ev.Event)
		}
	}
	return g, nil
}
