package realtime

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func threadCPU(t *testing.T) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitReadable sleeps in ppoll calls of at most maxSleep; across them it must still sleep (ppoll
// leaves the unslept time in its timeout argument: reusing it would spin) and must still see the
// descriptor become readable and the stop signal.
func TestWaitReadableSleepsAcrossCaps(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	stop, err := newEventFd()
	if err != nil {
		t.Fatal(err)
	}
	defer closeFd(stop)

	const after = 8 * maxSleep
	go func() {
		time.Sleep(after)
		unix.Write(p[1], []byte{1})
	}()
	cpu0, t0 := threadCPU(t), time.Now()
	if !waitReadable(p[0], stop, func() {}) {
		t.Fatal("waitReadable reported a stop")
	}
	took, cpu := time.Since(t0), threadCPU(t)-cpu0
	if took < after {
		t.Errorf("returned after %v, before the descriptor became readable (%v)", took, after)
	}
	if cpu > after/4 {
		t.Errorf("used %v of CPU while waiting %v: it spins", cpu, took)
	}

	var b [1]byte
	unix.Read(p[0], b[:])
	go func() {
		time.Sleep(2 * maxSleep)
		signalEventFd(stop)
	}()
	if waitReadable(p[0], stop, func() {}) {
		t.Error("waitReadable missed the stop signal")
	}
}
