// Package budget is wirelab's one threshold language, its parser and its evaluator (docs/vitals.md,
// "Budgets"): a sweep's budgets over its page loads — per-protocol page metrics, comparisons
// between protocols, factors and aggregates over the sweep's configurations — and the load tests'
// `METRIC OP NUMBER` (engine/loadgen), the same grammar over another vocabulary (LoadTest):
//
//	threshold := side OP side                OP: < <= > >= == !=
//	side      := NUMBER | [NUMBER "*"] term
//	term      := [AGG "("] [PROTOCOL "."] METRIC [")"]      AGG: min max mean median
//
// e.g. "h3.lcp_p75_ms < 2500", "h2.tow_median_ms < 0.9 * h1s.tow_median_ms",
// "max(h3.lcp_p75_ms) < 2500". Without an aggregate a threshold is checked per configuration (it
// fails if any configuration fails it or has no value for it); with every term aggregated it is
// one check over the sweep. `wirelab-engine thresholds` is its command; wirelab calls it at plan
// time (--check) and after a run on the sweep's stored loads. A load test's thresholds name its
// run's metrics, without protocol or aggregate, a number on the right (ParseWith, Check).
package budget

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/wirelab/wirelab/engine/contract"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/internal/suggest"
)

// Bases are the page metrics' bases and the load record field each is read from (a load record of
// schemas/load-record.schema.json; a field of its `client` object as client.NAME).
var Bases = []struct{ Name, Field, Unit string }{
	{"tow", "tow_ms", "_ms"},
	{"tow_first_packet", "tow_first_packet_ms", "_ms"},
	{"plt", "plt_ms", "_ms"},
	{"fcp", "client.first_contentful_paint_ms", "_ms"}, // Chromium's, in the record's client object
	{"lcp", "lcp_ms", "_ms"},
	{"speed_index", "speed_index_ms", "_ms"},
	{"visually_complete", "visually_complete_ms", "_ms"},
	{"cls", "cls", ""},
	{"bytes_down", "bytes_down", ""},
}

// Stats are the statistics of a base over a configuration's loads of one protocol.
var Stats = []string{"median", "mean", "p75", "p90", "p95", "p99", "min", "max"}

// Aggregates combine a term's per-configuration values over the sweep.
var Aggregates = []string{"min", "max", "mean", "median"}

// Counts are metrics of a protocol's loads that are not statistics of a base.
var Counts = []string{"errors", "error_rate", "loads"}

// MetricNames lists every metric: BASE_STAT[_ms] for each base and statistic, then the counts.
func MetricNames() []string {
	var out []string
	for _, b := range Bases {
		for _, s := range Stats {
			out = append(out, b.Name+"_"+s+b.Unit)
		}
	}
	return append(out, Counts...)
}

// Term is one side's measured part: AGG(PROTOCOL.METRIC) × Factor.
type Term struct {
	Agg      string // "" per configuration
	Protocol string
	Metric   string
}

// Side is a number, or a factor times a term.
type Side struct {
	Number float64
	Factor float64
	Term   *Term
}

// Threshold is one parsed budget.
type Threshold struct {
	Expr        string
	Left, Right Side
	Op          string
}

// Aggregated reports whether the threshold is one check over the sweep (its terms aggregated).
func (t Threshold) Aggregated() bool {
	for _, s := range []Side{t.Left, t.Right} {
		if s.Term != nil && s.Term.Agg != "" {
			return true
		}
	}
	return false
}

// Protocols are the protocols the threshold names.
func (t Threshold) Protocols() []string {
	var out []string
	for _, s := range []Side{t.Left, t.Right} {
		if s.Term != nil && !slices.Contains(out, s.Term.Protocol) {
			out = append(out, s.Term.Protocol)
		}
	}
	return out
}

var (
	opRE     = regexp.MustCompile(`^(.*?)(<=|>=|==|!=|<|>)(.*)$`)
	termRE   = regexp.MustCompile(`^(?:([A-Za-z]+)\((.*)\)|(.*))$`)
	nameRE   = regexp.MustCompile(`^([a-z0-9]+)\.([a-z0-9_]+)$`)
	metricRE = regexp.MustCompile(`^([A-Za-z0-9_]+)$`)
)

