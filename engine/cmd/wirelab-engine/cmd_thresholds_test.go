package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/internal/cli"
)

func TestThresholdsCommand(t *testing.T) {
	loads := `{"trial_id":"c1","label":"rtt=20ms","protocol":"h2","error":null,"values":{"tow_ms":100,"lcp_ms":900}}
{"trial_id":"c1","label":"rtt=20ms","protocol":"h3","error":null,"values":{"tow_ms":80,"lcp_ms":700}}
{"trial_id":"c2","label":"rtt=200ms","protocol":"h2","error":null,"values":{"tow_ms":300,"lcp_ms":null}}
{"trial_id":"c2","label":"rtt=200ms","protocol":"h3","error":"timeout","values":{"tow_ms":1}}
`
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := runThresholds(args, strings.NewReader(loads), &out)
		return out.String(), err
	}
	// Only checked: well-formed, exit 0, nothing printed.
	if out, err := run("--protocols", "h2,h3", "h3.tow_median_ms < h2.tow_median_ms"); err != nil || out != "" {
		t.Fatalf("check: %q, %v", out, err)
	}
	// Evaluated: c2's h3 has no load without an error, so no value — the per-configuration check fails there.
	out, err := run("--protocols", "h2,h3", "--loads", "-", "h3.tow_median_ms < h2.tow_median_ms", "max(h2.lcp_p75_ms) < 1000")
	var ee *cli.ExitError
	if !errors.As(err, &ee) || ee.Code != 1 {
		t.Fatalf("err %v; want exit 1 for a failed threshold", err)
	}
	var got struct {
		Passed  bool
		Results []struct {
			Expr     string
			Pass     bool
			Failures []struct {
				TrialID string `json:"trial_id"`
				Left    *float64
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	r := got.Results
	if got.Passed || len(r) != 2 || r[0].Pass || len(r[0].Failures) != 1 || r[0].Failures[0].TrialID != "c2" ||
		r[0].Failures[0].Left != nil || !r[1].Pass {
		t.Errorf("results %s", out)
	}
	// Bad input: one line naming the threshold, exit 2.
	_, err = run("--protocols", "h2,h3", "h2.tow_median_ms < 1", "h1.tow_median_ms < 1")
	if err == nil || !strings.HasPrefix(err.Error(), `thresholds[1]: got "h1.tow_median_ms < 1"; protocol "h1": the sweep loads h2 or h3`) || exitCode(err) != 2 {
		t.Errorf("err %v (exit %d)", err, exitCode(err))
	}
	if _, err := run("h2.tow_median_ms < 1"); err == nil || exitCode(err) != 2 {
		t.Errorf("no --protocols: %v", err)
	}
	// flags as every command parses them: an unknown one is one line naming it; -h the usage
	if _, err := run("--protocols", "h2", "--lods", "-", "h2.tow_median_ms < 1"); err == nil || exitCode(err) != 2 ||
		err.Error() != "thresholds: flag provided but not defined: -lods; run wirelab-engine thresholds -h for the flags" {
		t.Errorf("unknown flag: %v (exit %d)", err, exitCode(err))
	}
	for _, cmd := range []string{"thresholds", "loadmerge"} {
		if out, err := engineCmd(nil, cmd, "-h").Output(); err != nil || !strings.HasPrefix(string(out), "usage: wirelab-engine "+cmd+" --") {
			t.Errorf("%s -h: %v %q", cmd, err, out)
		}
	}
}
