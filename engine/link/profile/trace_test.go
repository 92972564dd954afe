package profile

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseTrace(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		in     string
		period time.Duration
		slots  []TraceSlot
	}{
		{"1\n", ms, []TraceSlot{{ms, 1}}},
		{"1", ms, []TraceSlot{{ms, 1}}}, // no final newline
		{"0\n0\n5\n5\n5\n12\n", 12 * ms, []TraceSlot{{0, 2}, {5 * ms, 3}, {12 * ms, 1}}},
		{"\n 3 \r\n\t4\t\r\n\n", 4 * ms, []TraceSlot{{3 * ms, 1}, {4 * ms, 1}}},
		{"1000000000", 1_000_000_000 * ms, []TraceSlot{{1_000_000_000 * ms, 1}}},
	}
	for _, c := range cases {
		tr, err := ParseTrace("trace_down", "t", strings.NewReader(c.in))
		if err != nil {
			t.Errorf("ParseTrace(%q): %v", c.in, err)
			continue
		}
		if tr.Period != c.period || !reflect.DeepEqual(tr.Slots, c.slots) {
			t.Errorf("ParseTrace(%q) = period %v slots %v, want %v %v", c.in, tr.Period, tr.Slots, c.period, c.slots)
		}
	}
	one, _ := ParseTrace("trace_down", "t", strings.NewReader("1\n"))
	if got := one.BitsPerSecond(); got != 12e6 {
		t.Errorf("a trace of 1 per line averages %v bit/s, want 12e6", got)
	}
}

func TestParseTraceErrors(t *testing.T) {
	cases := []struct{ in, mention string }{
		{"", "has no delivery opportunities"},
		{"\n\n  \n", "has no delivery opportunities"},
		{"0\n0\n", "lasts 0 ms"},
		{"5\n4\n", "line 2: 4 ms comes before the previous line's 5 ms"},
		{"1\n2.5\n", `line 2: "2.5" is not a whole number`},
		{"1\n-2\n", `line 2: "-2" is not a whole number`},
		{"1 2\n", `line 1: "1 2" is not`},
		{"1000000001\n", "line 1: 1000000001 ms is too late"},
		{"99999999999999999999\n", "line 1"},
	}
	for _, c := range cases {
		_, err := ParseTrace("trace_up", "x.trace", strings.NewReader(c.in))
		if err == nil {
			t.Errorf("ParseTrace(%q) succeeded", c.in)
			continue
		}
		checkErrorShape(t, err, "trace_up", "x.trace")
		if !strings.Contains(err.Error(), c.mention) {
			t.Errorf("ParseTrace(%q) error %q does not mention %q", c.in, err, c.mention)
		}
	}
}

func TestLoadTrace(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.trace")
	if err := os.WriteFile(good, []byte("1\n1\n2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.trace")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := LoadTrace("trace_down", good)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Opportunities() != 3 || tr.Period != 2*time.Millisecond || tr.Name != good {
		t.Errorf("LoadTrace = %+v", tr)
	}
	for _, c := range []struct{ path, mention string }{
		{filepath.Join(dir, "missing.trace"), "does not exist"},
		{empty, "has no delivery opportunities"},
		{dir, "is a directory"},
	} {
		_, err := LoadTrace("trace_down", c.path)
		if err == nil {
			t.Errorf("LoadTrace(%s) succeeded", c.path)
			continue
		}
		checkErrorShape(t, err, "trace_down", c.path)
		if !strings.Contains(err.Error(), c.mention) {
			t.Errorf("LoadTrace(%s) error %q does not mention %q", c.path, err, c.mention)
		}
	}
	// Resolved.LoadTraces names the right field.
	r := MustParse("trace_up=" + good + ",trace_down=" + filepath.Join(dir, "nope"))
	if _, _, err := r.LoadTraces(); err == nil || !strings.HasPrefix(err.Error(), "trace_down: ") {
		t.Errorf("LoadTraces error = %v, want one about trace_down", err)
	}
	up, down, err := MustParse("trace_up=" + good).LoadTraces()
	if err != nil || up == nil || down != nil {
		t.Errorf("LoadTraces = %v, %v, %v", up, down, err)
	}
}