const grammar = `want SIDE OP SIDE with OP one of < <= > >= == != and SIDE a number or [FACTOR *] [AGG(]PROTOCOL.METRIC[)] (e.g. "h3.lcp_p75_ms < 2500", "h2.tow_median_ms < 0.9 * h1s.tow_median_ms", "max(h3.lcp_p75_ms) < 2500")`

// Vocabulary is what a threshold's terms may name: a sweep's page metrics of its protocols (Pages)
// or a load test's run metrics (LoadTest).
type Vocabulary struct {
	// Protocols a term names (PROTOCOL.METRIC); nil: a term is a bare METRIC.
	Protocols []string
	Metrics   []string
	// Aggregates: terms may be aggregated over configurations (AGG(…)).
	Aggregates bool
	// MetricOpNumber: only METRIC OP NUMBER (the load tests' form); every malformed threshold is
	// refused with Form.
	MetricOpNumber bool
	// Form is the malformed threshold's message (default: the sweep grammar's).
	Form string
	// Unknown is an unknown metric's message (default: the closest metric, or the list).
	Unknown func(metric string) string
}

// Pages is the vocabulary of a sweep's budgets: page metrics of the protocols it loads.
func Pages(protocols []string) Vocabulary {
	return Vocabulary{Protocols: protocols, Metrics: MetricNames(), Aggregates: true, Form: grammar, Unknown: unknownPageMetric}
}

func unknownPageMetric(name string) string {
	allowed := "unknown metric " + strconv.Quote(name)
	if slices.Contains(MetricNames(), name+"_ms") { // the unit left out
		return fmt.Sprintf("%s; did you mean %s_ms?", allowed, name)
	}
	if c := suggest.Closest(name, MetricNames()); c != "" {
		return fmt.Sprintf("%s; did you mean %s?", allowed, c)
	}
	return fmt.Sprintf("%s; metrics are BASE_STAT_ms (BASE %s; STAT %s), cls_STAT, bytes_down_STAT, %s",
		allowed, contract.OrList(baseNames()), contract.OrList(Stats), contract.OrList(Counts))
}

// Parse parses a sweep's threshold; protocols are those the sweep loads (a protocol outside them
// is refused). Errors are *fielderr.Error with an empty field (the caller names the threshold).
func Parse(expr string, protocols []string) (Threshold, error) {
	return ParseWith(expr, Pages(protocols))
}

// formError is a malformed threshold (as opposed to an unknown name).
type formError struct{ detail string }

func (e formError) Error() string { return e.detail }

func formf(format string, args ...any) error { return formError{fmt.Sprintf(format, args...)} }

// ParseWith parses a threshold whose terms name v's metrics. Errors are *fielderr.Error with an
// empty field (the caller names the threshold).
func ParseWith(expr string, v Vocabulary) (Threshold, error) {
	if v.Form == "" {
		v.Form = grammar
	}
	if v.Unknown == nil {
		v.Unknown = func(name string) string {
			if c := suggest.Closest(name, v.Metrics); c != "" {
				return fmt.Sprintf("unknown metric %q; did you mean %s?", name, c)
			}
			return "unknown metric; allowed: " + contract.OrList(v.Metrics)
		}
	}
	bad := func(err error) error {
		allowed := err.Error()
		var fe formError
		if v.MetricOpNumber && errors.As(err, &fe) {
			allowed = v.Form
		}
		return &fielderr.Error{Value: strconv.Quote(expr), Allowed: allowed}
	}
	m := opRE.FindStringSubmatch(expr)
	if m == nil {
		return Threshold{}, bad(formError{v.Form})
	}
	t := Threshold{Expr: expr, Op: m[2]}
	var err error
	if t.Left, err = parseSide(m[1], v); err != nil {
		return Threshold{}, bad(err)
	}
	if v.MetricOpNumber && (t.Left.Term == nil || t.Left.Factor != 1) {
		return Threshold{}, bad(formError{v.Form})
	}
	if v.MetricOpNumber {
		t.Right, err = parseNumber(m[3], v)
	} else {
		t.Right, err = parseSide(m[3], v)
	}
	if err != nil {
		return Threshold{}, bad(err)
	}
	if t.Left.Term == nil && t.Right.Term == nil {
		what := "PROTOCOL.METRIC"
		if v.Protocols == nil {
			what = "a METRIC"
		}
		return Threshold{}, bad(formf("compares two numbers; one side must name %s", what))
	}
	aggs := 0
	terms := 0
	for _, s := range []Side{t.Left, t.Right} {
		if s.Term != nil {
			terms++
			if s.Term.Agg != "" {
				aggs++
			}
		}
	}
	if aggs != 0 && aggs != terms {
		return Threshold{}, bad(formf("aggregates every term or none: a per-configuration value cannot be compared with one over the sweep"))
	}
	return t, nil
}

