package child

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// sh runs script in a process group of its own, as commands in a run's namespaces are.
func sh(script string) *exec.Cmd {
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

func TestReadyLineThenLines(t *testing.T) {
	var ready struct {
		Event string `json:"event"`
		DNS   string `json:"dns"`
	}
	var mu sync.Mutex
	var lines []string
	two := make(chan struct{})
	onLine := func(b []byte) {
		mu.Lock()
		defer mu.Unlock()
		if lines = append(lines, string(b)); len(lines) == 2 {
			close(two)
		}
	}
	p, err := Start(context.Background(), "echo", sh(`trap 'exit 0' TERM; echo '{"event":"ready","dns":"10.77.2.53:53"}'; echo one; echo two; while :; do sleep 0.05; done`),
		5*time.Second, &ready, onLine)
	if err != nil {
		t.Fatal(err)
	}
	if ready.DNS != "10.77.2.53:53" {
		t.Errorf("ready %+v", ready)
	}
	select {
	case <-two:
	case <-time.After(5 * time.Second):
	}
	if err := p.Stop(syscall.SIGTERM, 5*time.Second); err != nil {
		t.Errorf("stop: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(lines, ",") != "one,two" {
		t.Errorf("lines after the ready line: %q", lines)
	}
}

func TestNotReady(t *testing.T) {
	for _, c := range []struct {
		script, want string
		limit        time.Duration
	}{
		{`echo hello`, "first line is not its ready line", 5 * time.Second},
		{`exit 3`, "exited before its ready line", 5 * time.Second},
		{`sleep 30`, "not ready within 200ms", 200 * time.Millisecond},
	} {
		started := time.Now()
		_, err := Start(context.Background(), "x", sh(c.script), c.limit, nil, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "x: ") {
			t.Errorf("%q: %v, want %q", c.script, err, c.want)
		}
		if time.Since(started) > 10*time.Second {
			t.Errorf("%q: the child was not killed at once", c.script)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Start(ctx, "x", sh(`sleep 30`), time.Minute, nil, nil); err != context.Canceled {
		t.Errorf("cancelled: %v", err)
	}
}

// A child that ignores the signal is killed after the grace, and Stop says so; one that fails
// on the signal is an error too.
func TestStop(t *testing.T) {
	p, err := Start(context.Background(), "stubborn", sh(`trap '' TERM; echo '{"event":"ready"}'; while :; do sleep 0.05; done`), 5*time.Second, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(syscall.SIGTERM, 200*time.Millisecond); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("stubborn: %v", err)
	}
	p, err = Start(context.Background(), "failing", sh(`trap 'exit 4' TERM; echo '{"event":"ready"}'; while :; do sleep 0.05; done`), 5*time.Second, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(syscall.SIGTERM, 5*time.Second); err == nil || !strings.Contains(err.Error(), "exit status 4") {
		t.Errorf("failing: %v", err)
	}
	select {
	case <-p.Exited():
	default:
		t.Error("Exited not closed after Stop")
	}
}
