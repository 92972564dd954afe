package backoff

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

const inf = 2147483647 // ssthresh before the first reduction

func s(state uint8, cwnd, ssthresh, retrans uint32) Sample {
	return Sample{CAState: state, Cwnd: cwnd, Ssthresh: ssthresh, TotalRetrans: retrans}
}

// feed runs a tracker over samples (1 µs apart) and returns it with the index at which it
// asked to arm (−1 if never) and whether it finished.
func feed(armCwnd uint32, samples ...Sample) (*tracker, int, bool) {
	t := &tracker{armCwnd: armCwnd}
	armedAt := -1
	for i, smp := range samples {
		smp.AtMicros = int64(i)
		arm, done := t.observe(smp)
		if arm {
			armedAt = i
		}
		if done {
			return t, armedAt, true
		}
	}
	return t, armedAt, false
}

var oneDrop = DropStats{Dropped: 1, DataSeen: 2000}

func TestTrackerExactWhenDisorderWasSampled(t *testing.T) {
	tr, armedAt, done := feed(100,
		s(caOpen, 10, inf, 0),
		s(caDisorder, 120, inf, 0), // not armed outside Open
		s(caOpen, 100, inf, 0),     // arm here
		s(caOpen, 104, inf, 0),
		s(caDisorder, 105, inf, 0), // dupacks: cwnd frozen at the loss
		s(caRecovery, 104, 73, 1),  // ssthresh = ⌊105 · 717/1024⌋
		s(caRecovery, 80, 73, 1),
		s(caOpen, 73, 73, 1),
		s(caOpen, 74, 73, 1), // not read: finished
	)
	if armedAt != 2 || !done {
		t.Fatalf("armed at %d, done %v", armedAt, done)
	}
	f := tr.result("cubic", 717, oneDrop)
	if !f.Pass {
		t.Fatalf("problems: %v", f.Problems)
	}
	if f.CwndBefore != 105 || f.StateBefore != "disorder" || f.SsthreshAfter != 73 || f.CwndAfter != 73 {
		t.Errorf("flow %+v", f)
	}
	if f.ExpectedSsthreshMin != 73 || f.ExpectedSsthreshMax != 73 {
		t.Errorf("expected %d..%d, want exactly 73", f.ExpectedSsthreshMin, f.ExpectedSsthreshMax)
	}
	if f.ArmedAtCwnd != 100 || f.TotalRetrans != 1 || f.RecoveryMicros != 2 || f.Readings != 8 {
		t.Errorf("flow %+v", f)
	}
}

func TestTrackerSlackWhenOnlyOpenWasSampled(t *testing.T) {
	tr, _, _ := feed(100,
		s(caOpen, 100, inf, 0),
		s(caOpen, 104, inf, 0),    // cwnd grew to 105 before the loss was declared, unseen
		s(caRecovery, 103, 99, 1), // ⌊105 · 973/1024⌋
		s(caOpen, 99, 99, 1),
	)
	f := tr.result("wl_cubicp6", 973, oneDrop)
	if !f.Pass || f.StateBefore != "open" || f.ExpectedSsthreshMin != 98 || f.ExpectedSsthreshMax != 100 {
		t.Fatalf("flow %+v", f)
	}
}

// The check fails when the backoff is not the congestion control's β: here TCP+'s reduction
// measured against cubic's β, and cubic's against TCP+'s.
func TestTrackerWrongBackoffFails(t *testing.T) {
	run := func(ssthresh uint32) *tracker {
		tr, _, _ := feed(100,
			s(caOpen, 100, inf, 0),
			s(caDisorder, 105, inf, 0),
			s(caRecovery, 104, ssthresh, 1),
			s(caOpen, ssthresh, ssthresh, 1),
		)
		return tr
	}
	for _, tc := range []struct {
		ssthresh, beta uint32
	}{{99, 717}, {73, 973}, {74, 717}, {72, 717}} {
		f := run(tc.ssthresh).result("cc", tc.beta, oneDrop)
		if f.Pass || !strings.Contains(strings.Join(f.Problems, ";"), "ssthresh after the loss") {
			t.Errorf("ssthresh %d with β %d passed: %+v", tc.ssthresh, tc.beta, f)
		}
	}
}

func TestTrackerProblems(t *testing.T) {
	good := []Sample{s(caOpen, 100, inf, 0), s(caDisorder, 105, inf, 0), s(caRecovery, 104, 73, 1), s(caOpen, 73, 73, 1)}
	for _, tc := range []struct {
		name    string
		samples []Sample
		drop    DropStats
		want    string
	}{
		{"no drop", good, DropStats{}, "dropped 0 segments"},
		{"two drops", good, DropStats{Dropped: 2}, "dropped 2 segments"},
		{"gso", good, DropStats{Dropped: 1, GSOSeen: 3}, "GSO"},
		{"rto", []Sample{s(caOpen, 100, inf, 0), s(caDisorder, 105, inf, 0), s(caLoss, 1, 73, 1), s(caOpen, 5, 73, 2)}, oneDrop, "retransmission timeout"},
		{"unfinished", good[:3], oneDrop, "did not complete"},
		{"cwnd after far above ssthresh", []Sample{s(caOpen, 100, inf, 0), s(caDisorder, 105, inf, 0), s(caRecovery, 104, 73, 1), s(caOpen, 80, 73, 1)}, oneDrop, "cwnd after recovery is 80"},
	} {
		tr, _, _ := feed(100, tc.samples...)
		f := tr.result("cubic", 717, tc.drop)
		if f.Pass || !strings.Contains(strings.Join(f.Problems, ";"), tc.want) {
			t.Errorf("%s: pass %v, problems %v; want one containing %q", tc.name, f.Pass, f.Problems, tc.want)
		}
	}
}

func TestConfigDefaultsAndLimits(t *testing.T) {
	var c Config
	if err := c.fill(); err != nil {
		t.Fatal(err)
	}
	if c.N != 6 || c.RateBitsPerSecond != 30_000_000 || c.ArmCwnd != 100 || c.Timeout != 30*time.Second || c.Port != 5001 {
		t.Errorf("defaults %+v", c)
	}
	for _, bad := range []Config{{N: 33}, {N: -1}, {RateBitsPerSecond: 1000}, {ArmCwnd: 5}, {ArmCwnd: 5000}} {
		if err := bad.fill(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestReportOutput(t *testing.T) {
	tr, _, _ := feed(100, s(caOpen, 100, inf, 0), s(caDisorder, 105, inf, 0), s(caRecovery, 104, 73, 1), s(caOpen, 73, 73, 1))
	bad, _, _ := feed(100, s(caOpen, 100, inf, 0), s(caDisorder, 105, inf, 0), s(caRecovery, 104, 73, 1), s(caOpen, 73, 73, 1))
	r := &Report{Config: Config{N: 6, RateBitsPerSecond: 30e6, ArmCwnd: 100}, Kernel: "test",
		Flows: []Flow{tr.result("cubic", 717, oneDrop), bad.result("wl_cubicp6", 973, oneDrop)}}
	var b bytes.Buffer
	WriteTable(&b, r)
	for _, want := range []string{"cubic", "0.7002", "105 (disorder)", "73..73", "wl_cubicp6", "FAIL"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if p := r.Problems(); !strings.HasPrefix(p, "wl_cubicp6: ssthresh after the loss is 73, want 99..99") {
		t.Errorf("Problems() = %q", p)
	}
}
