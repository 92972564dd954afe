// Package bench holds wirelab-engine's benchmarks. `bench link` measures the emulated path's
// fidelity (RTT error, goodput against the configured rate, realised loss) and capacity (goodput
// and CPU per packet with no rate cap), and the TUN devices' drop counters throughout.
package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/emulator"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/link/profile"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/realtime"
)

// LinkOptions configures the link benchmark.
type LinkOptions struct {
	Quick bool // finish within 60 s
	// Self is the wirelab-engine binary that runs the peers (`bench-peer`); default os.Executable.
	Self string
	// NewRun builds the emulator configuration for a profile string (links and topology).
	NewRun func(profile string, seed uint64) (emulator.Config, error)
	// Progress receives one line per step; nil for none.
	Progress io.Writer
	// Only restricts the benchmark to some of its parts (LinkParts).
	Only []string
	// PacketLog keeps the packet log (as trials do) in every run, to measure its cost.
	PacketLog bool
	// Peers is how the traffic peers are scheduled: PeersAuto (""), PeersRT or PeersNormal.
	Peers string
	// Runs is how many times the rtt, capacity and disciplines parts run (each run reported on its
	// own: the targets hold in every run, not in a median); 0 means 1.
	Runs int
	// HaltPoll is the guest halt-polling window every run holds (emulator.Config.HaltPoll: 0 =
	// WIRELAB_HALT_POLL or netns.DefaultHaltPoll, negative = the machine's setting left alone).
	HaltPoll time.Duration
	// Ctx, when cancelled (Ctrl-C), stops the running part's emulator and ends the benchmark with
	// ErrLinkInterrupted; nil = never.
	Ctx context.Context
}

// ErrLinkInterrupted is Link's error when LinkOptions.Ctx was cancelled.
var ErrLinkInterrupted = errors.New("bench link interrupted")

// RepeatedParts are the parts that LinkOptions.Runs repeats; goodput and loss run once.
var RepeatedParts = []string{"rtt", "capacity", "disciplines"}

// LinkParts are the link benchmark's parts, in the order they run.
var LinkParts = []string{"rtt", "goodput", "loss", "capacity", "disciplines"}

// How the benchmark's traffic peers are scheduled (LinkOptions.Peers).
const (
	// PeersAuto: real-time (PeerPriority, below the emulator) for the RTT part, whose figure is
	// timed in the peer — so that the peer's own wake-up after connect(2) is not counted as
	// emulator error — and ordinary, like a trial's servers and clients, for the throughput parts.
	PeersAuto = "auto"
	// PeersRT: real-time in every part. The loss runs' sender then saturates both cores with
	// real-time work, and the kernel stops all of it for ~40 ms at a time to run starved
	// ordinary threads (its 5 % reserve): lateness max 40–50 ms in every loss run.
	PeersRT = "rt"
	// PeersNormal: ordinary in every part; the connect times then include an ordinary process's
	// wake-up (+0.1 to +0.2 ms at p50 here).
	PeersNormal = "normal"
)

func (b *linkBench) peerArgs(args ...string) []string {
	out := []string{b.opt.Self, "bench-peer"}
	if b.rtPeers {
		out = append(out, "--rt")
	}
	return append(out, args...)
}

func (o *LinkOptions) runs(part string) bool {
	if len(o.Only) == 0 {
		return true
	}
	for _, p := range o.Only {
		if p == part {
			return true
		}
	}
	return false
}

// RTTStats is the RTT error at one configured delay in one run.
type RTTStats struct {
	Run          int     `json:"run"` // 1, 2, … (LinkOptions.Runs)
	OneWayMs     float64 `json:"one_way_ms"`
	ConfiguredMs float64 `json:"configured_rtt_ms"`
	Samples      int     `json:"samples"`
	ErrorMsP50   float64 `json:"error_ms_p50"`
	ErrorMsP99   float64 `json:"error_ms_p99"`
	ErrorMsMean  float64 `json:"error_ms_mean"`
	ErrorMsMin   float64 `json:"error_ms_min"`
	// The kernel's own first RTT sample (TCP_INFO rtt, µs resolution) minus the configured RTT:
	// the same path without the measuring process's wake-up.
	KernelErrorMsP50 float64 `json:"kernel_rtt_error_ms_p50"`
	KernelErrorMsP99 float64 `json:"kernel_rtt_error_ms_p99"`
}

// GoodputStats is one bulk transfer at a configured rate.
type GoodputStats struct {
	Profile     string  `json:"profile"`
	RateMbps    float64 `json:"rate_mbps"`
	GoodputMbps float64 `json:"goodput_mbps"`
	Ratio       float64 `json:"ratio"`
	Seconds     float64 `json:"seconds"`
}

