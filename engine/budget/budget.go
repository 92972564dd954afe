// Package budget checks a sweep's page loads against budgets: the load tests' threshold language
// (engine/loadgen, `METRIC OP NUMBER`) extended to per-protocol page metrics, comparisons between
// protocols, factors and aggregates over a sweep's configurations (docs/vitals.md, "Budgets"):
//
//	threshold := side OP side                OP: < <= > >= == !=
//	side      := NUMBER | [NUMBER "*"] term
//	term      := [AGG "("] [PROTOCOL "."] METRIC [")"]      AGG: min max mean median
//
// e.g. "h3.lcp_p75_ms < 2500", "h2.tow_median_ms < 0.9 * h1s.tow_median_ms",
// "max(h3.lcp_p75_ms) < 2500". Without an aggregate a threshold is checked per configuration (it
// fails if any configuration fails it or has no value for it); with every term aggregated it is
// one check over the sweep. `wirelab-engine thresholds` is its command; wirelab calls it at plan
// time (--check) and after a run on the sweep's stored loads.
package budget

import (
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
// schemas/load-record.schema.json).
var Bases = []struct{ Name, Field, Unit string }{
	{"tow", "tow_ms", "_ms"},
	{"tow_first_packet", "tow_first_packet_ms", "_ms"},
	{"plt", "plt_ms", "_ms"},
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
	opRE   = regexp.MustCompile(`^(.*?)(<=|>=|==|!=|<|>)(.*)$`)
	termRE = regexp.MustCompile(`^(?:([A-Za-z]+)\((.*)\)|(.*))$`)
	nameRE = regexp.MustCompile(`^([a-z0-9]+)\.([a-z0-9_]+)$`)
)

const grammar = `want SIDE OP SIDE with OP one of < <= > >= == != and SIDE a number or [FACTOR *] [AGG(]PROTOCOL.METRIC[)] (e.g. "h3.lcp_p75_ms < 2500", "h2.tow_median_ms < 0.9 * h1s.tow_median_ms", "max(h3.lcp_p75_ms) < 2500")`

// Parse parses a threshold; protocols are those the sweep loads (a protocol outside them is
// refused). Errors are *fielderr.Error with an empty field (the caller names the threshold).
func Parse(expr string, protocols []string) (Threshold, error) {
	bad := func(allowed string) error { return &fielderr.Error{Value: strconv.Quote(expr), Allowed: allowed} }
	m := opRE.FindStringSubmatch(expr)
	if m == nil {
		return Threshold{}, bad(grammar)
	}
	t := Threshold{Expr: expr, Op: m[2]}
	var err error
	if t.Left, err = parseSide(m[1], protocols); err != nil {
		return Threshold{}, bad(err.Error())
	}
	if t.Right, err = parseSide(m[3], protocols); err != nil {
		return Threshold{}, bad(err.Error())
	}
	if t.Left.Term == nil && t.Right.Term == nil {
		return Threshold{}, bad("compares two numbers; one side must name PROTOCOL.METRIC")
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
		return Threshold{}, bad("aggregates every term or none: a per-configuration value cannot be compared with one over the sweep")
	}
	return t, nil
}

func parseSide(text string, protocols []string) (Side, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return Side{}, fmt.Errorf("a side is empty; %s", grammar)
	}
	if v, err := strconv.ParseFloat(text, 64); err == nil {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Side{}, fmt.Errorf("%q is not a finite number", text)
		}
		return Side{Number: v}, nil
	}
	side := Side{Factor: 1}
	if f, rest, ok := strings.Cut(text, "*"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return Side{}, fmt.Errorf("factor %q is not a finite number; %s", strings.TrimSpace(f), grammar)
		}
		side.Factor, text = v, strings.TrimSpace(rest)
	}
	m := termRE.FindStringSubmatch(text)
	term := &Term{Agg: m[1]}
	name := strings.TrimSpace(m[2] + m[3])
	if term.Agg != "" && !slices.Contains(Aggregates, term.Agg) {
		return Side{}, fmt.Errorf("unknown aggregate %q; allowed: %s", term.Agg, contract.OrList(Aggregates))
	}
	n := nameRE.FindStringSubmatch(name)
	if n == nil {
		return Side{}, fmt.Errorf("%q is not PROTOCOL.METRIC; %s", name, grammar)
	}
	term.Protocol, term.Metric = n[1], n[2]
	if !slices.Contains(protocols, term.Protocol) {
		return Side{}, fmt.Errorf("protocol %q: the sweep loads %s", term.Protocol, contract.OrList(protocols))
	}
	if !slices.Contains(MetricNames(), term.Metric) {
		allowed := "unknown metric " + strconv.Quote(term.Metric)
		if slices.Contains(MetricNames(), term.Metric+"_ms") { // the unit left out
			return Side{}, fmt.Errorf("%s; did you mean %s_ms?", allowed, term.Metric)
		}
		if c := suggest.Closest(term.Metric, MetricNames()); c != "" {
			return Side{}, fmt.Errorf("%s; did you mean %s?", allowed, c)
		}
		return Side{}, fmt.Errorf("%s; metrics are BASE_STAT_ms (BASE %s; STAT %s), cls_STAT, bytes_down_STAT, %s",
			allowed, contract.OrList(baseNames()), contract.OrList(Stats), contract.OrList(Counts))
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

// Evaluate checks t against the configurations' figures.
func (t Threshold) Evaluate(configs []Config) Result {
	r := Result{Expr: t.Expr, Aggregated: t.Aggregated(), Failures: []Failure{}}
	if r.Aggregated {
		r.Checked = 1
		l, lok := t.Left.aggregate(configs)
		rt, rok := t.Right.aggregate(configs)
		if !lok || !rok || !compare(l, t.Op, rt) {
			r.Failures = append(r.Failures, Failure{Left: ptr(l, lok), Right: ptr(rt, rok)})
		}
	} else {
		for _, c := range configs {
			r.Checked++
			l, lok := t.Left.value(c)
			rt, rok := t.Right.value(c)
			if !lok || !rok || !compare(l, t.Op, rt) {
				r.Failures = append(r.Failures, Failure{TrialID: c.TrialID, Label: c.Label, Left: ptr(l, lok), Right: ptr(rt, rok)})
			}
		}
	}
	r.Pass = r.Checked > 0 && len(r.Failures) == 0
	return r
}

func ptr(v float64, ok bool) *float64 {
	if !ok {
		return nil
	}
	return &v
}

func (s Side) value(c Config) (float64, bool) {
	if s.Term == nil {
		return s.Number, true
	}
	v, ok := c.Values[s.Term.Protocol][s.Term.Metric]
	return s.Factor * v, ok
}

func (s Side) aggregate(configs []Config) (float64, bool) {
	if s.Term == nil {
		return s.Number, true
	}
	var xs []float64
	for _, c := range configs {
		if v, ok := c.Values[s.Term.Protocol][s.Term.Metric]; ok {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return 0, false
	}
	sort.Float64s(xs)
	return s.Factor * statistic(xs, s.Term.Agg), true
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
