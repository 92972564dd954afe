package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wirelab/wirelab/engine/loadgen"
	"github.com/wirelab/wirelab/engine/page"
)

// The load generator benchmark (`wirelab-engine bench loadgen`, docs/loadtest.md): wirelab's VUs
// against h2load on the same server (loadgen_servers.go: the built-in server on 127.0.0.1, or a
// real one in a lab with the tools in its server namespace — loopback in effect, no emulator on
// the way — there is none); many VUs with think time (on the built-in server or nginx); the cost of the generator's
// own bookkeeping.

// LoadgenOptions configure the benchmark.
type LoadgenOptions struct {
	Engine    string   // the wirelab-engine binary (serve, loadgen)
	H2load    string   // the h2load binary
	Server    string   // the server under test: a LoadgenServers name
	Parts     []string // pages, vus, bookkeeping (default all)
	Page      string   // the pages part's page (default neoload50, study N's)
	Clients   int      // page clients (h2load) = VUs (wirelab) in the pages part
	Duration  time.Duration
	Rounds    int      // h2load and wirelab alternate this many times per protocol
	Protocols []string // h1 (cleartext), h1s (HTTP/1.1 over TLS), h2
	VUs       int      // the vus part's VU count
	VUPage    string   // the vus part's page
	VURamp    time.Duration
	VUHold    time.Duration
	VUThink   time.Duration // the vus part's mean think time (exponential); 0: 5 s
	Progress  io.Writer
}

// LoadgenResult is what the benchmark measured.
type LoadgenResult struct {
	Server      string          `json:"server"`
	Where       string          `json:"where,omitempty"` // where the pages part's server and tools ran
	Lab         string          `json:"lab,omitempty"`   // the pages part's lab run (a real server)
	Page        string          `json:"page"`
	Objects     int             `json:"objects"`
	Clients     int             `json:"clients"`
	DurationS   float64         `json:"duration_s"`
	Pages       []PagesRow      `json:"pages,omitempty"`
	VUs         *VUsRow         `json:"vus,omitempty"`
	Bookkeeping *BookkeepingRow `json:"bookkeeping,omitempty"`
	// Ratios are wirelab's pages/s over h2load's per protocol: medians over the rounds of one run.
	Ratios []RatioRow `json:"ratios,omitempty"`
	// Link is what the namespaces' kernels sent into the lab's link during the pages part (a real
	// server): nothing.
	Link    *LinkPackets `json:"link,omitempty"`
	Machine Machine      `json:"machine"`
	// Error says why this server's run ended early (bench loadgen --server A,B,…: the next
	// servers still run); what was measured before it is kept.
	Error string `json:"error,omitempty"`
}

// PagesRow is one run of one tool over one protocol.
type PagesRow struct {
	Protocol string `json:"protocol"`
	Tool     string `json:"tool"` // h2load | wirelab
	Round    int    `json:"round"`
	// How the tool loaded: h2load clients × connections, streams per connection; wirelab VUs.
	Setup     string  `json:"setup"`
	Pages     float64 `json:"pages"` // h2load: successful requests ÷ objects per page
	PagesPerS float64 `json:"pages_per_s"`
	Requests  int64   `json:"requests"`
	Failed    int64   `json:"failed"`
	Seconds   float64 `json:"seconds"`
	// Connections the tool opened (h2load: its clients, each keeping its connection; wirelab: the
	// VUs' connections, kept from page to page).
	Connections int64 `json:"connections"`
	// InFlight is the mean number of requests in flight per connection: requests × mean request
	// time ÷ (connections × seconds). h2load keeps every connection busy with the next URL of its
	// list; a VU's connections idle while the root document loads and at the page's tail.
	InFlight      float64 `json:"in_flight_per_connection"`
	RequestMeanMs float64 `json:"request_mean_ms"`           // h2load: "time for request" mean; wirelab: request_ms mean
	CPUUsPerReq   float64 `json:"cpu_us_per_request"`        // the tool's process
	ServerUsPerRq float64 `json:"server_cpu_us_per_request"` // the server's processes (a real server's control group)
	// BodyBytesPerReq is the response body bytes per successful request (h2load: its "data"
	// traffic; wirelab: totals.bytes ÷ hits): the two tools' work must match (the same URLs, the
	// same responses), which ratios checks.
	BodyBytesPerReq float64 `json:"body_bytes_per_request"`
	ToolCores       float64 `json:"tool_cores"` // the tool's CPU ÷ seconds
	ServerCores     float64 `json:"server_cores"`
	// HarnessCores is this process's CPU ÷ the run's wall time: the benchmark's own share of the
	// machine (for a real server, mostly the lab's idle emulator), taken from both tools alike.
	HarnessCores float64 `json:"harness_cores"`
	// Error: the run measured nothing — h2load did not end within its duration and a minute and
	// was stopped (over h1s and h1 against Apache). The protocol's later h2load rounds are left
	// out, its wirelab rounds and the other protocols still run.
	Error string `json:"error,omitempty"`
}

