package main

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/bench"
)

// The servers' ratio table marks a ratio over unequal work (1.12≠) and says why below it; an
// equal one is printed bare.
func TestRatioTableMarksUnequalWork(t *testing.T) {
	runs := []*bench.LoadgenResult{
		{Server: "nginx", Ratios: []bench.RatioRow{{Protocol: "h1", Ratio: 1.31}, {Protocol: "h2", Ratio: 0.98}}},
		{Server: "apache", Ratios: []bench.RatioRow{{Protocol: "h1", Ratio: 1.12, Unequal: true, UnequalReason: "connections per request 0.5750 (wirelab) vs 0.0024 (h2load): one tool reopened connections"}, {Protocol: "h2", Ratio: 0.94}}},
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	printRatioTable(runs, []string{"h1", "h2"})
	os.Stdout = stdout
	w.Close()
	b, _ := io.ReadAll(r)
	out := string(b)
	for _, want := range []string{"   1.31   0.98", "  1.12≠   0.94", "≠ not the same work, the ratio compares different loads — apache h1: connections per request 0.5750"} {
		if !strings.Contains(out, want) {
			t.Errorf("table %q; want %q in it", out, want)
		}
	}
	if strings.Count(out, "≠") != 2 {
		t.Errorf("table %q; want the one unequal ratio marked and its note", out)
	}
}
