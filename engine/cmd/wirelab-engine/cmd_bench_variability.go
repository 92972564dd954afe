package main

import (
	"fmt"
	"os"
	"time"

	"github.com/wirelab/wirelab/engine/bench"
	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/internal/seam"
)

func init() {
	benchmarks["variability"] = benchmark{"PLT spread between runs: Chromium vs dependency-graph replay (study W's Epload check)", runBenchVariability}
}

func runBenchVariability(args []string) error {
	fs, asJSON := newBenchFlags("variability", "usage: wirelab-engine bench variability [--runs 20] [--page twitter] [--net wang-epload] [--proto h2] [--compute-scale 1] [--json]\n\nLoads the page --runs times by replaying its dependency graph, then --runs times in Chromium,\nthrough the emulated path, and prints the spread of the PLT between runs (median and 80th percentile of\n|PLT − median| / median) for each. Needs root and Chromium.\n\nflags:")
	runs := fs.Int("runs", 20, "loads per loader")
	pg := fs.String("page", "twitter", "page (corpus name, synthetic name or page file); its dependency graph is replayed")
	netProfile := fs.String("net", "wang-epload", "network profile")
	proto := fs.String("proto", "h2", "protocol: h1s, h2 or h3")
	scale := fs.Float64("compute-scale", 1, "replay's computation scale")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *runs < 2 || *runs > 1000 {
		return cli.Usagef("runs: got %d; must be 2–1000", *runs)
	}
	if *proto != "h1s" && *proto != "h2" && *proto != "h3" {
		return cli.Usagef("proto: got %q; must be h1s, h2 or h3", *proto)
	}
	if !(*scale >= 0 && *scale <= seam.MaxComputeScale) { // NaN and ±Inf fail too
		return cli.Usagef("--compute-scale: got %v; must be a number 0–%d", *scale, seam.MaxComputeScale)
	}
	self, err := benchEngine(fs)
	if err != nil {
		return err
	}
	started := time.Now()
	res, err := bench.Variability(bench.VariabilityOptions{Runs: *runs, Page: *pg, Profile: *netProfile, Protocol: *proto,
		ComputeScale: *scale, Engine: self, Progress: os.Stderr})
	if err := benchOutcome(fs, res, err, started, *asJSON, func() { printVariabilityResult(res, *runs) }); err != nil {
		return err
	}
	if res.Chromium.Errors > 0 || res.Replay.Errors > 0 {
		return fmt.Errorf("bench variability: %d chromium and %d replay loads failed", res.Chromium.Errors, res.Replay.Errors)
	}
	return nil
}

func printVariabilityResult(res *bench.VariabilityResult, runs int) {
	fmt.Printf("variability: page %s, %s, %s, compute scale %g, %d runs each (%.0f s)\n", res.Page, res.Profile, res.Protocol, res.ComputeScale, runs, res.Seconds)
	for _, s := range []bench.Spread{res.Chromium, res.Replay} {
		fmt.Printf("  %-8s PLT median %7.1f ms   spread median %5.2f %%  p80 %5.2f %%  max %5.2f %%  (%d loads, %d errors)\n",
			s.Loader, s.MedianMs, 100*s.SpreadP50, 100*s.SpreadP80, 100*s.SpreadMax, s.Loads, s.Errors)
		if s.FirstError != "" {
			fmt.Printf("           first error: %s\n", s.FirstError)
		}
	}
	fmt.Printf("  machine: %d CPUs, load %s → %s\n", res.Machine.CPUs, res.Machine.LoadBefore, res.Machine.LoadAfter)
}
