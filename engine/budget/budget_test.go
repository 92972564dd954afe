package budget

import (
	"strings"
	"testing"
)

func f(v float64) *float64 { return &v }

// loads of two configurations: "fast" where h3 beats h2, "slow" where it does not; the engine
// loader's loads have no LCP.
func sweepLoads() []Load {
	var ls []Load
	add := func(id, proto string, tow, lcp []float64, errs int) {
		for i, t := range tow {
			v := map[string]*float64{"tow_ms": f(t), "plt_ms": f(t + 10)}
			if lcp != nil {
				v["lcp_ms"] = f(lcp[i])
			}
			ls = append(ls, Load{TrialID: id, Label: "rtt=" + id, Protocol: proto, Values: v})
		}
		for range errs {
			e := "timeout"
			ls = append(ls, Load{TrialID: id, Label: "rtt=" + id, Protocol: proto, Error: &e, Values: map[string]*float64{"tow_ms": f(1e9)}})
		}
	}
	add("fast", "h2", []float64{100, 110, 120, 130}, []float64{1000, 1100, 1200, 1300}, 0)
	add("fast", "h3", []float64{80, 90, 100, 110}, []float64{900, 1000, 3000, 3100}, 1)
	add("slow", "h2", []float64{200, 210, 220}, nil, 0)
	add("slow", "h3", []float64{300, 310, 320}, nil, 0)
	return ls
}

func TestFigures(t *testing.T) {
	c := Figures(sweepLoads())
	if len(c) != 2 || c[0].TrialID != "fast" || c[1].TrialID != "slow" {
		t.Fatalf("configurations %+v", c)
	}
	h3 := c[0].Values["h3"]
	// Loads without an error only: the failed load's 1e9 ms counts in errors, not in the statistics.
	want := map[string]float64{"tow_median_ms": 95, "tow_mean_ms": 95, "tow_min_ms": 80, "tow_max_ms": 110,
		"tow_p75_ms": 102.5, "plt_median_ms": 105, "lcp_p75_ms": 3025, "errors": 1, "loads": 5, "error_rate": 0.2}
	for k, v := range want {
		if h3[k] != v {
			t.Errorf("h3 %s = %v, want %v", k, h3[k], v)
		}
	}
	if _, ok := c[1].Values["h2"]["lcp_median_ms"]; ok {
		t.Errorf("a configuration without LCP has an lcp figure: %v", c[1].Values["h2"])
	}
}

