package loadgen

import (
	"math"
	"slices"

	"github.com/wirelab/wirelab/engine/budget"
	"github.com/wirelab/wirelab/engine/contract"
)

// Thresholds are k6-like pass/fail checks on a run's figures: `METRIC OP NUMBER`, e.g.
// "pages_per_s >= 80", "page_p95_ms < 3000", "errors == 0" — engine/budget's threshold language
// over the run's metrics (one parser and evaluator for load tests and sweeps' budgets).

// Threshold is one parsed check.
type Threshold struct {
	Expr   string
	Metric string
	Op     string // < <= > >= == !=
	Limit  float64
	parsed budget.Threshold
}

// ThresholdResult is a threshold's outcome: Value is the metric's measured value (null when it
// could not be measured: no page completed, or a server metric without server samples).
type ThresholdResult struct {
	Expr   string   `json:"expr"`
	Metric string   `json:"metric"`
	Op     string   `json:"op"`
	Limit  float64  `json:"limit"`
	Value  *float64 `json:"value"`
	Pass   bool     `json:"pass"`
}

// Measures are what thresholds are evaluated on.
type Measures struct {
	Totals   Totals
	Outcomes Outcomes
	// ServerCPUUtilMax is the highest interval CPU use of the server under test in cores (server
	// samples: the lab's `loadtest`); nil without samples.
	ServerCPUUtilMax *float64
}

// metric is one threshold metric: its value, or false when it has none.
type metric struct {
	name string
	doc  string
	// server: needs the lab's server samples (evaluated by `wirelab-engine loadtest`).
	server bool
	value  func(m *Measures) (float64, bool)
}

func latencyMetric(name, doc string, pick func(*Totals) *Latency, stat string) metric {
	return metric{name: name, doc: doc, value: func(m *Measures) (float64, bool) {
		if l := pick(&m.Totals); l != nil {
			return l.Statistic(stat), true
		}
		return 0, false
	}}
}

// vusOutcome: a VU count that never happened counts as +Inf (beyond any count the run reached).
func vusOutcome(v *int) (float64, bool) {
	if v == nil {
		return math.Inf(1), true
	}
	return float64(*v), true
}

// statistics are the latency statistics: the schema's sla.statistic values.
func statistics() []string {
	p, err := contract.Property(contract.LoadtestSpec, "sla", "statistic")
	if err != nil {
		panic(err) // the embedded schema is the engine's own
	}
	var out []string
	for _, v := range p["enum"].([]any) {
		out = append(out, v.(string))
	}
	return out
}

// Metrics are the threshold metrics, in the order docs/loadtest.md lists them (a test keeps the
// two in step).
var Metrics = func() []metric {
	page := func(t *Totals) *Latency { return t.PageMs }
	req := func(t *Totals) *Latency { return t.RequestMs }
	ms := []metric{
		{name: "pages_per_s", doc: "successful pages per second, run mean", value: func(m *Measures) (float64, bool) { return m.Totals.PagesPerS, true }},
		{name: "pages_per_s_max", doc: "the highest pages per second over the scenario's full intervals", value: func(m *Measures) (float64, bool) { return m.Outcomes.MaxPagesPerS, true }},
		{name: "hits_per_s", doc: "responses per second, run mean", value: func(m *Measures) (float64, bool) { return m.Totals.HitsPerS, true }},
		{name: "hits_per_s_max", doc: "the highest responses per second over the scenario's full intervals", value: func(m *Measures) (float64, bool) { return m.Outcomes.MaxHitsPerS, true }},
	}
	for _, s := range statistics() {
		ms = append(ms, latencyMetric("page_"+s+"_ms", "page time "+s+" over the run (successful pages)", page, s))
	}
	for _, s := range statistics() {
		ms = append(ms, latencyMetric("request_"+s+"_ms", "request exchange time "+s+" over the run", req, s))
	}
	return append(ms,
		metric{name: "errors", doc: "errors of every kind", value: func(m *Measures) (float64, bool) { return float64(m.Totals.Errors.Total()), true }},
		metric{name: "error_rate", doc: "failed pages ÷ pages finished", value: func(m *Measures) (float64, bool) { return m.Totals.ErrorRate, true }},
		metric{name: "dropped", doc: "open model: arrivals dropped", value: func(m *Measures) (float64, bool) { return float64(m.Totals.Dropped), true }},
		metric{name: "connections_closed_by_server", doc: "connections the server ended before the VUs closed them (kept connections it dropped)", value: func(m *Measures) (float64, bool) {
			return float64(m.Totals.ConnectionsClosedByServer), true
		}},
		metric{name: "vus_at_first_error", doc: "active VUs at the first failed page (+Inf when none failed)", value: func(m *Measures) (float64, bool) { return vusOutcome(m.Outcomes.VUsAtFirstError) }},
		metric{name: "vus_at_first_sla_violation", doc: "VUs of the first interval violating the SLA (+Inf when none did)", value: func(m *Measures) (float64, bool) { return vusOutcome(m.Outcomes.VUsAtFirstSLAViolation) }},
		metric{name: "server_cpu_util_max", doc: "the server's highest interval CPU use in cores (needs server samples: `loadtest`)", server: true, value: func(m *Measures) (float64, bool) {
			if m.ServerCPUUtilMax == nil {
				return 0, false
			}
			return *m.ServerCPUUtilMax, true
		}},
	)
}()

