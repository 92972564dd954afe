package egress

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"github.com/wirelab/wirelab/engine/internal/child"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/policy"
)

// The forwarder as a process: `wirelab-engine dns --forward UPSTREAM --router NS --admit WHAT`,
// started on an egress topology's far side (so that its queries go to the far side's resolver,
// which may be on the host's loopback) with its sockets in the router namespace.

// Admit modes: which addresses the forwarder admits.
const (
	// AdmitRun: the run's own local internet (labaddr.OriginPrefix); no public name is even asked.
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
		return policy.Policy{Own: labaddr.OriginPrefix.Contains}, nil
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
	p     *child.Process
	stdin io.Closer
	stats Stats // from its stopped line, once it has exited
}

// How long Start waits for the ready line, and Stop for the process to exit after SIGTERM.
const (
	readyTimeout = 30 * time.Second
	stopGrace    = 5 * time.Second
)

// Start runs the forwarder for topo (an egress topology) on its far side: engine is the
// wirelab-engine binary, env its environment; onEvent receives each admission and refusal.
func Start(topo *netns.Topology, engine string, env []string, onEvent func(Event)) (*Process, error) {
	upstream, admit := SystemUpstream, AdmitInternet
	if topo.Uplink().Far == netns.FarInternet {
		upstream, admit = netip.AddrPortFrom(netns.InternetDNSAddr, 53).String(), AdmitRun
	}
	cmd := topo.FarCommand(engine, "dns", "--forward", upstream, "--listen", netip.AddrPortFrom(labaddr.DNSAddr, 53).String(),
		"--router", topo.Name(netns.Server), "--admit", admit)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe() // closed by Stop, or with this process: the forwarder then exits
	if err != nil {
		return nil, err
	}
	fp := &Process{stdin: stdin}
	onLine := func(line []byte) {
		var ev Event
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		switch ev.Event {
		case "admitted", "refused":
			if onEvent != nil {
				onEvent(ev)
			}
		case "stopped":
			var s Stopped
			if json.Unmarshal(line, &s) == nil {
				fp.stats = s.Stats
			}
		}
	}
	if fp.p, err = child.Start(context.Background(), "dns forwarder", cmd, readyTimeout, nil, onLine); err != nil {
		stdin.Close()
		return nil, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return fp, nil
}

// Stop ends the forwarder (its standard input closed, SIGTERM, then SIGKILL after a grace) and
// returns what it counted.
func (p *Process) Stop() (Stats, error) {
	p.stdin.Close()
	err := p.p.Stop(syscall.SIGTERM, stopGrace)
	return p.stats, err
}
