package timebound

import (
	"fmt"
	"strings"
	"testing"
)

// fakeT records what Retry does to its test.
type fakeT struct {
	testing.TB
	failed bool
	fatal  string
	logs   []string
}

func (f *fakeT) Helper()                        {}
func (f *fakeT) Failed() bool                   { return f.failed }
func (f *fakeT) Errorf(format string, a ...any) { f.failed = true }
func (f *fakeT) Logf(format string, a ...any)   { f.logs = append(f.logs, fmt.Sprintf(format, a...)) }
func (f *fakeT) Fatalf(format string, a ...any) { f.failed = true; f.fatal = fmt.Sprintf(format, a...) }

func TestRetry(t *testing.T) {
	for _, tc := range []struct {
		name      string
		misses    []bool // per attempt
		wantRuns  int
		wantFatal bool
	}{
		{"met at once", []bool{false}, 1, false},
		{"missed then met", []bool{true, false}, 2, false},
		{"missed twice", []bool{true, true}, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeT{}
			runs := 0
			Retry(f, func(a *Attempt) {
				runs++
				if a.N != runs {
					t.Errorf("attempt numbered %d on run %d", a.N, runs)
				}
				if tc.misses[runs-1] {
					a.Errorf("took %d ms, bound 10 ms", 10+runs)
				}
			})
			if runs != tc.wantRuns || (f.fatal != "") != tc.wantFatal {
				t.Fatalf("%d runs, fatal %q; want %d runs, fatal %v", runs, f.fatal, tc.wantRuns, tc.wantFatal)
			}
			if tc.wantFatal {
				// the evidence of both attempts, each with the machine's load
				for _, want := range []string{"attempt 1 (", "took 11 ms, bound 10 ms", "attempt 2 (", "took 12 ms, bound 10 ms", "load average"} {
					if !strings.Contains(f.fatal, want) {
						t.Errorf("failure %q lacks %q", f.fatal, want)
					}
				}
			}
			if tc.wantRuns == 2 && (len(f.logs) == 0 || !strings.Contains(f.logs[0], "took 11 ms")) {
				t.Errorf("the first attempt's evidence is not logged: %q", f.logs)
			}
		})
	}
}

// A test's own failure inside an attempt is not a timing miss: no retry, no second report.
func TestRetryStopsOnTheTestsOwnFailure(t *testing.T) {
	f := &fakeT{}
	runs := 0
	Retry(f, func(a *Attempt) {
		runs++
		f.Errorf("wrong status")
		a.Errorf("slow too")
	})
	if runs != 1 || f.fatal != "" {
		t.Fatalf("%d runs, fatal %q; want 1 run and the test's own failure only", runs, f.fatal)
	}
}

// A test that failed before Retry still gets its timing checked and retried.
func TestRetryAfterAnEarlierFailure(t *testing.T) {
	f := &fakeT{failed: true}
	runs := 0
	Retry(f, func(a *Attempt) {
		runs++
		a.Errorf("slow")
	})
	if runs != 2 || f.fatal == "" {
		t.Fatalf("%d runs, fatal %q; want 2 runs and a failure", runs, f.fatal)
	}
}
