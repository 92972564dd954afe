package egress

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/policy"
)

// The forwarder as a process: `wirelab-engine dns --forward UPSTREAM --router NS --admit WHAT`,
// started on an egress topology's far side (so that its queries go to the far side's resolver,
// which may be on the host's loopback) with its sockets in the router namespace.

// Admit modes: which addresses the forwarder admits.
const (
	// AdmitRun: the run's own local internet (netns.SitesPrefix); no public name is even asked.
	AdmitRun = "run"
	// AdmitInternet: public addresses (policy.Policy with AllowInternet: never special-purpose).
	AdmitInternet = "internet"
)

// SystemUpstream asks the forwarder to use the first nameserver of /etc/resolv.conf as it sees it.
const SystemUpstream = "system"

// PolicyFor is the admit mode's policy.
func PolicyFor(mode string) (policy.Policy, error) {
	switch mode {
	case AdmitRun:
		return policy.Policy{Own: netns.SitesPrefix.Contains}, nil
	case AdmitInternet:
		return policy.Policy{AllowInternet: true, Own: func(netip.Addr) bool { return false }}, nil
	}
	return policy.Policy{}, fmt.Errorf("admit: got %q; allowed: %s, %s", mode, AdmitRun, AdmitInternet)
}

// Ready is the forwarder process's first line.
type Ready struct {
	Event    string `json:"event"` // ready
	DNS      string `json:"dns"`   // where it answers (in the router namespace)
	Upstream string `json:"upstream"`
	Admit    string `json:"admit"`
}

// Stopped is its last line.
type Stopped struct {
	Event string `json:"event"` // stopped
	Stats
}

// Process is a running forwarder process.
type Process struct {
	proc  *os.Process
	stdin io.Closer
	done  chan struct{}
	stats Stats
	err   error
}

// How long Start waits for the ready line, and Stop for the process to exit after SIGTERM.
const (
	readyTimeout = 30 * time.Second
	stopGrace    = 5 * time.Second
)

// Start runs the forwarder for topo (an egress topology) on its far side: engine is the
// wirelab-engine binary, env its environment; onEvent receives each admission and refusal.
func Start(topo *netns.Topology, engine string, env []string, onEvent func(Event)) (*Process, error) {
	up := topo.Uplink()
	upstream, admit := SystemUpstream, AdmitInternet
	if up.Far == netns.FarInternet {
		upstream, admit = netip.AddrPortFrom(netns.InternetDNSAddr, 53).String(), AdmitRun
	}
	cmd := topo.FarCommand(engine, "dns", "--forward", upstream, "--listen", netip.AddrPortFrom(netns.DNSAddr, 53).String(),
		"--router", topo.Name(netns.Server), "--admit", admit)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := cmd.StdinPipe() // closed by Stop, or with this process: the forwarder then exits
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("dns forwarder: %w", err)
	}
	p := &Process{proc: cmd.Process, stdin: stdin, done: make(chan struct{})}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		first := true
		for sc.Scan() {
			line := sc.Bytes()
			if first {
				first = false
				var r Ready
				if err := json.Unmarshal(line, &r); err != nil || r.Event != "ready" {
					ready <- fmt.Errorf("dns forwarder: first line %q is not its ready line", line)
					continue
				}
				ready <- nil
				continue
			}
			var ev Event
			if json.Unmarshal(line, &ev) != nil {
				continue
			}
			switch ev.Event {
			case "admitted", "refused":
				if onEvent != nil {
					onEvent(ev)
				}
			case "stopped":
				var s Stopped
				if json.Unmarshal(line, &s) == nil {
					p.stats = s.Stats
				}
			}
		}
		if first {
			ready <- errors.New("dns forwarder: exited before its ready line")
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	select {
	case err = <-ready:
	case <-time.After(readyTimeout):
		err = fmt.Errorf("dns forwarder: not ready within %s", readyTimeout)
	}
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return p, nil
}

// Stop ends the forwarder (SIGTERM, then SIGKILL after a grace) and returns what it counted.
func (p *Process) Stop() (Stats, error) {
	p.stdin.Close()
	_ = p.proc.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		_ = p.proc.Kill()
		<-p.done
		return p.stats, errors.New("dns forwarder did not stop; killed")
	}
	var ee interface{ ExitCode() int }
	if p.err != nil && !(errors.As(p.err, &ee) && ee.ExitCode() == -1) {
		return p.stats, fmt.Errorf("dns forwarder: %w", p.err)
	}
	return p.stats, nil
}
