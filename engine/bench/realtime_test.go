package bench

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// realtimeTicks and realtimeWatch count a real-time thread's CPU: a thread of this test made
// SCHED_RR spins until it has used 0.3 s of CPU (its own getrusage; other real-time threads of
// higher priority may delay it, not change the count); its /proc task must show at least 0.15 s
// of it (/proc's times are sampled per tick), the watch at least one thread. Skipped where the
// test may not set the policy (not root), or when the thread got no 0.3 s of CPU within 20 s.
func TestRealtimeWatchCountsRealtimeThreads(t *testing.T) {
	type result struct {
		skip  string
		ticks int64
		found bool
		n     int
	}
	done := make(chan result)
	go func() {
		runtime.LockOSThread() // the thread ends with the goroutine: the policy does not leak
		if err := unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: 2, Priority: 1}, 0); err != nil {
			done <- result{skip: fmt.Sprintf("cannot make a thread SCHED_RR here: %v", err)}
			return
		}
		path := fmt.Sprintf("/proc/%d/task/%d/stat", os.Getpid(), unix.Gettid())
		watch, before := realtimeWatch(), realtimeTicks()
		for deadline := time.Now().Add(20 * time.Second); ; {
			var ru unix.Rusage
			_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru)
			if time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) >= 300*time.Millisecond {
				break
			}
			if time.Now().After(deadline) {
				done <- result{skip: "the real-time thread got less than 0.3 s of CPU in 20 s"}
				return
			}
		}
		after := realtimeTicks()
		_, n := watch()
		_, found := after[path]
		done <- result{ticks: after[path] - before[path], found: found, n: n}
	}()
	r := <-done
	if r.skip != "" {
		t.Skip(r.skip)
	}
	if !r.found || r.ticks < 15 || r.n < 1 {
		t.Errorf("a SCHED_RR thread used 0.3 s of CPU: its task found %v, %d ticks counted, %d threads seen by the watch; want found, ≥ 15 ticks, ≥ 1 thread", r.found, r.ticks, r.n)
	}
}
