package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/wirelab/wirelab/engine/lab"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server/impl"
	"github.com/wirelab/wirelab/engine/spec"
)

// The servers of `bench loadgen`: the built-in server as a process of its own on 127.0.0.1, and
// every real implementation of engine/server/impl in a lab, with the tools run beside it in the
// lab's server namespace.

// LoadgenServer is a server under test of the benchmark, and where the tools run beside it.
type LoadgenServer interface {
	// Start serves the page over protocols (h1: cleartext, h2: TLS). On error nothing is left.
	Start(ctx context.Context, pageName string, protocols []string) (*Served, error)
}

// Served is a running server under test.
type Served struct {
	// Where says where the server and the tools run, and how their packets travel.
	Where string
	// Addr is the address the page's origin is reached at by a tool run with Command.
	Addr string
	// PID is the server's process (the built-in server; 0 for a lab's server).
	PID int
	// HTTPPort and HTTPSPort are its ports; 0 = the scheme's default (no port in the URLs).
	HTTPPort, HTTPSPort int
	CAFile              string
	// LabID is the lab run whose server namespace Command runs in ("" = none): loadgen's --lab.
	LabID string
	// Command prepares a tool to run beside the server (the same network namespace).
	Command func(argv ...string) *exec.Cmd
	// CPU is the CPU time every process of the server has used so far; ok is false when it is
	// not measured (a lab on a machine without a usable cgroup hierarchy).
	CPU func() (cpu time.Duration, ok bool)
	// Memory is the memory of the server's control group now (a lab's server; nil otherwise).
	Memory func() int64
	// Serve makes the page servable over proto and returns the token of its URLs.
	Serve func(proto string) (token string, err error)
	// Stop stops the server and removes everything it created; for a lab, it returns what went
	// into the lab's link meanwhile (nil otherwise).
	Stop func() (*LinkPackets, error)
}

// LinkPackets are the packets each namespace's kernel sent into the lab's link while the lab lived
// (netns.Topology.SentPackets: its TUN device's queueing discipline): with the tools beside the
// server, none — their packets are delivered locally, through lo.
type LinkPackets struct {
	Client uint64 `json:"client_tx_packets"`
	Server uint64 `json:"server_tx_packets"`
}

// LoadgenServers are the servers `bench loadgen --server` knows: one per implementation of
// impl.All (LoadgenServerNames), the built-in server as a process of its own and every other in a
// lab.
var LoadgenServers = func() map[string]func(engine string) LoadgenServer {
	m := map[string]func(engine string) LoadgenServer{}
	for _, s := range impl.All {
		name := s.Name()
		if name == "builtin" {
			m[name] = func(engine string) LoadgenServer { return builtinServer{engine} }
		} else {
			m[name] = func(engine string) LoadgenServer { return labServer{name: name, engine: engine} }
		}
	}
	return m
}()

// LoadgenServerNames are LoadgenServers' names in the registry's order.
func LoadgenServerNames() []string { return impl.Names() }

// CheckLoadgenServer refuses, before anything exists, a server the benchmark does not know, one
// that is not installed, and one that does not serve the protocols with its default knobs. The
// benchmark's protocols are the contract's: h1 is HTTP/1.1 in cleartext, h2 is HTTP/2 over TLS.
func CheckLoadgenServer(name string, protocols []string) error {
	if _, ok := LoadgenServers[name]; !ok {
		return fmt.Errorf("server: %q is not a benchmark server; want %s", name, strings.Join(LoadgenServerNames(), ", "))
	}
	s, err := impl.Lookup(name)
	if err != nil {
		return err
	}
	if bin := s.Support().Binary; bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("server: %s is not installed (%s; make setup installs it)", name, bin)
		}
	}
	if err := s.Check(BenchKnobs(name), protocols); err != nil {
		return fmt.Errorf("server %s: %w", name, err)
	}
	return nil
}

// BenchKeepaliveRequests is nginx's keepalive_requests in the benchmark: no connection reaches it
// within a run. h2load (nghttp2 1.52) does not open a new HTTP/2 connection after a GOAWAY: with
// nginx's default (1000) each of its h2 clients stops after 1000 requests, and its pages/s would
// measure that, not the tool.
const BenchKeepaliveRequests = 1_000_000_000

// BenchApacheThreads are Apache's worker threads in the benchmark (mpm_event, the package's
// default MPM): 4 processes of 64 from the start. With the package's defaults (2 processes of 25
// at the start, 150 at most) the 120 connections of the h1 runs exceed what mpm_event keeps alive
// (a process's connections above its threads plus twice its idle ones: it answers with
// "Connection: close"), and the tools then did different work: the VUs opened 4,000–23,000
// connections in a 10 s run — a TCP (and TLS) handshake every 2–3 requests, 54–376 µs of CPU per
// request — while h2load, which does not reopen them at once, idled its clients (0.2–0.5
// requests in flight per connection). Both tools keep their 120 connections with enough threads.
const BenchApacheThreads = 256

