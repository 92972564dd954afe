// Package lab is the emulated lab every measurement runs in: the topology and the emulated path
// (engine/emulator), the run's private directory (certificates with their key 0600, the server's
// configuration, document root and logs), the DNS server, and the server under test — any
// implementation of engine/server/impl, in a control group of its own. trial, loadtest and bench
// all start one with Start and end it with Close; everything a lab creates is recorded in the
// run's state file before it exists, so Close — or `wirelab-engine gc` after a SIGKILL — removes
// all of it.
//
//	l, err := lab.Start(ctx, cfg)   // everything up, or nothing left
//	l.Serve(token, protocol)        // the load's URLs servable (a file server gets the load's tree)
//	l.Forget(token)                 // … and removed after the load
//	mark := l.Mark()                // the server's usage now; l.CostSince(mark) after the load
//	sum, err := l.Close()           // everything removed; the emulator's summary
package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/wirelab/wirelab/engine/emulator"
	"github.com/wirelab/wirelab/engine/internal/cgroup"
	"github.com/wirelab/wirelab/engine/internal/child"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server"
	"github.com/wirelab/wirelab/engine/server/impl"
)

// Config is what a lab is built from.
type Config struct {
	Page      *page.Page // the page as served (seeded, sharded)
	PageArg   string     // the page as `serve --page` takes it
	Seed      int64
	Shards    int
	ShardMode string
	Protocols []string   // what the run loads over
	Server    impl.Knobs // the spec's server object
	DNS       bool       // run the DNS server (client.dns = server)
	Emulator  emulator.Config
	// NoEmulator builds Emulator.Topology alone: nothing forwards between the namespaces, and the
	// emulator's idle threads (each wakes every few milliseconds to keep its P, about a tenth of
	// a core) cost nothing. For work that stays inside the server namespace — bench loadgen runs
	// its tools beside the server. Close's summary is then empty (Topo.SentPackets counts what
	// went into the link).
	NoEmulator bool
	Engine     string   // the wirelab-engine binary (serve, dns)
	Env        []string // environment of wirelab-engine children
	// RecordsFile and ConnsFile receive the server's request records (server/requests.jsonl: every
	// implementation's, from its access log for the real servers) and connection records (the
	// built-in server's); "" = none.
	RecordsFile, ConnsFile string
	QUICStats              bool // the built-in server reports each h3 connection's losses (OnLine)
	// Log receives one-line messages (the server's output among them); nil = discarded.
	Log func(format string, args ...any)
	// OnServerLine receives the server's stdout lines after its ready line (built-in: quic_closed).
	OnServerLine func(line string)
}

// Lab is one running lab.
type Lab struct {
	Topo   *netns.Topology
	Emu    *emulator.Emulator // nil with Config.NoEmulator
	Impl   impl.Server
	Server *impl.Instance
	Certs  *server.Certs
	Dir    string     // the private directory
	Tree   *impl.Tree // the document root of a file server; nil for the built-in server
	// Version is the server's version ("nginx/1.22.1"; the engine's for the built-in server).
	Version string
	// CostSource says how server cost is measured: cgroup-v1, cgroup-v2, or "" when it is not.
	CostSource string

	cfg     Config
	dns     *child.Process
	closed  bool
	summary emulator.Summary
}

// PrivatePrefix names a lab's private directory in os.TempDir(): wirelab-lab-<run id>.
const PrivatePrefix = "wirelab-lab-"

// readyToken is the token of the tree a file server is probed with before the first load.
const readyToken = "wirelab-ready"

// Start builds the lab. On error, everything it created is removed again.
func Start(ctx context.Context, cfg Config) (*Lab, error) {
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	srv, err := impl.Lookup(cfg.Server.Impl)
	if err != nil {
		return nil, err
	}
	if err := srv.Check(cfg.Server, cfg.Protocols); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	l := &Lab{Impl: srv, cfg: cfg}
	if cfg.NoEmulator {
		if l.Topo, err = netns.Create(cfg.Emulator.Topology); err != nil {
			return nil, fmt.Errorf("topology: %w", err)
		}
	} else {
		if l.Emu, err = emulator.Start(cfg.Emulator); err != nil {
			return nil, fmt.Errorf("topology: %w", err)
		}
		l.Topo = l.Emu.Topo
	}
	if err := l.start(ctx); err != nil {
		_, cerr := l.Close()
		return nil, errors.Join(err, cerr)
	}
	return l, nil
}

