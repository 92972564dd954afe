package backoff

import (
	"context"
	"errors"
	"io/fs"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/tcpplus"
	"github.com/wirelab/wirelab/engine/tcpplus/internal/nspath"
)

// Tests named *Root need root; they build namespaces and register TCP+ for n = 6 and n = 1
// (no other test package uses those n).

// pathRecorder is a Progress writer that remembers the path id Run announces ("path <id>
// ready: …") and calls onLine with every line.
func pathRecorder(onLine func(string)) (*lineWriter, *string) {
	id := new(string)
	return &lineWriter{fn: func(line string) {
		if rest, ok := strings.CutPrefix(line, "path "); ok {
			*id, _, _ = strings.Cut(rest, " ")
		}
		if onLine != nil {
			onLine(line)
		}
	}}, id
}

// leftovers lists what of a run with path id and TCP+ registration name still exists. Only
// that run's objects count: other packages' tests build paths at the same time.
func leftovers(t *testing.T, id, name string) []string {
	t.Helper()
	if id == "" {
		t.Fatal("the run did not announce its path")
	}
	var found []string
	existing, err := nspath.Existing()
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range existing {
		if strings.HasPrefix(ns, nspath.Prefix+id+"-") {
			found = append(found, "namespace "+ns)
		}
	}
	if _, err := os.Stat(tcpplus.StateDir + "/path-" + id + ".json"); !errors.Is(err, fs.ErrNotExist) {
		found = append(found, "ownership file of path "+id)
	}
	if ok, err := tcpplus.Registered(name); err != nil || ok {
		found = append(found, "registration "+name)
	}
	if _, err := os.Stat(tcpplus.StateDir + "/" + name + ".json"); !errors.Is(err, fs.ErrNotExist) {
		found = append(found, "state file of "+name)
	}
	return found
}

func TestBackoffAfterSingleLossRoot(t *testing.T) {
	roottest.Require(t)
	progress, id := pathRecorder(nil)
	rep, err := Run(context.Background(), Config{N: 6, Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Flows {
		fc := f.FastConvergence
		t.Logf("%s: β %.4f, cwnd %d (TCP_INFO %d, %s) → ssthresh %d (expected %d), cwnd after %d, ratio %.3f; second loss at %d → W_max %d (expected %d); %d readings every %.1f µs",
			f.CC, f.Beta, f.CwndBefore, f.SampledCwndBefore, f.SampledStateBefore, f.SsthreshAfter, f.ExpectedSsthresh,
			f.CwndAfter, f.SsthreshRatio, fc.CwndBefore, fc.Wmax, fc.ExpectedWmax, f.Readings, f.MeanReadingMicros)
		for _, d := range f.Discarded {
			t.Logf("%s: discarded %s", f.CC, d)
		}
	}
	if !rep.Pass {
		t.Fatalf("the backoff does not match the formula: %s", rep.Problems())
	}
	cubic, plus := rep.Flows[0], rep.Flows[1]
	if cubic.CC != "cubic" || plus.CC != "wl_cubicp6" || cubic.BetaScaled != 717 || plus.BetaScaled != 973 {
		t.Fatalf("flows %s (β %d), %s (β %d)", cubic.CC, cubic.BetaScaled, plus.CC, plus.BetaScaled)
	}
	// Beyond the per-flow check, the ratios themselves: within 2 % of β, the rounding down of
	// ⌊cwnd·β⌋ being at most one segment in about a hundred.
	for _, f := range rep.Flows {
		if math.Abs(f.SsthreshRatio-f.Beta) > 0.02 {
			t.Errorf("%s: ssthresh/cwnd %.3f, want %.3f ± 0.02", f.CC, f.SsthreshRatio, f.Beta)
		}
	}
	if math.Abs(rep.RatioGap-0.25) > 0.03 {
		t.Errorf("TCP+ backs off %.3f less than cubic; the formula says 0.25", rep.RatioGap)
	}
	if left := leftovers(t, *id, "wl_cubicp6"); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// With n = 1, TCP+ is cubic: the same β, the same backoff.
func TestNOneBacksOffLikeCubicRoot(t *testing.T) {
	roottest.Require(t)
	rep, err := Run(context.Background(), Config{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Flows {
		for _, d := range f.Discarded {
			t.Logf("%s: discarded %s", f.CC, d)
		}
	}
	if !rep.Pass {
		t.Fatalf("problems: %s", rep.Problems())
	}
	cubic, one := rep.Flows[0], rep.Flows[1]
	if one.CC != "wl_cubicp1" || one.BetaScaled != cubic.BetaScaled {
		t.Fatalf("n = 1: %s with β %d; cubic's β %d", one.CC, one.BetaScaled, cubic.BetaScaled)
	}
	if math.Abs(rep.RatioGap) > 0.03 {
		t.Errorf("n = 1 backs off %.3f differently from cubic", rep.RatioGap)
	}
}

// lineWriter calls fn with each complete line written to it.
type lineWriter struct {
	mu  sync.Mutex
	buf []byte
	fn  func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := slices.Index(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.fn(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

// Cancelling a measurement (what SIGINT does to the bench command) removes everything it made.
func TestCancelledRunLeavesNothingRoot(t *testing.T) {
	roottest.Require(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	progress, id := pathRecorder(func(line string) {
		if line == "sending with cubic" {
			cancel() // mid-flow: namespaces, dropper, registration, sockets and the sampler all run
		}
	})
	_, err := Run(ctx, Config{N: 6, ArmCwnd: 2000, Progress: progress})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if *id == "" {
		t.Fatal("cancelled before the path existed; the test proves nothing")
	}
	if left := leftovers(t, *id, "wl_cubicp6"); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// The sender detects loss by duplicate ACKs alone; the other namespaces keep the kernel's
// defaults.
func TestClassicLossDetectionOnlyInSenderRoot(t *testing.T) {
	roottest.Require(t)
	p, err := nspath.New(context.Background(), nspath.Config{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	read := func(ns string) map[string]string {
		got := map[string]string{}
		for key := range lossDetectionSysctls {
			v, err := p.Sysctl(ns, key)
			if err != nil {
				t.Fatal(err)
			}
			got[key] = v
		}
		return got
	}
	defaults := read(p.Router)
	if err := classicLossDetection(p); err != nil {
		t.Fatal(err)
	}
	for key, want := range lossDetectionSysctls {
		if got := read(p.Sender)[key]; got != want {
			t.Errorf("sender %s = %s, want %s", key, got, want)
		}
		if got := read(p.Router)[key]; got != defaults[key] || got == want {
			t.Errorf("router %s = %s, want the default %s (not %s)", key, got, defaults[key], want)
		}
	}
}
