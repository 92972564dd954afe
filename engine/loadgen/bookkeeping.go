package loadgen

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/client"
)

// BookkeepingCost is what the generator's own accounting costs in CPU time: the part of a run
// that is not loading pages (the `bench loadgen` figures divide it by a real run's CPU).
type BookkeepingCost struct {
	// PerPage records one finished page: each request's stats into the VU's sample (as
	// TabUsers' OnRequest does), then the page into the interval's histograms and counters.
	PerPage time.Duration
	// PerInterval closes an interval: rotating the windows, percentiles, the generator probe
	// and the JSON line.
	PerInterval time.Duration
}

// MeasureBookkeeping measures BookkeepingCost on this goroutine's thread, for pages of
// requestsPerPage requests and intervals of pagesPerInterval pages.
func MeasureBookkeeping(requestsPerPage, pagesPerInterval int) BookkeepingCost {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	spec, _ := Decode([]byte(`{"protocol":"h2","scenario":{"stages":[{"duration_s":1,"target":1}]}}`))
	r := &runner{cfg: Config{Spec: spec, Start: time.Now(), Probe: NewProbe()}, spec: spec, rec: newRecorder(), interval: time.Second}
	r.total = newWindow()
	enc := json.NewEncoder(io.Discard)
	r.cfg.Interval = func(iv Interval) { _ = enc.Encode(iv) }
	rng := rand.New(rand.NewPCG(1, 1))
	stats := make([]client.RequestStats, requestsPerPage)
	for i := range stats {
		d := time.Duration(rng.ExpFloat64() * float64(5*time.Millisecond))
		stats[i] = client.RequestStats{Time: d + time.Millisecond, Exchange: d, Status: 200, BodyBytes: 2000}
	}
	u := &tabUser{}
	var s Sample
	page := func(i int) {
		s.reset()
		u.s = &s
		for _, st := range stats {
			u.request(st)
		}
		r.record(i, &s, time.Now().Add(-time.Duration(rng.Int64N(int64(time.Second)))))
	}
	for i := range 1000 { // warm up: buffers grown, code paths hot
		page(i)
	}
	r.emit(0, time.Now(), false)
	const rounds = 20
	var pageCPU, emitCPU time.Duration
	for k := range rounds {
		t0 := threadCPU()
		for i := range pagesPerInterval {
			page(i)
		}
		t1 := threadCPU()
		r.emit(k+1, time.Now(), false)
		t2 := threadCPU()
		pageCPU += t1 - t0
		emitCPU += t2 - t1
	}
	return BookkeepingCost{PerPage: pageCPU / time.Duration(rounds*max(pagesPerInterval, 1)), PerInterval: emitCPU / rounds}
}

// threadCPU is this thread's CPU time, up to the nanosecond (getrusage's lags up to a tick).
func threadCPU() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}
