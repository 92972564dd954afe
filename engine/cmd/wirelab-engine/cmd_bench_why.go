package main

import (
	"fmt"
	"os"
	"time"

	"github.com/wirelab/wirelab/engine/bench"
	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/why"
)

func init() {
	benchmarks["why"] = benchmark{"the decomposition of every corpus load over h1s, h2, h3 at clean, 1 % loss, 256 kbit/s: sums, unattributed share, cost", runBenchWhy}
}

func runBenchWhy(args []string) error {
	fs, asJSON := newBenchFlags("why", `usage: wirelab-engine bench why [--quick] [--json] [--dump DIR]

Loads every corpus page once over h1s, h2 and h3 at three network profiles — clean (rtt=100ms,
bw=10mbit), 1 % loss (the same, loss=1%) and 256 kbit/s (rtt=100ms,bw=256kbit) — through real
trials, and checks each load's decomposition (docs/why.md): the largest |Σ why − tow_first_packet_ms|,
unattributed_ms as a share of the load's time on the wire (median, 95th percentile, maximum), each
part's share, and what the decompositions cost against the trials' wall time. The whole corpus takes
about 20 minutes (the 256 kbit/s loads are most of it). Needs root.

flags:`)
	quick := fs.Bool("quick", false, "three pages (twitter, flags, youtube) instead of the whole corpus (about 5 minutes)")
	dump := fs.String("dump", "", "keep every load's decomposition input under `DIR` (wirelab-engine why FILE decomposes one again)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if err := cli.NeedRoot("bench why"); err != nil {
		return err
	}
	ctx, stop := cli.RunContext()
	defer stop()
	started := time.Now()
	res, err := bench.Why(ctx, bench.WhyOptions{Quick: *quick, Progress: os.Stderr, Dump: *dump})
	return benchOutcome(fs, res, err, started, *asJSON, func() { printWhyResult(res) })
}

func printWhyResult(res *bench.WhyResult) {
	fmt.Println("decomposition of every load (docs/why.md): Σ why − tow_first_packet_ms, unattributed share of it (median / p95 / max), the largest parts")
	for _, r := range res.Rows {
		fmt.Printf("  %-8s %-4s %3d loads (%d errors): |Σ − tow| ≤ %.4f ms; unattributed %5.2f / %5.2f / %5.2f %%;", r.Profile, r.Protocol, r.Loads, r.Errors,
			r.MaxSumErrorMs, r.UnattributedMedianPct, r.UnattributedP95Pct, r.UnattributedMaxPct)
		for _, d := range why.Defs {
			if v := r.Parts[d.Key]; v >= 5 {
				fmt.Printf(" %s %.0f %%", d.Label, v)
			}
		}
		fmt.Println()
	}
	fmt.Printf("most unattributed: %s\n", res.MostUnattributed)
	fmt.Printf("cost: %.1f ms decomposing in %.0f ms of trials: %.3f %% (slowest load %.2f ms)\n", res.DecomposeMs, res.TrialsWallMs, res.OverheadPct, res.DecomposeMsMax)
	m := res.Machine
	fmt.Printf("machine: %d CPUs, load %s → %s; %.0f s\n", m.CPUs, m.LoadBefore, m.LoadAfter, res.DurationS)
}
