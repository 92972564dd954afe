// Package lab is the emulated lab every measurement runs in, from preparation to cleanup: the
// page and its shards, the server under test and its checks, the network profile and the
// emulator's configuration (Prepare, PrepareLive: nothing created yet); then the topology and the
// emulated path (engine/emulator), the run's private directory (certificates with their key 0600,
// the server's configuration, document root and logs) and what stands behind the path (Far): the
// page's server under test — any implementation of engine/server/impl, in a control group of its
// own — with the lab's DNS server, or the local internet (engine/sites) or the host behind the
// egress router. Trials, load tests, `sites`, the benchmarks and the conformance runs all start one
// Lab with Start and end it with Close; everything a lab creates is recorded in the run's state
// file before it exists, so Close — or `wirelab-engine gc` after a SIGKILL — removes all of it.
//
//	p, err := lab.Prepare(&spec.Lab, seed, protocols) // checked, nothing created
//	l, err := lab.Start(ctx, p, lab.Options{…})       // everything up, or nothing left
//	l.Serve(token, protocol)                          // the load's URLs servable (a file server gets the load's tree)
//	l.Forget(token)                                   // … and removed after the load
//	mark := l.Mark()                                  // the server's usage now; l.CostSince(mark) after the load
//	sum, err := l.Close()                             // everything removed; the emulator's summary
package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/wirelab/wirelab/engine/egress"
	"github.com/wirelab/wirelab/engine/emulator"
	"github.com/wirelab/wirelab/engine/internal/child"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/server"
	"github.com/wirelab/wirelab/engine/server/impl"
	"github.com/wirelab/wirelab/engine/sites"
)

// Options are how a prepared lab runs.
type Options struct {
	Engine string   // the wirelab-engine binary run as serve, dns and sites serve (default: this one)
	Env    []string // the environment of those children (default: this process's)
	// Command is recorded in the run's state file (netns.Config.Command; default os.Args).
	Command []string
	// PacketLog keeps the emulator's packet log (Emu.Log); PcapRotation lets the run rotate
	// per-load captures (Emu.RotatePcaps); PcapDir receives client.pcap and server.pcap of the
	// whole run.
	PacketLog, PcapRotation bool
	PcapDir                 string
	// NoEmulator builds the topology alone: nothing forwards between the namespaces, and the
	// emulator's idle threads (each wakes every few milliseconds to keep its P, about a tenth of
	// a core) cost nothing. For work that stays inside the server namespace — bench loadgen runs
	// its tools beside the server. Close's summary is then empty (Topo.SentPackets counts what
	// went into the link). FarServer only.
	NoEmulator bool

	// DNS runs the lab's DNS server for the page's origins (client.dns = server), and the client
	// namespace's resolv.conf names it. FarServer only: a live lab's names are the egress
	// router's forwarder's, which the client namespace's resolv.conf always names.
	DNS bool
	// AnnounceH3 asks the server under test to announce h3 in Alt-Svc (impl.Provision.AnnounceH3;
	// client.h3 = alt-svc). HTTPSRecords gives every origin name an HTTPS record (RFC 9460) listing
	// HTTPSALPN in the lab's DNS server (client.h3 = https-rr; needs DNS).
	AnnounceH3, HTTPSRecords bool
	// RecordsFile and ConnsFile receive the server's request records (server/requests.jsonl: every
	// implementation's, from its access log for the real servers) and connection records (the
	// built-in server's); "" = none.
	RecordsFile, ConnsFile string
	// QUICStats asks the server for what its QUIC stack declared lost on each h3 connection, when
	// it reports that (Lab.QUICReports); its lines go to OnServerLine.
	QUICStats bool
	// OnServerLine receives the server's stdout lines after its ready line (built-in: quic_closed).
	OnServerLine func(line string)

	// OnEgress receives the egress router's DNS forwarder's admissions and refusals (live labs).
	OnEgress func(egress.Event)
	// Stderr receives `sites serve`'s diagnostics (FarInternet; default os.Stderr).
	Stderr io.Writer

	// Log receives one-line messages (the server's output among them); nil = discarded.
	Log func(format string, args ...any)
}

