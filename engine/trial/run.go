package trial

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/browser"
	"github.com/wirelab/wirelab/engine/emulator"
	"github.com/wirelab/wirelab/engine/internal/shellquote"
	"github.com/wirelab/wirelab/engine/lab"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/pktlog"
	"github.com/wirelab/wirelab/engine/server/impl"
	"github.com/wirelab/wirelab/engine/sites"
	"github.com/wirelab/wirelab/engine/why"
)

// Files of the trial directory (docs/trial-contract.md).
const (
	TrialFile   = "trial.json"
	LoadsFile   = "loads.jsonl"
	LogFile     = "engine.log"
	HARDir      = "har"
	PcapDir     = "pcap"
	FramesDir   = "frames" // Chromium's frames of each load: frames/<load>/NNN.jpg (capture.screenshots)
	ServerDir   = "server"
	ServerReqs  = "server/requests.jsonl" // serve's request records (one line per request)
	ServerConns = "server/conns.jsonl"    // serve's connection records (one line per connection)
)

// ErrInterrupted is returned by Run when ctx ended (SIGINT/SIGTERM): everything was removed and
// trial.json was not written.
var ErrInterrupted = errors.New("interrupted")

// Options are how a trial runs, besides its spec.
type Options struct {
	OutDir string
	// Progress receives the progress lines ({"event":"ready"|"load"|"done",…}); nil for none.
	// Write errors (a closed pipe) are ignored.
	Progress io.Writer
	// Engine is the wirelab-engine binary run as `serve` and `fetch` (default: this executable).
	Engine string
	// Env is the environment of serve and fetch (default: this process's).
	Env []string
	// Command is recorded as provenance (default os.Args).
	Command []string
	// Warn receives one-line warnings (default: discarded).
	Warn io.Writer
	// Decomposed, when set, is told how long each load's decomposition took (bench why).
	Decomposed func(time.Duration)
}

// Result is trial.json.
type Result struct {
	Contract   int            `json:"contract"`
	Spec       *Spec          `json:"spec"`
	Provenance Provenance     `json:"provenance"`
	Emulator   EmulatorResult `json:"emulator"`
	Loads      int            `json:"loads"`
	Errors     int            `json:"errors"`
	// Egress is a live trial's egress router (docs/egress.md); absent for other trials.
	Egress *EgressResult `json:"egress,omitempty"`
}

// EgressResult is what a live trial's egress router let through and refused.
type EgressResult struct {
	Far             string   `json:"far"`               // internet (the local internet) | host (public sites)
	Admitted        []string `json:"admitted"`          // the addresses the client could reach
	RefusedByPolicy int      `json:"refused_by_policy"` // answered addresses (or names) the policy refused
	RefusedPackets  int64    `json:"refused_packets"`   // packets the router rejected
}

// EmulatorResult is trial.json's "emulator": the emulator's summary over the whole trial, and what
// crossed the link outside every load's window.
type EmulatorResult struct {
	emulator.Summary
	BetweenLoads struct {
		Packets int64 `json:"packets"` // records outside every load's window or of flows no load opened
	} `json:"between_loads"`
}

