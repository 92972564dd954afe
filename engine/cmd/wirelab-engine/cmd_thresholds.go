package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/wirelab/wirelab/engine/budget"
	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
)

const thresholdsUsage = `usage: wirelab-engine thresholds --protocols P,… [--loads FILE|-] THRESHOLD…

Checks a sweep's budgets (docs/vitals.md, "Budgets"): thresholds in the load tests' language
extended to per-protocol page metrics, protocol comparisons, factors and aggregates over the
sweep's configurations:

  threshold := side OP side                OP: < <= > >= == !=
  side      := NUMBER | [NUMBER "*"] term
  term      := [AGG "("] [PROTOCOL "."] METRIC [")"]      AGG: min max mean median

  e.g. "h3.lcp_p75_ms < 2500"   "h2.tow_median_ms < 0.9 * h1s.tow_median_ms"   "max(h3.lcp_p75_ms) < 2500"

Metrics: BASE_STAT_ms for BASE tow, tow_first_packet, plt, fcp, lcp, speed_index, visually_complete and
STAT median, mean, p75, p90, p95, p99, min, max; cls_STAT; bytes_down_STAT; errors, error_rate,
loads. Statistics are over a configuration's loads of that protocol without an error.

  --protocols P,…   the protocols the sweep loads (a threshold naming another is refused)
  --loads FILE      the sweep's loads, one JSON object per line: {"trial_id", "label", "protocol",
                    "error" (null or text), "values": {load-record field: number or null}}
                    (a field of the record's client object as client.NAME: fcp reads
                    client.first_contentful_paint_ms);
                    - reads stdin. Without it the thresholds are only checked.

Prints (with --loads) one JSON object: {"passed": bool, "results": [{"expr", "aggregated",
"checked", "pass", "failures": [{"trial_id", "label", "left", "right"}]}]}.
Exit status: 0 every threshold passed (or, without --loads, every one is well-formed); 1 a
threshold failed; 2 bad input (one line naming thresholds[i] or the flag).
`

func init() {
	register("thresholds", command{
		Summary: "check a sweep's budgets (thresholds over its loads' page metrics)",
		Run:     func(args []string) error { return runThresholds(args, os.Stdin, os.Stdout) },
	})
}

func runThresholds(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("thresholds", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), thresholdsUsage) } // -h: stdout (parseFlags)
	protoList := fs.String("protocols", "", "")
	loadsFile := fs.String("loads", "", "")
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	if *protoList == "" {
		return cli.Usagef("--protocols: required: the protocols the sweep loads (e.g. h1s,h2)")
	}
	protocols := strings.Split(*protoList, ",")
	if fs.NArg() == 0 {
		return cli.Usagef("thresholds: no THRESHOLD given (wirelab-engine thresholds -h)")
	}
	var ts []budget.Threshold
	for i, expr := range fs.Args() {
		t, err := budget.Parse(expr, protocols)
		if err != nil {
			if fe, ok := fielderr.As(err); ok {
				fe.Field = fmt.Sprintf("thresholds[%d]", i)
				return cli.Usagef("%s", fe.Error())
			}
			return err
		}
		ts = append(ts, t)
	}
	if *loadsFile == "" {
		return nil
	}
	r, err := openInput("--loads", *loadsFile, 1<<34, stdin)
	if err != nil {
		return err
	}
	defer r.Close()
	var loads []budget.Load
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var l budget.Load
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return cli.Usagef("--loads: line %d: %v", n, err)
		}
		loads = append(loads, l)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("--loads: %w", err)
	}
	configs := budget.Figures(loads)
	out := struct {
		Passed  bool            `json:"passed"`
		Results []budget.Result `json:"results"`
	}{Passed: true, Results: []budget.Result{}}
	for _, t := range ts {
		res := t.Evaluate(configs)
		out.Results = append(out.Results, res)
		out.Passed = out.Passed && res.Pass
	}
	if err := json.NewEncoder(stdout).Encode(out); err != nil {
		return err
	}
	if !out.Passed {
		return &cli.ExitError{Code: 1}
	}
	return nil
}
