package rt

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/internal/timebound"
)

// TestStressChild is the body of TestNoLivelockUnderGC, run in a child process.
func TestStressChild(t *testing.T) {
	if os.Getenv("WIRELAB_RT_STRESS_CHILD") != "1" {
		t.Skip("run by TestNoLivelockUnderGC")
	}
	runtime.GOMAXPROCS(runtime.NumCPU() + 8)
	restore, ok := Enable(1)
	defer restore()
	if !ok {
		t.Skip("real-time scheduling not permitted")
	}
	debug.SetGCPercent(1)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			Adopt()
			var sink [][]byte
			for !stop.Load() {
				ts := unix.Timespec{Nsec: 20_000}
				_ = unix.Nanosleep(&ts, nil)
				t0 := time.Now()
				for time.Since(t0) < 50*time.Microsecond {
					unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
				}
				sink = append(sink, make([]byte, 512))
				if len(sink) > 64 {
					sink = sink[:0]
				}
			}
		}(i)
	}
	var garbage [][]byte
	for n := 0; n < 300; n++ {
		if err := exec.Command("true").Run(); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 100; k++ {
			garbage = append(garbage, make([]byte, 4096))
		}
		if len(garbage) > 2000 {
			garbage = garbage[:0]
		}
	}
	stop.Store(true)
	wg.Wait()
}

// TestNoLivelockUnderGC runs real-time threads that sleep, spin and allocate while the process
// forks children and collects garbage, as the emulator's readers and writers do while a trial
// starts its servers. Threads of a real-time process must never wait, spinning, for a thread the
// scheduler will not run (an earlier design livelocked here). The child gets a generous deadline:
// it needs a few seconds (3–13 s here); a livelock never ends.
func TestNoLivelockUnderGC(t *testing.T) {
	roottest.Require(t)
	if testing.Short() {
		t.Skip("short")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A miss of the deadline on a loaded machine (other real-time emulators, builds) is retried
	// once; a livelock misses it twice.
	timebound.Retry(t, func(a *timebound.Attempt) {
		cmd := exec.Command(exe, "-test.run=^TestStressChild$", "-test.v")
		cmd.Env = append(os.Environ(), "WIRELAB_RT_STRESS_CHILD=1")
		out := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		t0 := time.Now()
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			t.Logf("child finished in %v", time.Since(t0).Round(time.Millisecond))
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out.String())
			}
		case <-time.After(90 * time.Second):
			_ = cmd.Process.Signal(unix.SIGQUIT) // goroutine dump for the log
			time.Sleep(2 * time.Second)
			_ = cmd.Process.Kill()
			<-done
			a.Errorf("real-time child did not finish in 90 s (livelock?):\n%s", out.String())
		}
	})
}

type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}
