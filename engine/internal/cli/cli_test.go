package cli

import "testing"

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain, ünïcode ✓":           "plain, ünïcode ✓",
		"\x1b]0;title\a\x1b[2J":      `\x1b]0;title\x07\x1b[2J`,
		"a\nb\rc\td":                 `a\nb\rc\td`,
		"del\x7f c1\u009b":           `del\x7f c1\x9b`,
		"rtl\u202eevil\u2066":        `rtl\u202eevil\u2066`,
		"bad utf-8 \xff\xfe end":     `bad utf-8 \xff\xfe end`,
		"replacement char \uFFFD ok": "replacement char \uFFFD ok",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
