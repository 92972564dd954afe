package tail

import "testing"

func TestLines(t *testing.T) {
	l := New(2, "no output")
	if l.String() != "no output" {
		t.Errorf("empty: %q", l.String())
	}
	l.Add("a")
	l.Add("  ")
	_, _ = l.Write([]byte("b\n\nc\n"))
	if got := l.String(); got != "b | c" {
		t.Errorf("got %q, want the last two lines", got)
	}
}
