package suggest

import (
	"encoding/json"
	"os"
	"testing"
)

// TestGolden holds the rule to the cases the control plane's twin (wirelab/_suggest.py) is held to.
func TestGolden(t *testing.T) {
	data, err := os.ReadFile("../../../testdata/suggest_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Cases []struct {
			Word       string   `json:"word"`
			Candidates []string `json:"candidates"`
			Want       string   `json:"want"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatal(err)
	}
	if len(golden.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range golden.Cases {
		if got := Closest(c.Word, c.Candidates); got != c.Want {
			t.Errorf("Closest(%q, %q) = %q, want %q", c.Word, c.Candidates, got, c.Want)
		}
	}
}

func TestDidYouMean(t *testing.T) {
	if got := DidYouMean("rttt", []string{"rtt", "bw"}); got != "did you mean rtt? " {
		t.Errorf("DidYouMean = %q", got)
	}
	if got := DidYouMean("zzzz", []string{"rtt", "bw"}); got != "" {
		t.Errorf("DidYouMean = %q, want none", got)
	}
}