// LossStats is the realised loss at a configured loss rate.
type LossStats struct {
	Profile    string  `json:"profile"`
	Configured float64 `json:"configured"`
	Realized   float64 `json:"realized"`
	Packets    int64   `json:"packets"`
	Dropped    int64   `json:"dropped"`
}

// CapacityStats is the bulk transfer with no rate cap, in one run.
type CapacityStats struct {
	Run                int     `json:"run"`
	Profile            string  `json:"profile"`
	GoodputMbps        float64 `json:"goodput_mbps"`
	Seconds            float64 `json:"seconds"`
	CPUSeconds         float64 `json:"cpu_s"`        // emulator process CPU (user+system) over the transfer
	CPUCores           float64 `json:"cpu_cores"`    // CPU seconds per second
	Packets            int64   `json:"packets"`      // packets through the link, both directions
	DataPackets        int64   `json:"data_packets"` // server→client (MTU-sized data)
	CPUUsPerPacket     float64 `json:"cpu_us_per_packet"`
	CPUUsPerDataPacket float64 `json:"cpu_us_per_data_packet"`
	SegmentsPerWrite   float64 `json:"segments_per_write"` // down direction: coalescing on write
	SegmentsPerRead    float64 `json:"segments_per_read"`  // down direction: super-packet size on read
	Drops              int64   `json:"drops"`              // TUN device drops and emulator drops of any cause
	LatenessP99US      float64 `json:"lateness_us_p99"`
	TCPBufMax          int     `json:"tcp_buf_max,omitempty"` // the namespaces' tcp_wmem/tcp_rmem maximum, when raised (CapacityTCPBufMax)
}

// DisciplineStats is a bulk transfer through a 100 Mbit/s bottleneck that one queue discipline runs.
type DisciplineStats struct {
	Run            int     `json:"run"`
	Discipline     string  `json:"discipline"`
	Profile        string  `json:"profile"`
	GoodputMbps    float64 `json:"goodput_mbps"`
	CPUUsPerPacket float64 `json:"cpu_us_per_packet"` // emulator process CPU per packet through the link, both directions
	Packets        int64   `json:"packets"`
	// CPUUsPerDataPacket divides by the server→client packets alone, the basis on which the
	// capacity run's figures compare: there the receiver sees ~78-segment super-packets and ACKs
	// are <1 % of the packets, here every packet is released alone and ACKs are about a third of
	// them (1.35–1.46 packets per data packet at 100 Mbit/s: docs/network.md).
	CPUUsPerDataPacket float64 `json:"cpu_us_per_data_packet"`
	DataPackets        int64   `json:"data_packets"`
	DropsQueue         int64   `json:"drops_queue"`
	DeviceDrops        uint64  `json:"device_drops"`
	SojournP50Ms       float64 `json:"sojourn_ms_p50"` // the down direction's queue
	SojournP99Ms       float64 `json:"sojourn_ms_p99"`
	LatenessP99US      float64 `json:"lateness_us_p99"`
}

// LinkResult is the benchmark's JSON object. With several runs (LinkOptions.Runs), RTTByDelay,
// CapacityRuns and Disciplines hold every run's figures, the headline figures (RTTErrorMs*,
// CapacityMbps, CPUUsPerPacket, Capacity) are over all runs (RTT) or the median run by goodput
// (capacity), and Targets holds the worst run against each target.
type LinkResult struct {
	RTTErrorMsP50  float64               `json:"rtt_error_ms_p50"`
	RTTErrorMsP99  float64               `json:"rtt_error_ms_p99"`
	RTTByDelay     []RTTStats            `json:"rtt_by_delay"`
	GoodputRatio   map[string]float64    `json:"goodput_ratio"` // "1mbit" → goodput / rate
	Goodput        []GoodputStats        `json:"goodput"`
	LossRealized   map[string]float64    `json:"loss_realized"` // "1%" → realised fraction
	Loss           []LossStats           `json:"loss"`
	CapacityMbps   float64               `json:"capacity_mbps"`
	CPUUsPerPacket float64               `json:"cpu_us_per_packet"`
	Capacity       CapacityStats         `json:"capacity"`
	CapacityRuns   []CapacityStats       `json:"capacity_runs"`
	Disciplines    []DisciplineStats     `json:"disciplines"` // CPU per packet with each queue discipline, every run
	Targets        *Targets              `json:"targets,omitempty"`
	Runs           int                   `json:"runs"`
	CPUSource      string                `json:"cpu_source"`                // how CPU time is measured (CPUSource)
	DeviceDrops    uint64                `json:"device_drops"`              // TUN drop counters, all runs
	UnexpectedDrop int64                 `json:"emulator_drops_unexpected"` // emulator drops where the profile asks for none
	LatenessUS     emulator.LatenessUS   `json:"lateness_us"`               // timer lateness, all runs
	RunSummaries   map[string]RunSummary `json:"run_summaries"`             // the emulator's view of each run, by name
	Machine        Machine               `json:"machine"`
	Quick          bool                  `json:"quick"`
	Peers          string                `json:"peers"` // auto, rt or normal (LinkOptions.Peers)
	PacketLog      bool                  `json:"packet_log"`
	DurationS      float64               `json:"duration_s"`
	Errors         []string              `json:"errors,omitempty"`
}

