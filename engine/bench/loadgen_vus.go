package bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/internal/cgroup"
	"github.com/wirelab/wirelab/engine/loadgen"
	"github.com/wirelab/wirelab/engine/page"
)

// The vus part of `bench loadgen` (docs/loadtest.md, "Holding 10⁵ VUs on one machine"): --vus VUs
// with think time, spread over as many generator processes as the machine's per-process
// open-files limit needs (loadgen --part K/N, merged exactly), against as many built-in server
// processes, each on a port of its own (generator K loads server K), or against nginx in a lab
// with as many workers (VUKnobs), generator K from a source address of its own. A process holds
// at most MachineLimits.OpenFiles − processReserve connections, and one generator at most one
// ephemeral port range of them (one source address, one server address and port). The generators' memory is their control group's (cgroup memory of the whole tree) where
// the machine has one, and the sum of their RSS besides.

// VUsRow is the many-VUs run.
type VUsRow struct {
	Server string `json:"server"` // one of VUServers
	// Where says where the servers and the generators ran.
	Where    string  `json:"where"`
	Protocol string  `json:"protocol"`
	Page     string  `json:"page"`
	VUs      int     `json:"vus"`
	ThinkS   float64 `json:"think_s"`
	Plan     VUPlan  `json:"plan"`
	// VUsReached is the merged run's highest VU count; VUsHeld its VUs at the hold's last full
	// interval.
	VUsReached    int     `json:"vus_reached"`
	VUsHeld       int     `json:"vus_held"`
	PagesPerSHold float64 `json:"pages_per_s_hold"`    // mean over the hold's intervals but its last
	PagesPerSPlan float64 `json:"pages_per_s_planned"` // VUs ÷ (think + page p50)
	PageP50Ms     float64 `json:"page_p50_ms"`
	PageP99Ms     float64 `json:"page_p99_ms"`
	Errors        int64   `json:"errors"`
	PagesFailed   int64   `json:"pages_failed"`
	// Memory of every generator process together at the hold's last full interval and after the
	// first interval (base), as MemorySource measured it: "cgroup-v1"/"cgroup-v2" (the
	// generators' control group: every page charged to the tree) or "rss" (the sum of the
	// processes' resident sets).
	MemorySource    string  `json:"memory_source"`
	MemoryBytes     int64   `json:"memory_bytes"`
	MemoryBaseBytes int64   `json:"memory_base_bytes"`
	BytesPerVU      float64 `json:"bytes_per_vu"`       // memory ÷ VUs held
	BytesPerVUMarg  float64 `json:"bytes_per_vu_added"` // (memory − base) ÷ (VUs held − VUs after the first interval)
	// RSSBytes is the generators' summed RSS at the same interval (their own probes), RSSBytesPerVU
	// that ÷ VUs held: beside a cgroup figure, the check of one against the other.
	RSSBytes       int64   `json:"rss_bytes"`
	RSSBytesPerVU  float64 `json:"rss_bytes_per_vu"`
	ServerMemBytes int64   `json:"server_memory_bytes"` // the server processes' control group (0: not measured)
	// ServerCores is the servers' CPU during the hold (every process: the built-in servers', or the
	// lab server's control group), and the CPU of each end per page served in the hold: what
	// predicts how many VUs a machine with C cores holds, C × think ÷ (both ends' ms per page).
	// The server's are nil (null) when its CPU was not measured (a lab server without a control
	// group to read): not a 0 that reads as measured.
	ServerCores     *float64 `json:"server_cores_hold"`
	GenMsPerPage    float64  `json:"generator_cpu_ms_per_page"`
	ServerMsPerPage *float64 `json:"server_cpu_ms_per_page"`
	// CleanVUs are the most VUs at the end of an interval before the first with an error or a
	// page p99 above 1 s (all of them: the run stayed clean), and CleanS the end of the latest
	// interval with that many.
	CleanVUs int     `json:"clean_up_to_vus"`
	CleanS   float64 `json:"clean_up_to_s"`
	// NoErrorVUs and NoErrorS are the same before the first interval with an error alone.
	NoErrorVUs      int     `json:"no_error_up_to_vus"`
	NoErrorS        float64 `json:"no_error_up_to_s"`
	LoadHoldEnd     string  `json:"loadavg_hold_end"` // the load average as the hold's last interval arrived
	Goroutines      int     `json:"goroutines"`       // summed, at the hold's last full interval
	OpenConnections int64   `json:"open_connections"` // summed, at the hold's last full interval
	CPUCores        float64 `json:"cpu_cores_hold"`   // the generators' CPU during the hold
	SaturatedHold   int     `json:"saturated_intervals_hold"`
	// RealtimeCores is the CPU that other programs' real-time threads (SCHED_FIFO, SCHED_RR) took
	// during the part — a lower bound (realtime.go) — and RealtimeThreads how many used any: on a
	// shared machine, figures taken beside them are not the generators' or the servers' own.
	RealtimeCores   float64 `json:"realtime_neighbour_cores"`
	RealtimeThreads int     `json:"realtime_neighbour_threads"`
	// Failed names the generators that exited with an error (a limit of the machine reached: its
	// line on stderr) — the figures then cover less than the plan.
	Failed []string `json:"generators_failed,omitempty"`
	// Interrupted: the run was stopped (Ctrl-C, SIGTERM) — the row holds what was measured up to
	// then (the ramp's clean_up_to_vus, say; no hold's figures when it stopped before the hold).
	Interrupted bool `json:"interrupted,omitempty"`
}

