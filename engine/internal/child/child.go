// Package child runs a wirelab-engine child process that announces itself with a JSON ready line
// on its standard output — {"event":"ready",…} first, then lines of its own — and stops on a
// signal: the lab's DNS server, the local internet's `sites serve`, the egress router's DNS
// forwarder.
//
//	p, err := child.Start(ctx, "dns", cmd, limit, &ready, onLine)   // running and ready, or nothing left
//	err = p.Stop(syscall.SIGTERM, grace)                            // the signal, then SIGKILL after grace
package child

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is a started child.
type Process struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

// maxLine bounds one line of the child's output.
const maxLine = 1 << 20

// Start starts cmd (whose Stdout it sets) and waits until its first line has arrived: a JSON
// object whose "event" is "ready", decoded into ready when that is not nil. Every later line goes
// to onLine (nil: discarded), one at a time, until the child's output ends. Waiting ends with ctx
// or after limit; then, as when the first line is not a ready line, the child is killed and
// waited for and the error names it (name: "dns", "sites serve", …).
func Start(ctx context.Context, name string, cmd *exec.Cmd, limit time.Duration, ready any, onLine func([]byte)) (*Process, error) {
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &Process{name: name, cmd: cmd, exited: make(chan struct{})}
	first := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 4096), maxLine)
		if !sc.Scan() {
			first <- fmt.Errorf("%s: exited before its ready line", name)
		} else {
			first <- p.readyLine(sc.Bytes(), ready)
			for sc.Scan() {
				if onLine != nil {
					onLine(sc.Bytes())
				}
			}
		}
		p.err = cmd.Wait()
		close(p.exited)
	}()
	select {
	case err = <-first:
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(limit):
		err = fmt.Errorf("%s: not ready within %s", name, limit)
	}
	if err != nil {
		p.kill()
		<-p.exited
		return nil, err
	}
	return p, nil
}

// kill sends SIGKILL to the child, and to its whole process group when it leads one (as commands
// in a run's namespaces do): a grandchild holding the output open would keep it from ending.
func (p *Process) kill() {
	if a := p.cmd.SysProcAttr; a != nil && a.Setpgid {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		return
	}
	_ = p.cmd.Process.Kill()
}

func (p *Process) readyLine(line []byte, ready any) error {
	var ev struct {
		Event string `json:"event"`
	}
	if err := json.Unmarshal(line, &ev); err != nil || ev.Event != "ready" {
		return fmt.Errorf("%s: its first line is not its ready line: %.200s", p.name, line)
	}
	if ready != nil {
		if err := json.Unmarshal(line, ready); err != nil {
			return fmt.Errorf("%s: ready line: %w", p.name, err)
		}
	}
	return nil
}

// Exited is closed once the child has exited (and its output has been read).
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Stop sends sig (if the child still runs), waits up to grace for it to exit, then kills it. It
// returns an error when it had to kill, or when the child exited with a failure status (neither 0
// nor ended by a signal).
func (p *Process) Stop(sig os.Signal, grace time.Duration) error {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Signal(sig)
		select {
		case <-p.exited:
		case <-time.After(grace):
			p.kill()
			<-p.exited
			return fmt.Errorf("%s did not stop within %s; killed", p.name, grace)
		}
	}
	var ee *exec.ExitError
	if p.err != nil && !(errors.As(p.err, &ee) && ee.ExitCode() == -1) {
		return fmt.Errorf("%s: %w", p.name, p.err)
	}
	return nil
}

// ExitCode is the exit status of a process that exec.Cmd's Run or Wait returned err for: 0 when
// err is nil, the process's own code for an *exec.ExitError (-1 when a signal ended it), -1 for
// any other error (it did not start, or waiting failed).
func ExitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