// CPUSource says how the emulator's CPU time is measured: getrusage(2) of the benchmark's own
// process, where the emulator runs (its peers are other processes, not counted). With the
// kernel's tick-based accounting the total is scaled to the exact run time of the process's
// threads, and without IRQ_TIME_ACCOUNTING (this machine's kernel) softirq work done in the
// emulator's system calls — the TUN devices' receive paths — counts as its system time.
const CPUSource = "getrusage(RUSAGE_SELF) user+system of the emulator's process"

// Targets is the worst run against each of the emulator's targets (issue 30): RTT error p99
// ≤ 0.5 ms at every delay, and ≥ 5,000 Mbit/s at ≤ 1.5 µs of CPU per packet with 0 drops.
type Targets struct {
	RTTErrorMsP99Max    float64 `json:"rtt_error_ms_p99_max"` // the worst delay of the worst run
	RTTMet              bool    `json:"rtt_met"`
	CapacityMbpsMin     float64 `json:"capacity_mbps_min"`
	CPUUsPerPacketMax   float64 `json:"cpu_us_per_packet_max"`
	CapacityDrops       int64   `json:"capacity_drops"` // all capacity runs
	CapacityMet         bool    `json:"capacity_met"`
	DisciplineCPUUsMax  float64 `json:"discipline_cpu_us_per_packet_max"`
	DisciplineWorstName string  `json:"discipline_cpu_worst"`
}

// The targets' thresholds.
const (
	TargetRTTErrorMsP99  = 0.5
	TargetCapacityMbps   = 5000
	TargetCPUUsPerPacket = 1.5
)

// RunSummary is the emulator's view of one benchmark run.
type RunSummary struct {
	DeviceDrops uint64              `json:"device_drops"`
	DropsQueue  int64               `json:"drops_queue"`
	DropsLoss   int64               `json:"drops_loss"`
	LatenessUS  emulator.LatenessUS `json:"lateness_us"`
}

// Machine describes where the benchmark ran and how busy the machine was.
type Machine struct {
	CPUs         int     `json:"cpus"`
	Kernel       string  `json:"kernel"`
	GoVersion    string  `json:"go"`
	LoadBefore   string  `json:"loadavg_before"`
	LoadAfter    string  `json:"loadavg_after"`
	OtherBusyPct float64 `json:"other_busy_pct"` // CPU busy outside this process tree during the run, % of all CPUs
	// OtherRealtime lists the user-space processes outside this process tree with a thread that was
	// real-time (SCHED_FIFO, SCHED_RR, SCHED_DEADLINE) when the benchmark looked — at the start, after every run and at the
	// end (at most 20): other emulators, say. Their threads compete with the emulator's as equals
	// or above it, and most of a loaded machine's RTT tail came from such processes and from
	// ordinary ones in the kernel (docs/network.md, "The line-rate targets, measured again").
	// Only bench link looks (nil: the other benchmarks leave it out of their JSON, omitzero); it
	// says [] when it looked and found none.
	OtherRealtime []string `json:"other_realtime,omitzero"`
	// HaltPoll is the guest halt-polling window the runs held and the machine's own (nil: no
	// haltpoll cpuidle driver, or not a benchmark with an emulator; docs/network.md, "Host latency").
	HaltPoll *netns.HaltPollFact `json:"halt_poll,omitempty"`
}

