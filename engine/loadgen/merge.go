package loadgen

import (
	"fmt"
	"sort"
	"time"
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
	return mergeFrom(spec, gens, 0)
}

// MergeFrom merges the generators' intervals from index from on (each generator's Intervals start
// at from: what it reported since intervals 0…from−1 were merged): the merged intervals from, …,
// without the summary (that needs the whole run: Merge). The work is that of the intervals given,
// whatever from is (wirelab loadtest --cluster's live progress: loadmerge --from K).
func MergeFrom(spec *Spec, gens []GeneratorOutput, from int) ([]Interval, error) {
	if from < 0 {
		return nil, fmt.Errorf("merge: from %d: want an interval index ≥ 0", from)
	}
	m, err := mergeFrom(spec, gens, from)
	if err != nil {
		return nil, err
	}
	return m.Intervals, nil
}

func mergeFrom(spec *Spec, gens []GeneratorOutput, from int) (*Merged, error) {
	if len(gens) == 0 {
		return nil, fmt.Errorf("merge: no generator")
	}
	names := make([]string, len(gens))
	for i, g := range gens {
		names[i] = g.Name
	}
	m := NewMerger(spec, names)
	m.base = from
	for gi, g := range gens {
		for _, iv := range g.Intervals {
			if _, err := m.Add(gi, iv); err != nil {
				return nil, err
			}
		}
	}
	for gi, g := range gens {
		if _, err := m.End(gi, g.Summary); err != nil {
			return nil, err
		}
	}
	return m.Finish()
}

// Merger merges the generators' intervals as they arrive (wirelab-engine loadtest --generators
// shows each merged interval as soon as every generator still running has reported it).
type Merger struct {
	spec     *Spec
	interval time.Duration
	names    []string
	gens     [][]Interval
	sums     []*Summary
	ended    []bool
	out      []Interval
	total    *window
	runs     []GeneratorRun
	firstErr int
	// base is the index of the first interval merged (MergeFrom): gens[g][j] is interval base+j.
	base int
}

// NewMerger merges the intervals of the generators names (Add's g is an index into it).
func NewMerger(spec *Spec, names []string) *Merger {
	m := &Merger{spec: spec, interval: spec.Interval(), names: names, gens: make([][]Interval, len(names)),
		sums: make([]*Summary, len(names)), ended: make([]bool, len(names)), total: newWindow(), firstErr: -1}
	for _, n := range names {
		m.runs = append(m.runs, GeneratorRun{Name: n, SaturatedIntervals: []int{}})
	}
	return m
}

// Add takes generator g's next interval line; it returns the merged intervals it completes.
func (m *Merger) Add(g int, iv Interval) ([]Interval, error) {
	if m.ended[g] {
		return nil, fmt.Errorf("merge: generator %s: an interval after its end", m.names[g])
	}
	if iv.Index != m.base+len(m.gens[g]) {
		return nil, fmt.Errorf("merge: generator %s: interval line %d has index %d, want %d", m.names[g], len(m.gens[g])+1, iv.Index, m.base+len(m.gens[g]))
	}
	m.gens[g] = append(m.gens[g], iv)
	return m.ready()
}

// End says generator g has ended: with its summary, or nil when it ended without one (lost: its
// later intervals are marked degraded).
func (m *Merger) End(g int, sum *Summary) ([]Interval, error) {
	m.ended[g], m.sums[g] = true, sum
	r := &m.runs[g]
	r.Lost, r.Intervals = sum == nil, len(m.gens[g])
	if sum != nil {
		r.Part, r.Target = sum.Part, sum.Target
	} else if k := len(m.gens[g]); k > 0 {
		r.LostAfterS = m.gens[g][k-1].TEndS
	}
	return m.ready()
}

// Finish merges what is left and the summary; every generator must have ended.
func (m *Merger) Finish() (*Merged, error) {
	n := 0
	for _, g := range m.gens {
		n = max(n, len(g))
	}
	for len(m.out) < n {
		if _, err := m.merge(m.base + len(m.out)); err != nil {
			return nil, err
		}
	}
	gens := make([]GeneratorOutput, len(m.names))
	for i := range gens {
		gens[i] = GeneratorOutput{Name: m.names[i], Intervals: m.gens[i], Summary: m.sums[i]}
	}
	return &Merged{Intervals: m.out, Summary: mergedSummary(m.spec, gens, m.out, m.total, m.runs, m.firstErr)}, nil
}

// Lost names the generators that ended without a summary so far.
func (m *Merger) Lost() []string {
	var out []string
	for g, r := range m.runs {
		if m.ended[g] && r.Lost {
			out = append(out, r.Name)
		}
	}
	return out
}

// ready merges the intervals every generator has reported or ended before.
func (m *Merger) ready() ([]Interval, error) {
	var out []Interval
	for {
		k, j := m.base+len(m.out), len(m.out)
		any := false
		for g := range m.gens {
			if len(m.gens[g]) > j {
				any = true
			} else if !m.ended[g] {
				return out, nil
			}
		}
		if !any {
			return out, nil
		}
		iv, err := m.merge(k)
		if err != nil {
			return out, err
		}
		out = append(out, iv)
	}
}

// merge merges interval k of every generator that reported it.
func (m *Merger) merge(k int) (Interval, error) {
	interval := m.interval
	w := newWindow()
	iv := Interval{Event: "interval", Index: k, TStartS: (time.Duration(k) * interval).Seconds(), TEndS: (time.Duration(k) * interval).Seconds()}
	var schedMax float64
	j := k - m.base
	for gi, name := range m.names {
		share := GeneratorShare{Name: name, Part: m.runs[gi].Part}
		if j >= len(m.gens[gi]) {
			if m.ended[gi] && m.sums[gi] == nil {
				share.Lost = true
				iv.Degraded = true
				iv.GeneratorsLost = append(iv.GeneratorsLost, name)
			}
			iv.Generators = append(iv.Generators, share)
			continue
		}
		gv := &m.gens[gi][j]
		share.Part = gv.Part
		if m.runs[gi].Part == "" {
			m.runs[gi].Part = gv.Part
		}
		page, err := decodeHist(gv.PageHist)
		if err != nil {
			return iv, fmt.Errorf("merge: generator %s interval %d: page_hist: %v", name, k, err)
		}
		request, err := decodeHist(gv.RequestHist)
		if err != nil {
			return iv, fmt.Errorf("merge: generator %s interval %d: request_hist: %v", name, k, err)
		}
		if page.TotalCount() != gv.Pages {
			return iv, fmt.Errorf("merge: generator %s interval %d: page_hist holds %d pages, the line says %d (was loadgen run with --histograms?)", name, k, page.TotalCount(), gv.Pages)
		}
		if request.TotalCount() > gv.Hits {
			return iv, fmt.Errorf("merge: generator %s interval %d: request_hist holds %d requests, more than its %d hits", name, k, request.TotalCount(), gv.Hits)
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
		r := &m.runs[gi]
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
	iv.measured(w, secs, true)
	// the generators' last intervals end when each one's last page ended: a short one is partial
	iv.partial = secs < interval.Seconds()*0.999
	if m.firstErr < 0 && w.pagesFailed > 0 {
		m.firstErr = iv.VUsMax
	}
	m.total.merge(w)
	m.out = append(m.out, iv)
	return iv, nil
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
	t := w.totals(sum.DurationS, intervals, opened, byServer)
	g := GeneratorTotals{SaturatedIntervals: []int{}}
	for _, iv := range intervals {
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