// RatioRow compares the tools over one protocol: the median pages/s of each over the rounds (the
// tools alternate, so both meet the same machine), and their ratio.
type RatioRow struct {
	Protocol      string  `json:"protocol"`
	Rounds        int     `json:"rounds"`
	WirelabPagesS float64 `json:"wirelab_pages_per_s"` // median
	H2loadPagesS  float64 `json:"h2load_pages_per_s"`  // median
	Ratio         float64 `json:"ratio"`               // wirelab ÷ h2load (≥ 1.0: the generator does not limit the result)
	WirelabUsReq  float64 `json:"wirelab_cpu_us_per_request"`
	H2loadUsReq   float64 `json:"h2load_cpu_us_per_request"`
	// The tools' response body bytes and connections per request (medians). Unequal says the
	// tools did not do the same work (UnequalReason: how), and the ratio, still given, compares
	// different things: their body bytes per request differ by more than 2 %, or one tool opened
	// connections for a share of its requests (more than 1 in 100) and more than twice as many per
	// request as the other — a server that answers Connection: close makes one tool reopen
	// thousands while the other idles its clients (unequalWork).
	WirelabBytesReq float64 `json:"wirelab_body_bytes_per_request"`
	H2loadBytesReq  float64 `json:"h2load_body_bytes_per_request"`
	WirelabConnsReq float64 `json:"wirelab_connections_per_request"`
	H2loadConnsReq  float64 `json:"h2load_connections_per_request"`
	Unequal         bool    `json:"unequal_work,omitempty"`
	UnequalReason   string  `json:"unequal_reason,omitempty"`
	// Error: no ratio, because no h2load run of the protocol measured anything (its rows' error).
	Error string `json:"error,omitempty"`
}

// ratios are the pages part's RatioRows, in the order of protocols.
func ratios(rows []PagesRow, protocols []string) []RatioRow {
	var out []RatioRow
	for _, proto := range protocols {
		var w, h, wu, hu, wb, hb, wc, hc []float64
		failed := ""
		for _, p := range rows {
			switch {
			case p.Protocol != proto:
			case p.Error != "":
				failed = p.Tool + ": " + p.Error
			case p.Tool == "h2load":
				h, hu, hb, hc = append(h, p.PagesPerS), append(hu, p.CPUUsPerReq), append(hb, p.BodyBytesPerReq), append(hc, connsPerReq(p))
			default:
				w, wu, wb, wc = append(w, p.PagesPerS), append(wu, p.CPUUsPerReq), append(wb, p.BodyBytesPerReq), append(wc, connsPerReq(p))
			}
		}
		if len(w) == 0 || len(h) == 0 {
			if failed != "" {
				out = append(out, RatioRow{Protocol: proto, Rounds: min(len(w), len(h)), Error: failed})
			}
			continue
		}
		r := RatioRow{Protocol: proto, Rounds: min(len(w), len(h)), WirelabPagesS: round(median(w), 1), H2loadPagesS: round(median(h), 1),
			WirelabUsReq: round(median(wu), 1), H2loadUsReq: round(median(hu), 1),
			WirelabBytesReq: round(median(wb), 0), H2loadBytesReq: round(median(hb), 0),
			WirelabConnsReq: round(median(wc), 4), H2loadConnsReq: round(median(hc), 4)}
		r.UnequalReason = unequalWork(median(wb), median(hb), median(wc), median(hc))
		r.Unequal = r.UnequalReason != ""
		if m := median(h); m > 0 {
			r.Ratio = round(median(w)/m, 2)
		}
		out = append(out, r)
	}
	return out
}

// connsPerReq is a run's connections per request (0 without requests).
func connsPerReq(p PagesRow) float64 {
	if p.Requests <= 0 {
		return 0
	}
	return float64(p.Connections) / float64(p.Requests)
}

