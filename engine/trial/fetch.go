package trial

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wirelab/wirelab/engine/internal/seam"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/page"
)

// loadFiles are the files one load's loader is given (empty: none).
type loadFiles struct {
	CAFile   string // the run's CA certificate (engine loader, https)
	SPKI     string // the server certificate's SPKI hash, serve's spki_sha256 (Chromium, https)
	PageFile string // the page as the server serves it, sharded (replay; client.priority other than none)
	URLs     string // the object URLs of this load (mode objects)
	HAR      string // where the HAR goes
	Frames   string // where Chromium's frames go (capture.screenshots)
}

// loaderArgs are the arguments of one load's loader process: `fetch` for client.impl engine,
// `browse` for chromium.
func loaderArgs(p *Prepared, l Load, token string, files loadFiles) ([]string, error) {
	if p.Spec.Client.Impl == "chromium" {
		return browseArgs(p, l, token, files)
	}
	return fetchArgs(p, l, token, files)
}

// fetchArgs are the fetch flags of one load. The loader accepts server pushes when server.push is
// not none (so with none an h2 client announces SETTINGS_ENABLE_PUSH 0, as without push support)
// and signals client.priority, for which it gets the served page (object types for chrome, depths
// for dependency).
func fetchArgs(p *Prepared, l Load, token string, files loadFiles) ([]string, error) {
	s := p.Spec
	scheme := page.Scheme(l.Protocol)
	root, err := p.Page.URL(0, page.Base{Scheme: scheme, Token: token})
	if err != nil {
		return nil, err
	}
	f := seam.DefaultFetch()
	f.URL, f.Proto, f.Mode = root, l.Protocol, s.Client.Mode
	f.MaxConns = s.Client.MaxConnectionsPerOrigin
	f.Timeout = time.Duration(s.Client.TimeoutS * float64(time.Second))
	f.JSON, f.URLs, f.HAR = true, files.URLs, files.HAR
	if s.Client.Mode == "replay" || s.Client.Priority != "none" {
		if files.PageFile == "" {
			return nil, fmt.Errorf("%s load without the served page's file", s.Client.Mode)
		}
		f.Page = files.PageFile
	}
	if s.Client.Mode == "replay" {
		f.ComputeScale = strconv.FormatFloat(s.Client.ComputeScale, 'g', -1, 64)
	}
	f.Priority, f.AcceptPush = s.Client.Priority, s.Server.Push != "none"
	f.DNS, f.Resolve = resolver(p)
	f.View = s.Client.View
	if l.Protocol == "h3" { // other protocols have no HTTP/3 to find
		f.H3 = s.Client.H3
	}
	if scheme == "https" {
		f.CA = files.CAFile
	}
	return f.Args(), nil
}

// browseArgs are the browse flags of one load (docs/trial-contract.md "Loads by Chromium and by
// replay"). Chromium trusts the server's certificate by its SPKI hash.
func browseArgs(p *Prepared, l Load, token string, files loadFiles) ([]string, error) {
	s := p.Spec
	scheme := page.Scheme(l.Protocol)
	root, err := p.Page.URL(0, page.Base{Scheme: scheme, Token: token})
	if err != nil {
		return nil, err
	}
	b := seam.DefaultBrowse()
	b.URL, b.Proto, b.JSON, b.HAR = root, l.Protocol, true, files.HAR
	b.Timeout = time.Duration(s.Client.TimeoutS * float64(time.Second))
	b.DNS, b.Resolve = resolver(p)
	b.View, b.CPUSlowdown, b.Viewport = s.Client.View, s.Client.CPUSlowdown, s.Client.Viewport
	if l.Protocol == "h3" && s.Client.H3 != "forced" { // other protocols have no HTTP/3 to find
		b.H3 = s.Client.H3
		// Chromium accepts the run's certificate over QUIC only for hosts named in
		// --origin-to-force-quic-on (docs/browser.md): every origin of the page, on port 1.
		for i := range p.Origins() {
			b.QUICHosts = append(b.QUICHosts, page.OriginHost(i))
		}
		b.QUICHosts = append(b.QUICHosts, page.WWWHost)
	}
	b.Screenshots, b.Frames = s.Capture.Screenshots, files.Frames
	if scheme == "https" {
		if files.SPKI == "" {
			return nil, fmt.Errorf("the run reported no SPKI hash for Chromium")
		}
		b.SPKI = files.SPKI
	}
	return b.Args(), nil
}

