package main

import (
	"fmt"
	"os"
	"time"

	"github.com/wirelab/wirelab/engine/bench"
	"github.com/wirelab/wirelab/engine/internal/cli"
)

func runBenchLoader(args []string) error {
	fs, asJSON := newBenchFlags("loader", "usage: wirelab-engine bench loader [--quick] [--json]\n\nRuns real trials (topology, emulator, serve, one fetch process per load) and reports the loader's\noverhead on an unimpaired path (imgur over h2 and h1s: median PLT and CPU ms per load) and the wire\nefficiency at 1 Mbit/s, 150 ms RTT (bytes on the wire ÷ rate ÷ ToW) for twitter, youtube and imgur\nover h1s and h2. Needs root.\n\nflags:")
	quick := fs.Bool("quick", false, "fewer loads: 10 per protocol on the unimpaired path, 1 per page and protocol at 1 Mbit/s (about a minute)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if err := cli.NeedRoot("bench loader"); err != nil {
		return err
	}
	ctx, stop := cli.RunContext()
	defer stop()
	started := time.Now()
	res, err := bench.Loader(ctx, bench.LoaderOptions{Quick: *quick, Progress: os.Stderr})
	return benchOutcome(fs, res, err, started, *asJSON, func() { printLoaderResult(res) })
}

func printLoaderResult(res *bench.LoaderResult) {
	fmt.Println("loader overhead, unimpaired path (profile native), one fetch process per load:")
	for _, o := range res.Overhead {
		fmt.Printf("  %-8s %-4s %3d loads (%d errors): PLT median %7.1f ms (min %.1f, max %.1f), CPU %6.1f ms/load median (mean %.1f); lateness p99 %.0f µs\n",
			o.Page, o.Protocol, o.Loads, o.Errors, o.PLTMsMedian, o.PLTMsMin, o.PLTMsMax, o.CPUMsMedian, o.CPUMsMean, o.LatenessP99US)
	}
	fmt.Println("wire efficiency at 1 Mbit/s, 150 ms RTT (bytes down × 8 ÷ rate ÷ ToW; body only in parentheses):")
	for _, w := range res.WireEfficiency {
		fmt.Printf("  %-8s %-4s %2d loads (%d errors): ToW median %8.1f ms, efficiency %.3f (body %.3f), %d bytes down for %d body bytes; lateness p99 %.0f µs\n",
			w.Page, w.Protocol, w.Loads, w.Errors, w.ToWMs, w.Efficiency, w.BodyEfficiency, w.BytesDown, w.BodyBytes, w.LatenessP99US)
	}
	m := res.Machine
	fmt.Printf("machine: %d CPUs, load %s → %s, other processes busy %.0f %% of the CPUs; %.0f s\n", m.CPUs, m.LoadBefore, m.LoadAfter, m.OtherBusyPct, res.DurationS)
}
