// Package loadtest runs one load test in the lab (docs/loadtest.md): the emulated path and the
// server under test (engine/lab, the same as a trial's), the virtual users as a `wirelab-engine
// loadgen` child in the client namespace, and the server sampled at the interval boundaries the
// child counts — the same CLOCK_MONOTONIC instants, start + k·interval_s. It writes the load
// test's directory:
//
//	D/intervals.jsonl   the generator's interval lines, as each ends
//	D/server.jsonl      the server's sample per interval (same index): CPU, memory, processes,
//	                    threads, the implementation's own gauges
//	D/engine.log        what happened, for people
//	D/loadtest.json     the resolved spec, provenance, the emulator's summary, the generator's
//	                    summary, outcomes (server_at added), thresholds (server ones decided);
//	                    written last — also after an interruption, with interrupted true
//
// The real-time emulator runs in this process; the VUs do not (thousands of goroutines must not
// compete with it): loadgen is a child at normal priority, like a trial's fetch.
package loadtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/internal/cgroup"
	"github.com/wirelab/wirelab/engine/internal/child"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/internal/tail"
	"github.com/wirelab/wirelab/engine/lab"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/loadgen"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/trial"
)

// Files of a load test's directory.
const (
	ResultFile    = "loadtest.json"
	IntervalsFile = "intervals.jsonl"
	ServerFile    = "server.jsonl"
	// GeneratorsDir holds each generator's own lines (NAME.jsonl) when there are several.
	GeneratorsDir = "generators"
	LogFile       = "engine.log"
)

// Contract is the version of the load test's outputs (docs/loadtest.md).
const Contract = 1

// Timing of the generator child.
const (
	// startLead is how far ahead the run's start is set, so that the child is up before its first
	// interval counts.
	startLead = 500 * time.Millisecond
	// stopVUsGrace is how long, beyond a request's timeout, the child may take after SIGINT to stop
	// its VUs and print its last interval and summary before it is killed.
	stopVUsGrace = 30 * time.Second
	// maxSampleTime bounds reading the server's usage and gauges at an interval's end (and so does
	// the interval itself when shorter).
	maxSampleTime = 2 * time.Second
)

// ErrInterrupted is returned by Run when ctx ended: what was measured is written (loadtest.json
// with interrupted true) and everything else removed.
var ErrInterrupted = errors.New("interrupted")

// Prepared is a load test checked against everything it refers to (the page, the profile, the
// server's support), with what its lab needs. Nothing has been created yet.
type Prepared struct {
	Spec *loadgen.Spec
	Lab  *lab.Prepared // the lab serving the page over the one protocol; a target's live lab
	// Target is the external target (spec.target); nil for a lab server.
	Target *Target
}

// Prepare checks spec as a run would, creating nothing.
func Prepare(spec *loadgen.Spec) (*Prepared, error) {
	if spec.Target != nil {
		return prepareTarget(spec)
	}
	if spec.Lab == nil {
		return nil, &fielderr.Error{Field: "page", Allowed: "required: the page the load test's server serves (wirelab-engine loadtest runs the lab; loadgen --target loads a page elsewhere)"}
	}
	if trial.IsLive(spec.Page) {
		return nil, fielderr.New("page", spec.Page, "a load test serves a page model from the server under test; live pages (url:) are loaded by trials (docs/live.md)")
	}
	lp, err := lab.Prepare(spec.Lab, spec.Seed, []string{spec.Protocol})
	if fe, ok := fielderr.As(err); ok && (fe.Field == "protocols" || fe.Field == "protocols[0]") {
		// the lab's protocols[0] is the load test's protocol: name the field the user wrote
		c := *fe
		c.Field = "protocol"
		return nil, &c
	}
	if err != nil {
		return nil, err
	}
	return &Prepared{Spec: spec, Lab: lp}, nil
}