// parseNumber is the right side of METRIC OP NUMBER: one word, a finite number.
func parseNumber(text string, v Vocabulary) (Side, error) {
	text = strings.TrimSpace(text)
	if text == "" || strings.ContainsAny(text, " \t") {
		return Side{}, formError{v.Form}
	}
	n, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
		return Side{}, fmt.Errorf("%q is not a finite number", text)
	}
	return Side{Number: n}, nil
}

func parseSide(text string, v Vocabulary) (Side, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return Side{}, formf("a side is empty; %s", v.Form)
	}
	if n, err := strconv.ParseFloat(text, 64); err == nil {
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return Side{}, formf("%q is not a finite number", text)
		}
		return Side{Number: n}, nil
	}
	side := Side{Factor: 1}
	if f, rest, ok := strings.Cut(text, "*"); ok {
		n, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
			return Side{}, formf("factor %q is not a finite number; %s", strings.TrimSpace(f), v.Form)
		}
		side.Factor, text = n, strings.TrimSpace(rest)
	}
	m := termRE.FindStringSubmatch(text)
	term := &Term{Agg: m[1]}
	name := strings.TrimSpace(m[2] + m[3])
	if term.Agg != "" && !v.Aggregates {
		return Side{}, formf("%q: no aggregates here; %s", text, v.Form)
	}
	if term.Agg != "" && !slices.Contains(Aggregates, term.Agg) {
		return Side{}, formf("unknown aggregate %q; allowed: %s", term.Agg, contract.OrList(Aggregates))
	}
	if v.Protocols == nil {
		if !metricRE.MatchString(name) {
			return Side{}, formf("%q is not a METRIC; %s", name, v.Form)
		}
		term.Metric = name
	} else {
		n := nameRE.FindStringSubmatch(name)
		if n == nil {
			return Side{}, formf("%q is not PROTOCOL.METRIC; %s", name, v.Form)
		}
		term.Protocol, term.Metric = n[1], n[2]
		if !slices.Contains(v.Protocols, term.Protocol) {
			return Side{}, fmt.Errorf("protocol %q: the sweep loads %s", term.Protocol, contract.OrList(v.Protocols))
		}
	}
	if !slices.Contains(v.Metrics, term.Metric) {
		return Side{}, errors.New(v.Unknown(term.Metric))
	}
	side.Term = term
	return side, nil
}

func baseNames() []string {
	var out []string
	for _, b := range Bases {
		if b.Unit != "" {
			out = append(out, b.Name)
		}
	}
	return out
}

// Load is one stored page load, as wirelab hands it over: its configuration, protocol, whether it
// failed, and the load record's fields the bases read (absent or null: not measured).
type Load struct {
	TrialID  string              `json:"trial_id"`
	Label    string              `json:"label"`
	Protocol string              `json:"protocol"`
	Error    *string             `json:"error"`
	Values   map[string]*float64 `json:"values"`
}

// Config is a configuration's figures per protocol: metric → value (absent: no value).
type Config struct {
	TrialID string
	Label   string
	Values  map[string]map[string]float64 // protocol → metric → value
}

// Figures computes every configuration's metrics from its loads, in the order the loads name
// configurations first.
func Figures(loads []Load) []Config {
	var order []string
	by := map[string][]Load{}
	labels := map[string]string{}
	for _, l := range loads {
		if _, ok := by[l.TrialID]; !ok {
			order = append(order, l.TrialID)
			labels[l.TrialID] = l.Label
		}
		by[l.TrialID] = append(by[l.TrialID], l)
	}
	out := make([]Config, 0, len(order))
	for _, id := range order {
		c := Config{TrialID: id, Label: labels[id], Values: map[string]map[string]float64{}}
		protos := map[string][]Load{}
		for _, l := range by[id] {
			protos[l.Protocol] = append(protos[l.Protocol], l)
		}
		for p, ls := range protos {
			c.Values[p] = figures(ls)
		}
		out = append(out, c)
	}
	return out
}