// MachineLimits are the limits of this machine that bound how many connections a process (and
// the machine) can hold.
type MachineLimits struct {
	OpenFiles     uint64 `json:"open_files"`      // RLIMIT_NOFILE (soft) of a process started now, after raising it
	OpenFilesHard uint64 `json:"open_files_hard"` // RLIMIT_NOFILE (hard)
	FileMax       uint64 `json:"file_max"`        // fs.file-max
	FilesInUse    uint64 `json:"files_in_use"`    // fs.file-nr's first field
	PortSpan      int    `json:"port_span"`       // net.ipv4.ip_local_port_range: hi − lo + 1
	PortRange     string `json:"port_range"`
}

// ReadMachineLimits raises this process's open-files limit as far as the machine allows (its
// children inherit it: the soft limit to the hard one, and as root with CAP_SYS_RESOURCE both to
// fs.nr_open) and reads the limits.
func ReadMachineLimits() MachineLimits {
	var m MachineLimits
	_, _ = loadgen.RaiseOpenFiles(0)
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil {
		m.OpenFiles, m.OpenFilesHard = rl.Cur, rl.Max
	}
	if f := procFields("/proc/sys/fs/file-max"); len(f) == 1 {
		m.FileMax, _ = strconv.ParseUint(f[0], 10, 64)
	}
	if f := procFields("/proc/sys/fs/file-nr"); len(f) == 3 {
		m.FilesInUse, _ = strconv.ParseUint(f[0], 10, 64)
	}
	if f := procFields("/proc/sys/net/ipv4/ip_local_port_range"); len(f) == 2 {
		lo, _ := strconv.Atoi(f[0])
		hi, _ := strconv.Atoi(f[1])
		m.PortSpan, m.PortRange = hi-lo+1, f[0]+" "+f[1]
	}
	return m
}