// Options are how a load test runs, besides its spec.
type Options struct {
	OutDir string
	// Progress receives {"event":"ready"}, every interval line and {"event":"done"}; nil for none.
	Progress io.Writer
	Engine   string   // the wirelab-engine binary run as loadgen, serve and dns (default: this one)
	Env      []string // their environment (default: this process's)
	Command  []string // recorded as provenance (default os.Args)
	Warn     io.Writer
	// Generators runs the VUs as that many loadgen children (each its part, --part K/N), their
	// intervals merged exactly (loadgen.Merger): past one process's open-files limit. 0 or 1: one.
	Generators int
	// A generator task of a cluster run (docs/loadtest.md, "A Dask cluster"; a target spec made by
	// GeneratorSpec): Part is its share, K/N (loadgen --part K/N --histograms), and AwaitStart gives
	// the run's shared start instant (ReadStart) after the lab is up and {"event":"ready"} printed.
	// Serve reads its start from AwaitStart too.
	Part       string
	AwaitStart io.Reader
}

// Result is loadtest.json.
type Result struct {
	Contract           int                       `json:"contract"`
	Spec               *loadgen.Spec             `json:"spec"`
	Provenance         trial.Provenance          `json:"provenance"`
	Emulator           any                       `json:"emulator"`
	Summary            *loadgen.Summary          `json:"summary"`
	Outcomes           Outcomes                  `json:"outcomes"`
	Thresholds         []loadgen.ThresholdResult `json:"thresholds"`
	ThresholdsPassed   bool                      `json:"thresholds_passed"`
	GeneratorSaturated bool                      `json:"generator_saturated"`
	Interrupted        bool                      `json:"interrupted"`
	// ServerExited is set when the server under test exited before the load test ended: the VUs
	// were stopped then, and the load test failed.
	ServerExited  *ServerExit `json:"server_exited"`
	Intervals     int         `json:"intervals"`
	ServerSamples int         `json:"server_samples"`
	// Degraded: a generator of several (Options.Generators) was lost mid-run; the intervals after
	// the loss are marked (degraded, generators_lost) and the load test failed. Generators are
	// each generator's figures (the summary's, repeated here for readers of loadtest.json).
	Degraded   bool                   `json:"degraded"`
	Generators []loadgen.GeneratorRun `json:"generators"`
	// ServerMeasured says whether the server side was measured: a lab server always is (its
	// control group, its gauges); an external target only through target.status_url.
	ServerMeasured bool `json:"server_measured"`
	// Egress is an external target's egress router: what it let through and refused (nil for a
	// lab server).
	Egress *trial.EgressResult `json:"egress,omitempty"`
}

// DegradedError is Run's error when a generator was lost mid-run: loadtest.json is written
// (degraded true), and the load test failed — never silently fewer VUs.
type DegradedError struct {
	Lost       []string
	Generators []loadgen.GeneratorRun
}

func (e *DegradedError) Error() string {
	var at []string
	for _, g := range e.Generators {
		if g.Lost {
			at = append(at, fmt.Sprintf("%s after %.1f s", g.Name, g.LostAfterS))
		}
	}
	return fmt.Sprintf("degraded: generator(s) lost mid-run (%s); the intervals after the loss are marked degraded, what was measured is kept", strings.Join(at, ", "))
}

// generator is one loadgen child.
type generator struct {
	name    string
	cmd     *exec.Cmd
	stdout  io.ReadCloser
	stderr  *tail.Lines
	summary *loadgen.Summary
	err     error
}

// Outcomes are the generator's outcomes with the server's at the chosen VU counts.
type Outcomes struct {
	loadgen.Outcomes
	// ServerAt maps each at_vus count to the server's sample of the interval in which that many
	// VUs were first active (the interval page_ms_at names).
	ServerAt map[string]*Sample `json:"server_at"`
	// ServerCPUUtilMax is the server's highest interval CPU use, in cores.
	ServerCPUUtilMax *float64 `json:"server_cpu_util_max"`
}

