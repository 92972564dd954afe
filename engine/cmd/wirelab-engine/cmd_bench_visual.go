package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/bench"
	"github.com/wirelab/wirelab/engine/internal/cli"
)

func init() {
	benchmarks["visual"] = benchmark{"the cost of Chromium's visual capture (wall time and PLT with and without screenshots); Speed Index vs Lighthouse's speedline", runBenchVisual}
}

const benchVisualUsage = `usage: wirelab-engine bench visual [--pages twitter,youtube,paint:hero,paint:grid,paint:article] [--nets cable,lte] [--protos h1s,h2,h3]
                                   [--runs 5] [--traces DIR [--speedline DIR] [--node PATH]] [--json]

Pages are corpus pages (whose filmstrip is nearly white: their images are not pictures) and the
paint pages the benchmark builds (paint:hero, paint:grid, paint:article: a saved site of a heading,
text, a stylesheet and JPEG pictures from a seed, served as a mirrored page).
For each page × network profile a lab (the built-in server behind the emulated path) serves the
page; for each protocol --runs pairs of Chromium loads run, one without screenshots and one with
(browse --screenshots: the frames Speed Index, visually complete and the visual progress come
from), the order alternating from pair to pair. Each load is a whole browse process, Chromium's
start and exit included, as in a trial. Prints per case the medians of wall time and PLT without
and with, and the median of the pairs' ratios; over every pair the median ratio, against the
target (visual metrics add ≤ 15 % to a Chromium load's wall time; issue 31).

With --traces DIR one more load per case writes its visual trace to DIR (browse --visual-trace);
with --speedline DIR (scripts/speedline, after npm ci there) Lighthouse's Speed Index
implementation, speedline-core with Lighthouse's options (fastMode) and exact, is run on the same
traces with wirelab's time origin, and each load's Speed Index is printed beside Lighthouse's,
with the error of the baseline, the first contentful paint taken as the Speed Index.
Needs root and Chromium (and node for --speedline). docs/vitals.md has the figures.

flags:`

func runBenchVisual(args []string) error {
	fs, asJSON := newBenchFlags("visual", benchVisualUsage)
	pages := fs.String("pages", "twitter,youtube,"+strings.Join(bench.PaintPages, ","), "pages (corpus names, "+strings.Join(bench.PaintPages, ", ")+", synthetic names or page files)")
	nets := fs.String("nets", "cable,lte", "network profiles")
	protos := fs.String("protos", "h1s,h2,h3", "protocols: h1s, h2, h3")
	runs := fs.Int("runs", 5, "pairs of loads (without, with screenshots) per page × profile × protocol")
	traces := fs.String("traces", "", "write one traced load per case to this directory (browse --visual-trace)")
	speedline := fs.String("speedline", "", "run Lighthouse's speedline-core (this directory: scripts/speedline, npm ci done) on the traces")
	node := fs.String("node", "node", "the node binary for --speedline")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *runs < 1 || *runs > 1000 {
		return cli.Usagef("runs: got %d; must be 1–1000", *runs)
	}
	protocols := strings.Split(*protos, ",")
	for _, p := range protocols {
		if !slices.Contains([]string{"h1s", "h2", "h3"}, p) {
			return cli.Usagef("protos: got %q; allowed: h1s, h2, h3", p)
		}
	}
	if *speedline != "" {
		if *traces == "" {
			return cli.Usagef("speedline: needs --traces DIR (the traces it reads)")
		}
		if _, err := os.Stat(filepath.Join(*speedline, "node_modules", "speedline-core")); err != nil {
			return cli.Usagef("speedline: %s has no node_modules/speedline-core; run npm ci there first (make speedline)", *speedline)
		}
	}
	if err := checkOutputDir("--traces", *traces); err != nil {
		return err
	}
	self, err := benchEngine(fs)
	if err != nil {
		return err
	}
	started := time.Now()
	res, err := bench.Visual(bench.VisualOptions{Pages: strings.Split(*pages, ","), Profiles: strings.Split(*nets, ","),
		Protocols: protocols, Runs: *runs, TraceDir: *traces, Speedline: *speedline, Node: *node, Engine: self, Progress: os.Stderr})
	if err := benchOutcome(fs, res, err, started, *asJSON, func() { printVisualResult(res, *speedline != "") }); err != nil {
		return err
	}
	errs := 0
	for _, c := range res.Cases {
		errs += c.Errors
	}
	if errs > 0 {
		return fmt.Errorf("bench visual: %d loads failed", errs)
	}
	return nil
}

