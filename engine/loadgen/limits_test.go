package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/sys/unix"
)

// A dial's error as net reports it: *net.OpError around *os.SyscallError around the errno.
func dialErr(errno syscall.Errno) error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", errno)}
}

func TestMachineLimitNamesTheLimit(t *testing.T) {
	for errno, want := range map[syscall.Errno]string{
		syscall.EMFILE:        "open-files limit (RLIMIT_NOFILE ",
		syscall.ENFILE:        "the system's open-files limit (fs.file-max ",
		syscall.EADDRNOTAVAIL: "local ports (net.ipv4.ip_local_port_range ",
		syscall.ENOBUFS:       "socket memory",
	} {
		le := machineLimit(fmt.Errorf("page: %w", dialErr(errno)))
		if le == nil || !strings.Contains(le.Limit, want) || le.Hint == "" {
			t.Errorf("%v: %+v; want a limit naming %q and a hint", errno, le, want)
		}
	}
	for _, err := range []error{nil, dialErr(syscall.ECONNREFUSED), dialErr(syscall.ECONNRESET), errors.New("EOF")} {
		if le := machineLimit(err); le != nil {
			t.Errorf("%v: a limit of the machine %+v; want none (the server's or the path's error)", err, le)
		}
	}
}

// limitUser's pages take 100 ms; from limitAt on, every page's connection fails with EMFILE.
type limitUser struct {
	start   time.Time
	limitAt time.Duration
	after   *atomic.Int64 // pages started after the run had been stopped
	stopped *atomic.Bool
}

func (u *limitUser) Load(ctx context.Context, s *Sample) {
	if u.stopped.Load() {
		u.after.Add(1)
	}
	select {
	case <-time.After(100 * time.Millisecond):
	case <-ctx.Done():
		s.Interrupted = true
		return
	}
	if time.Since(u.start) >= u.limitAt {
		s.Fail(dialErr(syscall.EMFILE), 0)
		return
	}
	s.Exchanges = append(s.Exchanges, 50*time.Millisecond)
}

func (u *limitUser) Close() {}

// The first page that meets a limit of the generator's machine ends the run at once: a LimitError
// naming it with the VUs then active, the summary of what was measured before, and neither the
// failed page nor any later one counted as the server's error.
func TestRunStopsAtAMachineLimit(t *testing.T) {
	spec := mustDecode(t, `{"protocol":"h1","interval_s":1,"think":{"mean_s":0},"scenario":{"start":5,"stages":[{"duration_s":60,"target":5}]}}`)
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var after atomic.Int64
		var stopped atomic.Bool
		sum, err := Run(context.Background(), Config{
			Spec:  spec,
			Start: start,
			NewUser: func(int) User {
				return &limitUser{start: start, limitAt: 2 * time.Second, after: &after, stopped: &stopped}
			},
		})
		stopped.Store(true)
		var le *LimitError
		if !errors.As(err, &le) || !errors.Is(err, syscall.EMFILE) {
			t.Fatalf("err %v; want a *LimitError around EMFILE", err)
		}
		if le.ActiveVUs != 5 || le.OpenConnections != -1 || !strings.Contains(le.Error(), "RLIMIT_NOFILE") {
			t.Errorf("limit %+v (%v); want 5 active VUs, connections not counted", le, le)
		}
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("the run ended after %v; want the instant the limit was met, 2 s (not the scenario's 60 s)", took)
		}
		if sum == nil || sum.Interrupted || sum.Totals.Errors.Total() != 0 || sum.Totals.Pages != 5*19 {
			t.Fatalf("summary %+v; want 95 pages (19 per VU before 2 s), no errors, not interrupted", sum)
		}
	})
}

func TestRaiseOpenFiles(t *testing.T) {
	var before unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &before); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Setrlimit(unix.RLIMIT_NOFILE, &before) })
	got, err := RaiseOpenFiles(0)
	if err != nil || got < before.Max {
		t.Fatalf("RaiseOpenFiles(0) = %d, %v; want at least the hard limit %d", got, err, before.Max)
	}
	var now unix.Rlimit
	_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &now)
	if now.Cur != got || now.Cur != now.Max {
		t.Errorf("after RaiseOpenFiles(0): %+v; want the soft limit at the hard one, %d", now, got)
	}
	// With CAP_SYS_RESOURCE the hard limit goes to fs.nr_open (a container may withhold it: root
	// here without it cannot raise the hard limit).
	if nrOpen := sysctl("fs/nr_open"); now.Max > before.Max && fmt.Sprint(now.Max) != nrOpen {
		t.Errorf("hard limit raised to %d; want fs.nr_open %s", now.Max, nrOpen)
	}
	if got, err := RaiseOpenFiles(64); err != nil || got != 64 {
		t.Errorf("RaiseOpenFiles(64) = %d, %v; want the cap 64", got, err)
	}
}

func TestGCPercent(t *testing.T) {
	for _, c := range []struct {
		spec string
		want int
	}{
		{`{"protocol":"h2","think":{"mean_s":30},"scenario":{"stages":[{"duration_s":10,"target":5}]}}`, ThinkingGCPercent},
		{`{"protocol":"h2","think":{"mean_s":0},"scenario":{"start":20,"stages":[{"duration_s":10,"target":20}]}}`, StressGCPercent},
		{`{"protocol":"h2","scenario":{"model":"open","stages":[{"duration_s":10,"rate":5}]}}`, 100},
	} {
		s, err := Decode([]byte(c.spec))
		if err != nil {
			t.Fatal(err)
		}
		if got := GCPercent(s); got != c.want {
			t.Errorf("%s: GOGC %d; want %d", c.spec, got, c.want)
		}
	}
}