// Sample is one line of server.jsonl: the server under test during one interval.
type Sample struct {
	Index           int                `json:"index"`
	TS              float64            `json:"t_s"`      // the sample's instant, from the run's start
	CPUMs           float64            `json:"cpu_ms"`   // the interval's CPU (user + system) of the server's processes
	CPUUtil         float64            `json:"cpu_util"` // cores: cpu_ms ÷ the time since the previous sample
	MemoryBytes     int64              `json:"memory_bytes"`
	MemoryPeakBytes int64              `json:"memory_peak_bytes"` // the highest memory charged since the previous sample
	Processes       int                `json:"processes"`
	Threads         int                `json:"threads"`
	Source          string             `json:"source"`
	Gauges          map[string]float64 `json:"gauges"`
	Error           *string            `json:"error"` // why part of the sample is missing (gauges unreadable)
}

// Run runs a prepared load test and writes its directory. Everything it creates outside OutDir —
// namespaces, processes, the server's group, the private directory — is removed before it
// returns, also when ctx ends.
func Run(ctx context.Context, p *Prepared, o Options) (*Result, error) {
	if err := lab.ChildDefaults(&o.Engine, &o.Env, &o.Command); err != nil {
		return nil, err
	}
	if o.Warn == nil {
		o.Warn = io.Discard
	}
	r := &runner{p: p, o: o, started: time.Now()}
	res, err := r.run(ctx)
	if cerr := r.cleanup(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	var exited *ServerExitError
	var degraded *DegradedError
	if res != nil && (err == nil || errors.Is(err, ErrInterrupted) || errors.As(err, &exited) || errors.As(err, &degraded)) {
		if werr := trial.WriteJSON(filepath.Join(o.OutDir, ResultFile), res); werr != nil {
			return nil, werr
		}
		r.log.Printf("%s written: %d intervals, %d server samples, thresholds passed %v, interrupted %v",
			ResultFile, res.Intervals, res.ServerSamples, res.ThresholdsPassed, res.Interrupted)
		r.progress(map[string]any{"event": "done"})
	}
	if r.logFile != nil {
		if err != nil {
			r.log.Printf("error: %v", err)
		}
		r.logFile.Close()
	}
	return res, err
}

type runner struct {
	p       *Prepared
	o       Options
	started time.Time
	logFile *os.File
	log     *trial.EngineLog
	lab     *lab.Lab
	token   string
	closed  bool
	summary any
	// degradedLogged: the first degraded interval was logged
	degradedLogged bool
	// startCh receives the run's start from a target's generator (its start event, after its
	// preflight load); nil for a lab server, whose start the parent sets.
	startCh chan int64
}

func (r *runner) progress(v any) { trial.WriteEvent(r.o.Progress, v) }

func (r *runner) run(ctx context.Context) (*Result, error) {
	spec := r.p.Spec
	lp := r.p.Lab
	if err := os.MkdirAll(r.o.OutDir, 0o755); err != nil {
		return nil, err
	}
	lf, err := os.Create(filepath.Join(r.o.OutDir, LogFile))
	if err != nil {
		return nil, err
	}
	r.logFile, r.log = lf, trial.NewEngineLog(lf, r.started)
	prov := trial.NewProvenance(r.o.Command, r.started)
	specJSON, _ := json.Marshal(spec)
	if r.p.Target != nil {
		return r.runTarget(ctx, prov, specJSON)
	}
	r.log.Header(
		fmt.Sprintf("wirelab-engine %s (%s) loadtest %s", prov.EngineVersion, prov.GitSHA, spec.LoadtestID),
		"command: "+strings.Join(r.o.Command, " "),
		"spec: "+string(specJSON),
		"network: "+lp.Profile.String(),
		fmt.Sprintf("page: %s, %d objects, %d bytes, %d origins", lp.Page.Name, len(lp.Page.Objects), lp.Page.TotalBytes(), lp.Origins()),
	)

	if ctx.Err() != nil {
		return nil, ErrInterrupted
	}
	root, err := r.startServer(ctx, &prov, lab.Options{Engine: r.o.Engine, Env: r.o.Env, Command: r.o.Command,
		DNS: spec.Client.DNS == "server", Log: r.log.Printf})
	if err != nil {
		return nil, err
	}
	scheme := page.Scheme(spec.Protocol)
	private := filepath.Join(r.lab.Dir, "loadtest")
	if err := os.Mkdir(private, 0o700); err != nil {
		return nil, err
	}
	specFile := filepath.Join(private, "spec.json")
	if err := os.WriteFile(specFile, specJSON, 0o600); err != nil {
		return nil, err
	}
	r.log.Printf("topology %s / %s up: server %s (%s) ready; server samples from %s; target %s",
		r.lab.Topo.Name(netns.Client), r.lab.Topo.Name(netns.Server), spec.Server.Impl, prov.Server.Version, trial.CostSource(r.lab.CostSource), root)
	r.progress(map[string]any{"event": "ready"})

	// The run's start: a moment ahead, so that the child is up before its first interval counts.
	startNs := monotonicNow() + int64(startLead)
	args := []string{r.o.Engine, "loadgen", "--spec", specFile, "--target", root, "--start-ns", strconv.FormatInt(startNs, 10),
		"--lab", r.lab.Topo.ID}
	if scheme == "https" {
		args = append(args, "--ca", r.lab.CAFile)
	}
	if spec.Client.DNS == "server" {
		args = append(args, "--dns", labaddr.DNSAddr.String())
	} else {
		args = append(args, "--resolve", trial.StaticMap(lp.Origins()))
	}
	r.log.Printf("loadgen: %s", strings.Join(args[1:], " "))
	res, err := r.generate(ctx, args, startNs)
	if res != nil {
		prov.Finish()
		res.Provenance = prov
	}
	return r.finish(res, err)
}

// startServer starts the lab (a lab server's: the server under test behind the emulated path, or
// a cluster run's server half) and makes the page servable; the page's root URL. One token for the
// whole run: VUs load the same URLs thousands of times (the loader keeps no cache), and a file
// server cannot have a tree written per page.
func (r *runner) startServer(ctx context.Context, prov *trial.Provenance, o lab.Options) (string, error) {
	var err error
	r.lab, err = lab.Start(ctx, r.p.Lab, o)
	if err != nil {
		if ctx.Err() != nil {
			return "", ErrInterrupted
		}
		return "", err
	}
	prov.Namespaces = r.lab.Namespaces()
	prov.Server = trial.ServerProvenanceOf(r.lab)
	r.token = page.NewToken()
	if err := r.lab.Serve(r.token, r.p.Spec.Protocol); err != nil {
		return "", err
	}
	return r.p.Lab.Page.URL(0, page.Base{Scheme: page.Scheme(r.p.Spec.Protocol), Token: r.token})
}

// finish ends a run, of a lab server or of a target, once its generators have: a run that ended
// with a result to keep (complete, interrupted, its server exited, a generator lost) stops the lab
// now, to have the emulator's summary in loadtest.json; any other error is the run's failure.
func (r *runner) finish(res *Result, err error) (*Result, error) {
	var exited *ServerExitError
	var degraded *DegradedError
	if err != nil && !errors.Is(err, ErrInterrupted) && !errors.As(err, &exited) && !errors.As(err, &degraded) {
		return nil, err
	}
	if cerr := r.cleanup(); cerr != nil {
		return nil, cerr
	}
	if res != nil {
		res.Emulator = r.summary
	}
	return res, err
}

// generate runs loadgen, samples the server at the interval boundaries and collects the lines.
func (r *runner) generate(ctx context.Context, argv []string, startNs int64) (*Result, error) {
	spec := r.p.Spec
	intervals, err := os.Create(filepath.Join(r.o.OutDir, IntervalsFile))
	if err != nil {
		return nil, err
	}
	defer intervals.Close()
	samples, err := os.Create(filepath.Join(r.o.OutDir, ServerFile))
	if err != nil {
		return nil, err
	}
	defer samples.Close()

	// The generators: one loadgen, or with Options.Generators N > 1 N of them in the client
	// namespace, each running its part of the VUs (--part K/N) and printing its histograms, merged
	// interval by interval (loadgen.Merger) as every generator still running has reported it.
	n := max(r.o.Generators, 1)
	gens := make([]*generator, n)
	names := make([]string, n)
	for k := range gens {
		args := argv
		names[k] = "local"
		if n > 1 {
			names[k] = fmt.Sprintf("local-%d", k)
			args = append(append([]string(nil), argv...), "--part", fmt.Sprintf("%d/%d", k, n), "--histograms")
		}
		g := &generator{name: names[k], stderr: tail.New(8, "no stderr")}
		g.cmd = r.lab.Topo.Command(netns.Client, args...)
		g.cmd.Env = r.o.Env
		g.cmd.Stderr = g.stderr
		var err error
		if g.stdout, err = g.cmd.StdoutPipe(); err != nil {
			return nil, err
		}
		gens[k] = g
	}
	var raw []*os.File // each generator's own lines, when there are several
	if n > 1 {
		if err := os.MkdirAll(filepath.Join(r.o.OutDir, GeneratorsDir), 0o755); err != nil {
			return nil, err
		}
		for _, g := range gens {
			f, err := os.Create(filepath.Join(r.o.OutDir, GeneratorsDir, g.name+".jsonl"))
			if err != nil {
				return nil, err
			}
			defer f.Close()
			raw = append(raw, f)
		}
	}
	for k, g := range gens {
		if err := g.cmd.Start(); err != nil {
			for _, o := range gens[:k] {
				_ = o.cmd.Process.Kill()
				_ = o.cmd.Wait()
			}
			return nil, fmt.Errorf("loadgen: %w", err)
		}
	}
	exited := make(chan struct{})

	// The sampler: the server at start + k·interval (CLOCK_MONOTONIC), until the generator ends.
	var sampled []Sample
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		enc := json.NewEncoder(samples)
		if r.p.Target != nil {
			r.sampleTarget(ctx, exited, enc, &sampled)
			return
		}
		r.sampleServer(ctx, startNs, exited, enc, &sampled)
	}()

	// The generators' lines: intervals (merged when there are several; also shown as progress)
	// and the summaries.
	var summary *loadgen.Summary
	var lines int
	var merger *loadgen.Merger
	if n > 1 {
		merger = loadgen.NewMerger(spec, names)
	}
	var mergeErr error
	writeInterval := func(line []byte) {
		lines++
		_, _ = intervals.Write(append(append([]byte(nil), line...), '\n'))
		if r.o.Progress != nil {
			_, _ = r.o.Progress.Write(append(append([]byte(nil), line...), '\n'))
		}
	}
	merged := func(ivs []loadgen.Interval, err error) {
		if err != nil && mergeErr == nil {
			mergeErr = err
		}
		for _, iv := range ivs {
			if iv.Degraded && (iv.Index == 0 || !r.degradedLogged) {
				r.degradedLogged = true
				r.log.Printf("generator(s) %s lost: interval %d and those after it are marked degraded", strings.Join(iv.GeneratorsLost, ", "), iv.Index)
			}
			b, _ := json.Marshal(iv)
			writeInterval(b)
		}
	}
	type genLine struct {
		k    int
		line []byte // nil: the generator's output ended
	}
	feed := make(chan genLine, 64)
	for k, g := range gens {
		go func() {
			sc := bufio.NewScanner(g.stdout)
			sc.Buffer(make([]byte, 64<<10), 16<<20)
			for sc.Scan() {
				feed <- genLine{k, append([]byte(nil), sc.Bytes()...)}
			}
			feed <- genLine{k: k}
		}()
	}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for open := n; open > 0; {
			gl := <-feed
			g := gens[gl.k]
			if gl.line == nil {
				open--
				if merger != nil {
					merged(merger.End(gl.k, g.summary))
				}
				continue
			}
			if raw != nil {
				_, _ = raw[gl.k].Write(append(gl.line, '\n'))
			}
			var ev struct {
				Event string `json:"event"`
			}
			if json.Unmarshal(gl.line, &ev) != nil {
				r.log.Printf("loadgen %s: %s", g.name, gl.line)
				continue
			}
			switch ev.Event {
			case "start":
				var st struct {
					StartNs int64 `json:"start_ns"`
				}
				if json.Unmarshal(gl.line, &st) == nil && r.startCh != nil {
					select { // once: the sampler counts from the first
					case r.startCh <- st.StartNs:
					default:
					}
				}
			case "interval":
				if merger == nil {
					writeInterval(gl.line)
					continue
				}
				var iv loadgen.Interval
				if err := json.Unmarshal(gl.line, &iv); err != nil {
					merged(nil, fmt.Errorf("generator %s: %v", g.name, err))
					continue
				}
				merged(merger.Add(gl.k, iv))
			case "summary":
				var s loadgen.Summary
				if err := json.Unmarshal(gl.line, &s); err == nil {
					g.summary = &s
				}
			}
		}
	}()
	waitErr := make(chan error, 1)
	go func() {
		<-readDone
		var first error
		for _, g := range gens {
			g.err = g.cmd.Wait()
			// with several, a lost generator's end (no summary) is the merge's business
			if g.err != nil && first == nil && (merger == nil || g.summary != nil) {
				first = g.err
			}
		}
		waitErr <- first
		close(exited)
	}()
	interrupted := false
	var serverExit *ServerExit
	var werr error
	var serverExited <-chan struct{} // nil (never) for a target: its server is not ours
	if r.lab.Server != nil {
		serverExited = r.lab.Server.Exited()
	}
	stopVUs := func() {
		// loadgen stops its VUs, prints its last interval and the summary, then exits 130.
		for _, g := range gens {
			_ = g.cmd.Process.Signal(syscall.SIGINT)
		}
		select {
		case werr = <-waitErr:
		case <-time.After(spec.Timeout() + stopVUsGrace):
			for _, g := range gens {
				_ = g.cmd.Process.Kill()
			}
			werr = <-waitErr
		}
	}
	select {
	case werr = <-waitErr:
	case <-ctx.Done():
		interrupted = true
		stopVUs()
	case <-serverExited:
		// The server died under load — an outcome worth recording (out of memory, a crash), not
		// one to keep loading for the rest of the scenario: the VUs run one more interval, so the
		// record shows what they met (resets, refused connections, by kind), then stop; what was
		// measured is kept.
		serverExit = &ServerExit{TS: round3(float64(monotonicNow()-startNs) / 1e9)}
		if e := r.lab.Server.ExitErr(); e != nil {
			serverExit.Error = e.Error()
		}
		r.log.Printf("the server exited during the load test at %.3f s: %s; the VUs run one more interval (what they see is recorded), then stop", serverExit.TS, serverExit.Error)
		select {
		case werr = <-waitErr: // the scenario ended meanwhile
		case <-time.After(spec.Interval()):
			stopVUs()
		case <-ctx.Done():
			stopVUs()
		}
	}
	<-samplerDone
	code := child.ExitCode(werr)
	var stderrs []string
	for _, g := range gens {
		r.log.Printf("loadgen %s exited: %v; %s", g.name, g.err, g.stderr.String())
		stderrs = append(stderrs, g.stderr.String())
		if child.ExitCode(g.err) == 2 {
			code = 2
		}
	}
	stderr := strings.Join(stderrs, "; ")
	if code == 2 && r.p.Target != nil {
		// loadgen's preflight: the target cannot be loaded (unreachable, a certificate that
		// fails, an error status) — bad input, nothing measured
		all := strings.Split(stderr, " | ")
		why := strings.TrimPrefix(all[len(all)-1], "wirelab-engine: ")
		return nil, fielderr.New("target.url", r.p.Spec.Target.URL, "%s", why)
	}
	if merger != nil && mergeErr == nil {
		var m *loadgen.Merged
		if m, mergeErr = merger.Finish(); mergeErr == nil && len(merger.Lost()) < n {
			summary = m.Summary
		}
	} else if merger == nil {
		summary = gens[0].summary
	}
	if mergeErr != nil {
		return nil, fmt.Errorf("merging the generators' intervals: %v", mergeErr)
	}
	if summary == nil {
		if interrupted {
			return nil, ErrInterrupted
		}
		return nil, fmt.Errorf("loadgen ended without a summary (%v): %s", werr, stderr)
	}
	if code == 2 {
		return nil, fmt.Errorf("loadgen refused the spec the load test gave it (a bug): %s", stderr)
	}
	res := Assemble(spec, summary, sampled, lines, interrupted || (serverExit == nil && summary.Interrupted), r.p.Target == nil)
	res.ServerExited = serverExit
	if serverExit != nil {
		return res, &ServerExitError{ServerExit: *serverExit}
	}
	if res.Degraded {
		return res, &DegradedError{Lost: summary.GeneratorsLost, Generators: summary.Generators}
	}
	if res.Interrupted {
		return res, ErrInterrupted
	}
	return res, nil
}

