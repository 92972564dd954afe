package bench

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// realtimeTicks counts a real-time thread's CPU: a thread of this test made SCHED_RR spins for
// 0.3 s (skipped where the test may not set the policy: not root).
func TestRealtimeTicksCountsRealtimeThreads(t *testing.T) {
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // the thread ends with the goroutine: the policy does not leak
		if err := unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: 2, Priority: 1}, 0); err != nil {
			done <- err
			return
		}
		t0, _ := realtimeTicks()
		for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
		}
		t1, n := realtimeTicks()
		if t1-t0 < 10 || n < 1 {
			t.Errorf("a real-time thread spun 0.3 s: %d ticks counted (%d threads); want ≥ 10", t1-t0, n)
		}
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Skipf("cannot make a thread SCHED_RR here: %v", err)
	}
}