// unequalWork says how the tools' work differed ("" if it did not): body bytes per request more
// than 2 % apart, or connections per request — one tool reopening connections (more than one per
// 100 requests) and more than twice as many per request as the other. Kept connections are far
// fewer: a few hundred over a run's tens of thousands of requests.
func unequalWork(wBytes, hBytes, wConns, hConns float64) string {
	if math.Abs(wBytes-hBytes) > 0.02*max(wBytes, hBytes) {
		return fmt.Sprintf("body bytes per request %.0f (wirelab) vs %.0f (h2load): more than 2 %% apart", wBytes, hBytes)
	}
	if hi, lo := max(wConns, hConns), min(wConns, hConns); hi > 0.01 && hi > 2*lo {
		return fmt.Sprintf("connections per request %.4f (wirelab) vs %.4f (h2load): one tool reopened connections", wConns, hConns)
	}
	return ""
}

// BookkeepingRow relates the generator's accounting to a real run's CPU.
type BookkeepingRow struct {
	Protocol         string  `json:"protocol"` // the pages part's wirelab run it is related to
	PerPageUs        float64 `json:"per_page_us"`
	PerIntervalUs    float64 `json:"per_interval_us"`
	Pages            int64   `json:"pages"`
	Intervals        int     `json:"intervals"`
	BookkeepingMs    float64 `json:"bookkeeping_ms"`
	GeneratorCPUMs   float64 `json:"generator_cpu_ms"`
	ShareOfGenerator float64 `json:"share_of_generator"` // bookkeeping ÷ generator CPU
}

func (o *LoadgenOptions) runs(part string) bool {
	return len(o.Parts) == 0 || slices.Contains(o.Parts, part)
}