// Assemble is loadtest.json's record of a run from what its generator(s) and server sampler
// gave: the summary (one generator's, or the merge of several), the server samples (one per
// interval, same index), how many interval lines were written. serverCPU: the samples carry the
// server's CPU (a lab server's control group; not a target's status page), so server_cpu_util_max
// and the server thresholds are decided from them. Used by a lab run and by loadmerge --out (a run
// whose generators ran on cluster workers).
func Assemble(spec *loadgen.Spec, summary *loadgen.Summary, sampled []Sample, lines int, interrupted, serverCPU bool) *Result {
	res := &Result{Contract: Contract, Spec: spec, Summary: summary, Degraded: summary.Degraded, Generators: summary.Generators, Interrupted: interrupted, ServerMeasured: true,
		Intervals: lines, ServerSamples: len(sampled), GeneratorSaturated: summary.GeneratorSaturated}
	res.Outcomes = Outcomes{Outcomes: summary.Outcomes, ServerAt: map[string]*Sample{}}
	for _, s := range sampled {
		if s.Source != "" && serverCPU {
			if res.Outcomes.ServerCPUUtilMax == nil || s.CPUUtil > *res.Outcomes.ServerCPUUtilMax {
				v := s.CPUUtil
				res.Outcomes.ServerCPUUtilMax = &v
			}
		}
	}
	for key, at := range summary.Outcomes.PageMsAt {
		if at == nil || at.Index >= len(sampled) {
			res.Outcomes.ServerAt[key] = nil
			continue
		}
		s := sampled[at.Index]
		res.Outcomes.ServerAt[key] = &s
	}
	res.Thresholds, res.ThresholdsPassed = loadgen.EvaluateAll(spec.Thresholds,
		&loadgen.Measures{Totals: summary.Totals, Outcomes: summary.Outcomes, ServerCPUUtilMax: res.Outcomes.ServerCPUUtilMax})
	return res
}

