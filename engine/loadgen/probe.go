package loadgen

import (
	"bytes"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Probe measures the generator process's own cost: CPU time, resident memory, goroutines and
// how long runnable goroutines waited for a CPU. A nil *Probe measures nothing (zeros).
type Probe struct {
	cores   int
	samples []metrics.Sample
	// statm is /proc/self/statm, opened once: a reading needs no new file descriptor, so it works
	// when the VUs' connections have taken every one the process may open.
	statm *os.File
	buf   []byte
}

// NewProbe returns a probe of this process.
func NewProbe() *Probe {
	p := &Probe{cores: runtime.GOMAXPROCS(0), samples: []metrics.Sample{{Name: "/sched/latencies:seconds"}}, buf: make([]byte, 128)}
	p.statm, _ = os.Open("/proc/self/statm") // nil: RSS reads as 0
	return p
}

// probeSample is one reading.
type probeSample struct {
	cpu   time.Duration
	rss   int64
	sched *metrics.Float64Histogram // cumulative
}

func (p *Probe) sample() probeSample {
	if p == nil {
		return probeSample{}
	}
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	s := probeSample{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), rss: p.residentBytes()}
	metrics.Read(p.samples)
	if v := p.samples[0].Value; v.Kind() == metrics.KindFloat64Histogram {
		h := v.Float64Histogram()
		s.sched = &metrics.Float64Histogram{Counts: append([]uint64(nil), h.Counts...), Buckets: h.Buckets}
	}
	return s
}

// SaturationSchedP99 is the scheduling delay (p99) from which the generator counts as saturated.
const SaturationSchedP99 = 10 * time.Millisecond

// generator describes the interval between two readings of secs seconds.
func (p *Probe) generator(a, b probeSample, secs float64) Generator {
	if p == nil {
		return Generator{Goroutines: runtime.NumGoroutine()}
	}
	g := Generator{CPUMs: float64(b.cpu-a.cpu) / float64(time.Millisecond), RSSBytes: b.rss, Goroutines: runtime.NumGoroutine()}
	if secs > 0 {
		g.CPUUtil = g.CPUMs / 1000 / secs
	}
	if a.sched != nil && b.sched != nil {
		g.SchedP99Ms = histDeltaQuantile(a.sched, b.sched, 0.99) * 1000
	}
	g.Saturated = g.CPUUtil >= 0.9*float64(p.cores) || g.SchedP99Ms >= float64(SaturationSchedP99)/float64(time.Millisecond)
	return g
}

// histDeltaQuantile is quantile q of the observations b − a of a cumulative runtime histogram (the
// upper bound of the bucket holding it; 0 without observations).
func histDeltaQuantile(a, b *metrics.Float64Histogram, q float64) float64 {
	var total uint64
	for i := range b.Counts {
		total += b.Counts[i] - a.Counts[i]
	}
	if total == 0 {
		return 0
	}
	rank := uint64(q * float64(total))
	var seen uint64
	for i := range b.Counts {
		seen += b.Counts[i] - a.Counts[i]
		if seen > rank {
			if upper := b.Buckets[i+1]; !math.IsInf(upper, 1) {
				return upper
			}
			return b.Buckets[i]
		}
	}
	return b.Buckets[len(b.Buckets)-1]
}

// residentBytes is the process's resident set size (/proc/self/statm, read again from its start).
func (p *Probe) residentBytes() int64 {
	if p.statm == nil {
		return 0
	}
	n, err := p.statm.ReadAt(p.buf, 0)
	if n == 0 && err != nil {
		return 0
	}
	f := bytes.Fields(p.buf[:n])
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(string(f[1]), 10, 64)
	return pages * int64(os.Getpagesize())
}
