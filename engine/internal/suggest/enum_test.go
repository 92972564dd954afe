package suggest

import "testing"

type color string

var colors = []color{"red", "green", "blue"}

func TestEnumParse(t *testing.T) {
	for _, c := range colors {
		if got, ok := Parse(colors, string(c)); !ok || got != c {
			t.Errorf("Parse(%q) = %q, %v; want %q, true", c, got, ok, c)
		}
	}
	for _, s := range []string{"", "Red", "red ", "purple"} {
		if got, ok := Parse(colors, s); ok || got != "" {
			t.Errorf("Parse(%q) = %q, %v; want \"\", false", s, got, ok)
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