// MetricNames lists the threshold metrics.
func MetricNames() []string {
	out := make([]string, len(Metrics))
	for i, m := range Metrics {
		out[i] = m.name
	}
	return out
}

func findMetric(name string) (metric, bool) {
	i := slices.IndexFunc(Metrics, func(m metric) bool { return m.name == name })
	if i < 0 {
		return metric{}, false
	}
	return Metrics[i], true
}

// loadTest is the load tests' vocabulary in engine/budget's one threshold language: METRIC OP
// NUMBER over the run's metrics (no protocol, no aggregate).
var loadTest = budget.Vocabulary{
	Metrics:        MetricNames(),
	MetricOpNumber: true,
	Form:           `must be METRIC OP NUMBER with OP one of < <= > >= == != (e.g. "page_p95_ms < 3000")`,
}

// ParseThreshold parses `METRIC OP NUMBER` with engine/budget's parser. Errors are
// *fielderr.Error with an empty field (the caller prefixes thresholds[i]).
func ParseThreshold(expr string) (Threshold, error) {
	t, err := budget.ParseWith(expr, loadTest)
	if err != nil {
		return Threshold{}, err
	}
	return Threshold{Expr: expr, Metric: t.Left.Term.Metric, Op: t.Op, Limit: t.Right.Number, parsed: t}, nil
}

// NeedsServer reports whether the threshold's metric needs the lab's server samples.
func (t Threshold) NeedsServer() bool {
	m, _ := findMetric(t.Metric)
	return m.server
}

// Evaluate checks the threshold against m with engine/budget's evaluator. A metric without a
// value fails; an infinite one (a VU count never reached) compares as such and is reported null.
func (t Threshold) Evaluate(m *Measures) ThresholdResult {
	res := ThresholdResult{Expr: t.Expr, Metric: t.Metric, Op: t.Op, Limit: t.Limit}
	v, _, pass := t.parsed.Check(func(term budget.Term) (float64, bool) {
		mt, _ := findMetric(term.Metric)
		return mt.value(m)
	})
	res.Pass = pass
	if v != nil && !math.IsInf(*v, 0) {
		res.Value = v
	}
	return res
}

// EvaluateAll checks every threshold of the spec; passed is true when all pass.
func EvaluateAll(exprs []string, m *Measures) (results []ThresholdResult, passed bool) {
	results, passed = []ThresholdResult{}, true
	for _, e := range exprs {
		t, err := ParseThreshold(e)
		if err != nil { // Decode has refused it already
			panic(err)
		}
		r := t.Evaluate(m)
		results = append(results, r)
		passed = passed && r.Pass
	}
	return results, passed
}
