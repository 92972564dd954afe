package profile

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics; what it refuses it refuses with one well-formed line; what it
// accepts validates, round-trips through the canonical String form (which is a fixed point) and
// through the JSON resolved form.
func FuzzParse(f *testing.F) {
	for _, c := range loadGolden(f).OK {
		f.Add(c.Input)
	}
	for _, c := range loadGolden(f).Errors {
		f.Add(c.Input)
	}
	for _, s := range []string{
		"rtt=0.0005us,bw=1.0005kbit", "loss=ge:1%:2%:3%:4%", "queue=1/1500B", "origin_delay=1:1us/64:3600s",
		"delay_up=3600s,delay_down=3600s", "loss=0.000000000000000000000000000000001", "jitter=1.999999999ms",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			msg := err.Error()
			if strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("Parse(%q): multi-line error %q", s, msg)
			}
			m := errorLine.FindStringSubmatch(msg)
			if m == nil {
				t.Fatalf("Parse(%q): malformed error %q", s, msg)
			}
			if _, ok := err.(*Error); !ok {
				t.Fatalf("Parse(%q): error is a %T", s, err)
			}
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("Parse(%q) does not validate: %v", s, err)
		}
		canon := r.String()
		back, err := Parse(canon)
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q does not parse: %v", s, canon, err)
		}
		if !back.Equal(r) {
			t.Fatalf("Parse(%q) = %#v; String() = %q parses to %#v", s, r, canon, back)
		}
		if again := back.String(); again != canon {
			t.Fatalf("String is not a fixed point: %q then %q", canon, again)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		dec, err := DecodeResolved(b)
		if err != nil {
			t.Fatalf("DecodeResolved(%s): %v", b, err)
		}
		if !dec.Equal(r) {
			t.Fatalf("JSON round trip: %s decodes to %#v", b, dec)
		}
	})
}
