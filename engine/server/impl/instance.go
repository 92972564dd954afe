package impl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/wirelab/wirelab/engine/internal/cgroup"
	"github.com/wirelab/wirelab/engine/internal/tail"
	"github.com/wirelab/wirelab/engine/netns"
)

// StartLimit bounds how long a server may take to come up (page generation for the largest
// pages, certificates, listeners, Apache's children).
const StartLimit = 60 * time.Second

// Instance is one running server under test.
type Instance struct {
	Server Server
	Launch *Launch
	Group  *cgroup.Group // its processes; nil when the machine has no usable cgroup hierarchy
	// ReadyLine is the built-in server's ready line (JSON), "" for the others.
	ReadyLine string

	topo    *netns.Topology
	cmd     *exec.Cmd
	exited  chan struct{}
	err     error // exit error, valid once exited is closed
	tail    *tail.Lines
	readyCh <-chan string
}

// Options are how Start runs a server.
type Options struct {
	// Log receives its output, one line at a time.
	Log func(line string)
	// OnLine receives its stdout lines after the ready line (the built-in server's
	// {"event":"quic_closed",…}); nil: they go to Log.
	OnLine func(line string)
}

// Start runs a provisioned server in the server namespace, in group g (nil: no group), and
// returns once its process runs; Ready waits until it serves.
//
// The process is held at a gate until it is in its group: `sh -c 'read -r _; exec "$@"'` waits
// for a line on stdin, which is written after the group holds the shell's pid — so every process
// the server forks (Apache's children, nginx's workers) is in the group, whatever it does.
func Start(ctx context.Context, topo *netns.Topology, srv Server, l *Launch, g *cgroup.Group, o Options) (*Instance, error) {
	if o.Log == nil {
		o.Log = func(string) {}
	}
	argv := append([]string{"/bin/sh", "-c", `read -r _ && exec "$@"`, "wirelab-" + srv.Name()}, l.Argv...)
	cmd := topo.Command(netns.Server, argv...)
	cmd.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, l.Env...)
	gate, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("server %s: %w", srv.Name(), err)
	}
	in := &Instance{Server: srv, Launch: l, Group: g, topo: topo, cmd: cmd, exited: make(chan struct{}), tail: tail.New(6, "no output")}
	if g != nil {
		if err := g.Add(cmd.Process.Pid); err != nil {
			gate.Close()
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, err
		}
	}
	readyCh := make(chan string, 1)
	pipes := make(chan struct{}, 2)
	go func() {
		copyLines(stderr, func(line string) { in.tail.Add(line); o.Log(line) })
		pipes <- struct{}{}
	}()
	go func() {
		first := l.Ready == ReadyLine
		copyLines(stdout, func(line string) {
			if first {
				first = false
				readyCh <- line
				return
			}
			in.tail.Add(line)
			if o.OnLine != nil {
				o.OnLine(line)
			} else {
				o.Log(line)
			}
		})
		close(readyCh)
		pipes <- struct{}{}
	}()
	go func() {
		<-pipes
		<-pipes
		in.err = cmd.Wait()
		close(in.exited)
	}()
	if _, err := io.WriteString(gate, "go\n"); err != nil {
		in.kill()
		return nil, fmt.Errorf("server %s: %w", srv.Name(), err)
	}
	gate.Close()
	in.readyCh = readyCh
	return in, nil
}

// Ready waits until the server serves: the built-in server's ready line, or for the others a
// request over every (origin, protocol) of the run answered with 200 and the object's bytes (probe),
// retried while it is not listening yet. It fails when the server exits first or limit passes.
func (in *Instance) Ready(ctx context.Context, limit time.Duration, p *ProbeSet) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if in.Launch.Ready == ReadyLine {
		select {
		case line, ok := <-in.readyCh:
			if ok {
				var ev struct {
					Event string `json:"event"`
				}
				if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Event != "ready" {
					return fmt.Errorf("server %s: unexpected first line %q", in.Server.Name(), line)
				}
				in.ReadyLine = line
				return nil
			}
			<-in.exited
			return in.exitError()
		case <-ctx.Done():
			return in.notReady(ctx, limit)
		}
	}
	if p == nil {
		return errors.New("impl: a probed server needs a probe set")
	}
	return p.run(ctx, in.topo, in.exited, func() error { return in.exitError() })
}

func (in *Instance) notReady(ctx context.Context, limit time.Duration) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("server %s: not ready after %s: %s", in.Server.Name(), limit, in.tail.String())
	}
	return ctx.Err()
}

func (in *Instance) exitError() error {
	return fmt.Errorf("server %s exited before it was ready (%v): %s", in.Server.Name(), in.err, in.tail.String())
}

// Alive reports whether the server's main process still runs.
func (in *Instance) Alive() bool {
	select {
	case <-in.exited:
		return false
	default:
		return true
	}
}

// ExitErr is why the server's main process ended (once Alive is false).
func (in *Instance) ExitErr() error {
	if in.Alive() {
		return nil
	}
	return in.err
}

// Pid is the server's main process.
func (in *Instance) Pid() int { return in.cmd.Process.Pid }

// Stop asks the server to stop (its graceful signal) and waits up to grace; then every process
// left in its group (or its main process) is killed.
func (in *Instance) Stop(grace time.Duration) error {
	var err error
	if in.Alive() {
		_ = in.cmd.Process.Signal(in.Launch.StopSignal)
		t := time.NewTimer(grace)
		select {
		case <-in.exited:
		case <-t.C:
			err = fmt.Errorf("server %s did not stop within %s; killed", in.Server.Name(), grace)
		}
		t.Stop()
	}
	in.kill()
	return err
}

func (in *Instance) kill() {
	if in.Group != nil {
		_ = in.Group.Kill(5 * time.Second)
	}
	if in.Alive() {
		_ = in.cmd.Process.Kill()
	}
	<-in.exited
}

// Usage is what the server's processes have used so far (zero Usage without a group).
func (in *Instance) Usage() (cgroup.Usage, error) {
	if in.Group == nil {
		return cgroup.Usage{}, nil
	}
	return in.Group.Usage()
}

// Sample is the server's state at one instant: its group's usage and its own gauges.
type Sample struct {
	cgroup.Usage
	Gauges map[string]float64 `json:"gauges"`
}

// Sample reads the server's usage and its gauges (an error reading gauges leaves them out).
func (in *Instance) Sample(ctx context.Context) (Sample, error) {
	u, err := in.Usage()
	s := Sample{Usage: u}
	if err != nil {
		return s, err
	}
	if in.Launch.Status != nil {
		g, err := in.Launch.Status(ctx, in)
		if err != nil {
			return s, fmt.Errorf("%s status: %w", in.Server.Name(), err)
		}
		s.Gauges = g
	}
	return s, nil
}

// Topology is the run's topology (status endpoints in the server namespace are dialled through it).
func (in *Instance) Topology() *netns.Topology { return in.topo }

// copyLines calls fn for every line of r until EOF.
func copyLines(r io.Reader, fn func(string)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fn(sc.Text())
	}
	_, _ = io.Copy(io.Discard, r)
}

// Exited is closed when the server's main process has ended.
func (in *Instance) Exited() <-chan struct{} { return in.exited }