// benchOwn are the benchmark's settings of the implementations' own tables, by implementation: no
// per-connection request limit that ends a connection within a run (nginx), and no connection
// closed for want of a worker (Apache: BenchApacheThreads).
var benchOwn = map[string]map[string]any{
	"nginx": {"keepalive_requests": BenchKeepaliveRequests},
	"apache": {"mpm": "event", "start_servers": 4, "threads_per_child": 64, "max_request_workers": BenchApacheThreads,
		"min_spare_threads": 64, "max_spare_threads": BenchApacheThreads},
}

// VUServers are the servers the vus part runs on: the built-in server (as many processes as
// generators) and nginx (one lab, as many workers as generators: VUKnobs).
var VUServers = []string{"builtin", "nginx"}

// BenchKeepaliveTimeoutS is nginx's keepalive_timeout in the vus part: no idle connection closed
// within a run — with a 30 s exponential think time 8 % of thinks pass nginx's 75 s, and each
// would cost a new TLS handshake at both ends.
const BenchKeepaliveTimeoutS = 3600

// BenchOpenFileCache is nginx's open_file_cache in the vus part: the page's files stay open in
// each worker — opening, fstat and closing the file took 13 % of a worker's CPU per request
// (perf record -g of a worker, 4,000 h2 VUs with 5 s think).
const BenchOpenFileCache = 1000

// VUKnobs is the server object the vus part runs nginx with: BenchKnobs, and a worker per
// generator (plan.Servers), each accepting the plan's connections per process and a margin
// (worker_connections: WorkerConnections), new connections spread over the workers by the kernel
// (reuseport: with one shared listening socket most would go to the first worker), idle
// connections kept (BenchKeepaliveTimeoutS), the page's files kept open (BenchOpenFileCache).
func VUKnobs(name string, plan VUPlan) (spec.Server, error) {
	if name != "nginx" {
		return spec.Server{}, fmt.Errorf("vus: server %q; the vus part runs on %s", name, strings.Join(VUServers, " or "))
	}
	return benchServer(name, map[string]any{"worker_processes": plan.Servers, "worker_connections": WorkerConnections(plan.PerProcess * plan.FDsPerVU),
		"keepalive_timeout_s": BenchKeepaliveTimeoutS, "reuseport": true, "open_file_cache": BenchOpenFileCache})
}

// WorkerConnections is nginx's worker_connections for n connections per worker on average:
// reuseport hashes each connection's addresses and ports to a worker, so a worker's share is
// binomial, its spread ≈ √n — 4·√n above the mean is passed about once in 30,000 — besides
// the listeners and the status socket (processReserve/4). The worker's open-files limit (inherited: the
// benchmark's, which PlanVUs sized PerProcess from) still bounds it.
func WorkerConnections(n int) int {
	return n + int(math.Ceil(4*math.Sqrt(float64(n)))) + processReserve/4
}

// BenchKnobs is the server object the benchmark runs a server with: its defaults with
// max_concurrent_streams 0, each server's own (≥ 100, more than the page's 51 streams; Caddy
// cannot set it), as bench servers runs them, and its own table's benchOwn.
func BenchKnobs(name string) spec.Server {
	s, err := benchServer(name, nil)
	if err != nil {
		panic(fmt.Sprintf("bench: the server object of %s: %v", name, err)) // the contract's own names
	}
	return s
}

// benchServer is the server object of name with max_concurrent_streams 0 and its own table:
// benchOwn, then own's keys (a part's, set over the benchmark's).
func benchServer(name string, own map[string]any) (spec.Server, error) {
	obj := map[string]any{"impl": name, "max_concurrent_streams": 0}
	table := maps.Clone(benchOwn[name])
	if table == nil && own != nil {
		table = map[string]any{}
	}
	maps.Copy(table, own)
	if table != nil {
		obj[name] = table
	}
	b, _ := json.Marshal(obj)
	return spec.DecodeServer(b)
}

// builtinServer runs `wirelab-engine serve` on 127.0.0.1 as a child process, so its CPU is its
// own; the tools run in this process's namespace.
type builtinServer struct{ engine string }

func (b builtinServer) Start(ctx context.Context, pageName string, protocols []string) (*Served, error) {
	cmd := exec.Command(b.engine, "serve", "--page", pageName, "--addrs", "127.0.0.1", "--port-http", "0", "--port-https", "0",
		"--port-quic", "0", "--protocols", strings.Join(protocols, ","))
	// A process group of its own: a terminal's Ctrl-C (SIGINT to the foreground group) reaches
	// the benchmark, which stops the generators first and this server after them — not all at
	// the same instant, the server gone while the VUs' last pages are in flight.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := startChild(cmd)
	if err != nil {
		return nil, err
	}
	stop := func() (*LinkPackets, error) {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		go func() { _, _ = io.Copy(io.Discard, stdout) }()
		return nil, cmd.Wait()
	}
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	var ready struct {
		Event  string `json:"event"`
		PID    int    `json:"pid"`
		CAFile string `json:"ca_file"`
		Ports  struct {
			HTTP  int `json:"http"`
			HTTPS int `json:"https"`
		} `json:"ports"`
	}
	if err == nil {
		err = json.Unmarshal(line, &ready)
	}
	if err != nil || ready.Event != "ready" {
		_, _ = stop()
		return nil, fmt.Errorf("serve: no ready line (%v): %s", err, line)
	}
	pid := cmd.Process.Pid
	return &Served{
		Where: "loopback (127.0.0.1), the built-in server a process of its own (serve)",
		Addr:  "127.0.0.1", PID: pid, HTTPPort: ready.Ports.HTTP, HTTPSPort: ready.Ports.HTTPS, CAFile: ready.CAFile,
		Command: func(argv ...string) *exec.Cmd { return exec.Command(argv[0], argv[1:]...) },
		CPU:     func() (time.Duration, bool) { return processCPU(pid), true },
		Serve:   func(string) (string, error) { return "bench", nil }, // it generates every response
		Stop:    stop,
	}, nil
}

