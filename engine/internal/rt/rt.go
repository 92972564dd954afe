// Package rt gives a whole process real-time scheduling while the emulator runs.
//
// Why the whole process: the Go scheduler moves goroutines between threads. A goroutine that
// runs for 10 ms is preempted and resumed by whichever thread next runs the scheduler, and a
// goroutine waking from a futex or a contended lock waits for such a thread too. If only the
// emulator's own threads were real-time, those hand-offs would wait for ordinary threads, which
// a loaded machine delays by milliseconds (measured here: runnable waits of 11 ms, timer lateness
// of 60 ms at load 6 on 2 cores). So every thread of the process is made SCHED_RR, with
// SCHED_RESET_ON_FORK so that child processes (the commands run in the namespaces) start with
// normal scheduling; a janitor fixes threads the runtime creates later every 20 ms, and a thread
// that needs it at once calls Adopt. Timer slack is set to 1 ns on every thread, so sleeps end
// when asked.
//
// Why one priority for every thread: the Go runtime waits for other threads by spinning — a
// goroutine's status held by the garbage collector's stack scan, the hand-off of a locked
// goroutine to its thread, stop-the-world — and a spinning real-time thread runs until the thread
// it waits for has run. Among threads of one priority that works: the spinner yields
// (sched_yield) and SCHED_RR rotates the rest. A thread above the others does not yield to them:
// an earlier design ran the emulator's readers and writers above the rest of the process, and a
// writer spinning in the runtime (a collection started while the trial forked its servers) waited
// for a lower-priority thread queued on its own CPU — a livelock that held both cores at ~95 %
// (the real-time budget) and never ended. TestNoLivelockUnderGC reproduces that pattern.
package rt

import (
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	schedOther       = 0
	schedRR          = 2
	schedResetOnFork = 0x40000000
)

var (
	mu       sync.Mutex
	users    int
	stopCh   chan struct{}
	done     chan struct{}
	enabled  bool
	priority int
)

// Enable makes every thread of the process SCHED_RR with priority prio (1–99) and 1 ns timer
// slack until the returned function is called (calls nest: the last one restores normal
// scheduling). ok is false when real-time scheduling is not permitted (no CAP_SYS_NICE, no
// real-time budget in the cgroup); the timer slack is set anyway.
func Enable(prio int) (restore func(), ok bool) {
	mu.Lock()
	defer mu.Unlock()
	users++
	if users == 1 {
		enabled, priority = apply(prio), prio
		stopCh, done = make(chan struct{}), make(chan struct{})
		go janitor(prio, stopCh, done)
	}
	ok = enabled
	var once sync.Once
	return func() { once.Do(release) }, ok
}

func release() {
	mu.Lock()
	defer mu.Unlock()
	users--
	if users > 0 {
		return
	}
	close(stopCh)
	<-done
	applyMu.Lock()
	for _, tid := range tids() {
		setScheduler(tid, schedOther, 0)
	}
	clear(seen)
	applyMu.Unlock()
	enabled = false
}

func janitor(prio int, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			apply(prio)
		}
	}
}

// seen remembers the threads already handled (the janitor touches only new ones).
var (
	applyMu sync.Mutex
	seen    = map[int]bool{}
)

func apply(prio int) bool {
	applyMu.Lock()
	defer applyMu.Unlock()
	ok := true
	for _, tid := range tids() {
		if seen[tid] {
			continue
		}
		if err := setScheduler(tid, schedRR|schedResetOnFork, prio); err != nil {
			ok = false
		}
		_ = os.WriteFile("/proc/self/task/"+strconv.Itoa(tid)+"/timerslack_ns", []byte("1"), 0)
		seen[tid] = true
	}
	return ok
}

// Adopt makes the calling thread, which the caller has locked (runtime.LockOSThread), real-time
// now rather than at the janitor's next round, at the priority of the rest of the process, with
// 1 ns timer slack. It does nothing unless Enable is in effect and permitted.
func Adopt() {
	mu.Lock()
	on, prio := enabled, priority
	mu.Unlock()
	if !on {
		return
	}
	tid := unix.Gettid()
	applyMu.Lock()
	seen[tid] = true
	applyMu.Unlock()
	_ = setScheduler(0, schedRR|schedResetOnFork, prio)
	_, _, _ = syscall.RawSyscall(unix.SYS_PRCTL, unix.PR_SET_TIMERSLACK, 1, 0)
}

func tids() []int {
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	out := make([]int, 0, len(entries))
	for _, e := range entries {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, tid)
		}
	}
	return out
}

func setScheduler(tid, policy, prio int) error {
	param := struct{ prio int32 }{int32(prio)}
	_, _, e := syscall.RawSyscall(unix.SYS_SCHED_SETSCHEDULER, uintptr(tid), uintptr(policy), uintptr(unsafe.Pointer(&param)))
	if e != 0 {
		return e
	}
	return nil
}
