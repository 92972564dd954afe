package suggest

import "testing"

type color string

var colors = []color{"red", "green", "blue"}

func TestEnumParse(t *testing.T) {
	for _, c := range colors {
		if got, ok := Member(colors, string(c)); !ok || got != c {
			t.Errorf("Member(%q) = %q, %v; want %q, true", c, got, ok, c)
		}
		if got, err := Parse(colors, string(c)); err != nil || got != c {
			t.Errorf("Parse(%q) = %q, %v; want %q, nil", c, got, err, c)
		}
	}
	for _, s := range []string{"", "Red", "red ", "purple"} {
		if got, ok := Member(colors, s); ok || got != "" {
			t.Errorf("Member(%q) = %q, %v; want \"\", false", s, got, ok)
		}
		want := s + ": allowed: red, green, blue"
		if got, err := Parse(colors, s); err == nil || err.Error() != want || got != "" {
			t.Errorf("Parse(%q) = %q, %v; want \"\", %q", s, got, err, want)
		}
	}
}

func TestEnumJoin(t *testing.T) {
	for _, c := range []struct {
		list []color
		last string
		want string
	}{
		{colors, ", ", "red, green, blue"},
		{colors, " or ", "red, green or blue"},
		{colors[:2], " or ", "red or green"},
		{colors[:1], " or ", "red"},
		{nil, " or ", ""},
	} {
		if got := JoinLast(c.list, c.last); got != c.want {
			t.Errorf("JoinLast(%q, %q) = %q; want %q", c.list, c.last, got, c.want)
		}
	}
	if got := Join(colors); got != "red, green, blue" {
		t.Errorf("Join = %q", got)
	}
}
