package backoff

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

const inf = 2147483647 // ssthresh before the first reduction

// s is a sample; t advances in µs steps of 1 unless set.
func s(state uint8, cwnd, ssthresh, retrans uint32) Sample {
	return Sample{CAState: state, Cwnd: cwnd, Ssthresh: ssthresh, TotalRetrans: retrans}
}

// feed runs a tracker over samples (1 µs apart unless they carry a time), answering kernel
// reads from kernel in order, and returns it with the indexes at which it armed and whether it
// finished.
func feed(armCwnd uint32, kernel []KernelState, samples ...Sample) (*tracker, []int, bool) {
	t := &tracker{armCwnd: armCwnd}
	var arms []int
	for i, smp := range samples {
		if smp.AtMicros == 0 {
			smp.AtMicros = int64(i)
		}
		act := t.observe(smp)
		if act.ReadKernel {
			t.setKernel(kernel[0])
			kernel = kernel[1:]
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

// cubicKernel is what the socket holds after each of cubicFlow's recoveries: the first loss at
// cwnd 105 (W_max 105), the second at 74 with fast convergence to ⌊74 · 1741/2048⌋ = 62.
var cubicKernel = []KernelState{
	{Cwnd: 73, Ssthresh: 73, PriorCwnd: 105, Wmax: 105},
	{Cwnd: 51, Ssthresh: 51, PriorCwnd: 74, Wmax: 62},
}

// cubicFlow is a recorded-like cubic flow whose first reduction sets ssthresh1.
func cubicFlow(ssthresh1 uint32) []Sample {
	return []Sample{
		s(caOpen, 10, inf, 0),
		s(caDisorder, 120, inf, 0), // not armed outside Open
		s(caOpen, 100, inf, 0),     // arm here
		s(caOpen, 104, inf, 0),
		s(caDisorder, 105, inf, 0), // dupacks: cwnd frozen at the loss
		s(caRecovery, 104, ssthresh1, 1),
		s(caRecovery, 80, ssthresh1, 1),
		s(caOpen, 73, ssthresh1, 1), // read the kernel, arm again
		s(caOpen, 74, ssthresh1, 1),
		s(caDisorder, 74, ssthresh1, 1),
		s(caRecovery, 73, 51, 2), // ⌊74 · 717/1024⌋
		s(caOpen, 51, 51, 2),     // read the kernel: done
		s(caOpen, 52, 51, 2),     // not read
	}
}

func TestTrackerCubicFlow(t *testing.T) {
	tr, arms, done := feed(100, cubicKernel, cubicFlow(73)...)
	if len(arms) != 2 || arms[0] != 2 || arms[1] != 7 || !done {
		t.Fatalf("armed at %v, done %v", arms, done)
	}
	f := tr.result("cubic", 717, twoDrops, nil)
	if !f.Pass {
		t.Fatalf("problems: %v", f.Problems)
	}
	if f.CwndBefore != 105 || f.SampledCwndBefore != 105 || f.SampledStateBefore != "disorder" ||
		f.SsthreshAfter != 73 || f.ExpectedSsthresh != 73 || f.CwndAfter != 73 || !f.CwndAfterChecked {
		t.Errorf("flow %+v", f)
	}
	want := FastConvergence{WmaxAfterFirst: 105, CwndBefore: 74, SsthreshAfter: 51, ExpectedSsthresh: 51, Wmax: 62, ExpectedWmax: 62}
	if f.FastConvergence != want {
		t.Errorf("fast convergence %+v\nwant %+v", f.FastConvergence, want)
	}
	if f.ArmedAtCwnd != 100 || f.TotalRetrans != 2 || f.RecoveryMicros != 2 || f.Readings != 12 {
		t.Errorf("flow %+v", f)
	}
}

// A reading during which the sampler was descheduled does not vouch for cwnd after recovery.
func TestTrackerSlowReadingIsNotChecked(t *testing.T) {
	samples := cubicFlow(73)
	samples[7].Cwnd, samples[7].EndMicros = 80, 50_000 // read 50 ms after it started
	tr, _, _ := feed(100, cubicKernel, samples...)
	f := tr.result("cubic", 717, twoDrops, nil)
	if !f.Pass || f.CwndAfterChecked || f.CwndAfter != 80 {
		t.Fatalf("flow %+v", f)
	}
}

// A sampler descheduled for a whole recovery sees the reduction only as a retransmission and a
// new ssthresh, already in Open; the kernel's record still makes the check exact, and the late
// cwnd after recovery is not held against the congestion control.
func TestTrackerMissedRecovery(t *testing.T) {
	at := func(us int64, smp Sample) Sample { smp.AtMicros = us; return smp }
	tr, arms, done := feed(100, []KernelState{
		{Ssthresh: 99, PriorCwnd: 105, Wmax: 105},
		{Ssthresh: 95, PriorCwnd: 100, Wmax: 97},
	},
		at(1, s(caOpen, 100, inf, 0)),
		at(2, s(caOpen, 101, inf, 0)),
		at(90_000, s(caOpen, 104, 99, 1)), // 90 ms later: loss, recovery and growth all unseen
		at(90_001, s(caOpen, 104, 99, 1)),
		at(90_002, s(caRecovery, 103, 95, 2)), // ⌊100 · 973/1024⌋
		at(90_003, s(caOpen, 95, 95, 2)),
	)
	if len(arms) != 2 || !done {
		t.Fatalf("armed at %v, done %v", arms, done)
	}
	f := tr.result("wl_cubicp6", 973, twoDrops, nil)
	if !f.Pass || f.CwndAfterChecked || f.SampledStateBefore != "open" || f.CwndBefore != 105 || f.ExpectedSsthresh != 99 {
		t.Fatalf("flow %+v", f)
	}
}

// The check fails whenever the numbers are not the congestion control's β: each case changes
// one thing in an otherwise passing cubic flow.
func TestTrackerWrongBackoffFails(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ss1    uint32                      // TCP_INFO ssthresh at the first reduction
		beta   uint32                      // β the flow is checked against
		kernel func(k []KernelState)       // changes to the kernel's record
		drop   *DropStats                  // the dropper's count, if not twoDrops
		edit   func(smp []Sample) []Sample // changes to the samples
		undos  Undos                       // what the kernel took back
		want   string
	}{
		{name: "tcp+ reduction checked with cubic's β", ss1: 99, beta: 717, want: "ssthresh after the loss is 99, want 73"},
		{name: "cubic reduction checked with tcp+'s β", ss1: 73, beta: 973, want: "ssthresh after the loss is 73, want 99"},
		{name: "one too many", ss1: 74, beta: 717, want: "ssthresh after the loss is 74"},
		{name: "one too few", ss1: 72, beta: 717, want: "ssthresh after the loss is 72"},
		{name: "fast convergence with cubic's β under TCP+", ss1: 73, beta: 717, kernel: func(k []KernelState) { k[1].Wmax = 72 }, want: "W_max after the second loss is 72, want 62"},
		{name: "W_max after the first loss", ss1: 73, beta: 717, kernel: func(k []KernelState) { k[0].Wmax = 90 }, want: "W_max after the first loss is 90"},
		{name: "second loss above W_max", ss1: 73, beta: 717, kernel: func(k []KernelState) { k[1].PriorCwnd = 110; k[1].Wmax = 110 }, want: "fast convergence not exercised"},
		{name: "TCP_INFO and socket disagree", ss1: 73, beta: 717, kernel: func(k []KernelState) { k[0].Ssthresh = 80 }, want: "differs from the socket's 80"},
		{name: "disorder sample differs from the cwnd at the loss", ss1: 73, beta: 717, kernel: func(k []KernelState) { k[0].PriorCwnd, k[0].Wmax = 106, 106 }, want: "inconsistent"},
		{name: "no drop", ss1: 73, beta: 717, drop: &DropStats{}, want: "dropped 0 segments"},
		{name: "three drops", ss1: 73, beta: 717, drop: &DropStats{Dropped: 3}, want: "dropped 3 segments"},
		{name: "gso", ss1: 73, beta: 717, drop: &DropStats{Dropped: 2, GSOSeen: 3}, want: "GSO"},
		{name: "rto", ss1: 73, beta: 717, edit: func(smp []Sample) []Sample { smp[5] = s(caLoss, 1, 73, 1); return smp }, want: "retransmission timeout"},
		{name: "unfinished", ss1: 73, beta: 717, edit: func(smp []Sample) []Sample { return smp[:9] }, want: "did not complete"},
		{name: "the kernel undid a reduction", ss1: 73, beta: 717, undos: Undos{"TCPPartialUndo": 1}, want: "took a reduction back as spurious (TCPPartialUndo +1)"},
		{name: "cwnd after far above ssthresh", ss1: 73, beta: 717, edit: func(smp []Sample) []Sample { smp[7].Cwnd = 80; return smp }, want: "cwnd after recovery is 80"},
	} {
		kernel := append([]KernelState(nil), cubicKernel...)
		kernel[0].Ssthresh = tc.ss1
		if tc.kernel != nil {
			tc.kernel(kernel)
		}
		samples := cubicFlow(tc.ss1)
		if tc.edit != nil {
			samples = tc.edit(samples)
		}
		drop := twoDrops
		if tc.drop != nil {
			drop = *tc.drop
		}
		tr, _, _ := feed(100, kernel, samples...)
		f := tr.result("cc", tc.beta, drop, tc.undos)
		if f.Pass || !strings.Contains(strings.Join(f.Problems, "; "), tc.want) {
			t.Errorf("%s: pass %v, problems %v; want one containing %q", tc.name, f.Pass, f.Problems, tc.want)
		}
	}
}

func TestFindState(t *testing.T) {
	rec := func(v ...uint32) []byte {
		b := make([]byte, 0, 20)
		for _, x := range v {
			b = binary.NativeEndian.AppendUint32(b, x)
		}
		return b
	}
	raw := append(rec(40000, 10, inf, 0, 0), rec(40001, 99, 99, 105, 105)...)
	got, err := findState(raw, 40001)
	if err != nil || got != (KernelState{Cwnd: 99, Ssthresh: 99, PriorCwnd: 105, Wmax: 105}) {
		t.Errorf("findState = %+v, %v", got, err)
	}
	if _, err := findState(raw, 40002); err == nil {
		t.Error("a missing socket was found")
	}
	if _, err := findState(raw[:21], 40000); err == nil {
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
	good, _, _ := feed(100, cubicKernel, cubicFlow(73)...)
	bad, _, _ := feed(100, cubicKernel, cubicFlow(73)...)
	kept := good.result("cubic", 717, twoDrops, nil)
	kept.Discarded = []string{"attempt 1: the kernel took a reduction back (TCPFullUndo +1)"}
	r := &Report{Config: Config{N: 6, RateBitsPerSecond: 30e6, ArmCwnd: 100}, Kernel: "test",
		Flows: []Flow{kept, bad.result("wl_cubicp6", 973, twoDrops, nil)}}
	var b bytes.Buffer
	WriteTable(&b, r)
	for _, want := range []string{"cubic", "0.7002", "105 (disorder)", "wl_cubicp6", "FAIL wl_cubicp6: ssthresh after the loss is 73, want 99", " 62 ",
		"discarded cubic attempt 1: the kernel took a reduction back (TCPFullUndo +1)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if p := r.Problems(); !strings.HasPrefix(p, "wl_cubicp6: ssthresh after the loss is 73, want 99") {
		t.Errorf("Problems() = %q", p)
	}
}