func procFields(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

// VUPlan is how the vus part spreads its VUs: Generators loadgen processes (--part K/N) and as
// many server processes (built-in servers, generator K against server K; or nginx's workers),
// each holding at most PerProcess VUs.
type VUPlan struct {
	FDsPerVU   int    `json:"fds_per_vu"`  // connections one VU keeps open
	PerProcess int    `json:"per_process"` // VUs one generator (and one server process) holds at most
	Generators int    `json:"generators"`
	Servers    int    `json:"servers"`
	BoundBy    string `json:"bound_by"` // the limit PerProcess comes from
}

// processReserve are the descriptors a process keeps besides its connections (runtime, epoll,
// listeners, probes, pprof) — and the margin below the limit it never reaches.
const processReserve = 256

// MaxVUProcesses bounds the generator processes (and as many server processes) of the vus part.
const MaxVUProcesses = 64

// PlanVUs sizes the vus part's processes from the machine's limits: each generator and each
// server process holds at most min(OpenFiles, PortSpan) − processReserve connections (the port
// range is one generator–server pair's: one source address to one server address and port). An
// error is one line naming the limit the machine cannot hold the VUs under, and what would.
func PlanVUs(vus, fdsPerVU int, m MachineLimits) (VUPlan, error) {
	p := VUPlan{FDsPerVU: max(fdsPerVU, 1)}
	files := int(min(m.OpenFiles, 1<<30))
	conns, bound := files-processReserve, fmt.Sprintf("the open-files limit (RLIMIT_NOFILE %d per process)", m.OpenFiles)
	if m.PortSpan > 0 && m.PortSpan-processReserve < conns {
		conns, bound = m.PortSpan-processReserve, fmt.Sprintf("the local ports (net.ipv4.ip_local_port_range %s: %d per server port)", m.PortRange, m.PortSpan)
	}
	p.PerProcess, p.BoundBy = conns/p.FDsPerVU, bound
	if p.PerProcess < 1 {
		return p, fmt.Errorf("vus: this machine cannot hold one VU's %d connections under %s; raise it (docs/loadtest.md, \"Holding 10⁵ VUs\")", p.FDsPerVU, bound)
	}
	p.Generators = (vus + p.PerProcess - 1) / p.PerProcess
	p.Servers = p.Generators
	if p.Generators > MaxVUProcesses {
		return p, fmt.Errorf("vus: %d VUs need %d generator and %d server processes of at most %d VUs each under %s; at most %d each: raise the hard limit (ulimit -Hn, LimitNOFILE=, /etc/security/limits.conf) or the port range (docs/loadtest.md, \"Holding 10⁵ VUs\")",
			vus, p.Generators, p.Servers, p.PerProcess, bound, MaxVUProcesses)
	}
	// Both ends of every connection are this machine's descriptors.
	need := uint64(2*vus*p.FDsPerVU + (p.Generators+p.Servers)*processReserve)
	if m.FileMax > 0 && need+m.FilesInUse > m.FileMax {
		return p, fmt.Errorf("vus: %d VUs need %d open files on this machine beside the %d in use, above the system's limit (fs.file-max %d): raise it (sysctl -w fs.file-max=%d)",
			vus, need, m.FilesInUse, m.FileMax, 2*(need+m.FilesInUse))
	}
	return p, nil
}

// FDsPerVU are the connections one VU keeps to a page: one per origin over h2, up to six per
// origin (at most one per object loaded at once) over HTTP/1.1 — the root document loads alone,
// on a connection the objects after it reuse.
func FDsPerVU(pg *page.Page, proto string) int {
	origins := map[int]int{}
	for i, o := range pg.Objects {
		if i > 0 || len(pg.Objects) == 1 {
			origins[o.Origin]++
		}
	}
	n := 0
	for _, objects := range origins {
		if proto == "h1" || proto == "h1s" {
			n += min(objects, 6)
		} else {
			n++
		}
	}
	return max(n, 1)
}

// vus runs many VUs with think time against a small page and reports the memory per VU.
func (o *LoadgenOptions) vus(ctx context.Context) (*VUsRow, error) {
	proto := "h2"
	if len(o.Protocols) == 1 {
		proto = o.Protocols[0]
	}
	pg, err := page.Load(o.VUPage, 1)
	if err != nil {
		return nil, err
	}
	plan, err := PlanVUs(o.VUs, FDsPerVU(pg, proto), ReadMachineLimits())
	if err != nil {
		return nil, err
	}
	think := 5.0
	if o.VUThink > 0 {
		think = o.VUThink.Seconds()
	}
	o.progress("  %d VUs over %s, think %g s (exponential), page %s: ramp %v, hold %v", o.VUs, proto, think, o.VUPage, o.VURamp, o.VUHold)
	rt := realtimeWatch()
	runID := randomHex(4)
	srvGroup, genGroup, memSource := vuGroups(runID)
	defer func() {
		for _, g := range []*cgroup.Group{srvGroup, genGroup} {
			if g != nil {
				_ = g.Remove()
			}
		}
	}()
	servers := make([]*Served, 0, plan.Servers)
	defer func() {
		for _, s := range servers {
			_, _ = s.Stop()
		}
	}()
	scheme := "https"
	if proto == "h1" {
		scheme = "http"
	}
	rootOf := func(s *Served, token string) (string, error) {
		port := s.HTTPSPort
		if scheme == "http" {
			port = s.HTTPPort
		}
		return pg.URL(0, page.Base{Scheme: scheme, Port: port, Token: token})
	}
	// target K is generator K's server, root URL and source address ("": the kernel's choice).
	type target struct {
		s      *Served
		root   string
		source string
	}
	targets := make([]target, plan.Generators)
	var serverCPU func() (time.Duration, bool) // false: not measured
	var serverMem func() int64
	var where string
	if o.Server == "builtin" {
		o.progress("  %d generator processes and %d built-in server processes (one port each, generator K → server K), at most %d VUs each: bound by %s",
			plan.Generators, plan.Servers, plan.PerProcess, plan.BoundBy)
		for k := range plan.Servers {
			s, err := builtinServer{o.Engine}.Start(ctx, o.VUPage, []string{proto})
			if err != nil {
				return nil, fmt.Errorf("server process %d: %w", k, err)
			}
			servers = append(servers, s)
			if srvGroup != nil {
				_ = srvGroup.Add(s.PID)
			}
			root, err := rootOf(s, "bench")
			if err != nil {
				return nil, err
			}
			targets[k] = target{s: s, root: root}
		}
		serverCPU = func() (cpu time.Duration, ok bool) {
			for _, s := range servers {
				cpu += processCPU(s.PID)
			}
			return cpu, true
		}
		serverMem = func() int64 {
			if srvGroup != nil {
				if u, err := srvGroup.Usage(); err == nil {
					return u.MemoryBytes
				}
			}
			return 0
		}
		where = fmt.Sprintf("loopback (127.0.0.1), %d built-in server processes (serve), one port each", plan.Servers)
	} else {
		// One lab with the real server, as many workers as generators; the generators in its
		// server namespace, each from a source address of its own (127.0.0.K+1, local there):
		// every pair of addresses to the server's one port has its own port range.
		knobs, err := VUKnobs(o.Server, plan)
		if err != nil {
			return nil, err
		}
		s, err := labServer{name: o.Server, engine: o.Engine}.start(ctx, o.VUPage, []string{proto}, knobs)
		if err != nil {
			return nil, err
		}
		servers = append(servers, s)
		token, err := s.Serve(proto)
		if err != nil {
			return nil, err
		}
		root, err := rootOf(s, token)
		if err != nil {
			return nil, err
		}
		for k := range targets {
			targets[k] = target{s: s, root: root, source: fmt.Sprintf("127.0.0.%d", k+1)}
		}
		serverCPU = s.CPU
		serverMem = func() int64 { return 0 }
		if s.Memory != nil {
			serverMem = s.Memory
		}
		where = fmt.Sprintf("%s; %s's own knobs %s; generator K from source address 127.0.0.K+1", s.Where, o.Server, knobs.Own)
		o.progress("  %d generator processes and %s with %d workers, at most %d VUs each: bound by %s",
			plan.Generators, o.Server, plan.Servers, plan.PerProcess, plan.BoundBy)
		o.progress("  %s", where)
	}

	spec := fmt.Sprintf(`{"protocol":%q,"interval_s":5,"think":{"distribution":"exponential","mean_s":%g},"limits":{"max_vus":%d},
		"scenario":{"start":0,"stages":[{"duration_s":%g,"target":%d},{"duration_s":%g,"target":%d}]}}`,
		proto, think, o.VUs, o.VURamp.Seconds(), o.VUs, o.VUHold.Seconds(), o.VUs)
	specFile, err := os.CreateTemp("", "wirelab-loadgen-spec-*.json")
	if err != nil {
		return nil, err
	}
	defer os.Remove(specFile.Name())
	specFile.WriteString(spec)
	specFile.Close()
	parsed, err := loadgen.Decode([]byte(spec))
	if err != nil {
		return nil, err
	}

	type line struct {
		g    int
		data []byte
		end  bool
	}
	lines := make(chan line, 64)
	waitErrs := make([]error, plan.Generators)
	startNs := monotonicNs() + int64(2*time.Second) + int64(plan.Generators)*int64(100*time.Millisecond)
	names := make([]string, plan.Generators)
	cmds := make([]*exec.Cmd, 0, plan.Generators)
	var wg sync.WaitGroup
	defer func() { // an early return: stop the generators still running, their readers drained
		for _, c := range cmds {
			_ = c.Process.Signal(syscall.SIGINT)
		}
		go func() {
			for range lines {
			}
		}()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(loadgenStopGrace):
			for _, c := range cmds {
				_ = c.Process.Kill()
			}
		}
	}()
	for k, t := range targets {
		names[k] = fmt.Sprintf("gen-%d", k)
		argv := []string{o.Engine, "loadgen", "--spec", specFile.Name(), "--target", t.root,
			"--resolve", page.OriginHost(0) + "=" + t.s.Addr, "--part", fmt.Sprintf("%d/%d", k, plan.Generators), "--histograms",
			"--start-ns", strconv.FormatInt(startNs, 10)}
		if t.s.CAFile != "" {
			argv = append(argv, "--ca", t.s.CAFile)
		}
		if t.s.LabID != "" { // the lab's address policy, accepted in the run's server namespace
			argv = append(argv, "--lab", t.s.LabID)
		}
		if t.source != "" {
			argv = append(argv, "--source", t.source)
		}
		cmd := t.s.Command(argv...)
		stdout, err := startChild(cmd)
		if err != nil {
			return nil, fmt.Errorf("generator %d: %w", k, err)
		}
		cmds = append(cmds, cmd)
		if genGroup != nil {
			_ = genGroup.Add(cmd.Process.Pid)
		}
		release := watch(ctx, cmd, syscall.SIGINT, loadgenStopGrace) // SIGINT: it prints its summary
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			defer release()
			sc := bufio.NewScanner(stdout)
			sc.Buffer(make([]byte, 1<<20), 16<<20)
			for sc.Scan() {
				lines <- line{g: k, data: append([]byte(nil), sc.Bytes()...)}
			}
			waitErrs[k] = cmd.Wait()
			lines <- line{g: k, end: true}
		}(k)
	}

	merger := loadgen.NewMerger(parsed, names)
	var ivs []loadgen.Interval
	var mem []int64            // the generators' memory when each merged interval arrived (cgroup), by index
	var srvCPU []time.Duration // the servers' CPU time then
	var srvAt []time.Time      // and the wall time it was read at
	var loads []string         // the load average then
	srv0, srvOK := serverCPU()
	at0 := time.Now()
	sums := make([]*loadgen.Summary, plan.Generators)
	var exitErr error
	take := func(merged []loadgen.Interval, err error) {
		if err != nil && exitErr == nil {
			exitErr = err
		}
		if len(merged) == 0 {
			return
		}
		// One read of the servers' CPU for the intervals merged together, over the wall time
		// since the read before: read per interval, the first of a batch had the whole span and
		// the rest ~0 (a spike, then zeros).
		cpu, ok := serverCPU()
		at := time.Now()
		srvCores := "not measured"
		if srvOK = srvOK && ok; srvOK {
			srvCores = fmt.Sprintf("%.2f", (cpu-srv0).Seconds()/max(at.Sub(at0).Seconds(), 1e-3))
		}
		srv0, at0 = cpu, at
		for _, iv := range merged {
			m := iv.Generator.RSSBytes
			if genGroup != nil {
				if u, err := genGroup.Usage(); err == nil {
					m = u.MemoryBytes
				}
			}
			ivs, mem, srvCPU, srvAt, loads = append(ivs, iv), append(mem, m), append(srvCPU, cpu), append(srvAt, at), append(loads, loadavg())
			o.progress("    t=%5.0f s  %6d VUs  %7.1f pages/s  p99 %7.1f ms  mem %6.0f MB (rss %6.0f MB)  %6d goroutines  %6d conns  %d errors  cores: generators %.2f, server %s  load %s",
				iv.TEndS, iv.VUs, iv.PagesPerS, p99(iv.PageMs), float64(m)/1e6, float64(iv.Generator.RSSBytes)/1e6, iv.Generator.Goroutines,
				iv.OpenConnections, iv.Errors.Total(), iv.Generator.CPUUtil, srvCores, loads[len(loads)-1])
		}
	}
	for running := plan.Generators; running > 0; {
		l := <-lines // every generator ends: watch stops them when ctx ends
		if l.end {
			running--
			take(merger.End(l.g, sums[l.g]))
			continue
		}
		var ev struct{ Event string }
		_ = json.Unmarshal(l.data, &ev)
		switch ev.Event {
		case "interval":
			var iv loadgen.Interval
			if err := json.Unmarshal(l.data, &iv); err != nil {
				return nil, fmt.Errorf("generator %d: %w", l.g, err)
			}
			take(merger.Add(l.g, iv))
		case "summary":
			sums[l.g] = &loadgen.Summary{}
			if err := json.Unmarshal(l.data, sums[l.g]); err != nil {
				return nil, fmt.Errorf("generator %d: %w", l.g, err)
			}
		}
	}
	cmds = nil // all waited for
	if exitErr != nil {
		return nil, exitErr
	}
	merged, err := merger.Finish()
	if err != nil {
		return nil, err
	}
	interrupted := ctx.Err() != nil // the figures up to the interruption are still the row's
	if lost := merger.Lost(); len(lost) > 0 && !interrupted {
		return nil, fmt.Errorf("generator(s) %s ended without a summary (their lines above say why)", strings.Join(lost, ", "))
	}
	row := &VUsRow{Server: o.Server, Where: where, Protocol: proto, Page: o.VUPage, VUs: o.VUs, ThinkS: think, Plan: plan, MemorySource: memSource}
	row.ServerMemBytes = serverMem()
	row.Interrupted = interrupted
	for k, err := range waitErrs {
		if err != nil && !interrupted {
			row.Failed = append(row.Failed, fmt.Sprintf("%s (%v)", names[k], err))
		}
	}
	row.RealtimeCores, row.RealtimeThreads = rt()
	if !srvOK { // one read failed: none is the hold's
		srvCPU = nil
	}
	fillVUsRow(row, merged.Summary, ivs, mem, srvCPU, srvAt, loads, o.VURamp, o.VUHold)
	if len(ivs) == 0 {
		return row, errors.Join(ctx.Err(), errors.New("no interval merged"))
	}
	return row, ctx.Err()
}

