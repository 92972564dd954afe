package fielderr

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestLongValuesCut: a huge value is echoed as its first characters and its length, on one line.
func TestLongValuesCut(t *testing.T) {
	huge := strings.Repeat("é", 5<<20) + "\n"
	msg := New("page", huge, "must be a page name").Error()
	if len(msg) > 200 || strings.Contains(msg, "\n") || !strings.Contains(msg, "(10485761 bytes)") || !utf8.ValidString(msg) {
		t.Errorf("message %q", msg)
	}
	if got := New("x", "short", "ok").Error(); got != `x: got "short"; ok` {
		t.Errorf("short value changed: %q", got)
	}
	if got := New("x", 12, "ok").Error(); got != "x: got 12; ok" {
		t.Errorf("number: %q", got)
	}
	if got := Cut(strings.Repeat("a", 100)); !strings.HasSuffix(got, "… (100 bytes)") || !strings.HasPrefix(got, strings.Repeat("a", ShownPrefix)+"…") {
		t.Errorf("Cut: %q", got)
	}
}