// startChild starts cmd, a child of the benchmark: its stderr on ours, killed when this process
// dies; it returns cmd's stdout.
func startChild(cmd *exec.Cmd) (io.ReadCloser, error) {
	cmd.Stderr = os.Stderr
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL // Served.Command's own (a lab's: its process group) kept
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	return stdout, cmd.Start()
}

// labServer runs a real implementation in a lab (engine/lab: namespaces without the emulator, the
// server in its own control group, BenchKnobs) and the tools in the lab's server namespace, where
// they reach the server at its own address: the kernel delivers those packets locally, through lo
// — loopback in effect. Nothing would forward a packet between the namespaces; Stop returns how
// many were sent into the link, which shows that none was.
type labServer struct{ name, engine string }

func (s labServer) Start(ctx context.Context, pageName string, protocols []string) (*Served, error) {
	return s.start(ctx, pageName, protocols, BenchKnobs(s.name))
}

// start is Start with the server object knobs (the vus part's: VUKnobs).
func (s labServer) start(ctx context.Context, pageName string, protocols []string, knobs spec.Server) (*Served, error) {
	// One origin, as the built-in server serves the page with --shards 1; its topology's path is
	// never used (NoEmulator).
	p, err := lab.Prepare(&spec.Lab{Page: pageName, Shards: 1, ShardMode: string(page.ShardRoundRobin), Network: "native",
		Server: knobs}, 1, protocols)
	if err != nil {
		return nil, fmt.Errorf("lab with %s: %w", s.name, err)
	}
	l, err := lab.Start(ctx, p, lab.Options{Engine: s.engine, NoEmulator: true,
		Log: func(format string, args ...any) {
			if strings.HasPrefix(format, "server:") || strings.HasPrefix(format, "server cost") {
				fmt.Fprintf(os.Stderr, format+"\n", args...)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("lab with %s: %w", s.name, err)
	}
	addr := labaddr.OriginAddr(1).String()
	return &Served{
		Where: fmt.Sprintf("%s (%s) in lab %s without an emulator; the tools in its server namespace %s, reaching %s: local delivery through lo",
			s.name, l.Version, l.Topo.ID, l.Topo.Name(netns.Server), addr),
		Addr: addr, CAFile: l.CAFile, LabID: l.Topo.ID,
		Command: func(argv ...string) *exec.Cmd { return l.Topo.Command(netns.Server, argv...) },
		CPU: func() (time.Duration, bool) {
			if l.Server.Group == nil {
				return 0, false
			}
			u, err := l.Server.Usage()
			return time.Duration(u.CPUNs), err == nil
		},
		Memory: func() int64 {
			if l.Server.Group == nil {
				return 0
			}
			u, _ := l.Server.Usage()
			return u.MemoryBytes
		},
		Serve: func(proto string) (string, error) {
			token := page.NewToken()
			return token, l.Serve(token, proto)
		},
		Stop: func() (*LinkPackets, error) {
			var link *LinkPackets
			client, cerr := l.Topo.SentPackets(netns.Client)
			server, serr := l.Topo.SentPackets(netns.Server)
			if cerr == nil && serr == nil {
				link = &LinkPackets{Client: client, Server: server}
			}
			_, err := l.Close()
			return link, errors.Join(err, cerr, serr)
		},
	}, nil
}

// How long a tool may take to exit after the context ends and it is signalled, before it is killed:
// h2load (SIGTERM) and loadgen (SIGINT, then it prints its summary).
const (
	h2loadStopGrace  = 5 * time.Second
	loadgenStopGrace = 30 * time.Second
)

// watch signals a started cmd (prepared by Served.Command) with sig when ctx ends, and kills it
// after grace; call the returned function once cmd has been waited for.
func watch(ctx context.Context, cmd *exec.Cmd, sig syscall.Signal, grace time.Duration) (release func()) {
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = cmd.Process.Signal(sig)
			select {
			case <-time.After(grace):
				_ = cmd.Process.Kill()
			case <-done:
			}
		case <-done:
		}
	}()
	return func() { close(done) }
}

var (
	_ LoadgenServer = builtinServer{}
	_ LoadgenServer = labServer{}
)
