// Package emulator runs the emulated path of one run: it builds the topology (engine/netns),
// forwards packets between its TUN devices through the link model (engine/realtime), and records
// what crossed the link (engine/pktlog, engine/pcap). `wirelab-engine shell`, `bench` and `trial`
// all start it the same way.
//
// While an Emulator runs, its whole process runs with real-time priority (docs/network.md, "The
// real-time emulator"): work the process does meanwhile preempts ordinary processes, the client
// and servers under test among them, so heavy work belongs between loads.
package emulator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/link"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/pcap"
	"github.com/wirelab/wirelab/engine/pktlog"
	"github.com/wirelab/wirelab/engine/realtime"
)

// Config describes one emulator run.
type Config struct {
	Topology netns.Config
	Up, Down realtime.Link // the link model per direction (see NewLinks)

	// PcapDir, when set, receives client.pcap (packets as they entered and left the client's TUN)
	// and server.pcap (likewise on the server's side).
	PcapDir string
	// PcapSnapLen caps the bytes captured per packet; 0 = whole packets.
	PcapSnapLen int
	// PacketLog keeps a pktlog.Log of every packet (for ToW and retransmissions).
	PacketLog bool
	// PcapRotation observes packets so that RotatePcaps can start captures later (a trial
	// captures one pair of files per load).
	PcapRotation bool
	// SpinWindow overrides realtime.DefaultSpinWindow.
	SpinWindow time.Duration
	// HaltPoll is the guest halt-polling window the run holds while it lasts (netns.Config.HaltPoll;
	// docs/network.md, "Host latency"): 0 = netns.HaltPollFromEnv (netns.DefaultHaltPoll unless
	// WIRELAB_HALT_POLL says otherwise), negative = leave the machine's setting alone.
	HaltPoll time.Duration
}

// Emulator is a running emulated path.
type Emulator struct {
	Topo   *netns.Topology
	Runner *realtime.Runner
	Log    *pktlog.Log // nil unless Config.PacketLog

	cfg     Config
	pcaps   [2]atomic.Pointer[pcapFile] // indexed by netns.Side; swapped by RotatePcaps
	cancel  context.CancelFunc
	done    chan error
	stopped bool
	mu      sync.Mutex
	summary Summary
	start   time.Time
}

type pcapFile struct {
	f *os.File
	w *pcap.Writer
}

// Start builds the topology and starts forwarding. On error nothing is left behind.
func Start(cfg Config) (*Emulator, error) {
	if cfg.Up == nil || cfg.Down == nil {
		return nil, errors.New("emulator: Up and Down links are required")
	}
	e := &Emulator{cfg: cfg, done: make(chan error, 1)}
	if cfg.PacketLog {
		e.Log = &pktlog.Log{}
	}
	if cfg.PcapDir != "" {
		if err := os.MkdirAll(cfg.PcapDir, 0o755); err != nil {
			return nil, fmt.Errorf("pcap directory: %w", err)
		}
		for _, side := range []netns.Side{netns.Client, netns.Server} {
			pf, err := openPcap(filepath.Join(cfg.PcapDir, side.String()+".pcap"), cfg.PcapSnapLen)
			if err != nil {
				e.closePcaps()
				return nil, err
			}
			e.pcaps[side].Store(pf)
		}
	}
	hp := cfg.HaltPoll
	if hp == 0 {
		var err error
		if hp, err = netns.HaltPollFromEnv(); err != nil {
			e.closePcaps()
			return nil, err
		}
	}
	cfg.Topology.HaltPoll = max(hp, 0)
	topo, err := netns.Create(cfg.Topology)
	if err != nil {
		e.closePcaps()
		return nil, err
	}
	e.Topo = topo
	var obs realtime.Observer
	if e.Log != nil || cfg.PcapDir != "" || cfg.PcapRotation {
		obs = e
	}
	r, err := realtime.New(realtime.Config{
		Client: topo.TUN(netns.Client), Server: topo.TUN(netns.Server), Up: cfg.Up, Down: cfg.Down,
		OriginOf: labaddr.OriginOf, Observer: obs, MTU: topo.Config().MTU, SpinWindow: cfg.SpinWindow,
	})
	if err != nil {
		topo.Close()
		e.closePcaps()
		return nil, err
	}
	e.Runner = r
	e.start = r.Start()
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go func() { e.done <- r.Run(ctx) }()
	return e, nil
}

