package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
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
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/trial"
)

// benchmark is a `bench` subcommand: its line in `bench -h`, and what runs it.
type benchmark struct {
	summary string
	run     func(args []string) error
}

// benchmarks are the `bench` subcommands, each in its own file (cmd_bench_*.go).
var benchmarks = map[string]benchmark{
	"link":    {"emulator fidelity (RTT error, goodput, loss) and capacity", runBenchLink},
	"loader":  {"page loads through real trials: loader overhead (PLT, CPU ms) and wire efficiency at 1 Mbit/s", runBenchLoader},
	"servers": {"each server under test: imgur's PLT and the server's CPU per load over h1s and h2, unimpaired path", runBenchServers},
	"tcpplus": {"cwnd after one loss, cubic vs TCP+", benchTCPPlus},
}

func init() {
	register("bench", command{
		Runs:    true,
		Summary: "print benchmark figures: bench link, loader, servers, tcpplus, variability, visual, why",
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
	fs, asJSON := newBenchFlags("link", "usage: wirelab-engine bench link [--quick] [--json] [--only PARTS] [--runs N] [--peers auto|rt|normal] [--packet-log]\n                                 [--halt-poll DURATION] [--cpuprofile FILE] [--memprofile FILE]\n\nMeasures the emulated path: RTT error (TCP connect times at one-way delays 5, 50, 250 ms),\ncubic goodput against 1, 10 and 100 Mbit/s, realised loss at 1 % and 3 %, capacity and CPU\nper packet through a 10 ms path without a rate cap (TCP buffers up to 32 MB), and CPU per\npacket through a 100 Mbit/s queue with each discipline (drop-tail, CoDel, FQ-CoDel, PIE,\nDOCSIS-PIE, RED); the TUN devices' drop counters throughout. Every run's figures are printed,\nand the worst run against the emulator's targets (RTT error p99 ≤ 0.5 ms at every delay;\n≥ 5,000 Mbit/s at ≤ 1.5 µs CPU per packet, 0 drops).\nCPU is getrusage(2) of this process, where the emulator runs. Other real-time processes seen\nduring the run are listed (they compete with the emulator's threads). On a VM whose idle\nvCPUs are governed by haltpoll, every run holds guest halt polling at --halt-poll\n(docs/network.md, \"Host latency\").\nNeeds root.\n\nflags:")
	quick := fs.Bool("quick", false, "short runs: finishes within 60 s")
	only := fs.String("only", "", "comma-separated parts to run: "+strings.Join(bench.LinkParts, ", ")+" (default all)")
	peers := fs.String("peers", bench.PeersAuto, "scheduling of the traffic peers: auto (real-time below the emulator for the RTT part, ordinary like a trial's servers and clients for the rest), rt (real-time throughout), normal (ordinary throughout)")
	packetLog := fs.Bool("packet-log", false, "keep the packet log in every run, as trials do (measures its cost)")
	runs := fs.Int("runs", 1, "how many times the "+strings.Join(bench.RepeatedParts, ", ")+" parts run; every run is reported, and the targets must hold in each")
	cpuProfile := fs.String("cpuprofile", "", "write a pprof CPU profile of the benchmark's process (the emulator) to this file")
	memProfile := fs.String("memprofile", "", "write a pprof allocation profile (every allocation sampled) of the emulator's process to this file at the end")
	haltPoll := fs.String("halt-poll", "", "guest halt-polling window every run holds on a haltpoll VM, e.g. 200us; 0 leaves the machine's setting alone (default: $"+netns.HaltPollEnv+", else "+netns.DefaultHaltPoll.String()+")")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	var hp time.Duration // 0: $WIRELAB_HALT_POLL (checked with every run command's environment, checkRunEnv)
	if *haltPoll != "" {
		d, err := netns.ParseHaltPoll(*haltPoll)
		if err != nil {
			return cli.Usagef("--halt-poll: %v", err)
		}
		hp = d
		if d == 0 {
			hp = -1 // the machine's setting left alone
		}
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
	if *runs < 1 || *runs > 100 {
		return cli.Usagef("runs: %d is out of range; use 1 to 100", *runs)
	}
	if err := cli.NeedRoot("bench link"); err != nil {
		return err
	}
	stopProfiles, err := startProfiles(*cpuProfile, *memProfile)
	if err != nil {
		return err
	}
	started := time.Now()
	ctx, cancel := cli.RunContext()
	defer cancel()
	res, err := bench.Link(bench.LinkOptions{
		Ctx:       ctx,
		HaltPoll:  hp,
		Quick:     *quick,
		Only:      parts,
		Peers:     *peers,
		PacketLog: *packetLog,
		Runs:      *runs,
		Progress:  os.Stderr,
		NewRun: func(p string, seed uint64) (emulator.Config, error) {
			r, err := profile.Parse(p)
			if err != nil {
				return emulator.Config{}, err
			}
			return emulator.ConfigFromProfile(r, 1, seed)
		},
	})
	if perr := stopProfiles(); perr != nil && err == nil {
		err = perr
	}
	if err := benchOutcome(fs, res, err, started, *asJSON, func() { printLinkResult(res) }); err != nil {
		return err
	}
	if len(res.Errors) > 0 {
		return fmt.Errorf("bench link: %d part(s) failed: %s", len(res.Errors), strings.Join(res.Errors, "; "))
	}
	return nil
}

// newBenchFlags starts the flags of `bench NAME`: --json, and the usage text printed before the
// flags' defaults.
func newBenchFlags(name, usage string) (fs *flag.FlagSet, asJSON *bool) {
	fs = flag.NewFlagSet("bench "+name, flag.ContinueOnError)
	asJSON = fs.Bool("json", false, "print one JSON object on stdout (progress goes to stderr)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), usage)
		fs.PrintDefaults()
	}
	return fs, asJSON
}

// benchEngine is the start of a benchmark that runs this engine's commands as processes of their
// own: it needs root, and the engine's path.
func benchEngine(fs *flag.FlagSet) (self string, err error) {
	if err := cli.NeedRoot(fs.Name()); err != nil {
		return "", err
	}
	return os.Executable()
}

// benchOutcome ends a benchmark's run (fs its flags): interrupted, exit 130; failed, the error under
// the benchmark's name; else its result printed as JSON with the run's provenance (asJSON) or by
// text.
func benchOutcome(fs *flag.FlagSet, res any, err error, started time.Time, asJSON bool, text func()) error {
	if errors.Is(err, trial.ErrInterrupted) || errors.Is(err, bench.ErrLinkInterrupted) {
		return &cli.ExitError{Code: 130}
	}
	if err == nil && asJSON {
		err = printBenchJSON(res, started)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", fs.Name(), err)
	}
	if !asJSON {
		text()
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
		fmt.Printf("  run %d one-way %3.0f ms: p50 %+.3f ms  p99 %+.3f ms  (%d connects)\n", d.Run, d.OneWayMs, d.ErrorMsP50, d.ErrorMsP99, d.Samples)
	}
	for _, g := range r.Goodput {
		fmt.Printf("goodput %-28s %9.3f Mbit/s = %.4f of the rate\n", g.Profile, g.GoodputMbps, g.Ratio)
	}
	for _, l := range r.Loss {
		fmt.Printf("loss %-16s realised %.4f over %d packets\n", l.Profile, l.Realized, l.Packets)
	}
	for _, c := range r.CapacityRuns {
		fmt.Printf("capacity run %d %s: %.0f Mbit/s, %.3f µs CPU per packet (%.3f per data packet), %.2f cores, %d drops\n", c.Run, c.Profile, c.GoodputMbps, c.CPUUsPerPacket, c.CPUUsPerDataPacket, c.CPUCores, c.Drops)
	}
	for _, d := range r.Disciplines {
		fmt.Printf("discipline run %d %-10s at %s: %6.0f Mbit/s, %.3f µs CPU per packet (%.3f per data packet), %d queue drops, %d device drops, sojourn p50 %.2f ms p99 %.2f ms\n",
			d.Run, d.Discipline, bench.DisciplineRate, d.GoodputMbps, d.CPUUsPerPacket, d.CPUUsPerDataPacket, d.DropsQueue, d.DeviceDrops, d.SojournP50Ms, d.SojournP99Ms)
	}
	if t := r.Targets; t != nil {
		met := map[bool]string{true: "met", false: "NOT met"}
		if len(r.RTTByDelay) > 0 {
			fmt.Printf("target RTT error p99 ≤ %.1f ms at every delay in every run: worst %+.3f ms — %s\n", bench.TargetRTTErrorMsP99, t.RTTErrorMsP99Max, met[t.RTTMet])
		}
		if len(r.CapacityRuns) > 0 {
			fmt.Printf("target ≥ %d Mbit/s at ≤ %.1f µs CPU per packet, 0 drops, in every run: worst %.0f Mbit/s, %.3f µs, %d drops — %s\n",
				bench.TargetCapacityMbps, bench.TargetCPUUsPerPacket, t.CapacityMbpsMin, t.CPUUsPerPacketMax, t.CapacityDrops, met[t.CapacityMet])
		}
		if t.DisciplineWorstName != "" {
			fmt.Printf("disciplines: worst CPU per packet %.3f µs (%s)\n", t.DisciplineCPUUsMax, t.DisciplineWorstName)
		}
	}
	fmt.Printf("CPU: %s\n", r.CPUSource)
	fmt.Printf("device drops %d, unexpected emulator drops %d, timer lateness p50 %.1f µs p99 %.1f µs max %.1f µs\n",
		r.DeviceDrops, r.UnexpectedDrop, r.LatenessUS.P50, r.LatenessUS.P99, r.LatenessUS.Max)
	fmt.Printf("machine: %d CPUs, load %s → %s, other processes busy %.0f %% of the CPUs\n", r.Machine.CPUs, r.Machine.LoadBefore, r.Machine.LoadAfter, r.Machine.OtherBusyPct)
	if h := r.Machine.HaltPoll; h != nil {
		held := "left at the machine's"
		if h.Held {
			held = fmt.Sprintf("held (the machine's own: %v)", time.Duration(h.WasNs))
		}
		fmt.Printf("guest halt polling: %v, %s\n", time.Duration(h.Ns), held)
	}
	if o := r.Machine.OtherRealtime; len(o) > 0 {
		fmt.Printf("other real-time processes during the run (they compete with the emulator's threads): %s\n", strings.Join(o, ", "))
	}
}

// startProfiles starts the CPU profile (cpu != "") and samples every allocation (mem != ""); the
// returned function stops the CPU profile and writes the allocation profile.
func startProfiles(cpu, mem string) (stop func() error, err error) {
	var cpuFile *os.File
	if cpu != "" {
		if cpuFile, err = os.Create(cpu); err != nil {
			return nil, cli.Usagef("cpuprofile: %v", err)
		}
		if err := pprof.StartCPUProfile(cpuFile); err != nil {
			cpuFile.Close()
			return nil, fmt.Errorf("cpuprofile: %w", err)
		}
	}
	if mem != "" {
		runtime.MemProfileRate = 1
	}
	return func() error {
		var errs []error
		if cpuFile != nil {
			pprof.StopCPUProfile()
			errs = append(errs, cpuFile.Close())
		}
		if mem != "" {
			f, err := os.Create(mem)
			if err != nil {
				return errors.Join(append(errs, fmt.Errorf("memprofile: %w", err))...)
			}
			errs = append(errs, pprof.Lookup("allocs").WriteTo(f, 0), f.Close())
		}
		return errors.Join(errs...)
	}, nil
}
