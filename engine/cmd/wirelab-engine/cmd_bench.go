package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/bench"
	"github.com/wirelab/wirelab/engine/emulator"
	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/internal/shellquote"
	"github.com/wirelab/wirelab/engine/internal/version"
	"github.com/wirelab/wirelab/engine/link/profile"
)

// benchmarks are the `bench` subcommands, each in its own file (cmd_bench_*.go).
var benchmarks = map[string]struct {
	summary string
	run     func(args []string) error
}{
	"link":    {"emulator fidelity (RTT error, goodput, loss) and capacity", runBenchLink},
	"loader":  {"page loads through real trials: loader overhead (PLT, CPU ms) and wire efficiency at 1 Mbit/s", runBenchLoader},
	"servers": {"each server under test: imgur's PLT and the server's CPU per load over h1s and h2, unimpaired path", runBenchServers},
	"tcpplus": {"cwnd after one loss, cubic vs TCP+", benchTCPPlus},
}

func init() {
	register("bench", command{
		Summary: "print benchmark figures: bench link, loader, servers, tcpplus, variability",
		Run:     runBench,
	})
}

func runBench(args []string) error {
	names := make([]string, 0, len(benchmarks))
	for n := range benchmarks {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(args) == 0 {
		return cli.Usagef("bench: which benchmark? want one of %s", strings.Join(names, ", "))
	}
	if args[0] == "-h" || args[0] == "--help" {
		fmt.Println("usage: wirelab-engine bench NAME [flags] (NAME -h for its flags)\n\nbenchmarks:")
		for _, n := range names {
			fmt.Printf("  %-11s %s\n", n, benchmarks[n].summary)
		}
		return nil
	}
	b, ok := benchmarks[args[0]]
	if !ok {
		return cli.Usagef("bench: %q is not a benchmark; want one of %s", args[0], strings.Join(names, ", "))
	}
	return helpOK(b.run(args[1:]))
}

func runBenchLink(args []string) error {
	fs := flag.NewFlagSet("bench link", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "short runs: finishes within 60 s")
	asJSON := fs.Bool("json", false, "print one JSON object on stdout (progress goes to stderr)")
	only := fs.String("only", "", "comma-separated parts to run: "+strings.Join(bench.LinkParts, ", ")+" (default all)")
	peers := fs.String("peers", bench.PeersAuto, "scheduling of the traffic peers: auto (real-time below the emulator for the RTT part, ordinary like a trial's servers and clients for the rest), rt (real-time throughout), normal (ordinary throughout)")
	packetLog := fs.Bool("packet-log", false, "keep the packet log in every run, as trials do (measures its cost)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: wirelab-engine bench link [--quick] [--json] [--only PARTS] [--peers auto|rt|normal] [--packet-log]\n\nMeasures the emulated path: RTT error (TCP connect times at one-way delays 5, 50, 250 ms),\ncubic goodput against 1, 10 and 100 Mbit/s, realised loss at 1 % and 3 %, capacity and CPU\nper packet through a 10 ms path without a rate cap, and CPU per packet through a 100 Mbit/s queue\nwith each discipline (drop-tail, CoDel, FQ-CoDel, PIE, DOCSIS-PIE, RED); the TUN devices' drop\ncounters throughout.\nNeeds root.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return cli.Usagef("bench link: unexpected argument %q", fs.Arg(0))
	}
	var parts []string
	if *only != "" {
		for _, p := range strings.Split(*only, ",") {
			if !slices.Contains(bench.LinkParts, p) {
				return cli.Usagef("only: %q is not a part; use %s", p, strings.Join(bench.LinkParts, ", "))
			}
			parts = append(parts, p)
		}
	}
	switch *peers {
	case bench.PeersAuto, bench.PeersRT, bench.PeersNormal:
	default:
		return cli.Usagef("peers: %q is not a scheduling; use auto, rt or normal", *peers)
	}
	if err := cli.NeedRoot("bench link"); err != nil {
		return err
	}
	started := time.Now()
	res, err := bench.Link(bench.LinkOptions{
		Quick:     *quick,
		Only:      parts,
		Peers:     *peers,
		PacketLog: *packetLog,
		Progress:  os.Stderr,
		NewRun: func(p string, seed uint64) (emulator.Config, error) {
			r, err := profile.Parse(p)
			if err != nil {
				return emulator.Config{}, err
			}
			return emulator.ConfigFromProfile(r, 1, seed)
		},
	})
	if err != nil {
		return fmt.Errorf("bench link: %w", err)
	}
	if *asJSON {
		if err := printBenchJSON(res, started); err != nil {
			return fmt.Errorf("bench link: %w", err)
		}
	} else {
		printLinkResult(res)
	}
	if len(res.Errors) > 0 {
		return fmt.Errorf("bench link: %d part(s) failed: %s", len(res.Errors), strings.Join(res.Errors, "; "))
	}
	return nil
}

// printBenchJSON prints a benchmark's result as JSON (benchJSON).
func printBenchJSON(res any, started time.Time) error {
	b, err := benchJSON(res, started)
	if err != nil {
		return err
	}
	fmt.Println(string(b))
	return nil
}

// benchJSON is a benchmark's result (a struct whose JSON is an object), indented, with the run's
// provenance after its own fields: the command line, the engine's version and when it started.
func benchJSON(res any, started time.Time) ([]byte, error) {
	body, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	prov, err := json.Marshal(struct {
		Command   string `json:"command"`
		Engine    string `json:"engine"`
		StartedAt string `json:"started_at"`
	}{shellquote.Join(os.Args), version.String(), started.UTC().Format(time.RFC3339)})
	if err != nil {
		return nil, err
	}
	if len(body) < 2 || body[0] != '{' {
		return nil, fmt.Errorf("benchmark result %T is not a JSON object", res)
	}
	merged := body[:len(body)-1] // the result's object, open
	if len(merged) > 1 {
		merged = append(merged, ',')
	}
	merged = append(merged, prov[1:]...)
	var out bytes.Buffer
	if err := json.Indent(&out, merged, "", "  "); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func printLinkResult(r *bench.LinkResult) {
	fmt.Printf("RTT error (measured − configured, TCP connect): p50 %+.3f ms, p99 %+.3f ms\n", r.RTTErrorMsP50, r.RTTErrorMsP99)
	for _, d := range r.RTTByDelay {
		fmt.Printf("  one-way %3.0f ms: p50 %+.3f ms  p99 %+.3f ms  (%d connects)\n", d.OneWayMs, d.ErrorMsP50, d.ErrorMsP99, d.Samples)
	}
	for _, g := range r.Goodput {
		fmt.Printf("goodput %-28s %9.3f Mbit/s = %.4f of the rate\n", g.Profile, g.GoodputMbps, g.Ratio)
	}
	for _, l := range r.Loss {
		fmt.Printf("loss %-16s realised %.4f over %d packets\n", l.Profile, l.Realized, l.Packets)
	}
	c := r.Capacity
	fmt.Printf("capacity %s: %.0f Mbit/s, %.3f µs CPU per packet, %.2f cores\n", c.Profile, c.GoodputMbps, c.CPUUsPerPacket, c.CPUCores)
	for _, d := range r.Disciplines {
		fmt.Printf("discipline %-10s at %s: %6.0f Mbit/s, %.3f µs CPU per packet, %d queue drops, sojourn p50 %.2f ms p99 %.2f ms\n",
			d.Discipline, bench.DisciplineRate, d.GoodputMbps, d.CPUUsPerPacket, d.DropsQueue, d.SojournP50Ms, d.SojournP99Ms)
	}
	fmt.Printf("device drops %d, unexpected emulator drops %d, timer lateness p50 %.1f µs p99 %.1f µs max %.1f µs\n",
		r.DeviceDrops, r.UnexpectedDrop, r.LatenessUS.P50, r.LatenessUS.P99, r.LatenessUS.Max)
	fmt.Printf("machine: %d CPUs, load %s → %s, other processes busy %.0f %% of the CPUs\n", r.Machine.CPUs, r.Machine.LoadBefore, r.Machine.LoadAfter, r.Machine.OtherBusyPct)
}