func (o *LoadgenOptions) progress(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

// Loadgen runs the benchmark.
func Loadgen(ctx context.Context, o LoadgenOptions) (*LoadgenResult, error) {
	newServer, ok := LoadgenServers[o.Server]
	if !ok {
		return nil, fmt.Errorf("server %q: not a benchmark server", o.Server)
	}
	srv := newServer(o.Engine)
	res := &LoadgenResult{Server: o.Server, Page: o.Page, Clients: o.Clients, DurationS: o.Duration.Seconds(), Machine: machine()}
	res.Machine.noteOtherRealtime() // and at the end: the real-time neighbours' CPU is the vus part's
	defer res.Machine.noteOtherRealtime()
	if o.runs("pages") || o.runs("bookkeeping") {
		if err := o.pages(ctx, srv, res); err != nil {
			// What was measured before the failure stays: its ratios (rounds that completed).
			res.Ratios, res.Machine.LoadAfter = ratios(res.Pages, o.Protocols), loadavg()
			return res, err
		}
	}
	res.Ratios = ratios(res.Pages, o.Protocols)
	if o.runs("bookkeeping") {
		res.Bookkeeping = o.bookkeeping(res)
	}
	if o.runs("vus") {
		// On the built-in server (as many server processes as generators) or nginx (as many
		// workers, VUKnobs): 10⁵ VUs hold 10⁵ connections (loadgen_vus.go).
		row, err := o.vus(ctx)
		res.VUs = row // interrupted: what was measured up to then
		if err != nil {
			res.Machine.LoadAfter = loadavg()
			return res, err
		}
	}
	res.Machine.LoadAfter = loadavg()
	return res, nil
}

// pages runs h2load and wirelab in turn, Rounds times per protocol, on one server.
func (o *LoadgenOptions) pages(ctx context.Context, srv LoadgenServer, res *LoadgenResult) (err error) {
	pg, err := page.Load(o.Page, 1)
	if err != nil {
		return err
	}
	res.Objects = len(pg.Objects)
	s, err := srv.Start(ctx, o.Page, o.Protocols)
	if err != nil {
		return err
	}
	res.Where, res.Lab = s.Where, s.LabID
	o.progress("  %s", s.Where)
	defer func() {
		link, serr := s.Stop()
		res.Link = link
		if serr != nil && err == nil {
			err = fmt.Errorf("stopping the server: %w", serr)
		}
		if link != nil {
			o.progress("  into the lab's link: %d packets from the client namespace, %d from the server namespace", link.Client, link.Server)
		}
	}()
	if _, ok := s.CPU(); !ok {
		o.progress("  the server's CPU is not measured (no usable control group hierarchy)")
	}
	for _, proto := range o.Protocols {
		scheme, port := "http", s.HTTPPort
		if proto != "h1" {
			scheme, port = "https", s.HTTPSPort
		}
		token, err := s.Serve(proto)
		if err != nil {
			return err
		}
		urls, err := pg.URLsAt(page.Base{Scheme: scheme, Port: port, Token: token})
		if err != nil {
			return err
		}
		hung := false // an h2load run of this protocol hung: its later rounds are left out
		for rnd := 1; rnd <= o.Rounds; rnd++ {
			for _, tool := range []string{"h2load", "wirelab"} {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if tool == "h2load" && hung {
					continue
				}
				var row *PagesRow
				self0, wall0 := selfCPU(), time.Now()
				if tool == "h2load" {
					row, err = o.h2load(ctx, s, proto, port, urls, len(pg.Objects))
				} else {
					row, err = o.wirelab(ctx, s, proto, urls[0])
				}
				if errors.Is(err, errH2loadHung) {
					hung = true
					o.progress("  %-4s %-8s round %d: %v — its later rounds over %s are left out", proto, tool, rnd, err, proto)
					res.Pages = append(res.Pages, PagesRow{Protocol: proto, Tool: tool, Round: rnd, Error: err.Error()})
					continue
				}
				if err != nil {
					return fmt.Errorf("%s %s: %w", tool, proto, err)
				}
				row.Round = rnd
				row.HarnessCores = round((selfCPU()-self0).Seconds()/time.Since(wall0).Seconds(), 2)
				o.progress("  %-4s %-8s %s: %7.1f pages/s (%.0f requests/s, %.0f body bytes each), %6.1f µs CPU per request (server %.1f µs), %d failed; %d connections, %.2f requests in flight per connection (request %.2f ms); harness %.2f cores",
					proto, tool, row.Setup, row.PagesPerS, float64(row.Requests)/max(row.Seconds, 1e-9), row.BodyBytesPerReq, row.CPUUsPerReq, row.ServerUsPerRq, row.Failed,
					row.Connections, row.InFlight, row.RequestMeanMs, row.HarnessCores)
				res.Pages = append(res.Pages, *row)
			}
		}
	}
	return nil
}

var (
	h2loadFinished    = regexp.MustCompile(`finished in ([0-9.]+)(m?s)`)
	h2loadRequestTime = regexp.MustCompile(`time for request:\s+\S+\s+\S+\s+([0-9.]+)(us|ms|s)\s`)
	h2loadRequests    = regexp.MustCompile(`requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed`)
	h2loadData        = regexp.MustCompile(`traffic: .*\((\d+)\) data`)
)

// errH2loadHung: h2load ran past its duration and a minute and was stopped.
var errH2loadHung = errors.New("h2load did not end within its duration")

// h2load runs h2load beside the server as closed-loop page clients: h1 six connections per
// client (one request at a time each), h2 one connection per client with one stream per object
// of the page.
func (o *LoadgenOptions) h2load(ctx context.Context, s *Served, proto string, port int, urls []string, objects int) (*PagesRow, error) {
	f, err := os.CreateTemp("", "wirelab-h2load-*.txt")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	for _, u := range urls {
		fmt.Fprintln(f, u)
	}
	f.Close()
	// The URLs name the origin (Host, :authority and SNI as wirelab's VUs send them); h2load
	// resolves with the system, so it is told the address to connect to.
	connect := s.Addr
	if port != 0 {
		connect += ":" + strconv.Itoa(port)
	}
	args := []string{o.H2load, "-D", strconv.Itoa(int(o.Duration.Seconds())), "-i", f.Name(), "--connect-to", connect}
	var setup string
	conns := o.Clients
	if proto == "h1" || proto == "h1s" {
		conns = 6 * o.Clients
		args = append(args, "--h1", "-c", strconv.Itoa(conns), "-m", "1")
		setup = fmt.Sprintf("%d clients × 6 connections", o.Clients)
	} else {
		args = append(args, "-c", strconv.Itoa(o.Clients), "-m", strconv.Itoa(objects))
		setup = fmt.Sprintf("%d clients × 1 connection × %d streams", o.Clients, objects)
	}
	// As many threads as CPUs (and no more than connections), as the Go generator runs
	// GOMAXPROCS = CPUs: a single-threaded h2load would get a smaller share of a busy machine.
	threads := min(runtime.NumCPU(), o.Clients)
	args = append(args, "-t", strconv.Itoa(threads))
	setup += fmt.Sprintf(", %d threads", threads)
	cmd := s.Command(args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	srv0, _ := s.CPU()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	// h2load -D can outlive its duration: over h1s against Apache it ran on for 5 minutes once (its
	// threads said they had stopped all clients). It gets the duration and a minute.
	hctx, cancel := context.WithTimeout(ctx, o.Duration+time.Minute)
	defer cancel()
	release := watch(hctx, cmd, syscall.SIGTERM, h2loadStopGrace)
	err = cmd.Wait()
	release()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if hctx.Err() != nil {
		return nil, fmt.Errorf("%w (%v) and a minute; stopped: %s", errH2loadHung, o.Duration, lastLines(out.String(), 3))
	}
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, lastLines(out.String(), 5))
	}
	srv1, _ := s.CPU()
	srvCPU := srv1 - srv0
	fin := h2loadFinished.FindStringSubmatch(out.String())
	req := h2loadRequests.FindStringSubmatch(out.String())
	if fin == nil || req == nil {
		return nil, fmt.Errorf("unexpected h2load output: %s", lastLines(out.String(), 10))
	}
	secs, _ := strconv.ParseFloat(fin[1], 64)
	if fin[2] == "ms" {
		secs /= 1000
	}
	succeeded, _ := strconv.ParseInt(req[4], 10, 64)
	failed, _ := strconv.ParseInt(req[5], 10, 64)
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	row := &PagesRow{Protocol: proto, Tool: "h2load", Setup: setup, Pages: float64(succeeded) / float64(objects),
		Requests: succeeded, Failed: failed, Seconds: secs, Connections: int64(conns)}
	if m := h2loadRequestTime.FindStringSubmatch(out.String()); m != nil {
		v, _ := strconv.ParseFloat(m[1], 64)
		row.RequestMeanMs = v * map[string]float64{"us": 1e-3, "ms": 1, "s": 1e3}[m[2]]
	}
	if m := h2loadData.FindStringSubmatch(out.String()); m != nil && succeeded > 0 {
		data, _ := strconv.ParseInt(m[1], 10, 64)
		row.BodyBytesPerReq = round(float64(data)/float64(succeeded), 0)
	}
	row.fill(cpu, srvCPU)
	return row, nil
}