func figures(ls []Load) map[string]float64 {
	v := map[string]float64{}
	failed := 0
	for _, l := range ls {
		if l.Error != nil {
			failed++
		}
	}
	v["loads"] = float64(len(ls))
	v["errors"] = float64(failed)
	v["error_rate"] = float64(failed) / float64(len(ls))
	for _, b := range Bases {
		var xs []float64
		for _, l := range ls {
			if l.Error != nil {
				continue
			}
			if x := l.Values[b.Field]; x != nil && !math.IsNaN(*x) {
				xs = append(xs, *x)
			}
		}
		if len(xs) == 0 {
			continue // not measured (lcp by the engine loader): no value
		}
		sort.Float64s(xs)
		for _, s := range Stats {
			v[b.Name+"_"+s+b.Unit] = statistic(xs, s)
		}
	}
	return v
}

// statistic of sorted xs: percentiles by linear interpolation between closest ranks (numpy's and
// pandas' default), so the figures equal those of wirelab's tables.
func statistic(xs []float64, s string) float64 {
	switch s {
	case "min":
		return xs[0]
	case "max":
		return xs[len(xs)-1]
	case "mean":
		sum := 0.0
		for _, x := range xs {
			sum += x
		}
		return sum / float64(len(xs))
	case "median":
		return quantile(xs, 0.5)
	}
	p, _ := strconv.Atoi(strings.TrimPrefix(s, "p"))
	return quantile(xs, float64(p)/100)
}

func quantile(xs []float64, q float64) float64 {
	pos := q * float64(len(xs)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(xs)-1)
	return xs[lo] + (pos-float64(lo))*(xs[hi]-xs[lo])
}

// Failure is one failed check: the configuration (empty for a check over the sweep) and the two
// sides' values (nil: no value).
type Failure struct {
	TrialID string   `json:"trial_id,omitempty"`
	Label   string   `json:"label,omitempty"`
	Left    *float64 `json:"left"`
	Right   *float64 `json:"right"`
}

// Result is a threshold's outcome over the sweep.
type Result struct {
	Expr       string    `json:"expr"`
	Aggregated bool      `json:"aggregated"`
	Checked    int       `json:"checked"` // configurations checked (1 for a check over the sweep)
	Pass       bool      `json:"pass"`
	Failures   []Failure `json:"failures"`
}

// Check evaluates t with value giving a term's measured value (false: none): the two sides'
// values (nil: none) and whether it passed — a side without a value fails it.
func (t Threshold) Check(value func(Term) (float64, bool)) (left, right *float64, pass bool) {
	side := func(s Side) *float64 {
		if s.Term == nil {
			return &s.Number
		}
		v, ok := value(*s.Term)
		if !ok {
			return nil
		}
		v *= s.Factor
		return &v
	}
	left, right = side(t.Left), side(t.Right)
	return left, right, left != nil && right != nil && compare(*left, t.Op, *right)
}

// Evaluate checks t against the configurations' figures.
func (t Threshold) Evaluate(configs []Config) Result {
	r := Result{Expr: t.Expr, Aggregated: t.Aggregated(), Failures: []Failure{}}
	if r.Aggregated {
		r.Checked = 1
		l, rt, pass := t.Check(func(term Term) (float64, bool) { return aggregate(term, configs) })
		if !pass {
			r.Failures = append(r.Failures, Failure{Left: l, Right: rt})
		}
	} else {
		for _, c := range configs {
			r.Checked++
			l, rt, pass := t.Check(func(term Term) (float64, bool) {
				v, ok := c.Values[term.Protocol][term.Metric]
				return v, ok
			})
			if !pass {
				r.Failures = append(r.Failures, Failure{TrialID: c.TrialID, Label: c.Label, Left: l, Right: rt})
			}
		}
	}
	r.Pass = r.Checked > 0 && len(r.Failures) == 0
	return r
}

// aggregate is term's per-configuration values over the configurations that have one, aggregated.
func aggregate(term Term, configs []Config) (float64, bool) {
	var xs []float64
	for _, c := range configs {
		if v, ok := c.Values[term.Protocol][term.Metric]; ok {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return 0, false
	}
	sort.Float64s(xs)
	return statistic(xs, term.Agg), true
}

func compare(a float64, op string, b float64) bool {
	switch op {
	case "<":
		return a < b
	case "<=":
		return a <= b
	case ">":
		return a > b
	case ">=":
		return a >= b
	case "==":
		return a == b
	}
	return a != b
}