// resolver names the loader's resolver: the run's DNS server, or the static map.
func resolver(p *Prepared) (dns, static string) {
	if p.Spec.Client.DNS == "server" {
		return labaddr.DNSAddr.String(), ""
	}
	return "", StaticMap(p.Origins())
}

// StaticMap is the name map of client.dns = static: sN.wirelab.test and www.wirelab.test.
func StaticMap(origins int) string {
	m := []string{page.WWWHost + "=" + labaddr.OriginAddr(1).String()}
	for i := 0; i < origins; i++ {
		m = append(m, page.OriginHost(i)+"="+labaddr.OriginAddr(i+1).String())
	}
	return strings.Join(m, ",")
}

// fetchOutcome is what one fetch process did.
type fetchOutcome struct {
	name           string // the loader command: fetch or browse
	stdout, stderr []byte
	cpu            time.Duration // user + system CPU time of the process (the loader's own work, start-up included)
	exitCode       int           // -1 when killed by a signal
	failure        string        // set when the process did not produce a result: crashed, killed, timed out
	interrupted    bool          // the trial was interrupted meanwhile
}

// fetchGrace is how long a fetch may run beyond its own --timeout before the trial kills it.
const fetchGrace = 30 * time.Second

// runFetch runs one fetch process in the client namespace and waits for it. On ctx's end (the
// trial is interrupted) it stops the process (SIGTERM) and reports interrupted.
func runFetch(ctx context.Context, topo *netns.Topology, engine string, env, args []string, limit time.Duration) fetchOutcome {
	cmd := topo.Command(netns.Client, append([]string{engine}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &stdout, &stderr
	name := args[0]
	if err := cmd.Start(); err != nil {
		return fetchOutcome{name: name, exitCode: -1, failure: fmt.Sprintf("%s: %v", name, err)}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	out := fetchOutcome{name: name}
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		err = <-done
		out.interrupted = true
	case <-timer.C:
		_ = cmd.Process.Kill()
		err = <-done
		out.failure = fmt.Sprintf("%s: killed after %s (its own timeout did not end it)", name, limit)
	}
	out.stdout, out.stderr = stdout.Bytes(), stderr.Bytes()
	cmd.Stdout, cmd.Stderr = nil, nil // the topology keeps every Cmd until Close: not its output
	if cmd.ProcessState != nil {
		out.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	out.exitCode = 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		out.exitCode = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && out.failure == "" && !out.interrupted {
			out.failure = fmt.Sprintf("%s: killed by %v: %s", name, ws.Signal(), lastLine(out.stderr))
		}
	} else if err != nil && out.failure == "" {
		out.failure = fmt.Sprintf("%s: %v", name, err)
	}
	return out
}

// lastLine is the last non-empty line of b, without the command prefix.
func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	l = strings.TrimPrefix(l, "wirelab-engine: ")
	if l == "" {
		return "no output"
	}
	return l
}

// result interprets the process's end: the loader's result, or why there is none (failure, which
// becomes the record's error). err is set only when the trial cannot go on: fetch refused the
// arguments the trial built (exit 2), a bug that would fail every load the same way.
func (o fetchOutcome) result() (f *FetchResult, failure string, err error) {
	name := o.name
	if name == "" {
		name = "fetch"
	}
	switch {
	case o.failure != "":
		return nil, o.failure, nil
	case o.exitCode == 2:
		return nil, "", fmt.Errorf("%s refused its arguments (a bug in the trial): %s", name, lastLine(o.stderr))
	case o.exitCode != 0 && o.exitCode != 1:
		return nil, fmt.Sprintf("%s: exit status %d: %s", name, o.exitCode, lastLine(o.stderr)), nil
	}
	line := strings.TrimSpace(string(o.stdout))
	if i := strings.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	f, perr := seam.ParseLoaderResult([]byte(line))
	if perr != nil {
		return nil, fmt.Sprintf("%s printed no result (%v): %s", name, perr, lastLine(o.stderr)), nil
	}
	return f, "", nil
}