// sampleServer samples the lab's server at start + k·interval (CLOCK_MONOTONIC) until stop is
// closed, then once more (the last, partial interval).
func (r *runner) sampleServer(ctx context.Context, startNs int64, stop <-chan struct{}, enc *json.Encoder, sampled *[]Sample) {
	// The first interval starts at the run's start: read the server's usage then.
	select {
	case <-time.After(max(time.Duration(startNs-monotonicNow()), 0)):
	case <-stop:
	}
	u0, err0 := r.lab.Server.Usage()
	prev := usage{Usage: u0, ok: err0 == nil && u0.Source != "", at: time.Duration(monotonicNow() - startNs)}
	if r.lab.Server.Group != nil {
		r.lab.Server.Group.ResetPeak()
	}
	r.eachInterval(startNs, stop, enc, sampled, func(k int, since time.Duration) Sample {
		s, u := r.sample(ctx, k, prev, since)
		prev = u
		return s
	})
}

// eachInterval takes a sample (take: interval k's, since the run's start) at start + (k+1)·interval
// for k = 0, 1, … (CLOCK_MONOTONIC), and a last one when stop closes; each is appended to sampled
// and written to enc. The sampler of the lab's server and of an external target's status page.
func (r *runner) eachInterval(startNs int64, stop <-chan struct{}, enc *json.Encoder, sampled *[]Sample, take func(k int, since time.Duration) Sample) {
	interval := r.p.Spec.Interval()
	for k := 0; ; k++ {
		at := startNs + int64(k+1)*interval.Nanoseconds()
		last := false
		select {
		case <-time.After(max(time.Duration(at-monotonicNow()), 0)):
		case <-stop:
			last = true
		}
		s := take(k, time.Duration(monotonicNow()-startNs))
		*sampled = append(*sampled, s)
		_ = enc.Encode(s)
		if last {
			return
		}
	}
}

