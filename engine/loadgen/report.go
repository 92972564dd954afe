package loadgen

import (
	"strconv"
	"time"
)

// Interval is one interval's line (docs/loadtest.md): what completed in [t_start_s, t_end_s) of
// the run. A page counts in the interval in which it ended.
type Interval struct {
	Event           string   `json:"event"` // "interval"
	Index           int      `json:"index"`
	TStartS         float64  `json:"t_start_s"` // from the run's start
	TEndS           float64  `json:"t_end_s"`
	VUs             int      `json:"vus"`     // active at the interval's end (closed: running; open: busy)
	VUsMax          int      `json:"vus_max"` // most active at once during the interval
	Pages           int64    `json:"pages"`   // pages completed without error
	PagesFailed     int64    `json:"pages_failed"`
	PagesPerS       float64  `json:"pages_per_s"` // pages ÷ the interval's length
	Hits            int64    `json:"hits"`        // responses received (any status)
	HitsPerS        float64  `json:"hits_per_s"`
	Bytes           int64    `json:"bytes"` // response body bytes
	BytesPerS       float64  `json:"bytes_per_s"`
	PageMs          *Latency `json:"page_ms"`    // successful pages (open model: from the intended start); null when none
	RequestMs       *Latency `json:"request_ms"` // responses' exchanges (first byte sent → complete); null when none
	Errors          Errors   `json:"errors"`
	Dropped         int64    `json:"dropped"`          // open model: arrivals dropped (no VU free in time)
	OpenConnections int64    `json:"open_connections"` // at the interval's end
	// ConnectionsClosedByServer: connections the VUs closed during the interval that the server had
	// ended first (client.ConnGauge.ClosedByServer): kept connections a server drops under load.
	ConnectionsClosedByServer int64     `json:"connections_closed_by_server"`
	Generator                 Generator `json:"generator"`
	// Part is the generator's share (K/N) of a run spread over several (loadgen --part).
	Part string `json:"part,omitempty"`
	// PageHist and RequestHist are the interval's histograms of page_ms and request_ms (µs), in
	// HdrHistogram's V2 compressed encoding, base64 — with Config.Histograms (loadgen --histograms)
	// only: what merging several generators' intervals needs (Merge).
	PageHist    string `json:"page_hist,omitempty"`
	RequestHist string `json:"request_hist,omitempty"`
	// Degraded (merged intervals only): a generator of the run was lost before the interval ended,
	// so its VUs are missing from it; GeneratorsLost names them.
	Degraded       bool     `json:"degraded,omitempty"`
	GeneratorsLost []string `json:"generators_lost,omitempty"`
	// Generators (merged intervals only): each generator's share of the interval.
	Generators []GeneratorShare `json:"generators,omitempty"`
	// partial: the last interval, cut short when the last page ended or the run was interrupted.
	partial bool
}

// Generator is the load generator's own cost during an interval, so that a saturated generator is
// visible instead of being taken for a slow server.
type Generator struct {
	CPUMs      float64 `json:"cpu_ms"`   // user + system CPU time of the process
	CPUUtil    float64 `json:"cpu_util"` // cores: cpu_ms ÷ the interval's length
	RSSBytes   int64   `json:"rss_bytes"`
	Goroutines int     `json:"goroutines"`
	// SchedP99Ms is the 99th percentile of the time the process's goroutines waited for a CPU
	// once runnable (Go runtime/metrics /sched/latencies:seconds).
	SchedP99Ms float64 `json:"sched_p99_ms"`
	// Saturated: cpu_util reached 90 % of the CPUs the generator may use (GOMAXPROCS), or its
	// goroutines waited ≥ 10 ms (p99) for a CPU — page times then include the generator's delay.
	Saturated bool `json:"saturated"`
}

// Totals are the whole run's figures.
type Totals struct {
	Pages             int64    `json:"pages"`
	PagesFailed       int64    `json:"pages_failed"`
	PagesPerS         float64  `json:"pages_per_s"` // run mean
	Hits              int64    `json:"hits"`
	HitsPerS          float64  `json:"hits_per_s"`
	Bytes             int64    `json:"bytes"`
	PageMs            *Latency `json:"page_ms"`
	RequestMs         *Latency `json:"request_ms"`
	Errors            Errors   `json:"errors"`
	ErrorRate         float64  `json:"error_rate"` // pages_failed ÷ (pages + pages_failed); 0 with no page
	Dropped           int64    `json:"dropped"`
	VUsMax            int      `json:"vus_max"`
	ConnectionsOpened int64    `json:"connections_opened"`
	// ConnectionsClosedByServer: of the connections the VUs closed, those the server had ended first.
	ConnectionsClosedByServer int64 `json:"connections_closed_by_server"`
}

