package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/wirelab/wirelab/engine/internal/cgroup"
	"github.com/wirelab/wirelab/engine/internal/child"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server"
	"github.com/wirelab/wirelab/engine/server/impl"
)

// readyToken is the token of the tree a file server is probed with before the first load.
const readyToken = "wirelab-ready"

// How long Close lets the server under test and the DNS server stop gracefully before it kills
// what is left.
const (
	serverStopGrace = 10 * time.Second
	dnsStopGrace    = 5 * time.Second
)

// startServer starts what stands behind a page lab's path: the certificates, the DNS server when
// asked for, and the server under test in its control group, ready once it serves.
func (l *Lab) startServer(ctx context.Context) error {
	p, o := l.p, l.o
	l.Impl = p.Impl
	// 0711: the servers' unprivileged workers traverse it to their document root and run
	// directory; nothing in it can be listed, and the key is the owner's alone (0600).
	if err := l.makePrivateDir(0o711); err != nil {
		return err
	}
	origins := make([]netip.Addr, len(p.Page.Origins))
	for i := range origins {
		origins[i] = labaddr.OriginAddr(i + 1)
	}
	var err error
	if l.Certs, err = server.NewCerts(filepath.Join(l.Dir, "certs"), origins); err != nil {
		return err
	}
	l.CAFile, l.SPKIHash = l.Certs.CAPath(), l.Certs.SPKIHash
	if o.DNS {
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
	sup := l.Impl.Support()
	if sup.Files {
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
		if l.Tree, err = impl.NewTree(filepath.Join(l.Dir, "www"), p.Page); err != nil {
			return err
		}
	}
	l.QUICReports = o.QUICStats && sup.QUICLosses
	protocols := p.Protocols
	if (o.AnnounceH3 || o.HTTPSRecords) && slices.Contains(protocols, "h3") && !slices.Contains(protocols, "h2") {
		// h3 found by Alt-Svc or an HTTPS record: a loader starts (alt-svc) or may start (a
		// record that lists h2 too) on HTTP/2 over TCP+TLS, so the server serves it as well.
		protocols = append(slices.Clone(protocols), "h2")
	}
	in := &impl.Provision{
		Dir: dir, RunDir: runDir, Page: p.Page, PageArg: p.PageArg, Seed: p.Seed, Shards: p.Spec.Shards,
		ShardMode: p.Spec.ShardMode, Origins: origins, Protocols: protocols, Server: p.Spec.Server,
		CertDir: l.Certs.Dir, Engine: o.Engine, Env: o.Env, Ports: impl.DefaultPorts,
		ConnsFile: o.ConnsFile, QUICStats: l.QUICReports, AnnounceH3: o.AnnounceH3,
	}
	if l.Tree != nil {
		in.DocRoot = l.Tree.Root()
	} else {
		in.RecordsFile = o.RecordsFile
	}
	launch, err := l.Impl.Provision(in)
	if err != nil {
		return err
	}
	if err := impl.TestConfig(ctx, l.Impl, launch, p.Spec.Server, func(argv ...string) *exec.Cmd {
		return l.Topo.Command(netns.Server, argv...)
	}); err != nil {
		return err
	}
	o.Log("server %s: %s", l.Impl.Name(), strings.Join(launch.Argv, " "))
	if launch.Config != "" {
		o.Log("server %s: configuration %s", l.Impl.Name(), launch.Config)
	}
	group, err := l.newGroup()
	if err != nil {
		return err
	}
	l.Server, err = impl.Start(ctx, l.Topo, l.Impl, launch, group, impl.Options{
		Log:    func(line string) { o.Log("server: %s", line) },
		OnLine: o.OnServerLine,
	})
	if err != nil {
		return err
	}
	var probes *impl.ProbeSet
	if l.Tree != nil {
		if err := l.Tree.Make(readyToken, "https", 0); err != nil {
			return err
		}
		probes = &impl.ProbeSet{Protocols: p.Protocols, Ports: impl.DefaultPorts, RootCAs: l.Certs.CAPool()}
		for i, org := range p.Page.Origins {
			t := impl.ProbeTarget{Host: org.Host, Addr: origins[i]}
			for _, obj := range p.Page.Objects {
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
	l.Version = l.Impl.Version()
	return nil
}

// newGroup makes the server's control group, recorded in the run's state first; nil (and cost
// not measured) when the machine has no usable hierarchy.
func (l *Lab) newGroup() (*cgroup.Group, error) {
	src, err := cgroup.Available()
	if err != nil {
		l.o.Log("server cost not measured: %v", err)
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

// startDNS runs `wirelab-engine dns` in the server namespace until Close, answering for the
// origins.
func (l *Lab) startDNS(ctx context.Context, origins []netip.Addr) error {
	addrs := make([]string, len(origins))
	for i, a := range origins {
		addrs[i] = a.String()
	}
	args := []string{l.o.Engine, "dns", "--listen", labaddr.DNSAddr.String() + ":53", "--origins", strings.Join(addrs, ",")}
	if l.o.HTTPSRecords {
		args = append(args, "--https-alpn", strings.Join(HTTPSALPN, ","))
	}
	cmd := l.Topo.Command(netns.Server, args...)
	cmd.Env = l.o.Env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	p, err := child.Start(ctx, "dns", cmd, impl.StartLimit, nil, nil)
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	l.dns = p
	return nil
}

// Serve makes a load's URLs servable: for a file server, the load's tree (its HTML and CSS carry
// the token and the scheme of the protocol); nothing for the built-in server.
func (l *Lab) Serve(token, protocol string) error {
	if l.Tree == nil {
		return nil
	}
	return l.Tree.Make(token, page.Scheme(protocol), 0)
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

// stopServer stops the server under test (gracefully, then everything left in its group),
// converts a file server's access log into request records, and stops the DNS server.
func (l *Lab) stopServer() error {
	var errs []error
	if l.Server != nil {
		if err := l.Server.Stop(serverStopGrace); err != nil {
			errs = append(errs, err)
		}
		if l.Tree != nil && l.Server.Launch.AccessLog != "" && l.o.RecordsFile != "" {
			// The readiness probes are no load's requests: their token is left out.
			n, err := impl.ConvertAccessLog(l.Server.Launch, l.o.RecordsFile, l.p.Page, impl.DefaultPorts, readyToken)
			if err != nil {
				errs = append(errs, fmt.Errorf("server records: %w", err))
			} else {
				l.o.Log("server records: %d requests from %s's access log", n, l.Impl.Name())
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
	return errors.Join(errs...)
}
