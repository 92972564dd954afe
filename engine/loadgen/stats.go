package loadgen

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in HDR histograms of microseconds from 1 µs to 10 minutes with 3
// significant digits: any value is reported within 0.1 % (values above 10 minutes as 10 minutes).
const (
	histLowestUS  = 1
	histHighestUS = int64(10 * time.Minute / time.Microsecond)
	histDigits    = 3
)

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowestUS, histHighestUS, histDigits)
}

// recordDuration adds d to h, clamped to the histogram's range.
func recordDuration(h *hdrhistogram.Histogram, d time.Duration) {
	us := min(max(d.Microseconds(), histLowestUS), histHighestUS)
	_ = h.RecordValue(us) // in range by construction
}

// Latency summarises a histogram in milliseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

var quantiles = []float64{50, 90, 95, 99}

// latencyOf summarises h; nil when h is empty.
func latencyOf(h *hdrhistogram.Histogram) *Latency {
	if h.TotalCount() == 0 {
		return nil
	}
	q := h.ValueAtPercentilesSlice(quantiles)
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return &Latency{P50: ms(q[0]), P90: ms(q[1]), P95: ms(q[2]), P99: ms(q[3]), Max: ms(h.Max()), Mean: h.Mean() / 1000}
}

// Statistic is the named statistic of l (sla.statistic).
func (l *Latency) Statistic(name string) float64 {
	switch name {
	case "p50":
		return l.P50
	case "p90":
		return l.P90
	case "p95":
		return l.P95
	case "p99":
		return l.P99
	case "max":
		return l.Max
	}
	return l.Mean
}

// window is what was measured during one interval (or, merged, a whole run).
type window struct {
	pages, pagesFailed int64
	hits, bytes        int64
	dropped            int64
	errors             [numKinds]int64
	page, request      *hdrhistogram.Histogram // successful pages; requests' exchanges
}

func newWindow() *window { return &window{page: newHist(), request: newHist()} }

func (w *window) reset() {
	page, request := w.page, w.request
	page.Reset()
	request.Reset()
	*w = window{page: page, request: request}
}

func (w *window) merge(o *window) {
	w.pages += o.pages
	w.pagesFailed += o.pagesFailed
	w.hits += o.hits
	w.bytes += o.bytes
	w.dropped += o.dropped
	for k := range w.errors {
		w.errors[k] += o.errors[k]
	}
	w.page.Merge(o.page)
	w.request.Merge(o.request)
}

// add records one finished page.
func (w *window) add(p *Sample, pageTime time.Duration) {
	if p.Failed {
		w.pagesFailed++
	} else {
		w.pages++
		recordDuration(w.page, pageTime)
	}
	w.hits += int64(len(p.Exchanges)) + p.HitsUntimed
	w.bytes += p.Bytes
	for k, n := range p.Errors {
		w.errors[k] += n
	}
	for _, d := range p.Exchanges {
		recordDuration(w.request, d)
	}
}

// recorder collects the VUs' pages into the current interval's window. It is sharded so that
// VUs on different CPUs rarely meet on a lock; rotate takes every shard's window at an interval's
// end (each shard under its lock: a page counts in exactly one interval) and gives it a fresh one.
type recorder struct {
	shards []recShard
}

type recShard struct {
	mu    sync.Mutex
	cur   *window
	spare *window
	_     [40]byte // keep shards on separate cache lines
}

const recShards = 4

func newRecorder() *recorder {
	r := &recorder{shards: make([]recShard, recShards)}
	for i := range r.shards {
		r.shards[i].cur, r.shards[i].spare = newWindow(), newWindow()
	}
	return r
}

// page records a finished page of VU vu.
func (r *recorder) page(vu int, p *Sample, pageTime time.Duration) {
	sh := &r.shards[vu%recShards]
	sh.mu.Lock()
	sh.cur.add(p, pageTime)
	sh.mu.Unlock()
}

// drop counts an open-model arrival dropped.
func (r *recorder) drop(n int64) {
	sh := &r.shards[0]
	sh.mu.Lock()
	sh.cur.dropped += n
	sh.mu.Unlock()
}

// rotate merges every shard's window into into (which it resets first) and starts new ones.
func (r *recorder) rotate(into *window) {
	into.reset()
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.Lock()
		w := sh.cur
		sh.cur, sh.spare = sh.spare, nil
		sh.mu.Unlock()
		into.merge(w)
		w.reset()
		sh.spare = w // only rotate touches spare
	}
}
