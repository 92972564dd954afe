// Package rtlock is a mutex for the emulator's real-time threads. A contended sync.Mutex parks the
// goroutine in the Go scheduler, and waking it needs some other thread to run the scheduler: on a
// loaded machine, or with the waker in a syscall, that takes milliseconds (sysmon polls every
// 20 µs–10 ms). Mutex never parks a goroutine: it spins with sched_yield, then sleeps in a futex
// that Unlock wakes directly, so a waiting thread runs again as soon as the kernel lets it.
package rtlock

import (
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Mutex is a mutual-exclusion lock; the zero value is unlocked. Critical sections must be short.
type Mutex struct {
	state uint32 // 0 unlocked, 1 locked, 2 locked with (possible) sleepers
}

const spins = 64

// Lock locks m.
func (m *Mutex) Lock() {
	if atomic.CompareAndSwapUint32(&m.state, 0, 1) {
		return
	}
	for i := 0; i < spins; i++ {
		if atomic.LoadUint32(&m.state) == 0 && atomic.CompareAndSwapUint32(&m.state, 0, 1) {
			return
		}
		// Lets an equal-priority holder on this CPU run (a real-time spinner would starve it).
		syscall.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
	// Classic three-state futex mutex (Drepper, "Futexes Are Tricky").
	for atomic.SwapUint32(&m.state, 2) != 0 {
		syscall.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&m.state)), futexWait|futexPrivate, 2, 0, 0, 0)
	}
}

// TryLock locks m if it is unlocked, and reports whether it did.
func (m *Mutex) TryLock() bool { return atomic.CompareAndSwapUint32(&m.state, 0, 1) }

// Unlock unlocks m.
func (m *Mutex) Unlock() {
	if atomic.SwapUint32(&m.state, 0) == 2 {
		syscall.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&m.state)), futexWake|futexPrivate, 1, 0, 0, 0)
	}
}

const (
	futexWait    = 0
	futexWake    = 1
	futexPrivate = 128
)