// fillVUsRow reads the figures of the hold (its intervals [ramp, ramp + hold)) from the merged
// intervals and the generators' memory beside each (mem[i] with ivs[i]), the servers' CPU time
// read when each arrived (srvCPU[i], at the wall time srvAt[i]; nil: not measured).
func fillVUsRow(row *VUsRow, sum *loadgen.Summary, ivs []loadgen.Interval, mem []int64, srvCPU []time.Duration, srvAt []time.Time, loads []string, ramp, hold time.Duration) {
	upTo := func(bad func(loadgen.Interval) bool) (vus int, s float64) {
		for _, iv := range ivs {
			if bad(iv) {
				break
			}
			if iv.VUs >= vus { // not the last interval's VUs leaving at the end
				vus, s = iv.VUs, iv.TEndS
			}
		}
		return vus, s
	}
	row.CleanVUs, row.CleanS = upTo(func(iv loadgen.Interval) bool { return iv.Errors.Total() > 0 || p99(iv.PageMs) > 1000 })
	row.NoErrorVUs, row.NoErrorS = upTo(func(iv loadgen.Interval) bool { return iv.Errors.Total() > 0 })
	if sum != nil {
		row.VUsReached, row.Errors, row.PagesFailed = sum.Totals.VUsMax, sum.Totals.Errors.Total(), sum.Totals.PagesFailed
		if sum.Totals.PageMs != nil {
			row.PageP50Ms, row.PageP99Ms = sum.Totals.PageMs.P50, sum.Totals.PageMs.P99
			row.PagesPerSPlan = round(float64(row.VUs)/(row.ThinkS+row.PageP50Ms/1000), 1)
		}
	}
	var hold_ []int
	for i, iv := range ivs {
		if iv.TStartS >= ramp.Seconds()-1e-9 && iv.TEndS <= (ramp+hold).Seconds()+1e-9 {
			hold_ = append(hold_, i)
		}
	}
	if len(hold_) == 0 {
		return
	}
	if len(hold_) > 1 { // the last one may end with the scenario, as the VUs leave (and arrive at the end)
		hold_ = hold_[:len(hold_)-1]
	}
	var pages, cpu float64
	for _, i := range hold_ {
		pages += ivs[i].PagesPerS
		cpu += ivs[i].Generator.CPUUtil
		if ivs[i].Generator.Saturated {
			row.SaturatedHold++
		}
	}
	// The figures per page divide the unrounded means: cores rounded to 0.01 first were off by
	// ~20 % at a few hundredths of a core, and 0 below 0.005.
	ps, genCores := pages/float64(len(hold_)), cpu/float64(len(hold_))
	row.PagesPerSHold = round(ps, 1)
	row.CPUCores = round(genCores, 2)
	if first, lastH := hold_[0], hold_[len(hold_)-1]; first > 0 && len(srvCPU) == len(ivs) && len(srvAt) == len(ivs) {
		// The servers' CPU read when the interval before the hold arrived to when its last did,
		// over the wall time between the two reads; not a read shared with the intervals after
		// the hold (they arrive together at the end, after the generators' close of every
		// connection).
		for lastH >= first && lastH+1 < len(ivs) && srvAt[lastH].Equal(srvAt[lastH+1]) {
			lastH--
		}
		if span := srvAt[max(lastH, 0)].Sub(srvAt[first-1]).Seconds(); lastH >= first && span > 0 {
			srvCores := (srvCPU[lastH] - srvCPU[first-1]).Seconds() / span
			row.ServerCores = ptr(round(srvCores, 2))
			if ps > 0 {
				row.ServerMsPerPage = ptr(round(1000*srvCores/ps, 3))
			}
		}
	}
	if ps > 0 {
		row.GenMsPerPage = round(1000*genCores/ps, 3)
	}
	last := hold_[len(hold_)-1]
	iv := ivs[last]
	row.VUsHeld, row.Goroutines, row.OpenConnections, row.RSSBytes = iv.VUs, iv.Generator.Goroutines, iv.OpenConnections, iv.Generator.RSSBytes
	if len(loads) == len(ivs) {
		row.LoadHoldEnd = loads[last]
	}
	row.MemoryBytes, row.MemoryBaseBytes = mem[last], mem[0]
	if iv.VUs > 0 {
		row.BytesPerVU = round(float64(row.MemoryBytes)/float64(iv.VUs), 0)
		row.RSSBytesPerVU = round(float64(row.RSSBytes)/float64(iv.VUs), 0)
	}
	if n := iv.VUs - ivs[0].VUs; n > 0 && row.MemoryBytes > 0 && row.MemoryBaseBytes > 0 {
		row.BytesPerVUMarg = round(float64(row.MemoryBytes-row.MemoryBaseBytes)/float64(n), 0)
	}
}

// vuGroups makes the control groups of the vus part's servers and generators; nil groups and
// memory source "rss" when the machine has no usable hierarchy (or this process may not make one).
func vuGroups(id string) (srv, gen *cgroup.Group, source string) {
	src, err := cgroup.Available()
	if err != nil {
		return nil, nil, "rss"
	}
	srv, err1 := cgroup.New("wirelab-" + id + "-bench-servers")
	gen, err2 := cgroup.New("wirelab-" + id + "-bench-generators")
	if err1 != nil || err2 != nil {
		for _, g := range []*cgroup.Group{srv, gen} {
			if g != nil {
				_ = g.Remove()
			}
		}
		return nil, nil, "rss"
	}
	return srv, gen, string(src)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func monotonicNs() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

func ptr[T any](v T) *T { return &v }
