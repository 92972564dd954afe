package fielderr

import (
	"fmt"
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

// A file path keeps its end (the file's name) when it is cut, and is shown whole up to 256 bytes.
func TestQuotePath(t *testing.T) {
	short := "/tmp/" + strings.Repeat("d", 200) + "/page.json"
	if got := Path("page", short, "x").Error(); got != `page: got "`+short+`"; x` {
		t.Errorf("short path: %s", got)
	}
	long := "/" + strings.Repeat("é", 300) + "/page.json"
	got := Path("page", long, "x").Error()
	if !strings.HasSuffix(got, `/page.json" (`+fmt.Sprint(len(long))+` bytes); x`) || !strings.HasPrefix(got, `page: got "…`) || len(got) > 200 {
		t.Errorf("long path: %s", got)
	}
}
