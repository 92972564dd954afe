// Package timebound is how a test checks a timing bound: a bound on wall-clock time (a path's
// round trips, a flight's duration, a deadline for something to end, CPU a busy child must get).
// Such a bound measures the code and also the machine: a check run while others compile can miss it
// with nothing wrong in the code. So the test's attempt — the measurement and its bound checks — runs
// once more when it misses, and the test fails only when both attempts do, with the evidence of both
// and the machine's load average at each. One pass is enough to pass: a bound the code really misses
// misses twice.
//
// The project's rule (docs/testing.md): every test that asserts a timing bound goes through Retry
// (tests/timing.py is the Python twin); speed targets are benchmarks' figures, never assertions.
package timebound

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// Attempts is how many times Retry runs an attempt at most: the first, and once more.
const Attempts = 2

// An Attempt collects what one run of a measurement found out of bounds.
type Attempt struct {
	N      int // 1 or 2
	misses []string
	start  time.Time
}

// Errorf records a missed bound (the measurement and the bound, in words): the attempt fails, and
// goes on, so that its evidence is whole. The test itself uses t for everything else (setup errors,
// wrong results that no machine's load explains), as usual.
func (a *Attempt) Errorf(format string, args ...any) {
	a.misses = append(a.misses, fmt.Sprintf(format, args...))
}

// Missed reports whether the attempt has recorded a miss so far (for an attempt that stops early).
func (a *Attempt) Missed() bool { return len(a.misses) > 0 }

// Retry runs attempt; if it records a miss, it runs it once more (logging the first attempt's
// evidence); if that one misses too, it fails t with both attempts' evidence. The attempt must set
// up anew what it measures (or set it up outside, once, when a second measurement of the same setup
// is a fair retry). A test that fails t inside an attempt fails as usual, without a retry.
func Retry(t testing.TB, attempt func(a *Attempt)) {
	t.Helper()
	var evidence []string
	failedBefore := t.Failed()
	for n := 1; n <= Attempts; n++ {
		a := &Attempt{N: n, start: time.Now()}
		attempt(a)
		if t.Failed() && !failedBefore {
			return // not a timing miss: the test's own failure, reported as it was
		}
		if !a.Missed() {
			if n > 1 {
				t.Logf("timing bound met on attempt %d after a miss (load average %s)", n, loadavg())
			}
			return
		}
		ev := fmt.Sprintf("attempt %d (%v, load average %s):\n    %s", n, time.Since(a.start).Round(time.Millisecond),
			loadavg(), strings.Join(a.misses, "\n    "))
		evidence = append(evidence, ev)
		if n < Attempts {
			t.Logf("timing bound missed, retrying once — %s", ev)
		}
	}
	t.Fatalf("timing bound missed on both attempts:\n  %s", strings.Join(evidence, "\n  "))
}

// loadavg is the machine's 1-, 5- and 15-minute load averages, as /proc/loadavg has them.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
