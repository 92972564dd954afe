package bench

import (
	"os"
	"path/filepath"
	"time"
)

// Real-time neighbours. A thread under SCHED_FIFO or SCHED_RR runs before every normal one, for
// up to sched_rt_runtime_us of each period (95 % by default): on a 2-core machine two busy
// real-time threads of another program (an emulator, a timing test) can leave the benchmark's
// processes almost no CPU for seconds. That showed as stalls in the vus part — a generator's VU
// count standing still with 0.01 ms of CPU per 5 s interval, then its late intervals arriving at
// once (sched_p99_ms 8.6 s) — which the load average does not reveal. realtimeTicks lets a run say
// how much CPU such threads took beside it.

// realtimeTicks reads the CPU time (clock ticks) of every user-space thread on the machine whose
// scheduling policy is real-time (procStat.realtime: SCHED_FIFO, SCHED_RR, SCHED_DEADLINE), by its /proc task path (the lines read as
// otherRealtime reads a process's).
func realtimeTicks() map[string]int64 {
	out := map[string]int64{}
	tasks, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*/stat")
	for _, path := range tasks {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // gone meanwhile
		}
		if st, ok := parseStat(string(b)); ok && st.realtime() {
			out[path] = st.cpuTicks
		}
	}
	return out
}

// realtimeWatch measures the CPU that real-time threads used from its start to the call of the
// function it returns: cores, and how many threads used any. Threads that ended in between take
// their time with them (the figure is a lower bound); a thread that started since counts whole.
func realtimeWatch() func() (cores float64, threads int) {
	before := realtimeTicks()
	start := time.Now()
	return func() (float64, int) {
		var ticks int64
		threads := 0
		for path, t := range realtimeTicks() {
			if d := t - before[path]; d > 0 {
				ticks += d
				threads++
			}
		}
		secs := time.Since(start).Seconds()
		if secs <= 0 {
			return 0, threads
		}
		return round(float64(ticks)/float64(clockTicks())/secs, 2), threads
	}
}