// HTTPSALPN are the ALPN ids of the origins' HTTPS records (Options.HTTPSRecords): what the lab
// serves over TLS and QUIC, h3 first as a server that prefers it would list them.
var HTTPSALPN = []string{"h3", "h2"}

// Lab is one running lab: the path, and what stands behind it.
type Lab struct {
	Far  Far
	Topo *netns.Topology
	Emu  *emulator.Emulator // nil with Options.NoEmulator
	Dir  string             // the private directory ("" for FarHost, which has none)

	// CAFile is the CA the lab's servers' certificates are signed by (what a loader trusts; ""
	// for FarHost: public sites are checked against the system's roots), and SPKIHash the
	// base64 SHA-256 of their leaf's SubjectPublicKeyInfo (what Chromium trusts).
	CAFile, SPKIHash string

	// Behind FarServer: the server under test.
	Impl   impl.Server
	Server *impl.Instance
	Certs  *server.Certs
	Tree   *impl.Tree // the document root of a file server; nil for the built-in server
	// Version is the server's version ("nginx/1.22.1"; the engine's for the built-in server).
	Version string
	// CostSource says how server cost is measured: cgroup-v1, cgroup-v2, or "" when it is not.
	CostSource string
	// QUICReports says that the server reports each h3 connection's losses (Options.QUICStats).
	QUICReports bool

	// Behind FarInternet: the local internet's sites.
	Sites []sites.Site

	p         *Prepared
	o         Options
	dns       *child.Process  // FarServer's DNS server
	sitesProc *child.Process  // FarInternet's `sites serve`
	forwarder *egress.Process // a live lab's DNS forwarder
	closed    bool
	summary   emulator.Summary
}

// PrivatePrefix names a lab's private directory in os.TempDir(): wirelab-lab-<run id>.
const PrivatePrefix = "wirelab-lab-"

// Start builds the lab p describes. On error, everything it created is removed again.
func Start(ctx context.Context, p *Prepared, o Options) (*Lab, error) {
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	if err := ChildDefaults(&o.Engine, &o.Env, &o.Command); err != nil {
		return nil, err
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if p.Far == FarServer {
		// Checked again when the lab is built from a Prepared made elsewhere.
		if err := p.Impl.Check(p.Spec.Server, p.Protocols); err != nil {
			return nil, err
		}
	} else if o.NoEmulator {
		return nil, errors.New("lab: NoEmulator is for a page lab")
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	cfg := p.Emulator
	cfg.PacketLog, cfg.PcapRotation, cfg.PcapDir = o.PacketLog, o.PcapRotation, o.PcapDir
	cfg.Topology.Command = o.Command
	// The client namespace's resolv.conf names the run's DNS server (Chromium resolves through
	// the system's resolver); a live lab's is the egress router's forwarder.
	cfg.Topology.Resolver = o.DNS || p.Far != FarServer
	switch p.Far {
	case FarInternet:
		cfg.Topology.Egress = &netns.Egress{Far: netns.FarInternet}
	case FarHost:
		cfg.Topology.Egress = &netns.Egress{Far: netns.FarHost}
	}
	l := &Lab{Far: p.Far, p: p, o: o}
	var err error
	if o.NoEmulator {
		if l.Topo, err = netns.Create(cfg.Topology); err != nil {
			return nil, fmt.Errorf("topology: %w", err)
		}
	} else {
		if l.Emu, err = emulator.Start(cfg); err != nil {
			return nil, fmt.Errorf("topology: %w", err)
		}
		l.Topo = l.Emu.Topo
	}
	switch p.Far {
	case FarServer:
		err = l.startServer(ctx)
	case FarInternet:
		err = l.startInternet(ctx)
	case FarHost:
		err = l.startForwarder()
	}
	if err != nil {
		_, cerr := l.Close()
		return nil, errors.Join(err, cerr)
	}
	return l, nil
}

// ChildDefaults fills what a run gives its wirelab-engine children when its caller left it out:
// the binary (this executable), their environment (this process's) and the command line the run
// records as its own (os.Args).
func ChildDefaults(engine *string, env, command *[]string) error {
	if *engine == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find own executable: %w", err)
		}
		*engine = exe
	}
	if *env == nil {
		*env = os.Environ()
	}
	if *command == nil {
		*command = os.Args
	}
	return nil
}