// Link runs the link benchmark.
func Link(opt LinkOptions) (*LinkResult, error) {
	if opt.NewRun == nil {
		return nil, errors.New("bench: NewRun is required")
	}
	if opt.Self == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		opt.Self = self
	}
	b := &linkBench{opt: opt, res: &LinkResult{
		GoodputRatio: map[string]float64{}, LossRealized: map[string]float64{}, RunSummaries: map[string]RunSummary{}, Quick: opt.Quick, Peers: peersOrAuto(opt.Peers), PacketLog: opt.PacketLog,
		Runs: max(opt.Runs, 1), CPUSource: CPUSource,
	}}
	start := time.Now()
	b.res.Machine = machine()
	b.res.Machine.OtherRealtime = []string{} // looked: [] in the JSON when none is found
	b.noteOtherRealtime()
	busy0 := cpuBusy()
	self0 := treeCPU()
	if opt.Ctx != nil {
		stop := context.AfterFunc(opt.Ctx, b.interrupt)
		defer stop()
	}

	for _, part := range []struct {
		name string
		run  func()
	}{{"rtt", b.rtt}, {"goodput", b.goodput}, {"loss", b.loss}, {"capacity", b.capacity}, {"disciplines", b.disciplines}} {
		if !opt.runs(part.name) {
			continue
		}
		runs := 1
		if slices.Contains(RepeatedParts, part.name) {
			runs = b.res.Runs
		}
		for b.run = 1; b.run <= runs && !b.interrupted(); b.run++ {
			part.run()
			b.noteOtherRealtime()
		}
	}
	if b.interrupted() {
		return b.res, ErrLinkInterrupted
	}
	b.summarize()

	b.res.Machine.LoadAfter = loadavg()
	wall := time.Since(start)
	if busy1 := cpuBusy(); busy1.total > busy0.total {
		other := (busy1.busy - busy0.busy) - (treeCPU()-self0).Seconds()*float64(clockTicks())
		b.res.Machine.OtherBusyPct = math.Max(0, 100*other/float64(busy1.total-busy0.total))
	}
	b.res.DurationS = wall.Seconds()
	l := b.hist.Summary()
	b.res.LatenessUS = emulator.LatenessUS{P50: us(l.P50), P99: us(l.P99), Max: us(l.Max), Mean: us(l.Mean)}
	return b.res, nil
}

type linkBench struct {
	opt     LinkOptions
	res     *LinkResult
	hist    realtime.Histogram // timer lateness over all runs
	rtPeers bool               // the current part's peers run real-time
	run     int                // the current run of a repeated part (1, 2, …)
	rttAll  []float64          // every connect's RTT error, all runs

	mu      sync.Mutex
	cur     *session // the running emulator, stopped by interrupt
	stopped bool     // interrupted: no new session starts
}

// interrupt stops the running session's emulator (its peers with it) and any later start.
func (b *linkBench) interrupt() {
	b.mu.Lock()
	b.stopped = true
	s := b.cur
	b.mu.Unlock()
	if s != nil {
		s.e.Stop()
	}
}

func (b *linkBench) interrupted() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stopped
}

// name is a run's name in RunSummaries: the part's own, with the run's number after the first.
func (b *linkBench) name(s string) string {
	if b.run > 1 {
		return fmt.Sprintf("%s#%d", s, b.run)
	}
	return s
}

// runTag is the progress lines' mark of the run with several.
func (b *linkBench) runTag() string {
	if b.res.Runs > 1 {
		return fmt.Sprintf(" [run %d/%d]", b.run, b.res.Runs)
	}
	return ""
}

// summarize fills the headline figures and the targets from every run's.
func (b *linkBench) summarize() {
	r := b.res
	if len(b.rttAll) > 0 {
		sort.Float64s(b.rttAll)
		r.RTTErrorMsP50, r.RTTErrorMsP99 = round(percentile(b.rttAll, 0.5), 4), round(percentile(b.rttAll, 0.99), 4)
	}
	if len(r.CapacityRuns) > 0 {
		byGoodput := slices.Clone(r.CapacityRuns)
		slices.SortFunc(byGoodput, func(a, b CapacityStats) int { return cmp.Compare(a.GoodputMbps, b.GoodputMbps) })
		r.Capacity = byGoodput[(len(byGoodput)-1)/2]
		r.CapacityMbps, r.CPUUsPerPacket = r.Capacity.GoodputMbps, r.Capacity.CPUUsPerPacket
	}
	if len(r.RTTByDelay) == 0 && len(r.CapacityRuns) == 0 && len(r.Disciplines) == 0 {
		return
	}
	t := &Targets{RTTMet: len(r.RTTByDelay) > 0, CapacityMet: len(r.CapacityRuns) > 0}
	for _, d := range r.RTTByDelay {
		t.RTTErrorMsP99Max = max(t.RTTErrorMsP99Max, d.ErrorMsP99)
		t.RTTMet = t.RTTMet && d.ErrorMsP99 <= TargetRTTErrorMsP99
	}
	for i, c := range r.CapacityRuns {
		if i == 0 || c.GoodputMbps < t.CapacityMbpsMin {
			t.CapacityMbpsMin = c.GoodputMbps
		}
		t.CPUUsPerPacketMax = max(t.CPUUsPerPacketMax, c.CPUUsPerPacket)
		t.CapacityDrops += c.Drops
		t.CapacityMet = t.CapacityMet && c.GoodputMbps >= TargetCapacityMbps && c.CPUUsPerPacket <= TargetCPUUsPerPacket && c.Drops == 0
	}
	for _, d := range r.Disciplines {
		if d.CPUUsPerPacket > t.DisciplineCPUUsMax {
			t.DisciplineCPUUsMax, t.DisciplineWorstName = d.CPUUsPerPacket, d.Discipline
		}
	}
	r.Targets = t
}

