package priority

import "testing"

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Priority
		ok   bool
	}{
		{"", Default, true},
		{"u=0", Priority{0, false}, true},
		{"u=7, i", Priority{7, true}, true},
		{"i, u=1", Priority{1, true}, true},
		{"u=2,i=?0", Priority{2, false}, true},
		{"u=2, i=?1", Priority{2, true}, true},
		{"u=9", Default, true},                  // out of range: ignored
		{"u=-1", Default, true},                 // out of range: ignored
		{"u=1;x=2, i", Priority{1, true}, true}, // parameters ignored
		{`u=5, foo="a,b", i`, Priority{5, true}, true},
		{"u=1.5", Default, true},                       // a decimal, not an integer: ignored
		{"i=1", Priority{DefaultUrgency, false}, true}, // not a boolean: ignored
		{"u=1,,i", Default, false},
		{"U=1", Default, false},
		{`u=1, x="unterminated`, Default, false},
		{"u=", Default, false},
	} {
		got, ok := Parse(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("Parse(%q) = %+v, %v; want %+v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestStringRoundTrip(t *testing.T) {
	for u := uint8(0); u <= MaxUrgency; u++ {
		for _, inc := range []bool{false, true} {
			p := Priority{u, inc}
			if got, ok := Parse(p.String()); !ok || got != p {
				t.Errorf("%+v → %q → %+v, %v", p, p.String(), got, ok)
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"u=1, i", `u=5, foo="a,b"`, "i=?0", "u=1;a=b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, ok := Parse(s)
		if p.Urgency > MaxUrgency || !ok && p != Default {
			t.Fatalf("Parse(%q) = %+v, %v", s, p, ok)
		}
	})
}
