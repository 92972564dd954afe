package loadtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wirelab/wirelab/engine/lab"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/loadgen"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/trial"
)

// A load test spread over a Dask cluster (docs/loadtest.md, "A Dask cluster"): the lab's server
// half on one worker (Serve), and on each generator worker a live lab of its own — the spec's
// access link and the egress router, far side the host — whose loadgen runs its part against
// that server (GeneratorSpec, Options.Part and AwaitStart). The client merges (WriteMerged).

// ServeFile is the server task's record, written last by Serve.
const ServeFile = "serve.json"

// MaxStartAhead bounds how far ahead a shared start instant may be (loadgen's --start-ns bound).
const MaxStartAhead = 60 * time.Second

// ServeOptions are how a server task runs.
type ServeOptions struct {
	Options
	// Listen is the worker's address the generators reach the server at (port 443, 80 for h1
	// and h2c); AllowFrom the generators' addresses — the only ones the relay serves.
	Listen    netip.Addr
	AllowFrom []netip.Prefix
}

// Serving is the server task's first line: what the generators need.
type Serving struct {
	Event string   `json:"event"` // "serving"
	URL   string   `json:"url"`   // the page's root URL (lab names)
	Addr  string   `json:"addr"`  // where every name resolves: the worker's address
	Port  int      `json:"port"`
	Names []string `json:"names"` // the page's origin names
	CA    string   `json:"ca"`    // PEM of the lab's CA ("" over plain HTTP)
}

// ServeResult is serve.json.
type ServeResult struct {
	Contract      int              `json:"contract"`
	Spec          *loadgen.Spec    `json:"spec"`
	Provenance    trial.Provenance `json:"provenance"`
	Listen        string           `json:"listen"`
	AllowFrom     []string         `json:"allow_from"`
	Started       bool             `json:"started"` // a start instant arrived and the server was sampled from it
	ServerSamples int              `json:"server_samples"`
	ServerExited  *ServerExit      `json:"server_exited"`
	Relay         RelayCounts      `json:"relay"`
}

// RelayCounts are what the relay did: connections carried, refused (not from a generator) and
// bytes each way.
type RelayCounts struct {
	Accepted    int64    `json:"accepted"`
	Refused     int64    `json:"refused"`
	RefusedFrom []string `json:"refused_from"` // up to 16 distinct addresses
	BytesIn     int64    `json:"bytes_in"`     // generators → server
	BytesOut    int64    `json:"bytes_out"`    // server → generators
	DialErrors  int64    `json:"dial_errors"`
}

// ReadStart reads the shared start instant (Unix nanoseconds, one line) from r and maps it onto
// this machine's CLOCK_MONOTONIC. ctx ending first is ErrInterrupted.
func ReadStart(ctx context.Context, r io.Reader, interval time.Duration) (int64, error) {
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- s
	}()
	var s string
	select {
	case s = <-line:
	case <-ctx.Done():
		return 0, ErrInterrupted
	}
	s = strings.TrimSpace(s)
	t, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if s == "" {
			return 0, errors.New("the start instant never came (stdin closed)")
		}
		return 0, fmt.Errorf("start instant %q: want Unix nanoseconds", s)
	}
	ahead := time.Duration(t - time.Now().UnixNano())
	switch {
	case ahead > MaxStartAhead:
		return 0, fmt.Errorf("the start instant is %.1f s ahead (at most %s)", ahead.Seconds(), MaxStartAhead)
	case ahead < -interval:
		return 0, fmt.Errorf("the start instant is %.1f s past: this worker was ready too late (or its clock is off)", -ahead.Seconds())
	}
	return monotonicNow() + int64(ahead), nil
}

// GeneratorSpec is the spec a generator task runs: the lab spec's load (scenario, think, client,
// interval, limits) against the run's server at addr — a target (root, every origin name resolved
// to addr, the lab's CA), behind the spec's network as the users' access link. Thresholds are left
// to the merge (they need every generator, and the server's samples).
func GeneratorSpec(spec *loadgen.Spec, root string, names []string, addr netip.Addr, ca string) (*loadgen.Spec, error) {
	if spec.Lab == nil {
		return nil, errors.New("a cluster load test needs the spec's page (an external target over the cluster is not built)")
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for _, f := range []string{"page", "shards", "shard_mode", "server", "thresholds", "target", "allow_internet"} {
		delete(m, f)
	}
	resolve := map[string]string{}
	for _, n := range names {
		resolve[n] = addr.String()
	}
	t := map[string]any{"url": root, "resolve": resolve}
	if ca != "" {
		t["ca"] = ca
	}
	m["target"] = t
	b, _ = json.Marshal(m)
	g, err := loadgen.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("the generator's spec: %w", err)
	}
	g.LoadtestID = spec.LoadtestID
	g.RunServer = addr
	return g, nil
}