func TestEvaluate(t *testing.T) {
	configs := Figures(sweepLoads())
	protocols := []string{"h2", "h3"}
	for _, c := range []struct {
		expr     string
		pass     bool
		failures []string // configurations failing (empty id: the check over the sweep)
	}{
		{"h3.tow_median_ms < h2.tow_median_ms", false, []string{"slow"}},
		{"h3.tow_median_ms <= 1.5 * h2.tow_median_ms", true, nil},
		{"h3.tow_median_ms < 0.8 * h2.tow_median_ms", false, []string{"fast", "slow"}},
		{"h2.errors == 0", true, nil},
		{"h3.error_rate <= 0.1", false, []string{"fast"}},
		{"h3.lcp_p75_ms < 2500", false, []string{"fast", "slow"}}, // "slow" has no LCP: no value fails
		{"max(h2.tow_median_ms) < 250", true, nil},
		{"median(h3.tow_median_ms) < median(h2.tow_median_ms)", false, []string{""}},
		{"2000 > max(h2.lcp_p75_ms)", true, nil}, // configurations without the metric are left out of an aggregate
		{"max(h3.lcp_median_ms) > 1000", true, nil},
	} {
		th, err := Parse(c.expr, protocols)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		r := th.Evaluate(configs)
		var got []string
		for _, fl := range r.Failures {
			got = append(got, fl.TrialID)
		}
		if r.Pass != c.pass || strings.Join(got, ",") != strings.Join(c.failures, ",") {
			t.Errorf("%s: pass %v, failing %q; want %v, %q (%+v)", c.expr, r.Pass, got, c.pass, c.failures, r)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for expr, want := range map[string]string{
		"h3.lcp_p75_ms 2500":                       "want SIDE OP SIDE",
		"h3.lcp_p76_ms < 2500":                     `unknown metric "lcp_p76_ms"; did you mean lcp_p75_ms?`,
		"h1.tow_median_ms < 100":                   `protocol "h1": the sweep loads h2 or h3`,
		"sum(h2.tow_median_ms) < 100":              `unknown aggregate "sum"`,
		"max(h2.tow_median_ms) < h3.tow_median_ms": "aggregates every term or none",
		"1 < 2":                    "one side must name PROTOCOL.METRIC",
		"x * h2.tow_median_ms < 1": `factor "x" is not a finite number`,
		"h2.tow_median_ms < inf":   `"inf" is not a finite number`,
		"h2.lcp_p75 < 2500":        `unknown metric "lcp_p75"; did you mean lcp_p75_ms?`,
		"tow_median_ms < 100":      `"tow_median_ms" is not PROTOCOL.METRIC`,
	} {
		_, err := Parse(expr, []string{"h2", "h3"})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want an error with %q", expr, err, want)
		}
	}
}

// FCP is a base: Chromium's first_contentful_paint_ms, a field of the load record's client object.
func TestFCPBase(t *testing.T) {
	var ls []Load
	for i, v := range []float64{300, 100, 200} {
		vals := map[string]*float64{"tow_ms": f(50), "client.first_contentful_paint_ms": f(v)}
		ls = append(ls, Load{TrialID: "a", Protocol: "h2", Values: vals})
		if i == 0 { // an engine-loader load has no FCP: left out, not 0
			ls = append(ls, Load{TrialID: "a", Protocol: "h3", Values: map[string]*float64{"tow_ms": f(40)}})
		}
	}
	c := Figures(ls)
	if got := c[0].Values["h2"]["fcp_median_ms"]; got != 200 {
		t.Errorf("h2 fcp_median_ms = %v, want 200", got)
	}
	if _, ok := c[0].Values["h3"]["fcp_median_ms"]; ok {
		t.Error("h3 without FCP has an fcp figure")
	}
	th, err := Parse("h2.fcp_p75_ms <= 250", []string{"h2", "h3"})
	if err != nil {
		t.Fatal(err)
	}
	if r := th.Evaluate(c); !r.Pass {
		t.Errorf("h2.fcp_p75_ms <= 250: %+v", r)
	}
	th, _ = Parse("h3.fcp_p75_ms <= 250", []string{"h2", "h3"})
	if r := th.Evaluate(c); r.Pass || len(r.Failures) != 1 || r.Failures[0].Left != nil {
		t.Errorf("h3.fcp_p75_ms without FCP: %+v; want a failure with no value", r)
	}
	if _, err := Parse("h2.fcp_p75 < 1", []string{"h2"}); err == nil || !strings.Contains(err.Error(), "did you mean fcp_p75_ms?") {
		t.Errorf("fcp without its unit: %v", err)
	}
}

// ParseWith: the load tests' vocabulary is the same grammar over bare metrics, METRIC OP NUMBER.
func TestParseWithAVocabulary(t *testing.T) {
	v := Vocabulary{Metrics: []string{"errors", "page_p95_ms"}, MetricOpNumber: true, Form: "must be METRIC OP NUMBER"}
	th, err := ParseWith(" page_p95_ms<=3e3 ", v)
	if err != nil || th.Left.Term == nil || th.Left.Term.Metric != "page_p95_ms" || th.Left.Term.Protocol != "" || th.Op != "<=" || th.Right.Number != 3000 {
		t.Fatalf("%+v, %v", th, err)
	}
	l, r, pass := th.Check(func(term Term) (float64, bool) { return 2999, term.Metric == "page_p95_ms" })
	if !pass || *l != 2999 || *r != 3000 {
		t.Errorf("check: %v %v %v", *l, *r, pass)
	}
	if _, _, pass := th.Check(func(Term) (float64, bool) { return 0, false }); pass {
		t.Error("a metric without a value passed")
	}
	for expr, want := range map[string]string{
		"h2.errors < 1":       "must be METRIC OP NUMBER",
		"max(errors) < 1":     "must be METRIC OP NUMBER",
		"errors < 2 * errors": "must be METRIC OP NUMBER",
		"errors < 3s":         `"3s" is not a finite number`,
		"erors < 1":           `unknown metric "erors"; did you mean errors?`,
		"errors <":            "must be METRIC OP NUMBER",
	} {
		if _, err := ParseWith(expr, v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", expr, err, want)
		}
	}
	// Without MetricOpNumber a bare-metric vocabulary takes the whole grammar.
	v.MetricOpNumber = false
	if th, err := ParseWith("page_p95_ms < 2 * errors", v); err != nil || th.Right.Term.Metric != "errors" || th.Right.Factor != 2 {
		t.Errorf("%+v, %v", th, err)
	}
}
