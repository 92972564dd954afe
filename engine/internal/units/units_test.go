package units

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for s, want := range map[string]int64{"100B": 100, "1kB": 1000, "1KiB": 1024, "1MB": 1e6, "2MiB": 2 << 20,
		"10.63kB": 10630, "0.5KiB": 512, "1.1kB": 1100, "0B": 0} {
		if got, err := ParseSize(s, 1<<40); err != nil || got != want {
			t.Errorf("ParseSize(%s) = %d, %v; want %d", s, got, err, want)
		}
	}
	for bad, problem := range map[string]string{"": "not a size", "kB": "not a size", "1 kB": "unknown unit",
		"1kb": "unknown unit", "1KB": "unknown unit", "10": "no unit", "1.1B": "whole number", "-1B": "not a size",
		"3GB": "unknown unit", "1e3B": "unknown unit", "2MB": "larger than"} {
		_, err := ParseSize(bad, 1_000_000)
		if err == nil || !strings.Contains(err.Error(), problem) {
			t.Errorf("ParseSize(%q) = %v; want an error saying %q", bad, err, problem)
		}
	}
}

func TestFormatSizeRoundTrips(t *testing.T) {
	for n, want := range map[int64]string{100: "100B", 1000: "1kB", 1024: "1KiB", 1e6: "1MB", 1 << 20: "1MiB", 10630: "10630B", 0: "0B"} {
		got := FormatSize(n)
		if got != want {
			t.Errorf("FormatSize(%d) = %s, want %s", n, got, want)
		}
		if back, err := ParseSize(got, 1<<40); err != nil || back != n {
			t.Errorf("ParseSize(FormatSize(%d)) = %d, %v", n, back, err)
		}
	}
}

func TestLookup(t *testing.T) {
	if f, ok := Lookup(Sizes, "KiB"); !ok || f != 1024 {
		t.Errorf("KiB = %d, %v", f, ok)
	}
	if _, ok := Lookup(Sizes, "KB"); ok {
		t.Error("KB is a size unit; it must be refused as ambiguous")
	}
	if !IsByteRate("MBps") || IsByteRate("mbit") {
		t.Error("IsByteRate")
	}
}

// TestDocUnitTable: the unit table of docs/profile-grammar.md is these tables, row for row.
func TestDocUnitTable(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/profile-grammar.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| (duration|rate|size) \\| `([^`]+)` \\| ([0-9]+) [^|]*\\| (sensitive|any) \\|$")
	var got []string
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		got = append(got, m[1]+" "+m[2]+" "+m[3]+" "+m[4])
	}
	var want []string
	for _, k := range []struct {
		kind, cased string
		table       []Unit
	}{{"duration", "sensitive", Durations}, {"rate", "any", Rates}, {"size", "sensitive", Sizes}} {
		for _, u := range k.table {
			want = append(want, fmt.Sprintf("%s %s %d %s", k.kind, u.Name, u.Factor, k.cased))
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("docs/profile-grammar.md's unit table:\n%s\nthe code's:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
