package realtime

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/internal/rt"
)

func threadCPU(t testing.TB) time.Duration {
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

// BenchmarkTimedSleep compares the ways a writer's thread can sleep until a deadline 120 µs off
// (a 1,500-byte packet's spacing at 100 Mbit/s): the futex with a relative timeout the writer uses
// (futexWait), clock_nanosleep to an absolute time, a timerfd armed to an absolute time and
// polled beside a second descriptor (one ppoll for "a packet arrives or the deadline"), and
// ppoll's own timeout. Each on a locked thread with 1 ns timer slack, real-time as in a run when
// permitted. Reported per sleep: the thread's CPU time (getrusage RUSAGE_THREAD) and how late
// the sleep ended, p50 and p99. docs/network.md quotes it:
//
//	cd engine && go test -run '^$' -bench TimedSleep -benchtime 5000x ./realtime/
func BenchmarkTimedSleep(b *testing.B) {
	const period = 120 * time.Microsecond
	tfd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(tfd)
	other, err := newEventFd()
	if err != nil {
		b.Fatal(err)
	}
	defer closeFd(other)
	mono := func() int64 {
		var ts unix.Timespec
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
		return ts.Nano()
	}
	var word uint32
	ways := []struct {
		name  string
		sleep func(deadline int64)
	}{
		{"futex", func(deadline int64) { futexWait(&word, 0, time.Duration(deadline-mono())) }},
		{"clock_nanosleep_abs", func(deadline int64) {
			ts := unix.NsecToTimespec(deadline)
			unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil)
		}},
		{"timerfd_ppoll", func(deadline int64) {
			its := unix.ItimerSpec{Value: unix.NsecToTimespec(deadline)}
			unix.TimerfdSettime(tfd, unix.TFD_TIMER_ABSTIME, &its, nil)
			fds := [2]unix.PollFd{{Fd: int32(tfd), Events: unix.POLLIN}, {Fd: int32(other), Events: unix.POLLIN}}
			unix.Ppoll(fds[:], nil, nil)
			var n [8]byte
			unix.Read(tfd, n[:])
		}},
		{"ppoll_timeout", func(deadline int64) {
			ts := unix.NsecToTimespec(deadline - mono())
			fds := [1]unix.PollFd{{Fd: int32(other), Events: unix.POLLIN}}
			unix.Ppoll(fds[:], &ts, nil)
		}},
	}
	restore, _ := rt.Enable(DefaultRealtimePriority)
	defer restore()
	for _, w := range ways {
		b.Run(w.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			rt.Adopt()
			late := make([]int64, 0, b.N)
			cpu0 := threadCPU(b)
			b.ResetTimer()
			for range b.N {
				deadline := mono() + int64(period)
				w.sleep(deadline)
				late = append(late, mono()-deadline)
			}
			b.StopTimer()
			cpu := threadCPU(b) - cpu0
			slices.Sort(late)
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1e3, "cpu-µs/sleep")
			b.ReportMetric(float64(late[len(late)/2])/1e3, "late-p50-µs")
			b.ReportMetric(float64(late[len(late)*99/100])/1e3, "late-p99-µs")
		})
	}
}