// Run runs a prepared trial and writes its directory. Errors other than ErrInterrupted mean the
// trial could not run (trial.json is not written); individual loads that fail are records with an
// error. Everything Run creates outside OutDir — namespaces, processes, certificates — is removed
// before it returns, also when ctx ends.
func Run(ctx context.Context, p *Prepared, o Options) (*Result, error) {
	r := &runner{p: p, o: o, started: time.Now()}
	if err := lab.ChildDefaults(&r.o.Engine, &r.o.Env, &r.o.Command); err != nil {
		return nil, err
	}
	if r.o.Warn == nil {
		r.o.Warn = io.Discard
	}
	res, err := r.run(ctx)
	if cerr := r.cleanup(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if err != nil && ctx.Err() != nil {
		return nil, ErrInterrupted
	}
	if err != nil {
		return nil, err
	}
	if err := WriteJSON(filepath.Join(o.OutDir, TrialFile), res); err != nil {
		return nil, err
	}
	r.log.Printf("trial.json written: %d loads, %d errors", res.Loads, res.Errors)
	r.progress(map[string]any{"event": "done"})
	return res, nil
}

// runner holds one trial's state.
type runner struct {
	p       *Prepared
	o       Options
	started time.Time

	logFile  *os.File
	log      *EngineLog
	tmp      string // the trial's files in the lab's private directory
	pageFile string // replay, priorities: the served page as JSON, in tmp
	lab      *lab.Lab
	emu      *emulator.Emulator // the lab's
	quic     *quicReports
	egress   *EgressEvents // a live page's egress router's events
	whyPath  why.Path      // the path's bottleneck for the loads' decomposition
	summary  emulator.Summary
	stopped  bool
}

func (r *runner) progress(v any) { WriteEvent(r.o.Progress, v) }

func (r *runner) run(ctx context.Context) (*Result, error) {
	s := r.p.Spec
	dir := r.o.OutDir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lf, err := os.Create(filepath.Join(dir, LogFile))
	if err != nil {
		return nil, err
	}
	r.logFile, r.log = lf, NewEngineLog(lf, r.started)
	specJSON, _ := json.Marshal(s)
	prov := NewProvenance(r.o.Command, r.started)
	r.log.Header(
		fmt.Sprintf("wirelab-engine %s (%s) trial %s", prov.EngineVersion, prov.GitSHA, s.TrialID),
		"command: "+shellquote.Join(r.o.Command),
		fmt.Sprintf("started: %s  host: %s  kernel: %s  cpu: %s  loadavg: %s  pid: %d", prov.StartedAt, prov.Hostname, prov.Kernel, prov.CPU, prov.LoadAvgStart, os.Getpid()),
		"spec: "+string(specJSON),
		"network: "+r.p.Profile.String(),
		pageLine(r.p),
		fmt.Sprintf("loads: %d (%s order); engine binary: %s", len(r.p.Sequence), s.Order, r.o.Engine),
	)
	for _, sub := range []struct {
		name string
		want bool
	}{{HARDir, s.Capture.HAR}, {PcapDir, s.Capture.Pcap}, {ServerDir, true}} {
		if sub.want {
			if err := os.MkdirAll(filepath.Join(dir, sub.name), 0o755); err != nil {
				return nil, err
			}
		}
	}
	loads, err := os.OpenFile(filepath.Join(dir, LoadsFile), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer loads.Close()

	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	r.quic = newQUICReports()
	if r.whyPath, err = whyPath(r.p.Profile); err != nil {
		return nil, err
	}
	if err := r.startLab(ctx, &prov); err != nil {
		return nil, err
	}
	if r.p.Live != nil {
		if err := r.planLive(ctx); err != nil {
			return nil, err
		}
	}
	r.progress(map[string]any{"event": "ready"})
	return r.loads(ctx, loads, &prov)
}

// startLab starts the trial's lab: the path, and behind it the page's server under test and the
// DNS server, or for a live page the egress router and its far side.
func (r *runner) startLab(ctx context.Context, prov *Provenance) error {
	s := r.p.Spec
	o := lab.Options{Engine: r.o.Engine, Env: r.o.Env, Command: r.o.Command, PacketLog: true, PcapRotation: s.Capture.Pcap,
		DNS: s.Client.DNS == "server", Log: r.log.Printf,
		AnnounceH3: s.Client.H3 == "alt-svc", HTTPSRecords: s.Client.H3 == "https-rr"}
	var stderr bytes.Buffer
	if r.p.Live == nil {
		o.RecordsFile, o.ConnsFile = filepath.Join(r.o.OutDir, ServerReqs), filepath.Join(r.o.OutDir, ServerConns)
		// the server's reports of ended connections: h3's losses, h2's stream maps (the built-in server's)
		o.QUICStats = slices.ContainsFunc(s.Protocols, func(p string) bool { return p == "h3" || p == "h2" || p == "h2c" })
		o.OnServerLine = r.quic.line(r.log)
	} else {
		r.egress = NewEgressEvents(r.log)
		o.OnEgress, o.Stderr = r.egress.On, &stderr
	}
	var err error
	r.lab, err = lab.Start(ctx, r.p.Prepared, o)
	if stderr.Len() > 0 {
		r.log.Printf("sites serve: %s", strings.TrimSpace(stderr.String()))
	}
	if err != nil {
		switch r.p.Far {
		case lab.FarInternet:
			return fmt.Errorf("local internet: %w", err)
		case lab.FarHost:
			return fmt.Errorf("egress path: %w", err)
		}
		return err
	}
	r.emu = r.lab.Emu
	prov.Namespaces = r.lab.Namespaces()
	switch r.p.Far {
	case lab.FarInternet:
		prov.Server = &ServerProvenance{Impl: "builtin", Version: prov.EngineVersion}
		r.log.Printf("local internet %s / %s / %s up: %d sites behind the egress router, DNS forwarder %s",
			r.emu.Topo.Name(netns.Client), r.emu.Topo.Name(netns.Server), r.emu.Topo.Name(netns.Internet), len(sites.Served(r.lab.Sites)), labaddr.DNSAddr)
		return nil
	case lab.FarHost:
		up := r.emu.Topo.Uplink()
		r.log.Printf("egress path %s / %s up: the host's way out %s, uplink %s (router %s), DNS forwarder %s asks the host's resolver",
			r.emu.Topo.Name(netns.Client), r.emu.Topo.Name(netns.Server), up.HostIface, up.Prefix, up.Router, labaddr.DNSAddr)
		return nil
	}
	prov.Server = ServerProvenanceOf(r.lab)
	r.tmp = filepath.Join(r.lab.Dir, "trial")
	if err := os.Mkdir(r.tmp, 0o700); err != nil {
		return err
	}
	if s.Client.Mode == "replay" || s.Client.Priority != "none" {
		// Replay requests each object from its origin, and the priority policies type objects and
		// take their depths from the page: the loader gets the page as served (sharded).
		if r.pageFile, err = writeServedPage(r.p.Page, r.tmp); err != nil {
			return err
		}
	}
	r.log.Printf("topology %s / %s up: %d origins", r.emu.Topo.Name(netns.Client), r.emu.Topo.Name(netns.Server), r.p.Origins())
	if r.lab.Server.ReadyLine != "" {
		r.log.Printf("serve ready: %s", r.lab.Server.ReadyLine)
	} else {
		r.log.Printf("server %s (%s) ready; server cost from %s", s.Server.Impl, r.lab.Version, CostSource(r.lab.CostSource))
	}
	return nil
}

// loads runs the sequence, writing each record as it finishes, and stops the path.
func (r *runner) loads(ctx context.Context, loads *os.File, prov *Provenance) (*Result, error) {
	s := r.p.Spec
	res := &Result{Contract: Contract, Spec: s}
	up, down := maxDelay(r.p.Profile)
	settleLimit := max(10*time.Second, 4*(up+down))
	var between int64
	for _, l := range r.p.Sequence {
		// A live page's server is its site's: a site that went away is its loads' errors.
		if r.p.Live == nil {
			if alive, why := r.lab.ServerAlive(); !alive {
				return nil, fmt.Errorf("the server exited during the trial (%v); see %s", why, LogFile)
			}
		}
		if l.Index > 0 && s.GapMs > 0 {
			if err := sleepCtx(ctx, time.Duration(s.GapMs*float64(time.Millisecond))); err != nil {
				return nil, err
			}
		}
		rec, stray, err := r.load(ctx, l, settleLimit)
		if err != nil {
			return nil, err
		}
		between += int64(stray)
		line, _ := json.Marshal(rec)
		if _, err := loads.Write(append(line, '\n')); err != nil {
			return nil, fmt.Errorf("%s: %w", LoadsFile, err)
		}
		res.Loads++
		if rec.Error != nil {
			res.Errors++
		}
		r.progress(map[string]any{"event": "load", "index": rec.Index, "protocol": rec.Protocol,
			"repetition": rec.Repetition, "plt_ms": rec.PltMs, "error": rec.Error})
	}
	if err := r.emu.RotatePcaps("", ""); err != nil {
		return nil, fmt.Errorf("pcap: %w", err)
	}
	between += int64(len(r.emu.Log.Take()))
	res.Egress = r.egressResult()
	if err := r.stop(); err != nil {
		return nil, err
	}
	res.Emulator.Summary = r.summary
	res.Emulator.BetweenLoads.Packets = between
	prov.Finish()
	res.Provenance = *prov
	if res.Emulator.LatenessUS.OverLimit() || res.Emulator.DeviceDrops > 0 {
		fmt.Fprintf(r.o.Warn, "wirelab-engine: trial %s: emulator fidelity: lateness p99 %.0f µs, device drops %d\n", s.TrialID, res.Emulator.LatenessUS.P99, res.Emulator.DeviceDrops)
	}
	return res, nil
}

// addServerQUICLosses adds what the server's QUIC stack declared lost on the load's connections,
// reported by serve (--quic-stats) when each one ends: they are retransmissions as much as the
// client's. It returns the server's loss recovery by kind.
func (r *runner) addServerQUICLosses(ctx context.Context, rec *Record, own []pktlog.Record) why.Retx {
	remotes := quicClients(own, uint16(impl.DefaultPorts.QUIC))
	lost, kinds, missing := r.quic.take(ctx, remotes, quicReportLimit, r.serverGone())
	rec.Retransmissions += lost
	rec.Client["quic_server_packets_lost"] = lost
	if missing > 0 {
		rec.Client["quic_server_unreported"] = missing
		r.log.Printf("load %d: %d of %d QUIC connections did not report their end within %s; their server-side losses are not counted", rec.Index, missing, len(remotes), quicReportLimit)
	}
	return kinds
}

// streamMaps are the built-in server's stream maps of the load's h2 connections (h2_closed), for
// the decomposition's head-of-line blocking.
func (r *runner) streamMaps(ctx context.Context, l Load, own []pktlog.Record) []why.StreamMap {
	port := impl.DefaultPorts.HTTPS
	if l.Protocol == "h2c" {
		port = impl.DefaultPorts.HTTP
	}
	remotes := clientsOf(own, pktlog.ProtoTCP, uint16(port))
	maps, missing := r.quic.takeMaps(ctx, remotes, quicReportLimit, r.serverGone())
	if missing > 0 {
		r.log.Printf("load %d: %d of %d h2 connections did not report their stream map within %s; head-of-line blocking on them counts as recovery", l.Index, missing, len(remotes), quicReportLimit)
	}
	return maps
}

// load runs one page load and returns its record and the stray records of its window.
func (r *runner) load(ctx context.Context, l Load, settleLimit time.Duration) (Record, int, error) {
	s := r.p.Spec
	token := page.NewToken()
	name := fmt.Sprintf("%d-%s-%d", l.Index, l.Protocol, l.Repetition)
	var harRel, harPath, urlsFile string
	if s.Capture.HAR {
		harRel = HARDir + "/" + name + ".har"
		harPath = filepath.Join(r.o.OutDir, harRel)
	}
	if s.Client.Mode == "objects" {
		urls, err := r.p.Page.URLs(token, page.Scheme(l.Protocol))
		if err != nil {
			return Record{}, 0, err
		}
		urlsFile = filepath.Join(r.tmp, "urls.txt")
		if err := os.WriteFile(urlsFile, []byte(strings.Join(urls, "\n")+"\n"), 0o644); err != nil {
			return Record{}, 0, err
		}
	}
	var framesRel, framesPath string
	if s.Capture.Screenshots && s.Client.Impl == "chromium" {
		framesRel = FramesDir + "/" + name
		framesPath = filepath.Join(r.o.OutDir, framesRel)
	}
	var pcaps *PcapPaths
	if s.Capture.Pcap {
		pcaps = &PcapPaths{Client: PcapDir + "/" + name + "-client.pcap", Server: PcapDir + "/" + name + "-server.pcap"}
		if err := r.emu.RotatePcaps(filepath.Join(r.o.OutDir, pcaps.Client), filepath.Join(r.o.OutDir, pcaps.Server)); err != nil {
			return Record{}, 0, fmt.Errorf("pcap: %w", err)
		}
	}
	var args []string
	var err error
	if r.p.Live != nil {
		args = liveLoaderArgs(r.p, l, liveFiles{CAFile: r.lab.CAFile, SPKI: r.lab.SPKIHash, HAR: harPath})
	} else {
		args, err = loaderArgs(r.p, l, token, loadFiles{CAFile: r.lab.CAFile, SPKI: r.lab.SPKIHash,
			PageFile: r.pageFile, URLs: urlsFile, HAR: harPath, Frames: framesPath})
		if err != nil {
			return Record{}, 0, err
		}
		if err := r.lab.Serve(token, l.Protocol); err != nil {
			return Record{}, 0, fmt.Errorf("server files: %w", err)
		}
		defer func() {
			if err := r.lab.Forget(token); err != nil {
				r.log.Printf("load %d: %v", l.Index, err)
			}
		}()
	}
	// Whatever crossed the link since the previous load's window closed is no load's, and so are
	// QUIC connections that ended since (late reports of an earlier load).
	before := len(r.emu.Log.Take())
	r.quic.forget()
	mark := r.lab.Mark()
	if before > 0 {
		r.log.Printf("load %d: %d packets crossed the link between loads (not counted)", l.Index, before)
	}
	started := time.Now()
	clock := newClockMap(r.emu)
	out := runFetch(ctx, r.emu.Topo, r.o.Engine, r.o.Env, args, time.Duration(s.Client.TimeoutS*float64(time.Second))+fetchGrace)
	if out.interrupted || ctx.Err() != nil {
		return Record{}, 0, ctx.Err()
	}
	settled := settle(ctx, r.emu.Runner, quietPeriod, settleLimit)
	if ctx.Err() != nil {
		return Record{}, 0, ctx.Err()
	}
	if !settled {
		r.log.Printf("load %d: the link did not settle within %s", l.Index, settleLimit)
	}
	f, failure, err := out.result()
	if err != nil {
		return Record{}, 0, err
	}
	all := r.emu.Log.Take()
	if f != nil && f.View == "repeat" && f.MonotonicStartNs > 0 {
		// A repeat view's window starts with its own first request: the first view's packets, and
		// what the closing of its connections sent, belong to no record (docs/vitals.md, "Views").
		from := int64(clock.emulatorTime(f.MonotonicStartNs))
		var kept []pktlog.Record
		for _, rc := range all {
			if rc.In >= from {
				kept = append(kept, rc)
			}
		}
		r.log.Printf("load %d: repeat view: %d packets of the first view before its window", l.Index, len(all)-len(kept))
		all = kept
	}
	own, stray := Own(all)
	cost, costOK := r.lab.CostSince(mark)

	if r.p.Live != nil && s.Client.Impl == "chromium" && failure == "" {
		if failure, err = spokenOtherwise(harPath, l.Protocol); err != nil {
			return Record{}, 0, err
		}
	}
	if len(out.stderr) > 0 && (failure != "" || out.exitCode != 0) {
		for _, line := range strings.Split(strings.TrimSpace(string(out.stderr)), "\n") {
			r.log.Printf("load %d %s: %s", l.Index, out.name, line)
		}
	}
	// ToW ends with the last response packet the client had when its load completed: what arrives
	// later (a TLS close_notify answering the client's) belongs to the teardown, not the page.
	responseBy := time.Duration(math.MaxInt64)
	if f != nil && f.MonotonicEndNs > 0 {
		responseBy = clock.emulatorTime(f.MonotonicEndNs)
	}
	win := pktlog.SummarizeUntil(own, responseBy)
	if pcaps != nil && responseBy != time.Duration(math.MaxInt64) {
		pcaps.LoadEndNs = r.emu.Wall(responseBy).UnixNano()
	}
	rec := BuildRecord(s.TrialID, l, started, f, win, failure)
	rec.QUIC0RTTPackets = int64(pktlog.QUICPackets(own, pktlog.Up, pktlog.QUIC0RTT))
	if msg := zeroRTTDisagreement(rec); msg != "" {
		r.log.Printf("load %d %s: %s", l.Index, l.Protocol, msg)
	}
	whyIn := WhyInput(r.whyPath, all, own, win, f, clock.emulatorTime)
	rec.Client["loader_cpu_ms"] = round3(float64(out.cpu) / float64(time.Millisecond))
	if costOK {
		cpu, peak := round3(cost.CPUMs), cost.MemPeakBytes
		rec.ServerCPUMs, rec.ServerRSSPeakBytes = &cpu, &peak
	}
	if l.Protocol == "h3" && r.lab.QUICReports {
		// Only the built-in server reports its QUIC stack's losses; for the others the
		// retransmissions of an h3 load are the client's alone (docs/metrics.md).
		whyIn.QUIC.Add(r.addServerQUICLosses(ctx, &rec, own))
	}
	if (l.Protocol == "h2" || l.Protocol == "h2c") && r.lab.QUICReports {
		whyIn.Maps = r.streamMaps(ctx, l, own)
	}
	t0 := time.Now()
	whyRes := why.Decompose(whyIn)
	if r.o.Decomposed != nil {
		r.o.Decomposed(time.Since(t0))
	}
	setWhy(&rec, whyIn, whyRes)
	if dir := os.Getenv(WhyDumpEnv); dir != "" {
		if err := writeWhyDump(dir, s.TrialID, name, r.p.Profile.String(), whyIn, rec); err != nil {
			r.log.Printf("load %d: %s: %v", l.Index, WhyDumpEnv, err)
		}
	}
	if harPath != "" {
		if _, err := os.Stat(harPath); err == nil {
			rec.HAR = &harRel
		}
	}
	if framesPath != "" && len(rec.VisualProgress) > 0 {
		if _, err := os.Stat(filepath.Join(framesPath, browser.FrameFile(0))); err == nil {
			rec.Frames = &framesRel
		}
	}
	rec.Pcap = pcaps
	errText := "ok"
	if rec.Error != nil {
		errText = "error: " + *rec.Error
	}
	serverCost := "server cost not measured"
	if costOK {
		serverCost = fmt.Sprintf("server cpu %.1f ms, mem peak %d B", cost.CPUMs, cost.MemPeakBytes)
	}
	r.log.Printf("load %d %s rep %d: plt %.1f ms, tow %.1f ms, tow_first_packet %.1f ms, %d objects, %d body bytes, %d connections, down %d B / %d pkts, up %d B / %d pkts, retransmissions %d, drops %d+%d, stray %d, %s; %s",
		l.Index, l.Protocol, l.Repetition, rec.PltMs, rec.TowMs, rec.TowFirstPacketMs, rec.Objects, rec.BodyBytes, rec.Connections,
		rec.BytesDown, rec.PacketsDown, rec.BytesUp, rec.PacketsUp, rec.Retransmissions, rec.DropsQueue, rec.DropsLoss, stray, serverCost, errText)
	return rec, before + stray, nil
}

// stop ends the server and the emulator (once) and keeps the emulator's summary.
func (r *runner) stop() error {
	if r.stopped {
		return nil
	}
	r.stopped = true
	if r.lab == nil {
		return nil
	}
	sum, err := r.lab.Close()
	r.summary = sum
	if err != nil && r.p.Live != nil {
		err = fmt.Errorf("live path: %w", err)
	}
	r.log.Printf("%s", StoppedLine(sum))
	return err
}

// cleanup removes what the trial created outside its directory (the lab removes its private
// directory, which holds the trial's files); it runs on every path out of Run.
func (r *runner) cleanup() error {
	err := r.stop()
	if r.logFile != nil {
		if err != nil {
			r.log.Printf("error: %v", err)
		}
		r.logFile.Close()
	}
	return err
}

// serverGone is closed when the server under test has exited.
func (r *runner) serverGone() <-chan struct{} { return r.lab.Server.Exited() }

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// writeServedPage writes pg (as the server serves it: seeded, sharded) to dir/page.json for replay
// loads, with an absolute root_dir so that file-backed pages still find their files.
func writeServedPage(pg *page.Page, dir string) (string, error) {
	c := pg.Clone()
	if c.RootDir != "" {
		abs, err := filepath.Abs(c.RootDir)
		if err != nil {
			return "", err
		}
		c.RootDir = abs
	}
	path := filepath.Join(dir, "page.json")
	if err := os.WriteFile(path, c.JSON(), 0o644); err != nil {
		return "", fmt.Errorf("replay page: %w", err)
	}
	return path, nil
}

// pageLine describes the page for engine.log's header.
func pageLine(p *Prepared) string {
	if p.Live != nil {
		return fmt.Sprintf("page: live %s (objects discovered by the loader)", p.Live.URL)
	}
	return fmt.Sprintf("page: %s, %d objects, %d bytes, %d origins", p.Page.Name, len(p.Page.Objects), p.Page.TotalBytes(), p.Origins())
}
