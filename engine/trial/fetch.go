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

	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/page"
)

// fetchArgs are the fetch flags of one load. (client.priority will go here once fetch has it; see
// notYet.)
func fetchArgs(p *Prepared, l Load, token, caFile, urlsFile, harFile string) ([]string, error) {
	s := p.Spec
	scheme := "https"
	if l.Protocol == "h1" || l.Protocol == "h2c" {
		scheme = "http"
	}
	root, err := p.Page.URL(0, page.Base{Scheme: scheme, Token: token})
	if err != nil {
		return nil, err
	}
	args := []string{"fetch", root,
		"--proto", l.Protocol,
		"--mode", s.Client.Mode,
		"--max-conns", strconv.Itoa(s.Client.MaxConnectionsPerOrigin),
		"--timeout", time.Duration(s.Client.TimeoutS * float64(time.Second)).String(),
		"--json",
	}
	if urlsFile != "" {
		args = append(args, "--urls", urlsFile)
	}
	if s.Client.DNS == "server" {
		args = append(args, "--dns", netns.DNSAddr.String())
	} else {
		args = append(args, "--resolve", staticMap(p.Origins()))
	}
	if scheme == "https" {
		args = append(args, "--ca", caFile)
	}
	if harFile != "" {
		args = append(args, "--har", harFile)
	}
	return args, nil
}

// staticMap is the name map of client.dns = static: sN.wirelab.test and www.wirelab.test.
func staticMap(origins int) string {
	m := []string{page.WWWHost + "=" + netns.OriginAddr(1).String()}
	for i := 0; i < origins; i++ {
		m = append(m, page.OriginHost(i)+"="+netns.OriginAddr(i+1).String())
	}
	return strings.Join(m, ",")
}

// fetchOutcome is what one fetch process did.
type fetchOutcome struct {
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
	if err := cmd.Start(); err != nil {
		return fetchOutcome{exitCode: -1, failure: fmt.Sprintf("fetch: %v", err)}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	var out fetchOutcome
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
		out.failure = fmt.Sprintf("fetch: killed after %s (its own timeout did not end it)", limit)
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
			out.failure = fmt.Sprintf("fetch: killed by %v: %s", ws.Signal(), lastLine(out.stderr))
		}
	} else if err != nil && out.failure == "" {
		out.failure = fmt.Sprintf("fetch: %v", err)
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
	switch {
	case o.failure != "":
		return nil, o.failure, nil
	case o.exitCode == 2:
		return nil, "", fmt.Errorf("fetch refused its arguments (a bug in the trial): %s", lastLine(o.stderr))
	case o.exitCode != 0 && o.exitCode != 1:
		return nil, fmt.Sprintf("fetch: exit status %d: %s", o.exitCode, lastLine(o.stderr)), nil
	}
	line := strings.TrimSpace(string(o.stdout))
	if i := strings.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	f, perr := ParseFetch([]byte(line))
	if perr != nil {
		return nil, fmt.Sprintf("fetch printed no result (%v): %s", perr, lastLine(o.stderr)), nil
	}
	return f, "", nil
}
