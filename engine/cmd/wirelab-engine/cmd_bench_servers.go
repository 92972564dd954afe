package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/bench"
	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/server/impl"
)

func runBenchServers(args []string) error {
	fs, asJSON := newBenchFlags("servers", "usage: wirelab-engine bench servers [--quick] [--servers builtin,apache,…] [--json]\n\nRuns one real trial per server under test, in turn, in one run: the imgur page (133 objects) over\nh1s and h2 on an unimpaired path (profile native), each server with its own stream limit. Prints\nper server and protocol the median PLT and the server's CPU per load (its control group: every\nprocess it forks), per request, and its peak memory. Needs root.\n\nflags:")
	quick := fs.Bool("quick", false, "10 loads per protocol and server instead of 20")
	only := fs.String("servers", "", "comma-separated implementations (default: every one installed)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	var names []string
	if *only != "" {
		for i, n := range strings.Split(*only, ",") {
			if _, err := impl.Lookup(strings.TrimSpace(n)); err != nil {
				return cli.Usagef("servers[%d]: got %q; must be one of %s", i, n, strings.Join(impl.Names(), ", "))
			}
			names = append(names, strings.TrimSpace(n))
		}
	}
	if err := cli.NeedRoot("bench servers"); err != nil {
		return err
	}
	ctx, stop := cli.RunContext()
	defer stop()
	started := time.Now()
	res, err := bench.Servers(ctx, bench.ServersOptions{Quick: *quick, Servers: names, Progress: os.Stderr})
	return benchOutcome(fs, res, err, started, *asJSON, func() { printServersResult(res) })
}

func printServersResult(res *bench.ServersResult) {
	fmt.Printf("servers under test: %s over h1s and h2, network %s, one trial per server:\n", res.Page, res.Network)
	fmt.Printf("  %-8s %-24s %-4s %6s %14s %16s %18s %14s\n", "server", "version", "", "loads", "PLT median ms", "server CPU ms", "CPU µs/request", "peak mem MB")
	for _, r := range res.Rows {
		fmt.Printf("  %-8s %-24s %-4s %3d/%-2d %14.1f %16.2f %18.1f %14.1f\n", r.Server, r.Version, r.Protocol, r.Loads-r.Errors, r.Loads,
			r.PLTMsMedian, r.ServerCPUMsMedian, r.ServerCPUUsPerRequest, r.ServerMemPeakMBMedian)
	}
	m := res.Machine
	fmt.Printf("machine: %d CPUs, load %s → %s, other processes busy %.0f %% of the CPUs; %.0f s\n", m.CPUs, m.LoadBefore, m.LoadAfter, m.OtherBusyPct, res.DurationS)
}
