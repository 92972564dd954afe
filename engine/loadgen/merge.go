package loadgen

import (
	"fmt"
	"sort"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Merging the intervals of a run spread over several generators (docs/loadtest.md, "Generators on
// a Dask cluster"). Every generator counts the same intervals — one start instant, the same
// interval_s — so interval k of the run is the generators' interval k together: counts are summed
// and the latency histograms merged (HdrHistogram's Merge of the intervals' encoded histograms:
// the merged percentiles are those of every page of the interval, never an average of the
// generators' percentiles). A generator that ended without its summary was lost: the intervals
// it did not report are marked degraded and name it, so the run never silently has fewer VUs.

// GeneratorShare is one generator's part of a merged interval.
type GeneratorShare struct {
	Name        string  `json:"name"`
	Part        string  `json:"part"`
	VUs         int     `json:"vus"`
	Pages       int64   `json:"pages"`
	PagesFailed int64   `json:"pages_failed"`
	Hits        int64   `json:"hits"`
	Share       float64 `json:"share"` // its hits ÷ the interval's (0 when the interval has none)
	CPUMs       float64 `json:"cpu_ms"`
	CPUUtil     float64 `json:"cpu_util"`
	RSSBytes    int64   `json:"rss_bytes"`
	SchedP99Ms  float64 `json:"sched_p99_ms"`
	Saturated   bool    `json:"saturated"`
	// Lost: the generator had been lost before this interval ended (its figures are zeros).
	Lost bool `json:"lost"`
}

// GeneratorRun is one generator over the whole run (the merged summary's generators).
type GeneratorRun struct {
	Name      string `json:"name"`
	Part      string `json:"part"`
	Intervals int    `json:"intervals"`
	// Lost: it ended without its summary (killed, its worker gone); LostAfterS is the end of the
	// last interval it reported (0 when none).
	Lost               bool    `json:"lost"`
	LostAfterS         float64 `json:"lost_after_s"`
	Pages              int64   `json:"pages"`
	PagesFailed        int64   `json:"pages_failed"`
	Hits               int64   `json:"hits"`
	Share              float64 `json:"share"` // its hits ÷ the run's
	VUsMax             int     `json:"vus_max"`
	CPUMs              float64 `json:"cpu_ms"`
	RSSPeakBytes       int64   `json:"rss_peak_bytes"`
	SaturatedIntervals []int   `json:"saturated_intervals"`
	Target             string  `json:"target"`
}

// GeneratorOutput is what one generator printed: its interval lines in order (with histograms:
// loadgen --histograms) and its summary line, nil when it ended without one.
type GeneratorOutput struct {
	Name      string
	Intervals []Interval
	Summary   *Summary
}

// Merged is a spread run as one: the merged intervals and summary.
type Merged struct {
	Intervals []Interval
	Summary   *Summary
}

// Merge merges the generators' outputs of one run of spec. An error names the generator and the
// interval that cannot be merged (a line without histograms, histograms that disagree with the
// counts, out of order).
func Merge(spec *Spec, gens []GeneratorOutput) (*Merged, error) {
	if len(gens) == 0 {
		return nil, fmt.Errorf("merge: no generator")
	}
	interval := spec.Interval()
	n := 0
	for _, g := range gens {
		n = max(n, len(g.Intervals))
		for i, iv := range g.Intervals {
			if iv.Index != i {
				return nil, fmt.Errorf("merge: generator %s: interval line %d has index %d", g.Name, i+1, iv.Index)
			}
		}
	}
	total := newWindow()
	runs := make([]GeneratorRun, len(gens))
	for gi, g := range gens {
		runs[gi] = GeneratorRun{Name: g.Name, Intervals: len(g.Intervals), Lost: g.Summary == nil, SaturatedIntervals: []int{}}
		if g.Summary != nil {
			runs[gi].Part, runs[gi].Target = g.Summary.Part, g.Summary.Target
		}
		if k := len(g.Intervals); k > 0 && g.Summary == nil {
			runs[gi].LostAfterS = g.Intervals[k-1].TEndS
		}
	}
	out := &Merged{}
	firstErrorVUs := -1
	for k := 0; k < n; k++ {
		w := newWindow()
		iv := Interval{Event: "interval", Index: k, TStartS: (time.Duration(k) * interval).Seconds(), TEndS: (time.Duration(k) * interval).Seconds()}
		var schedMax float64
		for gi, g := range gens {
			share := GeneratorShare{Name: g.Name, Part: runs[gi].Part}
			if k >= len(g.Intervals) {
				if g.Summary == nil {
					share.Lost = true
					iv.Degraded = true
					iv.GeneratorsLost = append(iv.GeneratorsLost, g.Name)
				}
				iv.Generators = append(iv.Generators, share)
				continue
			}
			gv := &g.Intervals[k]
			page, err := decodeHist(gv.PageHist)
			if err != nil {
				return nil, fmt.Errorf("merge: generator %s interval %d: page_hist: %v", g.Name, k, err)
			}
			request, err := decodeHist(gv.RequestHist)
			if err != nil {
				return nil, fmt.Errorf("merge: generator %s interval %d: request_hist: %v", g.Name, k, err)
			}
			if page.TotalCount() != gv.Pages {
				return nil, fmt.Errorf("merge: generator %s interval %d: page_hist holds %d pages, the line says %d (was loadgen run with --histograms?)", g.Name, k, page.TotalCount(), gv.Pages)
			}
			if request.TotalCount() > gv.Hits {
				return nil, fmt.Errorf("merge: generator %s interval %d: request_hist holds %d requests, more than its %d hits", g.Name, k, request.TotalCount(), gv.Hits)
			}
			w.merge(&window{pages: gv.Pages, pagesFailed: gv.PagesFailed, hits: gv.Hits, bytes: gv.Bytes, dropped: gv.Dropped,
				errors: gv.Errors.counts(), page: page, request: request})
			iv.TEndS = max(iv.TEndS, gv.TEndS)
			iv.VUs += gv.VUs
			iv.VUsMax += gv.VUsMax
			iv.OpenConnections += gv.OpenConnections
			iv.ConnectionsClosedByServer += gv.ConnectionsClosedByServer
			gen := gv.Generator
			iv.Generator.CPUMs += gen.CPUMs
			iv.Generator.CPUUtil += gen.CPUUtil
			iv.Generator.RSSBytes += gen.RSSBytes
			iv.Generator.Goroutines += gen.Goroutines
			iv.Generator.Saturated = iv.Generator.Saturated || gen.Saturated
			schedMax = max(schedMax, gen.SchedP99Ms)
			share.VUs, share.Pages, share.PagesFailed, share.Hits = gv.VUs, gv.Pages, gv.PagesFailed, gv.Hits
			share.CPUMs, share.CPUUtil, share.RSSBytes, share.SchedP99Ms, share.Saturated = gen.CPUMs, gen.CPUUtil, gen.RSSBytes, gen.SchedP99Ms, gen.Saturated
			iv.Generators = append(iv.Generators, share)
			r := &runs[gi]
			r.Pages += gv.Pages
			r.PagesFailed += gv.PagesFailed
			r.Hits += gv.Hits
			r.VUsMax = max(r.VUsMax, gv.VUsMax)
			r.CPUMs += gen.CPUMs
			r.RSSPeakBytes = max(r.RSSPeakBytes, gen.RSSBytes)
			if gen.Saturated {
				r.SaturatedIntervals = append(r.SaturatedIntervals, k)
			}
		}
		iv.Generator.SchedP99Ms = schedMax
		for i := range iv.Generators {
			if w.hits > 0 {
				iv.Generators[i].Share = float64(iv.Generators[i].Hits) / float64(w.hits)
			}
		}
		secs := iv.TEndS - iv.TStartS
		iv.Pages, iv.PagesFailed, iv.Hits, iv.Bytes, iv.Dropped = w.pages, w.pagesFailed, w.hits, w.bytes, w.dropped
		iv.PagesPerS, iv.HitsPerS, iv.BytesPerS = rate(w.pages, secs), rate(w.hits, secs), rate(w.bytes, secs)
		iv.PageMs, iv.RequestMs, iv.Errors = latencyOf(w.page), latencyOf(w.request), errorsOf(&w.errors)
		iv.PageHist, iv.RequestHist = encodeHist(w.page), encodeHist(w.request)
		// the generators' last intervals end when each one's last page ended: a short one is partial
		iv.partial = secs < interval.Seconds()*0.999
		if firstErrorVUs < 0 && w.pagesFailed > 0 {
			firstErrorVUs = iv.VUsMax
		}
		total.merge(w)
		out.Intervals = append(out.Intervals, iv)
	}
	out.Summary = mergedSummary(spec, gens, out.Intervals, total, runs, firstErrorVUs)
	return out, nil
}

func mergedSummary(spec *Spec, gens []GeneratorOutput, intervals []Interval, w *window, runs []GeneratorRun, firstErrorVUs int) *Summary {
	sum := &Summary{Event: "summary", Contract: Contract, LoadtestID: spec.LoadtestID, Spec: spec, Intervals: len(intervals)}
	var opened, byServer int64
	for _, g := range gens {
		if s := g.Summary; s != nil {
			sum.DurationS = max(sum.DurationS, s.DurationS)
			sum.Interrupted = sum.Interrupted || s.Interrupted
			opened += s.Totals.ConnectionsOpened
			byServer += s.Totals.ConnectionsClosedByServer
			if sum.Target == "" {
				sum.Target = s.Target
			}
		}
	}
	if len(intervals) > 0 {
		sum.DurationS = max(sum.DurationS, intervals[len(intervals)-1].TEndS)
	}
	secs := sum.DurationS
	t := Totals{
		Pages: w.pages, PagesFailed: w.pagesFailed, PagesPerS: rate(w.pages, secs), Hits: w.hits, HitsPerS: rate(w.hits, secs),
		Bytes: w.bytes, PageMs: latencyOf(w.page), RequestMs: latencyOf(w.request), Errors: errorsOf(&w.errors), Dropped: w.dropped,
		ConnectionsOpened: opened, ConnectionsClosedByServer: byServer,
	}
	if n := w.pages + w.pagesFailed; n > 0 {
		t.ErrorRate = float64(w.pagesFailed) / float64(n)
	}
	g := GeneratorTotals{SaturatedIntervals: []int{}}
	for _, iv := range intervals {
		t.VUsMax = max(t.VUsMax, iv.VUsMax)
		g.CPUMs += iv.Generator.CPUMs
		g.RSSPeakBytes = max(g.RSSPeakBytes, iv.Generator.RSSBytes)
		if iv.Generator.Saturated {
			g.SaturatedIntervals = append(g.SaturatedIntervals, iv.Index)
		}
		if iv.Degraded {
			sum.Degraded = true
		}
	}
	if w.hits > 0 {
		g.CPUUsPerRequest = g.CPUMs * 1000 / float64(w.hits)
	}
	for i := range runs {
		if w.hits > 0 {
			runs[i].Share = float64(runs[i].Hits) / float64(w.hits)
		}
		if runs[i].Lost {
			sum.Degraded = true
			sum.GeneratorsLost = append(sum.GeneratorsLost, runs[i].Name)
		}
	}
	sort.Strings(sum.GeneratorsLost)
	sum.Totals = t
	sum.Outcomes = outcomes(spec, intervals, firstErrorVUs)
	sum.Thresholds, sum.ThresholdsPassed = EvaluateAll(spec.Thresholds, &Measures{Totals: t, Outcomes: sum.Outcomes})
	sum.Generator, sum.GeneratorSaturated = g, len(g.SaturatedIntervals) > 0
	sum.Generators = runs
	return sum
}

// mergedHist merges encoded histograms (tests and callers that check a merge).
func mergedHist(encoded ...string) (*hdrhistogram.Histogram, error) {
	out := newHist()
	for _, e := range encoded {
		h, err := decodeHist(e)
		if err != nil {
			return nil, err
		}
		out.Merge(h)
	}
	return out, nil
}

// MergedP90 is the p90 (ms) of the merged encoded histograms, as a merged interval reports it.
func MergedP90(encoded ...string) (float64, error) {
	h, err := mergedHist(encoded...)
	if err != nil {
		return 0, err
	}
	if h.TotalCount() == 0 {
		return 0, fmt.Errorf("no value")
	}
	return latencyOf(h).P90, nil
}
