package loadgen

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/client"
)

func TestParseThreshold(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Threshold
	}{
		{"pages_per_s >= 80", Threshold{Metric: "pages_per_s", Op: ">=", Limit: 80}},
		{"page_p95_ms<3000", Threshold{Metric: "page_p95_ms", Op: "<", Limit: 3000}},
		{"  errors == 0 ", Threshold{Metric: "errors", Op: "==", Limit: 0}},
		{"error_rate != 1e-2", Threshold{Metric: "error_rate", Op: "!=", Limit: 0.01}},
		{"vus_at_first_error > -1", Threshold{Metric: "vus_at_first_error", Op: ">", Limit: -1}},
		{"server_cpu_util_max <= 1.5", Threshold{Metric: "server_cpu_util_max", Op: "<=", Limit: 1.5}},
	} {
		got, err := ParseThreshold(tc.in)
		tc.want.Expr = tc.in
		if err != nil || got.Expr != tc.want.Expr || got.Metric != tc.want.Metric || got.Op != tc.want.Op || got.Limit != tc.want.Limit {
			t.Errorf("%q: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "errors", "errors = 0", "errors => 0", "errors < x", "errors < NaN", "errors < Inf", "bogus < 1", "errors < 1 2"} {
		if _, err := ParseThreshold(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
	// engine/budget's grammar parses them; the load tests' form is METRIC OP NUMBER only, and the
	// sweep's protocols, aggregates, factors and reversed sides are refused with that form's message.
	for _, bad := range []string{"h2.errors == 0", "max(errors) < 1", "page_p95_ms < 2 * page_p50_ms", "2 * page_p95_ms < 3000",
		"3000 > page_p95_ms", "1 < 2", "errors < "} {
		_, err := ParseThreshold(bad)
		if err == nil || !strings.Contains(err.Error(), "must be METRIC OP NUMBER") {
			t.Errorf("%q: %v; want the METRIC OP NUMBER refusal", bad, err)
		}
	}
	if _, err := ParseThreshold("page_p59_ms < 3000"); err == nil || !strings.HasSuffix(err.Error(), `unknown metric "page_p59_ms"; did you mean page_p50_ms?`) {
		t.Errorf("an unknown metric: %v", err)
	}
	if th, _ := ParseThreshold("server_cpu_util_max < 1"); !th.NeedsServer() {
		t.Error("server_cpu_util_max does not need server samples")
	}
}

func TestEvaluateThresholds(t *testing.T) {
	vus := 120
	m := &Measures{
		Totals:   Totals{PagesPerS: 85, PageMs: &Latency{P95: 2500}, Errors: Errors{Reset: 2}, ErrorRate: 0.01},
		Outcomes: Outcomes{VUsAtFirstError: &vus},
	}
	for _, tc := range []struct {
		expr  string
		pass  bool
		value float64 // NaN: null
	}{
		{"pages_per_s >= 80", true, 85},
		{"pages_per_s > 85", false, 85},
		{"page_p95_ms < 3000", true, 2500},
		{"errors == 0", false, 2},
		{"error_rate <= 0.01", true, 0.01},
		{"vus_at_first_error >= 100", true, 120},
		{"vus_at_first_sla_violation > 1000", true, math.NaN()}, // never violated: +Inf
		{"vus_at_first_sla_violation == 5", false, math.NaN()},
		{"request_p95_ms < 100", false, math.NaN()},    // no requests measured
		{"server_cpu_util_max < 2", false, math.NaN()}, // no server samples
	} {
		th, err := ParseThreshold(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		r := th.Evaluate(m)
		if r.Pass != tc.pass || (r.Value == nil) != math.IsNaN(tc.value) || r.Value != nil && *r.Value != tc.value {
			t.Errorf("%s: pass %v value %v; want %v, %v", tc.expr, r.Pass, r.Value, tc.pass, tc.value)
		}
	}
	res, passed := EvaluateAll([]string{"pages_per_s >= 80", "errors == 0"}, m)
	if passed || len(res) != 2 || !res[0].Pass || res[1].Pass {
		t.Errorf("EvaluateAll: %+v, %v", res, passed)
	}
}

// docs/loadtest.md lists exactly the threshold metrics, in this order (one owner: the table here).
func TestThresholdMetricsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/loadtest.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "<!-- threshold metrics -->")
	section, _, ok2 := strings.Cut(section, "<!-- /threshold metrics -->")
	if !ok || !ok2 {
		t.Fatal("docs/loadtest.md has no <!-- threshold metrics --> section")
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)` \\|").FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1])
	}
	if !slices.Equal(documented, MetricNames()) {
		t.Errorf("docs/loadtest.md lists %v;\nthe engine has %v", documented, MetricNames())
	}
}

// Errors by kind, from real failures.
func TestClassify(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := ln.Addr().String()
	ln.Close()
	_, refused := net.Dial("tcp", closedAddr)

	srv := httptest.NewUnstartedServer(nil) // a certificate nobody trusts
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	tlsErr := tls.Client(conn, &tls.Config{ServerName: "example.test"}).Handshake()
	conn.Close()

	a, b := net.Pipe()
	b.Close()
	_, eof := a.Read(make([]byte, 1))

	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()

	l, _ := client.New(client.Config{Protocol: client.H1, Timeout: time.Millisecond})
	stall, _ := net.Listen("tcp", "127.0.0.1:0") // accepts and never answers
	defer stall.Close()
	res, err := l.Load(context.Background(), "http://"+stall.Addr().String()+"/", nil)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		err    error
		status int
		want   Kind
	}{
		{fmt.Errorf("http://x/: %w", refused), 0, ConnectRefused},
		{fmt.Errorf("tls handshake: %w", tlsErr), 0, TLS},
		{fmt.Errorf("h2 connection: %w", eof), 0, Reset},
		{ctx.Err(), 0, Timeout},
		{res.Err, 0, Timeout},
		{errors.New("status 500"), 500, HTTPStatus},
		{nil, 204, HTTPStatus},
		{errors.New("body has 3 bytes, Content-Length said 4"), 200, Other},
	} {
		if got := Classify(tc.err, tc.status); got != tc.want {
			t.Errorf("%v (status %d): %s, want %s", tc.err, tc.status, got, tc.want)
		}
	}
}