func (l *Lab) start(ctx context.Context) error {
	cfg := l.cfg
	id := l.Topo.ID
	l.Dir = filepath.Join(os.TempDir(), PrivatePrefix+id)
	if err := l.Topo.OwnDir(l.Dir); err != nil {
		return err
	}
	// 0711: the servers' unprivileged workers traverse it to their document root and run
	// directory; nothing in it can be listed, and the key is the owner's alone (0600).
	if err := os.Mkdir(l.Dir, 0o711); err != nil {
		return err
	}
	if err := os.Chmod(l.Dir, 0o711); err != nil { // whatever the umask
		return err
	}
	origins := make([]netip.Addr, len(cfg.Page.Origins))
	for i := range origins {
		origins[i] = netns.OriginAddr(i + 1)
	}
	var err error
	if l.Certs, err = server.NewCerts(filepath.Join(l.Dir, "certs"), origins); err != nil {
		return err
	}
	if cfg.DNS {
		if err := l.startDNS(ctx, origins); err != nil {
			return err
		}
	}
	dir := filepath.Join(l.Dir, "server")
	runDir := filepath.Join(l.Dir, "run")
	for _, d := range []string{dir, runDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	if l.Impl.Name() != "builtin" {
		uid, gid, err := impl.UserIDs()
		if err != nil {
			return err
		}
		if err := os.Chown(runDir, uid, gid); err != nil {
			return err
		}
		if err := os.Chmod(runDir, 0o700); err != nil {
			return err
		}
		if l.Tree, err = impl.NewTree(filepath.Join(l.Dir, "www"), cfg.Page); err != nil {
			return err
		}
	}
	in := &impl.Provision{
		Dir: dir, RunDir: runDir, Page: cfg.Page, PageArg: cfg.PageArg, Seed: cfg.Seed, Shards: cfg.Shards,
		ShardMode: cfg.ShardMode, Origins: origins, Protocols: cfg.Protocols, Knobs: cfg.Server,
		CertDir: l.Certs.Dir, Engine: cfg.Engine, Ports: impl.DefaultPorts,
		ConnsFile: cfg.ConnsFile, QUICStats: cfg.QUICStats,
	}
	if l.Tree != nil {
		in.DocRoot = l.Tree.Root()
	} else {
		in.RecordsFile = cfg.RecordsFile
	}
	launch, err := l.Impl.Provision(in)
	if err != nil {
		return err
	}
	if err := impl.TestConfig(ctx, l.Impl, launch, cfg.Server, func(argv ...string) *exec.Cmd {
		return l.Topo.Command(netns.Server, argv...)
	}); err != nil {
		return err
	}
	cfg.Log("server %s: %s", l.Impl.Name(), strings.Join(launch.Argv, " "))
	if launch.Config != "" {
		cfg.Log("server %s: configuration %s", l.Impl.Name(), launch.Config)
	}
	group, err := l.newGroup()
	if err != nil {
		return err
	}
	env := []string(nil)
	if l.Impl.Name() == "builtin" {
		env = cfg.Env
	}
	l.Server, err = impl.Start(ctx, l.Topo, l.Impl, launch, group, impl.Options{
		Log:    func(line string) { cfg.Log("server: %s", line) },
		OnLine: cfg.OnServerLine,
		Env:    env,
	})
	if err != nil {
		return err
	}
	var probes *impl.ProbeSet
	if l.Tree != nil {
		if err := l.Tree.Make(readyToken, "https", 0); err != nil {
			return err
		}
		probes = &impl.ProbeSet{Protocols: cfg.Protocols, Ports: impl.DefaultPorts, RootCAs: l.Certs.CAPool()}
		for i, o := range cfg.Page.Origins {
			t := impl.ProbeTarget{Host: o.Host, Addr: origins[i]}
			for _, obj := range cfg.Page.Objects {
				if obj.Origin == i {
					t.Path, t.Size = page.LoadPrefix+readyToken+obj.Path, obj.Size
					break
				}
			}
			probes.Targets = append(probes.Targets, t)
		}
	}
	if err := l.Server.Ready(ctx, impl.StartLimit, probes); err != nil {
		return err
	}
	if l.Tree != nil {
		if err := l.Tree.Remove(readyToken); err != nil {
			return err
		}
	}
	l.Version = impl.Version(l.Impl)
	return nil
}

// newGroup makes the server's control group, recorded in the run's state first; nil (and cost
// not measured) when the machine has no usable hierarchy.
func (l *Lab) newGroup() (*cgroup.Group, error) {
	src, err := cgroup.Available()
	if err != nil {
		l.cfg.Log("server cost not measured: %v", err)
		return nil, nil
	}
	name := "wirelab-" + l.Topo.ID + "-server"
	paths, err := cgroup.Plan(name)
	if err != nil {
		return nil, err
	}
	if err := l.Topo.OwnCgroups(paths...); err != nil {
		return nil, err
	}
	g, err := cgroup.New(name)
	if err != nil {
		return nil, err
	}
	l.CostSource = string(src)
	return g, nil
}

// Serve makes a load's URLs servable: for a file server, the load's tree (its HTML and CSS carry
// the token and the scheme of the protocol); nothing for the built-in server.
func (l *Lab) Serve(token, protocol string) error {
	if l.Tree == nil {
		return nil
	}
	scheme := "https"
	if protocol == "h1" || protocol == "h2c" {
		scheme = "http"
	}
	return l.Tree.Make(token, scheme, 0)
}

// Forget removes a load's files.
func (l *Lab) Forget(token string) error {
	if l.Tree == nil {
		return nil
	}
	return l.Tree.Remove(token)
}

// Mark is the server's usage at one instant, the start of a load's cost.
type Mark struct {
	usage cgroup.Usage
	ok    bool
}

// Mark reads the server's usage now and starts a new memory peak.
func (l *Lab) Mark() Mark {
	if l.Server == nil || l.Server.Group == nil {
		return Mark{}
	}
	l.Server.Group.ResetPeak()
	u, err := l.Server.Usage()
	return Mark{usage: u, ok: err == nil}
}

// Cost is what the server used between a Mark and now.
type Cost struct {
	CPUMs         float64 // user + system CPU of the server's processes
	MemPeakBytes  int64   // the highest memory charged to them (v1: since the Mark's reset)
	Source        string  // cgroup-v1 | cgroup-v2
	PeakSinceMark bool    // the peak was reset at the Mark (else it is the run's peak so far)
}

// CostSince is the server's cost since m; ok is false when it is not measured.
func (l *Lab) CostSince(m Mark) (Cost, bool) {
	if !m.ok {
		return Cost{}, false
	}
	u, err := l.Server.Usage()
	if err != nil {
		return Cost{}, false
	}
	return Cost{
		CPUMs:        float64(u.CPUNs-m.usage.CPUNs) / 1e6,
		MemPeakBytes: u.MemoryPeakBytes,
		Source:       string(u.Source),
	}, true
}

// ServerAlive reports whether the server's main process still runs (and why not).
func (l *Lab) ServerAlive() (bool, error) {
	if l.Server == nil {
		return false, errors.New("no server")
	}
	return l.Server.Alive(), l.Server.ExitErr()
}

// How long Close lets the server under test and the DNS server stop gracefully before it kills
// what is left.
const (
	serverStopGrace = 10 * time.Second
	dnsStopGrace    = 5 * time.Second
)

// Close stops the server (gracefully, then everything left in its group), converts a file
// server's access log into request records, stops the DNS server and the emulator, and removes
// the private directory, the control group and the topology. It is idempotent.
func (l *Lab) Close() (emulator.Summary, error) {
	if l.closed {
		return l.summary, nil
	}
	l.closed = true
	var errs []error
	if l.Server != nil {
		if err := l.Server.Stop(serverStopGrace); err != nil {
			errs = append(errs, err)
		}
		if l.Tree != nil && l.Server.Launch.AccessLog != "" && l.cfg.RecordsFile != "" {
			// The readiness probes are no load's requests: their token is left out.
			n, err := impl.ConvertAccessLog(l.Impl.Name(), l.Server.Launch.AccessLog, l.cfg.RecordsFile, l.cfg.Page, impl.DefaultPorts, readyToken)
			if err != nil {
				errs = append(errs, fmt.Errorf("server records: %w", err))
			} else {
				l.cfg.Log("server records: %d requests from %s's access log", n, l.Impl.Name())
			}
		}
		if l.Server.Group != nil {
			if err := l.Server.Group.Remove(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if l.dns != nil {
		if err := l.dns.Stop(syscall.SIGTERM, dnsStopGrace); err != nil {
			errs = append(errs, err)
		}
	}
	if l.Emu != nil {
		sum, err := l.Emu.Stop() // closes the topology: namespaces, and what the run owns (private dir, groups)
		l.summary = sum
		if err != nil {
			errs = append(errs, fmt.Errorf("cleanup: %w", err))
		}
	} else if l.Topo != nil { // Config.NoEmulator
		if err := l.Topo.Close(); err != nil {
			errs = append(errs, fmt.Errorf("cleanup: %w", err))
		}
	}
	return l.summary, errors.Join(errs...)
}

// startDNS runs `wirelab-engine dns` in the server namespace until Close, answering for the
// origins.
func (l *Lab) startDNS(ctx context.Context, origins []netip.Addr) error {
	addrs := make([]string, len(origins))
	for i, a := range origins {
		addrs[i] = a.String()
	}
	cmd := l.Topo.Command(netns.Server, l.cfg.Engine, "dns", "--listen", netns.DNSAddr.String()+":53", "--origins", strings.Join(addrs, ","))
	cmd.Env = l.cfg.Env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	p, err := child.Start(ctx, "dns", cmd, impl.StartLimit, nil, nil)
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	l.dns = p
	return nil
}