// Outcomes are study N's answers; each is null when it did not happen.
type Outcomes struct {
	// MaxPagesPerS and MaxHitsPerS are the highest rates over the scenario's full intervals
	// (inScenario): not the short last interval of the pages in flight after the last stage.
	MaxPagesPerS float64 `json:"max_pages_per_s"`
	MaxHitsPerS  float64 `json:"max_hits_per_s"`
	// VUsAtFirstError is the active VU count when the first page failed.
	VUsAtFirstError *int `json:"vus_at_first_error"`
	// VUsAtFirstSLAViolation is the VU count of the first interval whose sla.statistic of page
	// time exceeded sla.page_ms; FirstSLAViolationInterval is its index.
	VUsAtFirstSLAViolation    *int `json:"vus_at_first_sla_violation"`
	FirstSLAViolationInterval *int `json:"first_sla_violation_interval"`
	// PageMsAt maps each at_vus count to the first interval in which that many VUs were active.
	PageMsAt map[string]*AtVUs `json:"page_ms_at"`
}

// AtVUs is the page time of the interval in which a VU count was first reached.
type AtVUs struct {
	Index  int      `json:"index"`
	VUs    int      `json:"vus"`
	PageMs *Latency `json:"page_ms"`
}

// GeneratorTotals are the generator's cost over the run.
type GeneratorTotals struct {
	CPUMs           float64 `json:"cpu_ms"`
	CPUUsPerRequest float64 `json:"cpu_us_per_request"` // cpu_ms ÷ hits
	RSSPeakBytes    int64   `json:"rss_peak_bytes"`
	// SaturatedIntervals are the intervals in which the generator was saturated.
	SaturatedIntervals []int `json:"saturated_intervals"`
}

// Summary is the final line: the resolved spec, the totals, the outcomes and the thresholds.
type Summary struct {
	Event      string `json:"event"` // "summary"
	Contract   int    `json:"contract"`
	LoadtestID string `json:"loadtest_id"`
	Spec       *Spec  `json:"spec"`
	Target     string `json:"target"`
	// StartNs is the run's start on CLOCK_MONOTONIC (interval k covers start + k·interval …).
	StartNs int64 `json:"start_ns"`
	// Part is this generator's share, K/N, when the run is spread over several (loadgen --part).
	Part      string  `json:"part,omitempty"`
	DurationS float64 `json:"duration_s"` // start → the last page ended (or the interruption)
	// Interrupted: stopped by SIGINT/SIGTERM; pages in flight then were not counted.
	Interrupted        bool              `json:"interrupted"`
	Intervals          int               `json:"intervals"`
	Totals             Totals            `json:"totals"`
	Outcomes           Outcomes          `json:"outcomes"`
	Thresholds         []ThresholdResult `json:"thresholds"`
	ThresholdsPassed   bool              `json:"thresholds_passed"`
	Generator          GeneratorTotals   `json:"generator"`
	GeneratorSaturated bool              `json:"generator_saturated"`
	// A run merged from several generators (Merge): each one's figures; Degraded when one was
	// lost mid-run (GeneratorsLost names them; its intervals after the loss are marked).
	Generators     []GeneratorRun `json:"generators,omitempty"`
	Degraded       bool           `json:"degraded,omitempty"`
	GeneratorsLost []string       `json:"generators_lost,omitempty"`
}

// outcomes derives study N's outcomes from the intervals.
func outcomes(spec *Spec, intervals []Interval, firstErrorVUs int) Outcomes {
	o := Outcomes{PageMsAt: map[string]*AtVUs{}}
	if firstErrorVUs >= 0 {
		n := firstErrorVUs
		o.VUsAtFirstError = &n
	}
	for _, n := range spec.AtVUs {
		o.PageMsAt[strconv.Itoa(n)] = nil
	}
	rated := inScenario(spec, intervals)
	for i := range intervals {
		iv := &intervals[i]
		if rated[i] {
			o.MaxPagesPerS = max(o.MaxPagesPerS, iv.PagesPerS)
			o.MaxHitsPerS = max(o.MaxHitsPerS, iv.HitsPerS)
		}
		if o.VUsAtFirstSLAViolation == nil && iv.PageMs != nil && iv.PageMs.Statistic(spec.SLA.Statistic) > spec.SLA.PageMs {
			vus, idx := iv.VUs, iv.Index
			o.VUsAtFirstSLAViolation, o.FirstSLAViolationInterval = &vus, &idx
		}
		for _, n := range spec.AtVUs {
			key := strconv.Itoa(n)
			if o.PageMsAt[key] == nil && iv.VUsMax >= n {
				o.PageMsAt[key] = &AtVUs{Index: iv.Index, VUs: iv.VUsMax, PageMs: iv.PageMs}
			}
		}
	}
	return o
}

// inScenario says which intervals the peak rates are taken over: the full intervals that start
// before the scenario's last stage ends. The interval of the pages in flight after it, and the one
// cut short at the end or by an interruption, measure a fraction of a second whose rate says little
// of capacity. A run with no such interval (it ended or was stopped within its first) is rated
// over the intervals it has.
func inScenario(spec *Spec, intervals []Interval) []bool {
	end := spec.Scenario.Duration()
	in := make([]bool, len(intervals))
	found := false
	for i, iv := range intervals {
		in[i] = !iv.partial && time.Duration(iv.Index)*spec.Interval() < end
		found = found || in[i]
	}
	if !found {
		for i := range in {
			in[i] = true
		}
	}
	return in
}
