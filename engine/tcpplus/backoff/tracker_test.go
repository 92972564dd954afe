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

// feed runs a tracker over samples (1 µs apart), answering W_max reads from wmax in order,
// and returns it with the indexes at which it asked to arm and whether it finished.
func feed(armCwnd uint32, wmax []uint32, samples ...Sample) (*tracker, []int, bool) {
	t := &tracker{armCwnd: armCwnd}
	var arms []int
	for i, smp := range samples {
		smp.AtMicros = int64(i)
		act := t.observe(smp)
		if act.ReadWmax {
			t.setWmax(wmax[0])
			wmax = wmax[1:]
		}
		if act.Arm {
			arms = append(arms, i)
		}
		if act.Done {
			return t, arms, true
		}
	}
	return t, arms, false
}

var twoDrops = DropStats{Dropped: 2, DataSeen: 2000}

// cubicFlow is a recorded-like cubic flow: loss at cwnd 105 (seen in Disorder), recovery to
// 73, second loss at 74 (below W_max 105), fast convergence to W_max ⌊74 · 1741/2048⌋ = 62.
func cubicFlow(ssthresh1, wmax2 uint32) []Sample {
	return []Sample{
		s(caOpen, 10, inf, 0),
		s(caDisorder, 120, inf, 0), // not armed outside Open
		s(caOpen, 100, inf, 0),     // arm here
		s(caOpen, 104, inf, 0),
		s(caDisorder, 105, inf, 0), // dupacks: cwnd frozen at the loss
		s(caRecovery, 104, ssthresh1, 1),
		s(caRecovery, 80, ssthresh1, 1),
		s(caOpen, ssthresh1, ssthresh1, 1), // read W_max, arm again
		s(caOpen, 74, ssthresh1, 1),
		s(caDisorder, 74, ssthresh1, 1),
		s(caRecovery, 73, 51, 2), // ⌊74 · 717/1024⌋
		s(caOpen, 51, 51, 2),     // read W_max: done
		s(caOpen, 52, 51, 2),     // not read
	}
}

func TestTrackerExactWhenDisorderWasSampled(t *testing.T) {
	tr, arms, done := feed(100, []uint32{105, 62}, cubicFlow(73, 62)...)
	if len(arms) != 2 || arms[0] != 2 || arms[1] != 7 || !done {
		t.Fatalf("armed at %v, done %v", arms, done)
	}
	f := tr.result("cubic", 717, twoDrops)
	if !f.Pass {
		t.Fatalf("problems: %v", f.Problems)
	}
	if f.CwndBefore != 105 || f.StateBefore != "disorder" || f.SsthreshAfter != 73 || f.CwndAfter != 73 {
		t.Errorf("flow %+v", f)
	}
	if f.ExpectedSsthreshMin != 73 || f.ExpectedSsthreshMax != 73 {
		t.Errorf("expected %d..%d, want exactly 73", f.ExpectedSsthreshMin, f.ExpectedSsthreshMax)
	}
	want := FastConvergence{WmaxAfterFirst: 105, CwndBefore: 74, StateBefore: "disorder", SsthreshAfter: 51, Wmax: 62,
		ExpectedWmaxMin: 62, ExpectedWmaxMax: 62, ExpectedSsthreshMin: 51, ExpectedSsthreshMax: 51}
	if f.FastConvergence != want {
		t.Errorf("fast convergence %+v\nwant %+v", f.FastConvergence, want)
	}
	if f.ArmedAtCwnd != 100 || f.TotalRetrans != 2 || f.RecoveryMicros != 2 || f.Readings != 12 {
		t.Errorf("flow %+v", f)
	}
}

func TestTrackerSlackWhenOnlyOpenWasSampled(t *testing.T) {
	tr, _, _ := feed(100, []uint32{105, 97},
		s(caOpen, 100, inf, 0),
		s(caOpen, 104, inf, 0),    // cwnd grew to 105 before the loss was declared, unseen
		s(caRecovery, 103, 99, 1), // ⌊105 · 973/1024⌋
		s(caOpen, 99, 99, 1),
		s(caOpen, 100, 99, 1),
		s(caRecovery, 99, 95, 2), // ⌊100 · 973/1024⌋
		s(caOpen, 95, 95, 2),
	)
	f := tr.result("wl_cubicp6", 973, twoDrops)
	if !f.Pass || f.StateBefore != "open" || f.ExpectedSsthreshMin != 98 || f.ExpectedSsthreshMax != 100 {
		t.Fatalf("flow %+v", f)
	}
	// W_max after the second loss: cwnd 100..102 × 1997/2048.
	if fc := f.FastConvergence; fc.ExpectedWmaxMin != 97 || fc.ExpectedWmaxMax != 99 {
		t.Errorf("fast convergence %+v", fc)
	}
}

