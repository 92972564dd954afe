package bench

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/server/impl"
)

// The pages part's ratios are per protocol, of the medians over the rounds (one slow round of one
// tool moves the median, not the ratio's whole), in the order the protocols ran.
func TestRatiosAreMediansPerProtocol(t *testing.T) {
	rows := []PagesRow{
		{Protocol: "h2", Tool: "h2load", PagesPerS: 100, CPUUsPerReq: 20},
		{Protocol: "h2", Tool: "wirelab", PagesPerS: 90, CPUUsPerReq: 30},
		{Protocol: "h2", Tool: "h2load", PagesPerS: 300, CPUUsPerReq: 22},
		{Protocol: "h2", Tool: "wirelab", PagesPerS: 95, CPUUsPerReq: 31},
		{Protocol: "h2", Tool: "h2load", PagesPerS: 110, CPUUsPerReq: 21},
		{Protocol: "h2", Tool: "wirelab", PagesPerS: 10, CPUUsPerReq: 90},
		{Protocol: "h1s", Tool: "h2load", PagesPerS: 50},
		{Protocol: "h1s", Tool: "wirelab", PagesPerS: 60},
		{Protocol: "h1", Tool: "h2load", PagesPerS: 40}, // no wirelab row: no ratio
	}
	got := ratios(rows, []string{"h1", "h1s", "h2"})
	if len(got) != 2 || got[0].Protocol != "h1s" || got[1].Protocol != "h2" {
		t.Fatalf("rows %+v; want h1s and h2", got)
	}
	if r := got[0]; r.Ratio != 1.2 || r.Rounds != 1 {
		t.Errorf("h1s: %+v; want 60 ÷ 50 = 1.2 over 1 round", r)
	}
	if r := got[1]; r.WirelabPagesS != 90 || r.H2loadPagesS != 110 || r.Ratio != 0.82 || r.Rounds != 3 || r.WirelabUsReq != 31 || r.H2loadUsReq != 21 {
		t.Errorf("h2: %+v; want medians 90 and 110, ratio 0.82, CPU 31 and 21 µs, 3 rounds", r)
	}
}

// A hung h2load run (stopped after its duration and a minute) is a row with its error and no
// figures: it is left out of the medians, and a protocol whose every h2load run hung gets a
// ratio row that says so instead of a ratio.
func TestRatiosLeaveOutHungRuns(t *testing.T) {
	hung := "h2load did not end within its duration (10s) and a minute; stopped: …"
	rows := []PagesRow{
		{Protocol: "h1", Tool: "h2load", PagesPerS: 100},
		{Protocol: "h1", Tool: "wirelab", PagesPerS: 80},
		{Protocol: "h1", Tool: "h2load", Round: 2, Error: hung},
		{Protocol: "h1", Tool: "wirelab", Round: 2, PagesPerS: 90},
		{Protocol: "h1s", Tool: "h2load", Error: hung},
		{Protocol: "h1s", Tool: "wirelab", PagesPerS: 60},
	}
	got := ratios(rows, []string{"h1", "h1s"})
	if len(got) != 2 {
		t.Fatalf("rows %+v; want h1 and h1s", got)
	}
	if r := got[0]; r.Error != "" || r.H2loadPagesS != 100 || r.Ratio != 0.85 || r.Rounds != 1 {
		t.Errorf("h1: %+v; want h2load's one measured run (100) against wirelab's median 85: 0.85", r)
	}
	if r := got[1]; r.Error != "h2load: "+hung || r.Ratio != 0 {
		t.Errorf("h1s: %+v; want no ratio and the hang named", r)
	}
}

// The tools' body bytes per request are compared: h2load's from its "traffic" line, and a ratio
// row says when they differ by more than 2 % (the tools did not do the same work).
func TestRatiosCompareTheWork(t *testing.T) {
	out := "traffic: 84.39MB (88485842) total, 5.42MB (5688464) headers (space savings 0.00%), 77.54MB (81306568) data\n"
	m := h2loadData.FindStringSubmatch(out)
	if m == nil || m[1] != "81306568" {
		t.Fatalf("h2load's data bytes: %q; want 81306568", m)
	}
	rows := []PagesRow{
		{Protocol: "h1", Tool: "h2load", PagesPerS: 100, BodyBytesPerReq: 2163},
		{Protocol: "h1", Tool: "wirelab", PagesPerS: 90, BodyBytesPerReq: 2147},
		{Protocol: "h2", Tool: "h2load", PagesPerS: 100, BodyBytesPerReq: 2150},
		{Protocol: "h2", Tool: "wirelab", PagesPerS: 90, BodyBytesPerReq: 9500}, // the root alone
	}
	got := ratios(rows, []string{"h1", "h2"})
	if r := got[0]; r.Unequal || r.WirelabBytesReq != 2147 || r.H2loadBytesReq != 2163 {
		t.Errorf("h1: %+v; want 2147 and 2163 bytes, the same work", r)
	}
	if r := got[1]; !r.Unequal {
		t.Errorf("h2: %+v; want unequal work", r)
	}
}

// Every benchmark server's object decodes and passes its implementation's check (BenchKnobs
// panics on an object the contract refuses), and Apache's holds the threads that keep the h1
// runs' connections alive.
func TestBenchKnobsDecode(t *testing.T) {
	for _, name := range LoadgenServerNames() {
		s := BenchKnobs(name)
		ss, err := impl.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := ss.Check(s, []string{"h1", "h1s", "h2"}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	b, _ := json.Marshal(BenchKnobs("apache"))
	if !strings.Contains(string(b), `"threads_per_child":64`) || !strings.Contains(string(b), `"max_request_workers":256`) {
		t.Errorf("apache's benchmark object %s; want 64 threads per child, 256 at most", b)
	}
}

// The tools' connections per request are compared too: a server that answers Connection: close
// makes wirelab's VUs reopen a connection per request while h2load idles its clients — the same
// body bytes per request, not the same work. Kept connections (a few hundred in a run) pass.
func TestRatiosCompareTheConnections(t *testing.T) {
	rows := []PagesRow{
		{Protocol: "h1", Tool: "h2load", PagesPerS: 100, BodyBytesPerReq: 2150, Requests: 50000, Connections: 120},
		{Protocol: "h1", Tool: "wirelab", PagesPerS: 90, BodyBytesPerReq: 2147, Requests: 40000, Connections: 120},
		{Protocol: "h1s", Tool: "h2load", PagesPerS: 100, BodyBytesPerReq: 2150, Requests: 50000, Connections: 120},
		{Protocol: "h1s", Tool: "wirelab", PagesPerS: 90, BodyBytesPerReq: 2147, Requests: 40000, Connections: 23000},
	}
	got := ratios(rows, []string{"h1", "h1s"})
	if r := got[0]; r.Unequal || r.WirelabConnsReq != 0.003 || r.H2loadConnsReq != 0.0024 {
		t.Errorf("h1: %+v; want kept connections (0.003 and 0.0024 per request), the same work", r)
	}
	if r := got[1]; !r.Unequal || r.Ratio != 0.9 || !strings.Contains(r.UnequalReason, "connections per request 0.5750 (wirelab) vs 0.0024 (h2load)") {
		t.Errorf("h1s: %+v; want unequal work named by its connections, the ratio 0.9 kept", r)
	}
	b, _ := json.Marshal(got[1])
	if !strings.Contains(string(b), `"ratio":0.9`) || !strings.Contains(string(b), `"unequal_work":true`) || !strings.Contains(string(b), `"unequal_reason":"connections per request`) {
		t.Errorf("JSON %s; want the ratio, unequal_work and its reason", b)
	}
}
