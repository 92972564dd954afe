package realtime

import (
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Futex operations (linux/futex.h); x/sys/unix does not export them.
const (
	futexWaitOp  = 0
	futexWakeOp  = 1
	futexPrivate = 128
)

// futexWait sleeps until *addr != val, a futexWake, or the timeout (≤ 0: no timeout).
// The calling thread's timer slack decides how late a timeout ends; see setTimerSlack.
func futexWait(addr *uint32, val uint32, timeout time.Duration) {
	var tsp unsafe.Pointer
	var ts unix.Timespec
	if timeout > 0 {
		ts = unix.NsecToTimespec(int64(timeout))
		tsp = unsafe.Pointer(&ts)
	}
	// syscall.Syscall6 (not RawSyscall): the runtime hands this thread's P to others meanwhile.
	syscall.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitOp|futexPrivate, uintptr(val), uintptr(tsp), 0, 0)
}

// futexWake wakes the threads sleeping in futexWait on addr.
func futexWake(addr *uint32) {
	syscall.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWakeOp|futexPrivate, 1<<30, 0, 0, 0)
}

// waker lets readers interrupt a writer's sleep.
type waker struct {
	seq uint32 // bumped on every wake; futex word
}

func (w *waker) load() uint32 { return atomic.LoadUint32(&w.seq) }

func (w *waker) wake() {
	atomic.AddUint32(&w.seq, 1)
	futexWake(&w.seq)
}

// yield gives the CPU to other runnable threads (the peers' TCP stacks, the other direction)
// while the writer spins towards a deadline. Raw: the writer keeps its P (Run provides spare ones).
func yield() { syscall.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// waitReadable sleeps until fd is readable (true) or stopFd is signalled (false), in system calls
// of at most maxSleep (see there); idle runs between two of them.
func waitReadable(fd, stopFd int, idle func()) bool {
	fds := [2]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(stopFd), Events: unix.POLLIN}}
	for {
		ts := unix.NsecToTimespec(int64(maxSleep)) // anew each time: ppoll leaves the time unslept in it
		n, err := unix.Ppoll(fds[:], &ts, nil)
		if err == unix.EINTR || (err == nil && n == 0) {
			idle()
			continue // a signal, or the cap: sleep again
		}
		return fds[1].Revents == 0
	}
}

func newEventFd() (int, error) { return unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK) }

func signalEventFd(fd int) {
	var one = [8]byte{1}
	unix.Write(fd, one[:])
}

func closeFd(fd int) { unix.Close(fd) }