// Serve runs the lab's server half of a cluster load test until ctx ends (SIGINT/SIGTERM from
// the worker) or the server exits: the server under test in its namespace and control group, no
// emulator (the generators' access links are on their own workers), reachable at o.Listen through
// a relay that serves only o.AllowFrom. It prints Serving on o.Progress, samples the server from
// the start instant read from o.AwaitStart, and writes server.jsonl, engine.log and serve.json.
func Serve(ctx context.Context, p *Prepared, o ServeOptions) (*ServeResult, error) {
	if err := lab.ChildDefaults(&o.Engine, &o.Env, &o.Command); err != nil {
		return nil, err
	}
	if o.Warn == nil {
		o.Warn = io.Discard
	}
	r := &runner{p: p, o: o.Options, started: time.Now()}
	res, err := r.serve(ctx, o)
	if cerr := r.cleanup(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if res != nil {
		res.Provenance.Finish()
		if werr := trial.WriteJSON(filepath.Join(o.OutDir, ServeFile), res); werr != nil && err == nil {
			err = werr
		}
	}
	if r.logFile != nil {
		if err != nil && !errors.Is(err, ErrInterrupted) {
			r.log.Printf("error: %v", err)
		}
		r.logFile.Close()
	}
	return res, err
}

func (r *runner) serve(ctx context.Context, o ServeOptions) (*ServeResult, error) {
	spec, lp := r.p.Spec, r.p.Lab
	if r.p.Target != nil {
		return nil, errors.New("a cluster load test serves the spec's page (an external target over the cluster is not built)")
	}
	if n := lp.Origins(); n != 1 {
		return nil, fmt.Errorf("page %s has %d origins: the cluster path serves one-origin pages (the relay has one address; routing by name is not built)", lp.Page.Name, n)
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, err
	}
	lf, err := os.Create(filepath.Join(o.OutDir, LogFile))
	if err != nil {
		return nil, err
	}
	r.logFile, r.log = lf, trial.NewEngineLog(lf, r.started)
	prov := trial.NewProvenance(r.o.Command, r.started)
	specJSON, _ := json.Marshal(spec)
	var allow []string
	for _, a := range o.AllowFrom {
		allow = append(allow, a.String())
	}
	r.log.Header(
		fmt.Sprintf("wirelab-engine %s (%s) loadtest --serve %s", prov.EngineVersion, prov.GitSHA, spec.LoadtestID),
		"command: "+strings.Join(r.o.Command, " "),
		"spec: "+string(specJSON),
		fmt.Sprintf("server half of a cluster load test: reachable at %s from %s only", o.Listen, strings.Join(allow, ", ")),
	)
	res := &ServeResult{Contract: Contract, Spec: spec, Listen: o.Listen.String(), AllowFrom: allow}
	root, err := r.startServer(ctx, &prov, lab.Options{Engine: r.o.Engine, Env: r.o.Env, Command: r.o.Command, NoEmulator: true, Log: r.log.Printf})
	res.Provenance = prov
	if err != nil {
		if r.lab == nil {
			return nil, err
		}
		return res, err
	}
	scheme := page.Scheme(spec.Protocol)
	port := 80
	if scheme == "https" {
		port = 443
	}
	rl, err := newRelay(o.Listen, port, o.AllowFrom, r.lab.Topo, netip.AddrPortFrom(labaddr.OriginAddr(1), uint16(port)))
	if err != nil {
		return res, err
	}
	defer func() { res.Relay = rl.close() }()
	sv := Serving{Event: "serving", URL: root, Addr: o.Listen.String(), Port: port, Names: []string{page.WWWHost, page.OriginHost(0)}}
	if scheme == "https" {
		ca, err := os.ReadFile(r.lab.CAFile)
		if err != nil {
			return res, err
		}
		sv.CA = string(ca)
	}
	r.log.Printf("server %s (%s) ready behind the relay %s:%d; root %s", spec.Server.Impl, prov.Server.Version, o.Listen, port, root)
	r.progress(sv)

	samples, err := os.Create(filepath.Join(o.OutDir, ServerFile))
	if err != nil {
		return res, err
	}
	defer samples.Close()
	stop := make(chan struct{})
	var sampled []Sample
	samplerDone := make(chan struct{})
	startCtx, cancelStart := context.WithCancel(ctx)
	defer cancelStart()
	go func() {
		defer close(samplerDone)
		startNs, err := ReadStart(startCtx, o.AwaitStart, spec.Interval())
		if err != nil {
			if !errors.Is(err, ErrInterrupted) {
				r.log.Printf("no server samples: %v", err)
			}
			return
		}
		res.Started = true
		r.log.Printf("start instant received: %.3f s from now", float64(startNs-monotonicNow())/1e9)
		r.sampleServer(ctx, startNs, stop, json.NewEncoder(samples), &sampled)
	}()
	var runErr error
	select {
	case <-ctx.Done():
		r.log.Printf("stopped (the run's generators ended, or the worker's task was cancelled)")
	case <-r.lab.Server.Exited():
		res.ServerExited = &ServerExit{TS: round3(time.Since(r.started).Seconds())}
		if e := r.lab.Server.ExitErr(); e != nil {
			res.ServerExited.Error = e.Error()
		}
		runErr = &ServerExitError{ServerExit: *res.ServerExited}
	}
	close(stop)
	cancelStart()
	<-samplerDone
	res.ServerSamples = len(sampled)
	return res, runErr
}

// relay carries the generators' TCP connections from the worker's address into the server
// namespace: one listener in the engine's namespace, and for each connection from an allowed
// address a twin opened inside the server namespace. Connections from any other address are
// closed at once and counted.
type relay struct {
	ln     net.Listener
	allow  []netip.Prefix
	topo   *netns.Topology
	to     netip.AddrPort
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
	counts RelayCounts
	in     atomic.Int64
	out    atomic.Int64
}

func newRelay(listen netip.Addr, port int, allow []netip.Prefix, topo *netns.Topology, to netip.AddrPort) (*relay, error) {
	ln, err := net.Listen("tcp", netip.AddrPortFrom(listen, uint16(port)).String())
	if err != nil {
		return nil, fmt.Errorf("--serve %s: %w", listen, err)
	}
	rl := &relay{ln: ln, allow: allow, topo: topo, to: to, conns: map[net.Conn]bool{}}
	rl.wg.Add(1)
	go rl.accept()
	return rl, nil
}

func (rl *relay) accept() {
	defer rl.wg.Done()
	for {
		c, err := rl.ln.Accept()
		if err != nil {
			return
		}
		from, _ := netip.ParseAddrPort(c.RemoteAddr().String())
		if !rl.allowed(from.Addr().Unmap()) {
			c.Close()
			rl.mu.Lock()
			rl.counts.Refused++
			if s := from.Addr().String(); len(rl.counts.RefusedFrom) < 16 && !slices.Contains(rl.counts.RefusedFrom, s) {
				rl.counts.RefusedFrom = append(rl.counts.RefusedFrom, s)
			}
			rl.mu.Unlock()
			continue
		}
		rl.wg.Add(1)
		go rl.carry(c)
	}
}

func (rl *relay) carry(c net.Conn) {
	defer rl.wg.Done()
	var s net.Conn
	err := rl.topo.Do(netns.Server, func() error {
		var err error
		s, err = net.DialTimeout("tcp", rl.to.String(), 5*time.Second)
		return err
	})
	rl.mu.Lock()
	if err != nil {
		rl.counts.DialErrors++
		rl.mu.Unlock()
		c.Close()
		return
	}
	rl.counts.Accepted++
	rl.conns[c], rl.conns[s] = true, true
	rl.mu.Unlock()
	done := make(chan struct{})
	go func() {
		n, _ := io.Copy(s, c)
		rl.in.Add(n)
		if tc, ok := s.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		close(done)
	}()
	n, _ := io.Copy(c, s)
	rl.out.Add(n)
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	<-done
	c.Close()
	s.Close()
	rl.mu.Lock()
	delete(rl.conns, c)
	delete(rl.conns, s)
	rl.mu.Unlock()
}

// close stops accepting, ends the connections still open and returns the counts.
func (rl *relay) close() RelayCounts {
	rl.ln.Close()
	rl.mu.Lock()
	for c := range rl.conns {
		c.Close()
	}
	rl.mu.Unlock()
	rl.wg.Wait()
	rl.counts.BytesIn, rl.counts.BytesOut = rl.in.Load(), rl.out.Load()
	return rl.counts
}

func (rl *relay) allowed(a netip.Addr) bool {
	for _, p := range rl.allow {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
