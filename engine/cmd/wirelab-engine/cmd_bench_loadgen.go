package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/bench"
	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/page"
)

func init() {
	benchmarks["loadgen"] = benchmark{"load generator: pages/s beside h2load on one server, 10 000 VUs with think time, bookkeeping cost", runBenchLoadgen}
}

func runBenchLoadgen(args []string) (rerr error) {
	fs := flag.NewFlagSet("bench loadgen", flag.ContinueOnError)
	parts := fs.String("parts", "pages,bookkeeping,vus", "parts to run: pages, bookkeeping (needs pages), vus")
	serverName := fs.String("server", "builtin", "the server(s) under test, comma-separated, in turn: "+strings.Join(bench.LoadgenServerNames(), ", ")+"; the vus part runs once, on the last: "+strings.Join(bench.VUServers, " or "))
	pageName := fs.String("page", "neoload50", "the pages part's page")
	clients := fs.Int("clients", 20, "pages part: page clients (h2load) and VUs (wirelab)")
	duration := fs.Duration("duration", 10*time.Second, "pages part: length of each run (whole seconds)")
	rounds := fs.Int("rounds", 2, "pages part: h2load and wirelab alternate this many times per protocol")
	protocols := fs.String("protocols", "h1,h2", "pages part: h1 (cleartext), h1s (HTTP/1.1 over TLS) and/or h2")
	vus := fs.Int("vus", 10000, "vus part: VUs")
	vuPage := fs.String("vu-page", "synthetic:1x1kB", "vus part: the page")
	ramp := fs.Duration("ramp", 60*time.Second, "vus part: ramp from 0 to --vus")
	hold := fs.Duration("hold", 60*time.Second, "vus part: hold at --vus")
	think := fs.Duration("think", 5*time.Second, "vus part: mean think time (exponential)")
	h2load := fs.String("h2load", "/usr/bin/h2load", "the h2load binary (Debian: nghttp2-client)")
	asJSON := fs.Bool("json", false, "print one JSON object on stdout (progress goes to stderr)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: wirelab-engine bench loadgen [flags]

  pages        h2load as closed-loop page clients, one thread per CPU (h1: 6 connections per
               client, one request at a time, h1s the same over TLS; h2: one connection, one
               stream per object) and wirelab's VUs without think time (`+"`loadgen`"+`), in turn
               on the same server: pages/s, CPU µs per request of each tool and of the server,
               the harness's own CPU; wirelab ÷ h2load per protocol (medians over the rounds)
  bookkeeping  the generator's accounting (per page, per interval) as a share of its CPU in the
               pages part's wirelab run
  vus          --vus VUs with --think think time (exponential) on a small page: pages/s, memory per VU,
               CPU per page of the generators and the server; on the built-in server (as many
               server processes as generators) or nginx (one lab, as many workers as
               generators, with the knobs that hold the VUs' connections: reuseport, idle
               connections kept, worker_connections), the last --server

Where the pages part runs (--server), loopback in effect, no emulator on the way:
  builtin      `+"`wirelab-engine serve`"+` as a process of its own on 127.0.0.1; the tools beside it;
               the server's CPU is its process's
  `+strings.Join(slices.DeleteFunc(bench.LoadgenServerNames(), func(n string) bool { return n == "builtin" }), ", ")+`
               in a lab (the trial's namespaces without the emulator; the server in its own
               control group with its default knobs, max_concurrent_streams 0 — its own — and
               nginx's keepalive_requests out of reach: h2load opens no new HTTP/2 connection
               after a GOAWAY; Apache with 4 × 64 worker threads from the start: with 2 × 25
               mpm_event closed the h1 runs' kept connections); h2load and `+"`loadgen --lab RUNID`"+` run in the lab's server
               namespace and connect to the server's own address (`+labaddr.OriginAddr(1).String()+`),
               which the kernel delivers locally through lo (the packets sent into the lab's link
               are counted and printed: none); the server's CPU is its control group's (all its
               processes). Everything the lab creates is removed at the end, also on failure and
               Ctrl-C
Figures and commands: docs/loadtest.md.

flags:`)
		fs.PrintDefaults()
	}
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	var partList []string
	for _, p := range strings.Split(*parts, ",") {
		if !slices.Contains([]string{"pages", "bookkeeping", "vus"}, p) {
			return cli.Usagef("parts: %q is not a part; use pages, bookkeeping or vus", p)
		}
		partList = append(partList, p)
	}
	var protoList []string
	for _, p := range strings.Split(*protocols, ",") {
		if p != "h1" && p != "h1s" && p != "h2" {
			return cli.Usagef("protocols: %q; want h1, h1s and/or h2", p)
		}
		protoList = append(protoList, p)
	}
	servers := strings.Split(*serverName, ",")
	for i, name := range servers {
		if slices.Contains(servers[:i], name) {
			return cli.Usagef("server: %q twice", name)
		}
		if err := bench.CheckLoadgenServer(name, protoList); err != nil {
			return cli.Usagef("%v", err)
		}
	}
	switch {
	case *clients < 1 || *clients > 1000:
		return cli.Usagef("clients: got %d; must be 1–1000", *clients)
	case *duration < time.Second || *duration > time.Hour || *duration%time.Second != 0:
		return cli.Usagef("duration: got %v; must be whole seconds, 1 s – 1 h", *duration)
	case *rounds < 1 || *rounds > 20:
		return cli.Usagef("rounds: got %d; must be 1–20", *rounds)
	case *vus < 1 || *vus > 100000:
		return cli.Usagef("vus: got %d; must be 1–100000", *vus)
	case *think < 0 || *think > 10*time.Minute:
		return cli.Usagef("think: got %v; must be 0–10 min", *think)
	case *ramp < time.Second || *hold < 10*time.Second || *ramp+*hold > 2*time.Hour:
		return cli.Usagef("ramp, hold: got %v and %v; ramp ≥ 1 s, hold ≥ 10 s, together ≤ 2 h", *ramp, *hold)
	}
	if slices.Contains(partList, "pages") {
		if _, err := os.Stat(*h2load); err != nil {
			return cli.Usagef("h2load: %v (Debian: apt-get install nghttp2-client)", err)
		}
	}
	if slices.Contains(partList, "bookkeeping") && !slices.Contains(partList, "pages") {
		return cli.Usagef("parts: bookkeeping relates to the pages part's run; add pages")
	}
	if slices.Contains(partList, "vus") {
		if last := servers[len(servers)-1]; !slices.Contains(bench.VUServers, last) {
			return cli.Usagef("server: %q for the vus part (the last --server); it runs on %s", last, strings.Join(bench.VUServers, " or "))
		}
		// The processes the VUs need, sized from the machine's limits: one line naming the limit
		// the machine cannot hold them under, before anything runs.
		proto := "h2"
		if len(protoList) == 1 {
			proto = protoList[0]
		}
		pg, err := page.Load(*vuPage, 1)
		if err != nil {
			return cli.Usagef("vu-page: %v", err)
		}
		if _, err := bench.PlanVUs(*vus, bench.FDsPerVU(pg, proto), bench.ReadMachineLimits()); err != nil {
			return cli.Usagef("%v", err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, stop := cli.RunContext()
	defer stop()
	started := time.Now()
	opts := bench.LoadgenOptions{Engine: self, H2load: *h2load, Parts: partList,
		Page: *pageName, Clients: *clients, Duration: *duration, Rounds: *rounds, Protocols: protoList,
		VUs: *vus, VUPage: *vuPage, VURamp: *ramp, VUHold: *hold, VUThink: *think, Progress: os.Stderr}
	var runs []*bench.LoadgenResult
	failed, interrupted := 0, false
	for i, name := range servers {
		o := opts
		o.Server = name
		if len(servers) > 1 { // the pages parts server by server, the vus part once, on the last
			o.Parts = slices.DeleteFunc(slices.Clone(partList), func(p string) bool { return p == "vus" && i < len(servers)-1 })
			if len(o.Parts) == 0 { // no part but vus, which is the last server's (no parts would be all)
				continue
			}
			fmt.Fprintf(os.Stderr, "server %s (%d of %d)\n", name, i+1, len(servers))
		}
		res, err := bench.Loadgen(ctx, o)
		if errors.Is(err, context.Canceled) {
			// What was measured up to the interruption is printed with the runs before it, in
			// the same shape as a whole run's; the exit status is 130.
			interrupted = true
			if res != nil {
				if res.VUs == nil || !res.VUs.Interrupted {
					res.Error = "interrupted"
				}
				runs = append(runs, res)
			}
			break
		}
		if err != nil && len(servers) == 1 {
			return fmt.Errorf("bench loadgen: %w", err)
		}
		if err != nil { // one line now; the next servers still run, and the exit status is 1
			fmt.Fprintf(os.Stderr, "wirelab-engine: bench loadgen: server %s: %v\n", name, err)
			if res == nil {
				res = &bench.LoadgenResult{Server: name}
			}
			res.Error = err.Error()
			failed++
		}
		runs = append(runs, res)
	}
	defer func() {
		if interrupted {
			rerr = &cli.ExitError{Code: 130}
		} else if failed > 0 && rerr == nil {
			rerr = &cli.ExitError{Code: 1}
		}
	}()
	if len(runs) == 0 { // interrupted before anything was measured
		return nil
	}
	if *asJSON {
		var out any = runs[0]
		if len(servers) > 1 { // the shape of the servers asked for, not of the runs done
			out = struct {
				Runs []*bench.LoadgenResult `json:"runs"`
			}{runs}
		}
		if err := printBenchJSON(out, started); err != nil {
			return fmt.Errorf("bench loadgen: %w", err)
		}
		return nil
	}
	for _, res := range runs {
		printLoadgenResult(res)
	}
	if len(runs) > 1 {
		printRatioTable(runs, protoList)
	}
	return nil
}

// printRatioTable is wirelab ÷ h2load per server (rows) and protocol (columns), each the ratio
// of the medians of one server's rounds, with the load averages around that server's runs.
func printRatioTable(runs []*bench.LoadgenResult, protocols []string) {
	fmt.Printf("wirelab ÷ h2load (pages/s, medians of the rounds; the tools alternate within each server's run):\n  %-8s", "server")
	for _, p := range protocols {
		fmt.Printf(" %6s", p)
	}
	fmt.Printf("  load before → after\n")
	var unequal []string
	for _, r := range runs {
		fmt.Printf("  %-8s", r.Server)
		if r.Error != "" && len(r.Ratios) == 0 {
			fmt.Printf(" not measured: %s\n", r.Error)
			continue
		}
		for _, p := range protocols {
			i := slices.IndexFunc(r.Ratios, func(q bench.RatioRow) bool { return q.Protocol == p })
			if i < 0 {
				fmt.Printf(" %6s", "—")
				continue
			}
			if r.Ratios[i].Error != "" {
				fmt.Printf(" %6s", "hung")
				continue
			}
			if q := r.Ratios[i]; q.Unequal {
				fmt.Printf(" %6s", fmt.Sprintf("%.2f≠", q.Ratio))
				unequal = append(unequal, fmt.Sprintf("%s %s: %s", r.Server, p, q.UnequalReason))
				continue
			}
			fmt.Printf(" %6.2f", r.Ratios[i].Ratio)
		}
		fmt.Printf("  %s → %s", r.Machine.LoadBefore, r.Machine.LoadAfter)
		if r.Error != "" {
			fmt.Printf("  (ended early: %s)", r.Error)
		}
		fmt.Println()
	}
	for _, u := range unequal {
		fmt.Printf("  ≠ not the same work, the ratio compares different loads — %s\n", u)
	}
}

func printLoadgenResult(r *bench.LoadgenResult) {
	if len(r.Pages) > 0 {
		fmt.Printf("pages/s, server %s, page %s (%d objects), %d page clients, %.0f s per run:\n  %s\n", r.Server, r.Page, r.Objects, r.Clients, r.DurationS, r.Where)
		fmt.Printf("  %-4s %-8s %5s %10s %10s %12s %12s %8s %8s %8s\n", "", "tool", "round", "pages/s", "failed", "µs CPU/req", "server µs", "cores", "server", "harness")
		for _, p := range r.Pages {
			if p.Error != "" {
				fmt.Printf("  %-4s %-8s %5d  %s\n", p.Protocol, p.Tool, p.Round, p.Error)
				continue
			}
			fmt.Printf("  %-4s %-8s %5d %10.1f %10d %12.1f %12.1f %8.2f %8.2f %8.2f\n", p.Protocol, p.Tool, p.Round, p.PagesPerS, p.Failed, p.CPUUsPerReq, p.ServerUsPerRq, p.ToolCores, p.ServerCores, p.HarnessCores)
		}
		for _, q := range r.Ratios {
			if q.Error != "" {
				fmt.Printf("  %-4s wirelab ÷ h2load not measured: %s\n", q.Protocol, q.Error)
				continue
			}
			fmt.Printf("  %-4s wirelab ÷ h2load = %.2f (median pages/s %.1f vs %.1f over %d rounds; µs CPU per request %.1f vs %.1f; body bytes per request %.0f vs %.0f)\n",
				q.Protocol, q.Ratio, q.WirelabPagesS, q.H2loadPagesS, q.Rounds, q.WirelabUsReq, q.H2loadUsReq, q.WirelabBytesReq, q.H2loadBytesReq)
			if q.Unequal {
				fmt.Printf("  %-4s NOT THE SAME WORK: %s — the ratio compares different loads\n", q.Protocol, q.UnequalReason)
			}
		}
	}
	if l := r.Link; l != nil {
		fmt.Printf("  into the lab's link: %d packets from the client namespace, %d from the server namespace\n", l.Client, l.Server)
	}
	if b := r.Bookkeeping; b != nil {
		fmt.Printf("bookkeeping: %.2f µs per page, %.0f µs per interval: %.2f ms of %.0f ms generator CPU (%s run) = %.3f %%\n",
			b.PerPageUs, b.PerIntervalUs, b.BookkeepingMs, b.GeneratorCPUMs, b.Protocol, 100*b.ShareOfGenerator)
	}
	if v := r.VUs; v != nil {
		fmt.Printf("vus (server %s): %d VUs over %s (%s, think %g s) in %d generator and %d server processes (≤ %d VUs each: %s)\n     %s\n",
			v.Server, v.VUs, v.Protocol, v.Page, v.ThinkS, v.Plan.Generators, v.Plan.Servers, v.Plan.PerProcess, v.Plan.BoundBy, v.Where)
		fmt.Printf("     reached %d, held %d; %.1f pages/s served in the hold of %.1f planned; page p50 %.1f ms p99 %.1f ms; %d errors, %d pages failed\n",
			v.VUsReached, v.VUsHeld, v.PagesPerSHold, v.PagesPerSPlan, v.PageP50Ms, v.PageP99Ms, v.Errors, v.PagesFailed)
		fmt.Printf("     generators' memory (%s, every process): %.0f MB = %.1f kB per VU (%.1f kB per VU added after the first interval's %.0f MB); RSS summed %.0f MB = %.1f kB per VU\n",
			v.MemorySource, float64(v.MemoryBytes)/1e6, v.BytesPerVU/1e3, v.BytesPerVUMarg/1e3, float64(v.MemoryBaseBytes)/1e6, float64(v.RSSBytes)/1e6, v.RSSBytesPerVU/1e3)
		fmt.Printf("     %d connections open, %d goroutines, %d saturated intervals in the hold; server processes' memory %.0f MB\n",
			v.OpenConnections, v.Goroutines, v.SaturatedHold, float64(v.ServerMemBytes)/1e6)
		server := "not measured"
		if v.ServerCores != nil {
			server = fmt.Sprintf("%.2f cores", *v.ServerCores)
			if v.ServerMsPerPage != nil {
				server += fmt.Sprintf(" = %.3f ms per page", *v.ServerMsPerPage)
			}
		}
		fmt.Printf("     CPU in the hold: generators %.2f cores = %.3f ms per page, server %s; load average at the hold's end %s\n",
			v.CPUCores, v.GenMsPerPage, server, v.LoadHoldEnd)
		fmt.Printf("     clean (no error, page p99 ≤ 1 s in every interval) up to %d VUs, t = %.0f s; no error up to %d VUs, t = %.0f s\n",
			v.CleanVUs, v.CleanS, v.NoErrorVUs, v.NoErrorS)
		if v.RealtimeCores >= 0.01 {
			fmt.Printf("     other programs' real-time threads (SCHED_FIFO/RR, run before every normal thread): %d, at least %.2f cores during the run — the figures above are then not the processes' own\n",
				v.RealtimeThreads, v.RealtimeCores)
		}
		if v.Interrupted {
			fmt.Printf("     interrupted: the figures cover the run up to then\n")
		}
		for _, f := range v.Failed {
			fmt.Printf("     generator %s: its line above says why; the figures cover less than the plan\n", f)
		}
	}
	m := r.Machine
	fmt.Printf("machine: %d CPUs, load %s → %s\n", m.CPUs, m.LoadBefore, m.LoadAfter)
	if len(m.OtherRealtime) > 0 {
		fmt.Printf("other real-time processes at the start or the end (they run before the tools and the server): %s\n", strings.Join(m.OtherRealtime, ", "))
	}
}