// The check fails when the backoff is not the congestion control's β: TCP+'s reduction
// measured against cubic's β and the other way round, off-by-one reductions, and a fast
// convergence done with the wrong β (the mistake wl_cubicp would make by leaving cubic's W_max).
func TestTrackerWrongBackoffFails(t *testing.T) {
	for _, tc := range []struct {
		name              string
		ssthresh1, wmax2  uint32
		beta              uint32
		wantProblemPrefix string
	}{
		{"tcp+ reduction, cubic β", 99, 62, 717, "ssthresh after the loss"},
		{"cubic reduction, tcp+ β", 73, 62, 973, "ssthresh after the loss"},
		{"one too many", 74, 62, 717, "ssthresh after the loss"},
		{"one too few", 72, 62, 717, "ssthresh after the loss"},
		{"fast convergence with the wrong β", 73, 72, 717, "W_max after the second loss"},
	} {
		tr, _, _ := feed(100, []uint32{105, tc.wmax2}, cubicFlow(tc.ssthresh1, tc.wmax2)...)
		f := tr.result("cc", tc.beta, twoDrops)
		if f.Pass || !strings.Contains(strings.Join(f.Problems, ";"), tc.wantProblemPrefix) {
			t.Errorf("%s: pass %v, problems %v", tc.name, f.Pass, f.Problems)
		}
	}
}

func TestTrackerProblems(t *testing.T) {
	good := cubicFlow(73, 62)
	rto := append([]Sample(nil), good...)
	rto[5] = s(caLoss, 1, 73, 1)
	noFC := append([]Sample(nil), good[:8]...)
	noFC = append(noFC, s(caOpen, 110, 73, 1), s(caRecovery, 109, 77, 2), s(caOpen, 77, 77, 2))
	for _, tc := range []struct {
		name    string
		samples []Sample
		wmax    []uint32
		drop    DropStats
		want    string
	}{
		{"no drop", good, []uint32{105, 62}, DropStats{}, "dropped 0 segments"},
		{"three drops", good, []uint32{105, 62}, DropStats{Dropped: 3}, "dropped 3 segments"},
		{"gso", good, []uint32{105, 62}, DropStats{Dropped: 2, GSOSeen: 3}, "GSO"},
		{"rto", rto, []uint32{105, 62}, twoDrops, "retransmission timeout"},
		{"unfinished", good[:9], []uint32{105}, twoDrops, "did not complete"},
		{"cwnd after far above ssthresh", append(append(append([]Sample(nil), good[:7]...), s(caOpen, 80, 73, 1)), good[8:]...), []uint32{105, 62}, twoDrops, "cwnd after recovery is 80"},
		{"W_max after the first loss", good, []uint32{90, 62}, twoDrops, "W_max after the first loss is 90"},
		{"second loss above W_max", noFC, []uint32{105, 109}, twoDrops, "fast convergence not exercised"},
	} {
		tr, _, _ := feed(100, tc.wmax, tc.samples...)
		f := tr.result("cubic", 717, tc.drop)
		if f.Pass || !strings.Contains(strings.Join(f.Problems, ";"), tc.want) {
			t.Errorf("%s: pass %v, problems %v; want one containing %q", tc.name, f.Pass, f.Problems, tc.want)
		}
	}
}

func TestFindWmax(t *testing.T) {
	rec := func(port, cwnd, wmax uint32) []byte {
		b := make([]byte, 12)
		for i, v := range []uint32{port, cwnd, wmax} {
			b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
		}
		return b
	}
	raw := append(rec(40000, 10, 0), rec(40001, 99, 105)...)
	if got, err := findWmax(raw, 40001); err != nil || got != 105 {
		t.Errorf("findWmax = %d, %v", got, err)
	}
	if _, err := findWmax(raw, 40002); err == nil {
		t.Error("a missing socket was found")
	}
	if _, err := findWmax(raw[:13], 40000); err == nil {
		t.Error("a torn record was accepted")
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
	good, _, _ := feed(100, []uint32{105, 62}, cubicFlow(73, 62)...)
	bad, _, _ := feed(100, []uint32{105, 62}, cubicFlow(73, 62)...)
	r := &Report{Config: Config{N: 6, RateBitsPerSecond: 30e6, ArmCwnd: 100}, Kernel: "test",
		Flows: []Flow{good.result("cubic", 717, twoDrops), bad.result("wl_cubicp6", 973, twoDrops)}}
	var b bytes.Buffer
	WriteTable(&b, r)
	for _, want := range []string{"cubic", "0.7002", "105 (disorder)", "73..73", "wl_cubicp6", "FAIL", "62..62"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if p := r.Problems(); !strings.HasPrefix(p, "wl_cubicp6: ssthresh after the loss is 73, want 99..99") {
		t.Errorf("Problems() = %q", p)
	}
}
