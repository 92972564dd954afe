package profile

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// FuzzParseTrace: a mahimahi trace either parses into a well-formed trace (slots strictly
// increasing within a positive period, at least one opportunity each, a finite positive rate) or
// is refused with one well-formed *Error line; never a panic.
func FuzzParseTrace(f *testing.F) {
	for _, s := range []string{"1\n", "0\n0\n5\n5\n10\n", "  3 \r\n\n7\n", "5\n4\n", "0\n", "", "x\n",
		"1000000000\n", "1000000001\n", "12345678901\n", strings.Repeat("1\n", 100)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ParseTrace("trace_down", "fuzz.trace", bytes.NewReader(data))
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error is a %T: %v", err, err)
			}
			if msg := err.Error(); strings.ContainsAny(msg, "\n\r") || !errorLine.MatchString(msg) {
				t.Fatalf("malformed error %q", msg)
			}
			return
		}
		if tr.Period <= 0 || len(tr.Slots) == 0 {
			t.Fatalf("accepted a trace with period %v and %d slots", tr.Period, len(tr.Slots))
		}
		for i, s := range tr.Slots {
			if s.Opportunities < 1 || s.At < 0 || s.At > tr.Period || (i > 0 && s.At <= tr.Slots[i-1].At) {
				t.Fatalf("slot %d malformed: %+v (period %v)", i, s, tr.Period)
			}
		}
		if tr.Slots[len(tr.Slots)-1].At != tr.Period {
			t.Fatalf("period %v is not the last timestamp %v", tr.Period, tr.Slots[len(tr.Slots)-1].At)
		}
		if bps := tr.BitsPerSecond(); !(bps > 0) || math.IsInf(bps, 0) {
			t.Fatalf("rate %v", bps)
		}
	})
}