// makePrivateDir creates the run's private directory, recorded in its state file first, with the
// given mode whatever the umask.
func (l *Lab) makePrivateDir(mode os.FileMode) error {
	dir := filepath.Join(os.TempDir(), PrivatePrefix+l.Topo.ID)
	if err := l.Topo.OwnDir(dir); err != nil {
		return err
	}
	if err := os.Mkdir(dir, mode); err != nil {
		return err
	}
	l.Dir = dir
	return os.Chmod(dir, mode)
}

// Env is what a command in the client namespace is given besides the lab's environment: the CA to
// trust (WIRELAB_CA_FILE), the DNS server (WIRELAB_DNS_ADDR), and behind the local internet its
// sites' URLs (WIRELAB_SITES).
func (l *Lab) Env() []string {
	env := []string{"WIRELAB_DNS_ADDR=" + labaddr.DNSAddr.String()}
	if l.CAFile != "" {
		env = append(env, "WIRELAB_CA_FILE="+l.CAFile)
	}
	if l.Far == FarInternet {
		urls := make([]string, len(l.Sites))
		for i, s := range l.Sites {
			urls[i] = s.URL()
		}
		env = append(env, "WIRELAB_SITES="+strings.Join(urls, ","))
	}
	return env
}

// Command prepares argv in the client namespace with the lab's environment and Env.
func (l *Lab) Command(argv ...string) *exec.Cmd {
	cmd := l.Topo.Command(netns.Client, argv...)
	cmd.Env = append(append([]string(nil), l.o.Env...), l.Env()...)
	return cmd
}

// RunEngine runs `wirelab-engine ARGS…` (Options.Engine) in the client namespace and returns its
// stdout. A non-zero exit status is an error carrying the last stderr line (the stdout is
// returned all the same).
func (l *Lab) RunEngine(args ...string) ([]byte, error) {
	cmd := l.Command(append([]string{l.o.Engine}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		return out, fmt.Errorf("%s %s: %w: %s", l.o.Engine, args[0], err, lines[len(lines)-1])
	}
	return out, nil
}

// Namespaces names the lab's network namespaces, space-separated (a run's provenance).
func (l *Lab) Namespaces() string {
	var names []string
	for _, side := range l.Topo.Sides() {
		names = append(names, l.Topo.Name(side))
	}
	return strings.Join(names, " ")
}

// Close stops what stands behind the path (the server under test, its access log converted into
// request records; the DNS server; `sites serve`; the forwarder), then the emulator, and removes
// the private directory, the control group and the topology. It is idempotent.
func (l *Lab) Close() (emulator.Summary, error) {
	if l.closed {
		return l.summary, nil
	}
	l.closed = true
	errs := []error{l.stopServer(), l.stopLive()}
	if l.Emu != nil {
		sum, err := l.Emu.Stop() // closes the topology: namespaces, and what the run owns (private dir, groups)
		l.summary = sum
		if err != nil {
			errs = append(errs, fmt.Errorf("cleanup: %w", err))
		}
	} else if l.Topo != nil { // Options.NoEmulator
		if err := l.Topo.Close(); err != nil {
			errs = append(errs, fmt.Errorf("cleanup: %w", err))
		}
	}
	return l.summary, errors.Join(errs...)
}
