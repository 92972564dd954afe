package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/emulator"
	"github.com/wirelab/wirelab/engine/link/profile"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/page"
)

// Lab is an emulated path with the built-in server in the server namespace (all origins, the
// run's DNS server at netns.DNSAddr) and a resolv.conf for the client namespace, into which
// loads are run as `wirelab-engine browse|fetch` processes — as a trial runs them. It is what
// bench variability and the root tests of the browser and replay use.
type Lab struct {
	E      *emulator.Emulator
	Engine string // wirelab-engine binary (or a test binary acting as one)
	Env    []string
	Page   string // the page argument given to serve
	SPKI   string // the server certificate's SPKI hash (Chromium)
	CAFile string // the run's CA (fetch --ca)

	server *exec.Cmd
	done   chan error
}

// LabConfig describes a Lab.
type LabConfig struct {
	Profile   string // network profile (docs/profile-grammar.md)
	Page      string // page name or file, as serve --page takes it
	Origins   int    // origins of the page (default 1)
	Seed      int64  // page seed (default 1)
	Engine    string // wirelab-engine binary
	Env       []string
	Protocols string // serve --protocols (default h1,h1s,h2,h3)
	CertDir   string // where the server writes its certificates (default a temporary directory)
}

// StartLab builds the topology, starts the server and waits for its ready line.
func StartLab(c LabConfig) (*Lab, error) {
	r, err := profile.Parse(c.Profile)
	if err != nil {
		return nil, err
	}
	if c.Origins == 0 {
		c.Origins = 1
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Protocols == "" {
		c.Protocols = "h1,h1s,h2,h3"
	}
	cfg, err := emulator.ConfigFromProfile(r, c.Origins, uint64(c.Seed))
	if err != nil {
		return nil, err
	}
	cfg.Topology.Resolver = true
	e, err := emulator.Start(cfg)
	if err != nil {
		return nil, err
	}
	l := &Lab{E: e, Engine: c.Engine, Env: c.Env, Page: c.Page, done: make(chan error, 1)}
	addrs := strings.Join(e.Topo.OriginAddrs(), ",")
	args := []string{"serve", "--page", c.Page, "--seed", fmt.Sprint(c.Seed), "--addrs", addrs,
		"--dns", netns.DNSAddr.String() + ":53", "--protocols", c.Protocols}
	if c.CertDir != "" {
		args = append(args, "--cert-dir", c.CertDir)
	}
	l.server = e.Topo.Command(netns.Server, append([]string{c.Engine}, args...)...)
	l.server.Env = append(os.Environ(), c.Env...)
	l.server.Stderr = os.Stderr
	out, w, err := os.Pipe()
	if err != nil {
		l.Close()
		return nil, err
	}
	defer out.Close()
	l.server.Stdout = w
	err = l.server.Start()
	w.Close()
	if err != nil {
		l.server = nil
		l.Close()
		return nil, fmt.Errorf("start the server: %w", err)
	}
	go func() { l.done <- l.server.Wait() }()
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadBytes('\n')
		if err != nil {
			ready <- fmt.Errorf("the server exited before its ready line: %w", err)
			return
		}
		var info struct {
			Event  string `json:"event"`
			SPKI   string `json:"spki_sha256"`
			CAFile string `json:"ca_file"`
		}
		if err := json.Unmarshal(line, &info); err != nil || info.Event != "ready" {
			ready <- fmt.Errorf("the server's first line is not its ready line: %s", line)
			return
		}
		l.SPKI, l.CAFile = info.SPKI, info.CAFile
		ready <- nil
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case err = <-ready:
	case <-time.After(60 * time.Second):
		err = errors.New("the server did not become ready within 60 s")
	}
	if err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// RootURL is the root document's URL for a fresh token over proto (default ports).
func (l *Lab) RootURL(proto string) string {
	scheme := "https"
	if proto == "h1" || proto == "h2c" {
		scheme = "http"
	}
	return scheme + "://" + page.OriginHost(0) + page.LoadPrefix + page.NewToken() + "/"
}

// Run runs one `wirelab-engine ARGS…` in the client namespace and returns its stdout. A non-zero
// exit status is an error carrying the last stderr line (the stdout is returned all the same).
func (l *Lab) Run(args ...string) ([]byte, error) {
	cmd := l.E.Topo.Command(netns.Client, append([]string{l.Engine}, args...)...)
	cmd.Env = append(os.Environ(), l.Env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		return out, fmt.Errorf("%s %s: %w: %s", l.Engine, args[0], err, lines[len(lines)-1])
	}
	return out, nil
}

// Browse loads the page in Chromium over proto and returns the load's JSON summary.
func (l *Lab) Browse(proto string, extra ...string) (map[string]any, []byte, error) {
	args := append([]string{"browse", l.RootURL(proto), "--proto", proto, "--dns", netns.DNSAddr.String(), "--spki", l.SPKI, "--json"}, extra...)
	out, err := l.Run(args...)
	return decodeSummary(out, err)
}

// Fetch loads the page with the engine's loader over proto (extra: --mode replay …).
func (l *Lab) Fetch(proto string, extra ...string) (map[string]any, []byte, error) {
	args := append([]string{"fetch", l.RootURL(proto), "--proto", proto, "--dns", netns.DNSAddr.String(), "--ca", l.CAFile, "--json"}, extra...)
	out, err := l.Run(args...)
	return decodeSummary(out, err)
}

func decodeSummary(out []byte, err error) (map[string]any, []byte, error) {
	var m map[string]any
	if jerr := json.Unmarshal(out, &m); jerr != nil && err == nil {
		err = fmt.Errorf("not a JSON summary: %q", out)
	}
	return m, out, err
}

// Close stops the server and removes the topology (and every process in it).
func (l *Lab) Close() error {
	if l.server != nil && l.server.Process != nil {
		_ = l.server.Process.Signal(os.Interrupt)
		select {
		case <-l.done:
		case <-time.After(10 * time.Second):
			_ = l.server.Process.Kill()
			<-l.done
		}
	}
	_, err := l.E.Stop()
	return err
}