func us(d time.Duration) float64 { return round(float64(d)/1e3, 1) }

func (b *linkBench) progress(format string, args ...any) {
	if b.opt.Progress != nil {
		fmt.Fprintf(b.opt.Progress, format+"\n", args...)
	}
}

func (b *linkBench) fail(what string, err error) {
	b.res.Errors = append(b.res.Errors, fmt.Sprintf("%s: %v", what, err))
	b.progress("bench: %s: %v", what, err)
}

// session is one emulator run with the server peer started.
type session struct {
	e      *emulator.Emulator
	server *execCmd
}

func (b *linkBench) start(profile string, seed uint64) (*session, error) {
	cfg, err := b.opt.NewRun(profile, seed)
	if err != nil {
		return nil, err
	}
	cfg.PacketLog = b.opt.PacketLog
	cfg.HaltPoll = b.opt.HaltPoll
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return nil, ErrLinkInterrupted
	}
	e, err := emulator.Start(cfg)
	if err != nil {
		return nil, err
	}
	if b.res.Machine.HaltPoll == nil {
		b.res.Machine.HaltPoll = e.Topo.HaltPoll()
	}
	s := &session{e: e}
	b.cur = s
	srv := e.Topo.Command(netns.Server, b.peerArgs("serve", labaddr.OriginAddr(1).String()+":9000")...)
	out, err := srv.StdoutPipe()
	if err != nil {
		e.Stop()
		return nil, err
	}
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		e.Stop()
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		e.Stop()
		srv.Wait()
		return nil, fmt.Errorf("bench peer did not get ready: %q %v", line, err)
	}
	s.server = &execCmd{srv}
	return s, nil
}