// wirelab runs `wirelab-engine loadgen` beside the server: Clients VUs without think time for
// Duration.
func (o *LoadgenOptions) wirelab(ctx context.Context, s *Served, proto, root string) (*PagesRow, error) {
	spec := fmt.Sprintf(`{"protocol":%q,"interval_s":1,"think":{"mean_s":0},"scenario":{"start":%d,"stages":[{"duration_s":%g,"target":%d}]}}`,
		proto, o.Clients, o.Duration.Seconds(), o.Clients)
	sum, cpu, srvCPU, err := o.runLoadgen(ctx, spec, root, s, nil)
	if err != nil {
		return nil, err
	}
	t := sum.Totals
	row := &PagesRow{Protocol: proto, Tool: "wirelab", Setup: fmt.Sprintf("%d VUs, think 0", o.Clients), Pages: float64(t.Pages),
		Requests: t.Hits, Failed: t.PagesFailed, Seconds: sum.DurationS, Connections: t.ConnectionsOpened}
	if t.RequestMs != nil {
		row.RequestMeanMs = t.RequestMs.Mean
	}
	if t.Hits > 0 {
		row.BodyBytesPerReq = round(float64(t.Bytes)/float64(t.Hits), 0)
	}
	row.fill(cpu, srvCPU)
	return row, nil
}

func (r *PagesRow) fill(cpu, srvCPU time.Duration) {
	if r.Seconds > 0 {
		r.PagesPerS = round(r.Pages/r.Seconds, 1)
		r.ToolCores = round(cpu.Seconds()/r.Seconds, 2)
		r.ServerCores = round(srvCPU.Seconds()/r.Seconds, 2)
	}
	if r.Seconds > 0 && r.Connections > 0 {
		r.InFlight = round(float64(r.Requests)*r.RequestMeanMs/1e3/(float64(r.Connections)*r.Seconds), 2)
	}
	r.RequestMeanMs = round(r.RequestMeanMs, 3)
	if r.Requests > 0 {
		r.CPUUsPerReq = round(float64(cpu.Microseconds())/float64(r.Requests), 1)
		r.ServerUsPerRq = round(float64(srvCPU.Microseconds())/float64(r.Requests), 1)
	}
}