// ServerExit is when and how the server under test exited before the load test ended.
type ServerExit struct {
	TS    float64 `json:"t_s"`   // from the run's start
	Error string  `json:"error"` // its exit status, as the engine saw it
}

// ServerExitError is Run's error when the server exited during the load test: loadtest.json is
// written (server_exited set), and the load test fails.
type ServerExitError struct{ ServerExit }

func (e *ServerExitError) Error() string {
	return fmt.Sprintf("the server exited during the load test at %.3f s (%s); what was measured until then is kept", e.TS, e.ServerExit.Error)
}

// sample reads the server's usage and gauges at interval k's end; prev is the usage at its start.
// usage is a reading of the server's group (ok false when there is no group).
type usage struct {
	cgroup.Usage
	ok bool
	at time.Duration // when it was read, from the run's start
}

func (r *runner) sample(ctx context.Context, k int, prev usage, since time.Duration) (Sample, usage) {
	s := Sample{Index: k, TS: round3(since.Seconds()), Gauges: map[string]float64{}}
	cctx, cancel := context.WithTimeout(ctx, min(r.p.Spec.Interval(), maxSampleTime))
	defer cancel()
	smp, err := r.lab.Server.Sample(cctx)
	u := usage{Usage: smp.Usage, ok: smp.Source != "", at: since}
	if err != nil {
		msg := err.Error()
		s.Error = &msg
	}
	if u.ok {
		s.Source = string(smp.Source)
		s.MemoryBytes, s.MemoryPeakBytes = smp.MemoryBytes, smp.MemoryPeakBytes
		s.Processes, s.Threads = smp.Processes, smp.Threads
		if prev.ok {
			// Over the time actually between the readings: the last interval is usually partial.
			s.CPUMs = round3(float64(smp.CPUNs-prev.CPUNs) / 1e6)
			if d := since - prev.at; d > 0 {
				s.CPUUtil = round3(s.CPUMs / (float64(d) / 1e6))
			}
		}
		if r.lab.Server.Group != nil {
			r.lab.Server.Group.ResetPeak() // the next sample's peak is its interval's
		}
	}
	if smp.Gauges != nil {
		s.Gauges = smp.Gauges
	}
	return s, u
}

// cleanup stops the lab once and keeps the emulator's summary.
func (r *runner) cleanup() error {
	if r.closed || r.lab == nil {
		return nil
	}
	r.closed = true
	if r.token != "" {
		_ = r.lab.Forget(r.token)
	}
	sum, err := r.lab.Close()
	r.summary = sum
	r.log.Printf("%s", trial.StoppedLine(sum))
	return err
}

func monotonicNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