// Now is the emulator's clock (the time base of packet records and link deadlines).
func (e *Emulator) Now() time.Duration { return e.Runner.Now() }

// Wall is the instant d of the emulator's clock as the captures stamp it: a packet observed at d
// is written to a pcap at Wall(d) (pktlog.FromPcap reads it back as Wall(d).UnixNano()).
func (e *Emulator) Wall(d time.Duration) time.Time { return e.start.Add(d) }

// Observe implements realtime.Observer: packet log and pcaps.
func (e *Emulator) Observe(ev *realtime.Event) {
	switch ev.Kind {
	case realtime.Arrived:
		// Up packets enter on the client's side, Down packets on the server's.
		if p := e.pcaps[sideOfEntry(ev.Dir)].Load(); p != nil {
			p.w.WritePacket(e.start.Add(ev.In), ev.Data)
		}
	case realtime.Dropped:
		if e.Log != nil {
			e.Log.Add(ev.Dir, ev.Fate, ev.In, ev.Out, ev.Sojourn, ev.Data)
		}
	case realtime.Delivered:
		if p := e.pcaps[1-sideOfEntry(ev.Dir)].Load(); p != nil {
			p.w.WritePacket(e.start.Add(ev.Out), ev.Data)
		}
		if e.Log != nil {
			e.Log.Add(ev.Dir, ev.Fate, ev.In, ev.Out, ev.Sojourn, ev.Data)
		}
	}
}

func sideOfEntry(d link.Dir) netns.Side {
	if d == link.Up {
		return netns.Client
	}
	return netns.Server
}

// Stop stops forwarding, flushes the captures, reads the devices' counters and removes the
// topology (terminating every process in it). It returns the run's summary. Idempotent.
func (e *Emulator) Stop() (Summary, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return e.summary, nil
	}
	e.stopped = true
	var errs []error
	// Device counters first: closing the TUN devices removes them.
	var dev [2]netns.DeviceStats
	for _, side := range []netns.Side{netns.Client, netns.Server} {
		s, err := e.Topo.DeviceStats(side)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s device counters: %w", side, err))
		}
		dev[side] = s
	}
	e.cancel()
	if err := <-e.done; err != nil {
		errs = append(errs, err)
	}
	e.summary = e.summarize(dev)
	if err := e.Topo.Close(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, e.closePcaps())
	return e.summary, errors.Join(errs...)
}

func (e *Emulator) closePcaps() error {
	var errs []error
	for i := range e.pcaps {
		if p := e.pcaps[i].Swap(nil); p != nil {
			errs = append(errs, p.close())
		}
	}
	return errors.Join(errs...)
}

func openPcap(path string, snapLen int) (*pcapFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("pcap: %w", err)
	}
	w, err := pcap.NewWriter(f, snapLen)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &pcapFile{f: f, w: w}, nil
}

func (p *pcapFile) close() error { return errors.Join(p.w.Flush(), p.f.Close()) }

// RotatePcaps ends the current captures and continues into the files client and server (what
// crossed the client's and the server's side of the link, as with Config.PcapDir); empty paths stop
// capturing. A trial rotates at the start of every load, when the link is idle: a packet observed
// while the old files are being closed may be missing from both. The emulator must observe packets
// (Config.PacketLog, PcapDir or PcapRotation).
func (e *Emulator) RotatePcaps(client, server string) error {
	var next [2]*pcapFile
	if client != "" || server != "" {
		for i, path := range []string{client, server} {
			pf, err := openPcap(path, e.cfg.PcapSnapLen)
			if err != nil {
				if next[0] != nil {
					next[0].close()
				}
				return err
			}
			next[i] = pf
		}
	}
	var errs []error
	for i := range e.pcaps {
		if old := e.pcaps[i].Swap(next[i]); old != nil {
			errs = append(errs, old.close())
		}
	}
	return errors.Join(errs...)
}

// ModelReporter is implemented by links backed by the link model (NewLinkPath): its counters and
// what its queue discipline did, for the run's summary.
type ModelReporter interface {
	Stats() link.Stats
	Gateway() link.GatewayStats
}