// client runs a client peer and decodes its JSON line into v.
func (b *linkBench) client(s *session, v any, args ...string) error {
	cmd := s.e.Topo.Command(netns.Client, b.peerArgs(args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("bench-peer %s: %v: %s", args[0], err, strings.TrimSpace(errb.String()))
	}
	return json.Unmarshal(out.Bytes(), v)
}

func (b *linkBench) stop(name string, s *session) emulator.Summary {
	b.mu.Lock()
	if b.cur == s {
		b.cur = nil
	}
	b.mu.Unlock()
	s.e.Runner.MergeLateness(&b.hist)
	sum, err := s.e.Stop()
	if err != nil {
		b.fail(name+": stop", err)
	}
	s.server.Wait()
	b.res.DeviceDrops += sum.DeviceDrops
	b.res.RunSummaries[name] = RunSummary{DeviceDrops: sum.DeviceDrops, DropsQueue: sum.Up.DropsQueue + sum.Down.DropsQueue,
		DropsLoss: sum.Up.DropsLoss + sum.Down.DropsLoss, LatenessUS: sum.LatenessUS}
	return sum
}

func (b *linkBench) rtt() {
	b.rtPeers = b.opt.Peers != PeersNormal
	defer func() { b.rtPeers = false }()
	count := 200
	if b.opt.Quick {
		count = 30
	}
	for _, oneWay := range []time.Duration{5 * time.Millisecond, 50 * time.Millisecond, 250 * time.Millisecond} {
		name := b.name(fmt.Sprintf("rtt-%s", oneWay))
		profile := fmt.Sprintf("delay_up=%s,delay_down=%s", oneWay, oneWay)
		s, err := b.start(profile, 1)
		if err != nil {
			b.fail(name, err)
			continue
		}
		// Parallel connects keep the 250 ms case short; they do not share a bottleneck (no rate cap),
		// but they do share the 2 cores, so their starts are spread over the round trip (spacing):
		// handshakes started together complete together, and each one's wake-up waited for the
		// others' (measured in docs/network.md, "What the runtime adds to a wake-up"). The extra
		// 10 % keeps a start off the one-way-delay grid on which the earlier connections' packets
		// cross the path.
		parallel := 1 + int(oneWay/(50*time.Millisecond))
		spacing := time.Duration(0)
		if parallel > 1 {
			spacing = 2 * oneWay * 11 / 10 / time.Duration(parallel)
		}
		var r struct {
			ConnectMs   []float64 `json:"connect_ms"`
			KernelRTTMs []float64 `json:"kernel_rtt_ms"`
		}
		err = b.client(s, &r, "connect", labaddr.OriginAddr(1).String()+":9000", fmt.Sprint(count), fmt.Sprint(parallel), spacing.String())
		sum := b.stop(name, s)
		if err != nil {
			b.fail(name, err)
			continue
		}
		conf := float64(2*oneWay) / 1e6
		errs := make([]float64, len(r.ConnectMs))
		for i, m := range r.ConnectMs {
			errs[i] = m - conf
		}
		sort.Float64s(errs)
		b.rttAll = append(b.rttAll, errs...)
		kerr := make([]float64, len(r.KernelRTTMs))
		for i, m := range r.KernelRTTMs {
			kerr[i] = m - conf
		}
		st := RTTStats{Run: b.run, OneWayMs: float64(oneWay) / 1e6, ConfiguredMs: conf, Samples: len(errs),
			ErrorMsP50: round(percentile(errs, 0.5), 4), ErrorMsP99: round(percentile(errs, 0.99), 4), ErrorMsMean: mean(errs), ErrorMsMin: round(errs[0], 4),
			KernelErrorMsP50: round(percentile(kerr, 0.5), 4), KernelErrorMsP99: round(percentile(kerr, 0.99), 4)}
		b.res.RTTByDelay = append(b.res.RTTByDelay, st)
		b.progress("bench: RTT %v%s: error p50 %+.3f ms, p99 %+.3f ms, min %+.3f ms (%d connects; kernel's RTT sample: p50 %+.3f, p99 %+.3f); lateness p50 %.1f µs p99 %.1f µs; drops %d",
			2*oneWay, b.runTag(), st.ErrorMsP50, st.ErrorMsP99, st.ErrorMsMin, st.Samples, st.KernelErrorMsP50, st.KernelErrorMsP99, sum.LatenessUS.P50, sum.LatenessUS.P99, drops(sum))
	}
}

// drops is every drop of a run: the TUN devices' and the emulator's, of any cause.
func drops(sum emulator.Summary) int64 {
	return int64(sum.DeviceDrops) + sum.Up.DropsLoss + sum.Down.DropsLoss + sum.Up.DropsQueue + sum.Down.DropsQueue
}

func (b *linkBench) goodput() {
	b.rtPeers = b.opt.Peers == PeersRT
	defer func() { b.rtPeers = false }()
	type gp struct {
		name           string
		rate           float64
		warm, duration time.Duration
	}
	cases := []gp{{"1mbit", 1e6, 3 * time.Second, 20 * time.Second}, {"10mbit", 10e6, 2 * time.Second, 15 * time.Second}, {"100mbit", 100e6, 2 * time.Second, 10 * time.Second}}
	if b.opt.Quick {
		cases = []gp{{"1mbit", 1e6, 2 * time.Second, 6 * time.Second}, {"10mbit", 10e6, 1 * time.Second, 4 * time.Second}, {"100mbit", 100e6, 1 * time.Second, 3 * time.Second}}
	}
	for _, c := range cases {
		profile := "rtt=20ms,bw=" + c.name + ",cc=cubic"
		name := "goodput-" + c.name
		s, err := b.start(profile, 1)
		if err != nil {
			b.fail(name, err)
			continue
		}
		var g Goodput
		err = b.client(s, &g, "receive", labaddr.OriginAddr(1).String()+":9000", c.warm.String(), c.duration.String())
		sum := b.stop(name, s)
		if err != nil {
			b.fail(name, err)
			continue
		}
		ratio := g.BitsPerSecond() / c.rate
		b.res.GoodputRatio[c.name] = round(ratio, 4)
		b.res.Goodput = append(b.res.Goodput, GoodputStats{Profile: profile, RateMbps: c.rate / 1e6, GoodputMbps: round(g.BitsPerSecond()/1e6, 3), Ratio: round(ratio, 4), Seconds: round(g.Seconds, 3)})
		if sum.Up.DropsLoss+sum.Down.DropsLoss > 0 {
			b.res.UnexpectedDrop += sum.Up.DropsLoss + sum.Down.DropsLoss
		}
		b.progress("bench: goodput %s: %.3f Mbit/s = %.4f of the rate (queue drops %d, device drops %d)",
			profile, g.BitsPerSecond()/1e6, ratio, sum.Down.DropsQueue+sum.Up.DropsQueue, sum.DeviceDrops)
	}
}

// loss sends UDP datagrams through a lossy path and compares the loss model's realised drop
// rate with the configured one (and checks that nothing else dropped anything).
func (b *linkBench) loss() {
	b.rtPeers = b.opt.Peers == PeersRT
	defer func() { b.rtPeers = false }()
	count, pps := 200000, 50000
	if b.opt.Quick {
		count, pps = 50000, 50000
	}
	for _, c := range []struct {
		name string
		p    float64
	}{{"1%", 0.01}, {"3%", 0.03}} {
		profile := "rtt=4ms,loss=" + c.name
		name := "loss-" + c.name
		s, err := b.start(profile, 7)
		if err != nil {
			b.fail(name, err)
			continue
		}
		var r struct {
			Sent int64 `json:"sent"`
		}
		err = b.client(s, &r, "blast", labaddr.OriginAddr(1).String()+":9000", fmt.Sprint(count), fmt.Sprint(pps))
		sum := b.stop(name, s)
		if err != nil {
			b.fail(name, err)
			continue
		}
		arrived, dropped := sum.Up.Arrived, sum.Up.DropsLoss
		realized := float64(dropped) / float64(max(arrived, 1))
		b.res.LossRealized[c.name] = round(realized, 5)
		b.res.Loss = append(b.res.Loss, LossStats{Profile: profile, Configured: c.p, Realized: round(realized, 5), Packets: arrived, Dropped: dropped})
		b.res.UnexpectedDrop += sum.Up.DropsQueue + sum.Down.DropsQueue + (r.Sent - arrived)
		b.progress("bench: loss %s: realised %.5f over %d UDP datagrams (%d sent; binomial 99.9%% interval ±%.5f)",
			c.name, realized, arrived, r.Sent, 3.29*math.Sqrt(c.p*(1-c.p)/float64(max(arrived, 1))))
	}
}

func (b *linkBench) capacity() {
	b.rtPeers = b.opt.Peers == PeersRT
	defer func() { b.rtPeers = false }()
	warm, d := 2*time.Second, 10*time.Second
	if b.opt.Quick {
		warm, d = time.Second, 4*time.Second
	}
	c, sum, err := b.bulk(b.name("capacity"), "rtt=10ms", warm, d, CapacityTCPBufMax)
	if err != nil {
		b.fail(b.name("capacity"), err)
		return
	}
	c.Drops, c.LatenessP99US = drops(sum), sum.LatenessUS.P99
	b.res.CapacityRuns = append(b.res.CapacityRuns, c)
	b.res.UnexpectedDrop += sum.Up.DropsLoss + sum.Down.DropsLoss + sum.Up.DropsQueue + sum.Down.DropsQueue
	b.progress("bench: capacity %s%s: %.0f Mbit/s, %.2f cores, %.3f µs CPU per packet (%.3f per data packet), drops %d (device %d), lateness p50 %.1f µs p99 %.1f µs; load %s",
		c.Profile, b.runTag(), c.GoodputMbps, c.CPUCores, c.CPUUsPerPacket, c.CPUUsPerDataPacket, c.Drops, sum.DeviceDrops, sum.LatenessUS.P50, sum.LatenessUS.P99, loadavg())
}

// CapacityTCPBufMax is the largest TCP send and receive buffer (tcp_wmem and tcp_rmem's maximum)
// in the capacity run's namespaces: 32 MB, the kernel's own default maximum of tcp_rmem. A single
// cubic flow keeps at most its send buffer in flight, and Linux's default tcp_wmem maximum of
// 4 MB — with the buffer's overhead, ~3 MB of data — caps a flow through a 10 ms path at ~2.5–3
// Gbit/s whatever carries it; the capacity run measured that cap until 2026-11-29 (docs/network.md,
// "The capacity run was the sender's buffer"). 5,000 Mbit/s over 10 ms needs a window of 6.25 MB.
const CapacityTCPBufMax = 32 << 20

// bulk runs one cubic bulk transfer through profile and measures goodput and the emulator's CPU.
// bufMax > 0 raises the TCP buffers' maximum in both namespaces to it (CapacityTCPBufMax).
func (b *linkBench) bulk(name, profile string, warm, d time.Duration, bufMax int) (CapacityStats, emulator.Summary, error) {
	s, err := b.start(profile, 1)
	if err != nil {
		return CapacityStats{}, emulator.Summary{}, err
	}
	if bufMax > 0 {
		for _, side := range []netns.Side{netns.Client, netns.Server} {
			for key, low := range map[string]string{"ipv4/tcp_wmem": "4096 16384", "ipv4/tcp_rmem": "4096 131072"} {
				if err := s.e.Topo.SetSysctl(side, key, fmt.Sprintf("%s %d", low, bufMax)); err != nil {
					sum := b.stop(name, s)
					return CapacityStats{}, sum, fmt.Errorf("%s: %w", key, err)
				}
			}
		}
	}
	before := s.e.Runner.Stats()
	cpu0 := selfCPU()
	t0 := time.Now()
	var g Goodput
	err = b.client(s, &g, "receive", labaddr.OriginAddr(1).String()+":9000", warm.String(), d.String())
	wall := time.Since(t0)
	cpu := selfCPU() - cpu0
	after := s.e.Runner.Stats()
	sum := b.stop(name, s)
	if err != nil {
		return CapacityStats{}, sum, err
	}
	pk := (after.Up.Packets - before.Up.Packets) + (after.Down.Packets - before.Down.Packets)
	data := after.Down.Packets - before.Down.Packets
	return CapacityStats{
		Run: b.run, Profile: profile, GoodputMbps: round(g.BitsPerSecond()/1e6, 1), Seconds: round(g.Seconds, 3),
		CPUSeconds: round(cpu.Seconds(), 3), CPUCores: round(cpu.Seconds()/wall.Seconds(), 3),
		Packets: pk, DataPackets: data,
		CPUUsPerPacket:     round(float64(cpu)/1e3/float64(max(pk, 1)), 3),
		CPUUsPerDataPacket: round(float64(cpu)/1e3/float64(max(data, 1)), 3),
		SegmentsPerWrite:   round(float64(data)/float64(max(after.Down.Writes-before.Down.Writes, 1)), 1),
		SegmentsPerRead:    round(float64(data)/float64(max(after.Down.Reads-before.Down.Reads, 1)), 1),
		TCPBufMax:          bufMax,
	}, sum, nil
}

// DisciplineRate is the bottleneck of the disciplines part: well within the emulator's capacity, so
// that a bulk transfer keeps a queue and its discipline decides on every packet.
const DisciplineRate = "100mbit"

// disciplines runs a bulk transfer through a 100 Mbit/s, 10 ms path with each queue discipline and
// measures the emulator's CPU per packet and what the discipline did.
func (b *linkBench) disciplines() {
	b.rtPeers = b.opt.Peers == PeersRT
	defer func() { b.rtPeers = false }()
	warm, d := time.Second, 6*time.Second
	if b.opt.Quick {
		warm, d = 500*time.Millisecond, 2*time.Second
	}
	for _, name := range profile.DisciplineNames() {
		p := "rtt=10ms,bw=" + DisciplineRate + ",queue=" + name
		c, sum, err := b.bulk(b.name("discipline-"+name), p, warm, d, 0)
		if err != nil {
			b.fail(b.name("discipline-"+name), err)
			continue
		}
		st := DisciplineStats{Run: b.run, DeviceDrops: sum.DeviceDrops, Discipline: name, Profile: p, GoodputMbps: c.GoodputMbps, CPUUsPerPacket: c.CPUUsPerPacket, Packets: c.Packets,
			CPUUsPerDataPacket: c.CPUUsPerDataPacket, DataPackets: c.DataPackets,
			DropsQueue: sum.Down.DropsQueue + sum.Up.DropsQueue, LatenessP99US: sum.LatenessUS.P99}
		if sj := sum.Down.SojournMs; sj != nil {
			st.SojournP50Ms, st.SojournP99Ms = sj.P50, sj.P99
		}
		b.res.Disciplines = append(b.res.Disciplines, st)
		b.res.UnexpectedDrop += sum.Up.DropsLoss + sum.Down.DropsLoss
		b.progress("bench: discipline %s at %s%s: %.0f Mbit/s, %.3f µs CPU per packet (%.3f per data packet), %d queue drops, %d device drops, sojourn p50 %.2f ms p99 %.2f ms, lateness p99 %.1f µs",
			name, DisciplineRate, b.runTag(), st.GoodputMbps, st.CPUUsPerPacket, st.CPUUsPerDataPacket, st.DropsQueue, st.DeviceDrops, st.SojournP50Ms, st.SojournP99Ms, st.LatenessP99US)
	}
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return round(s/float64(max(len(xs), 1)), 4)
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

func selfCPU() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(unix.TimevalToNsec(ru.Utime) + unix.TimevalToNsec(ru.Stime))
}

// treeCPU is this process's and its waited-for children's CPU time.
func treeCPU() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_CHILDREN, &ru)
	return selfCPU() + time.Duration(unix.TimevalToNsec(ru.Utime)+unix.TimevalToNsec(ru.Stime))
}

type busy struct{ busy, total float64 }

// cpuBusy reads the machine's busy and total CPU time (clock ticks) from /proc/stat.
func cpuBusy() busy {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return busy{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var v busy
	for i, s := range f[1:] {
		var x float64
		fmt.Sscan(s, &x)
		if i < 8 { // user nice system idle iowait irq softirq steal
			v.total += x
			if i != 3 && i != 4 {
				v.busy += x
			}
		}
	}
	return v
}

func clockTicks() int { return 100 }

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func machine() Machine {
	var u unix.Utsname
	unix.Uname(&u)
	return Machine{CPUs: runtime.NumCPU(), Kernel: unix.ByteSliceToString(u.Release[:]), GoVersion: runtime.Version(), LoadBefore: loadavg()}
}

type execCmd struct{ c interface{ Wait() error } }

func (e *execCmd) Wait() { e.c.Wait() }

func peersOrAuto(p string) string {
	if p == "" {
		return PeersAuto
	}
	return p
}