// runLoadgen runs the loadgen command on spec against root and returns its summary, its CPU time
// and the server's; every interval line goes to onInterval.
func (o *LoadgenOptions) runLoadgen(ctx context.Context, spec, root string, s *Served, onInterval func(loadgen.Interval)) (*loadgen.Summary, time.Duration, time.Duration, error) {
	f, err := os.CreateTemp("", "wirelab-loadgen-spec-*.json")
	if err != nil {
		return nil, 0, 0, err
	}
	defer os.Remove(f.Name())
	f.WriteString(spec)
	f.Close()
	argv := []string{o.Engine, "loadgen", "--spec", f.Name(), "--target", root, "--resolve", page.OriginHost(0) + "=" + s.Addr}
	if s.CAFile != "" {
		argv = append(argv, "--ca", s.CAFile)
	}
	if s.LabID != "" { // the lab's address policy, accepted in the run's server namespace
		argv = append(argv, "--lab", s.LabID)
	}
	cmd := s.Command(argv...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, 0, err
	}
	srv0, _ := s.CPU()
	if err := cmd.Start(); err != nil {
		return nil, 0, 0, err
	}
	release := watch(ctx, cmd, syscall.SIGINT, loadgenStopGrace) // SIGINT: loadgen prints its summary
	defer release()
	var sum *loadgen.Summary
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev struct{ Event string }
		json.Unmarshal(line, &ev)
		switch ev.Event {
		case "interval":
			var iv loadgen.Interval
			if err := json.Unmarshal(line, &iv); err == nil && onInterval != nil {
				onInterval(iv)
			}
		case "summary":
			sum = &loadgen.Summary{}
			if err := json.Unmarshal(line, sum); err != nil {
				return nil, 0, 0, err
			}
		}
	}
	werr := cmd.Wait()
	srv1, _ := s.CPU()
	srvCPU := srv1 - srv0
	if sum == nil {
		return nil, 0, 0, fmt.Errorf("loadgen printed no summary: %v", werr)
	}
	if werr != nil && !sum.Interrupted {
		var ee *exec.ExitError
		// 1 with every threshold passed: the run failed (a limit of the generator's machine, its
		// line on stderr), not a threshold (the benchmark sets none).
		if !errors.As(werr, &ee) || ee.ExitCode() != 1 || sum.ThresholdsPassed {
			return nil, 0, 0, fmt.Errorf("loadgen: %v (its line above says why)", werr)
		}
	}
	return sum, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), srvCPU, ctx.Err()
}

// bookkeeping relates the measured accounting cost to the last wirelab h2 (else h1) run.
func (o *LoadgenOptions) bookkeeping(res *LoadgenResult) *BookkeepingRow {
	var run *PagesRow
	for i := range res.Pages {
		if r := &res.Pages[i]; r.Tool == "wirelab" && (run == nil || r.Protocol == "h2") {
			run = r
		}
	}
	if run == nil {
		return nil
	}
	intervals := int(run.Seconds + 0.999)
	perInterval := int(run.Pages) / max(intervals, 1)
	c := loadgen.MeasureBookkeeping(max(res.Objects, 1), max(perInterval, 1))
	row := &BookkeepingRow{Protocol: run.Protocol, PerPageUs: round(float64(c.PerPage.Nanoseconds())/1e3, 2),
		PerIntervalUs: round(float64(c.PerInterval.Nanoseconds())/1e3, 1), Pages: int64(run.Pages), Intervals: intervals}
	book := time.Duration(run.Pages)*c.PerPage + time.Duration(intervals)*c.PerInterval
	row.BookkeepingMs = round(float64(book.Microseconds())/1e3, 2)
	row.GeneratorCPUMs = round(run.CPUUsPerReq*float64(run.Requests)/1e3, 1)
	if row.GeneratorCPUMs > 0 {
		row.ShareOfGenerator = round(row.BookkeepingMs/row.GeneratorCPUMs, 5)
	}
	o.progress("  bookkeeping: %.2f µs per page of %d requests, %.0f µs per interval: %.3f %% of the generator's CPU (%s run)",
		row.PerPageUs, res.Objects, row.PerIntervalUs, 100*row.ShareOfGenerator, run.Protocol)
	return row
}

func p99(l *loadgen.Latency) float64 {
	if l == nil {
		return 0
	}
	return l.P99
}

// processCPU is a process's user + system CPU time (/proc/PID/stat).
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / time.Duration(clockTicks())
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}