func printVisualResult(r *bench.VisualResult, compared bool) {
	fmt.Printf("visual capture: wall time and PLT of a Chromium load without → with screenshots (medians; ratio: median of the pairs' on ÷ off)\n")
	fmt.Printf("  %-10s %-8s %-5s %5s %21s %6s %21s %6s\n", "page", "net", "proto", "pairs", "wall ms", "ratio", "PLT ms", "ratio")
	for _, c := range r.Cases {
		fmt.Printf("  %-10s %-8s %-5s %5d %9.0f → %9.0f %6.3f %9.1f → %9.1f %6.3f", c.Page, c.Profile, c.Protocol, c.Pairs,
			c.WallOffMs, c.WallOnMs, c.WallRatio, c.PLTOffMs, c.PLTOnMs, c.PLTRatio)
		if c.Errors > 0 {
			fmt.Printf("  (%d errors: %s)", c.Errors, c.FirstError)
		}
		fmt.Println()
	}
	verdict := "met"
	if r.OverheadPct > r.TargetPct {
		verdict = "NOT met"
	}
	fmt.Printf("  all pairs: wall ratio %.3f (%+.1f %%; target ≤ %.0f %%: %s), PLT ratio %.3f\n", r.WallRatio, r.OverheadPct, r.TargetPct, verdict, r.PLTRatio)
	if len(r.Checks) > 0 {
		fmt.Printf("Speed Index: wirelab (WebPageTest's histogram method) vs Lighthouse (speedline-core, fastMode) on the same trace, same time origin\n")
		fmt.Printf("  %-10s %-8s %-5s %9s %9s %9s %8s %9s %8s %9s %9s\n", "page", "net", "proto", "wirelab", "LH", "exact", "error", "FCP", "error", "VC", "LH VC")
		for _, c := range r.Checks {
			if c.Error != "" {
				fmt.Printf("  %-10s %-8s %-5s %s\n", c.Page, c.Profile, c.Protocol, c.Error)
				continue
			}
			if !compared {
				fmt.Printf("  %-10s %-8s %-5s %9.1f %9s %9s %8s %9.1f %8s %9.1f  %s\n", c.Page, c.Profile, c.Protocol, c.SpeedIndexMs, "-", "-", "-", c.FCPMs, "-", c.VisuallyCompleteMs, c.Trace)
				continue
			}
			fmt.Printf("  %-10s %-8s %-5s %9.1f %9.1f %9.1f %+8.1f %9.1f %+8.1f %9.1f %9.1f\n", c.Page, c.Profile, c.Protocol,
				c.SpeedIndexMs, c.LighthouseSIMs, c.ExactSIMs, c.SpeedIndexMs-c.LighthouseSIMs, c.FCPMs, c.FCPMs-c.LighthouseSIMs,
				c.VisuallyCompleteMs, c.LighthouseVCMs)
		}
		if r.Compared > 0 {
			fmt.Printf("  |error| against Lighthouse's Speed Index over %d loads: wirelab median %.1f ms (%.2f %%), max %.1f ms; baseline (FCP as the Speed Index) median %.1f ms (%.2f %%), max %.1f ms\n",
				r.Compared, r.SIErrMedianMs, r.SIErrMedianPct, r.SIErrMaxMs, r.BaselineErrMedianMs, r.BaselineErrMedPct, r.BaselineErrMaxMs)
		}
	}
	fmt.Printf("  machine: %d CPUs, load %s → %s (%.0f s)\n", r.Machine.CPUs, r.Machine.LoadBefore, r.Machine.LoadAfter, r.Seconds)
}
