package impl

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server"
	"github.com/wirelab/wirelab/engine/spec"
)

// TestConfig runs a launch's configuration test (Launch.Test) with command, which runs an argv
// where the server's addresses exist (nginx -t binds its listening sockets): the run's server
// namespace, or a throwaway one (DryRun). A configuration the server refuses is, for the user's
// own (server.config), a *fielderr.Error quoting the server's own error line; for one wirelab
// generated, an error (a bug).
func TestConfig(ctx context.Context, srv Server, l *Launch, s spec.Server, command func(argv ...string) *exec.Cmd) error {
	if len(l.Test) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := command(l.Test...)
	cmd.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, l.Env...)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			if cmd.Process != nil {
				_ = cmd.Process.Kill()
			}
		case <-done:
		}
	}()
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	line := lastErrorLine(string(out))
	if s.Config != "" {
		// The server names the rendered file; the user knows their template (same lines).
		line = strings.ReplaceAll(line, l.Config, s.Config)
		return fielderr.New("server.config", s.Config, "%s refuses it: %s", srv.Name(), line)
	}
	return fmt.Errorf("server %s refuses the configuration wirelab generated (%s): %s", srv.Name(), l.Config, line)
}

// lastErrorLine is the most telling line of a configuration test's output: the last one that
// names an error (nginx's [emerg], Apache's AH… syntax error, "error"), else the last one that
// says it failed, else the last one; cut to a readable length.
func lastErrorLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	cut := func(l string) string {
		l = strings.TrimSpace(l)
		if len(l) > 240 {
			return l[:240] + "…"
		}
		return l
	}
	for _, words := range [][]string{{"emerg", "error", "syntax"}, {"invalid", "fail"}} {
		for i := len(lines) - 1; i >= 0; i-- {
			low := strings.ToLower(lines[i])
			for _, w := range words {
				if strings.Contains(low, w) {
					return cut(lines[i])
				}
			}
		}
	}
	if len(lines) == 0 || strings.TrimSpace(lines[len(lines)-1]) == "" {
		return "no output"
	}
	return cut(lines[len(lines)-1])
}

// DryRun provisions a server into a scratch directory (with scratch certificates and empty
// document roots) and tests its configuration, then removes everything: what a run's
// configuration would be checked for before anything of the run exists (a server.config the
// server refuses is exit 2, before the topology is built).
func DryRun(ctx context.Context, srv Server, s spec.Server, protocols []string, pg *page.Page) (err error) {
	if len(protocols) == 0 || srv.Support().Binary == "" {
		return nil
	}
	dir, err := os.MkdirTemp("", "wirelab-dryrun-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	if err := os.Chmod(dir, 0o711); err != nil {
		return err
	}
	origins := make([]netip.Addr, len(pg.Origins))
	for i := range origins {
		origins[i] = netip.AddrFrom4([4]byte{10, 77, 1, byte(i + 1)})
	}
	certs, err := server.NewCerts(filepath.Join(dir, "certs"), origins)
	if err != nil {
		return err
	}
	in := &Provision{Dir: filepath.Join(dir, "server"), RunDir: filepath.Join(dir, "run"), DocRoot: filepath.Join(dir, "www"),
		Page: pg, Origins: origins, Protocols: protocols, Server: s, CertDir: certs.Dir, Ports: DefaultPorts}
	for _, d := range []string{in.Dir, in.RunDir, in.DocRoot} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	for i := range origins {
		if err := os.Mkdir(filepath.Join(in.DocRoot, fmt.Sprintf("s%d", i+1)), 0o755); err != nil {
			return err
		}
	}
	if uid, gid, err := UserIDs(); err == nil {
		_ = os.Chown(in.RunDir, uid, gid)
	}
	l, err := srv.Provision(in)
	if err != nil {
		return err
	}
	// A network namespace of its own that dies with the test: the origins' addresses on its lo.
	setup := "ip link set lo up"
	for _, a := range origins {
		setup += " && ip addr add " + a.String() + "/32 dev lo"
	}
	return TestConfig(ctx, srv, l, s, func(argv ...string) *exec.Cmd {
		return exec.Command("unshare", append([]string{"--net", "--", "/bin/sh", "-c", setup + ` && exec "$@"`, "wirelab-dryrun"}, argv...)...)
	})
}
