package loadgen

import (
	"encoding/base64"
	"fmt"
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

// totals is a run's Totals: what was measured over its secs seconds (w: every interval's window
// merged), its peak VUs from its intervals and the connections opened and closed by the server
// (the caller's counts: a generator's own, or the generators' summed). One generator's summary and
// a merged run's are built here alike.
func (w *window) totals(secs float64, intervals []Interval, opened, closedByServer int64) Totals {
	t := Totals{
		Pages: w.pages, PagesFailed: w.pagesFailed, PagesPerS: rate(w.pages, secs), Hits: w.hits, HitsPerS: rate(w.hits, secs),
		Bytes: w.bytes, PageMs: latencyOf(w.page), RequestMs: latencyOf(w.request), Errors: errorsOf(&w.errors), Dropped: w.dropped,
		ConnectionsOpened: opened, ConnectionsClosedByServer: closedByServer,
	}
	if n := w.pages + w.pagesFailed; n > 0 {
		t.ErrorRate = float64(w.pagesFailed) / float64(n)
	}
	for _, iv := range intervals {
		t.VUsMax = max(t.VUsMax, iv.VUsMax)
	}
	return t
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

// recorder collects the VUs' pages into the current interval's window, under one lock (recording
// a page of 51 requests holds it for well under a microsecond); rotate swaps in a fresh window
// at an interval's end, so a page counts in exactly one interval.
type recorder struct {
	mu    sync.Mutex
	cur   *window
	spare *window // only rotate touches it
}

func newRecorder() *recorder { return &recorder{cur: newWindow(), spare: newWindow()} }

// page records a finished page.
func (r *recorder) page(p *Sample, pageTime time.Duration) {
	r.mu.Lock()
	r.cur.add(p, pageTime)
	r.mu.Unlock()
}

// drop counts open-model arrivals dropped.
func (r *recorder) drop(n int64) {
	r.mu.Lock()
	r.cur.dropped += n
	r.mu.Unlock()
}

// rotate ends the current window and returns it; it stays valid until the next rotate.
func (r *recorder) rotate() *window {
	r.spare.reset()
	r.mu.Lock()
	w := r.cur
	r.cur, r.spare = r.spare, w
	r.mu.Unlock()
	return w
}

// encodeHist is h in HdrHistogram's V2 compressed encoding, base64 (an interval's page_hist and
// request_hist); "" when h is empty.
func encodeHist(h *hdrhistogram.Histogram) string {
	if h.TotalCount() == 0 {
		return ""
	}
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil { // only a compression failure of an in-memory buffer
		panic(fmt.Sprintf("loadgen: encoding a histogram: %v", err))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// decodeHist reads an interval's encoded histogram ("" is an empty one) into the engine's layout.
func decodeHist(s string) (*hdrhistogram.Histogram, error) {
	out := newHist()
	if s == "" {
		return out, nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("not base64: %w", err)
	}
	h, err := hdrhistogram.Decode(b)
	if err != nil {
		return nil, err
	}
	if dropped := out.Merge(h); dropped != 0 {
		return nil, fmt.Errorf("%d values outside the engine's range (%d–%d µs)", dropped, histLowestUS, histHighestUS)
	}
	return out, nil
}
