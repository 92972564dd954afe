// Package rt gives a whole process real-time scheduling while the emulator runs.
//
// Why the whole process: the Go scheduler moves goroutines between threads. A goroutine that
// runs for 10 ms is preempted and resumed by whichever thread next runs the scheduler, and a
// goroutine waking from a futex or a contended lock waits for such a thread too. If only the
// emulator's own threads were real-time, those hand-offs would wait for ordinary threads, which
// a loaded machine delays by milliseconds (measured here: runnable waits of 11 ms, timer lateness
// of 60 ms at load 6 on 2 cores). So every thread of the process is made SCHED_FIFO, with
// SCHED_RESET_ON_FORK so that child processes (the commands run in the namespaces) and threads
// the runtime creates later start with normal scheduling; a janitor fixes new threads every 20 ms.
// Timer slack is set to 1 ns on every thread, so sleeps end when asked.
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
	schedFIFO        = 1
	schedResetOnFork = 0x40000000
)

var (
	mu      sync.Mutex
	users   int
	stopCh  chan struct{}
	done    chan struct{}
	enabled bool
)

// Enable makes every thread of the process SCHED_FIFO with priority prio (1–99) and 1 ns timer
// slack until the returned function is called (calls nest: the last one restores normal
// scheduling). ok is false when real-time scheduling is not permitted (no CAP_SYS_NICE, no
// real-time budget in the cgroup); the timer slack is set anyway.
func Enable(prio int) (restore func(), ok bool) {
	mu.Lock()
	defer mu.Unlock()
	users++
	if users == 1 {
		enabled = apply(prio)
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
		if err := setScheduler(tid, schedFIFO|schedResetOnFork, prio); err != nil {
			ok = false
		}
		_ = os.WriteFile("/proc/self/task/"+strconv.Itoa(tid)+"/timerslack_ns", []byte("1"), 0)
		seen[tid] = true
	}
	return ok
}

// Boost gives the calling thread, which the caller has locked (runtime.LockOSThread), a higher
// SCHED_FIFO priority than the rest of the process, for as long as the thread lives; the janitor
// leaves it alone. It does nothing unless Enable is in effect and permitted.
func Boost(prio int) {
	mu.Lock()
	on := enabled
	mu.Unlock()
	if !on {
		return
	}
	tid := unix.Gettid()
	applyMu.Lock()
	seen[tid] = true
	applyMu.Unlock()
	_ = setScheduler(0, schedFIFO|schedResetOnFork, prio)
	_ = os.WriteFile("/proc/self/task/"+strconv.Itoa(tid)+"/timerslack_ns", []byte("1"), 0)
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
