package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/page"
)

func runEngine(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := engine(args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func TestPagesCommands(t *testing.T) {
	out, _, code := runEngine(t, "pages", "ls")
	var ls struct {
		Corpus []page.Summary `json:"corpus"`
		WGrid  []string       `json:"w_grid"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &ls) != nil || len(ls.Corpus) != 7 || len(ls.WGrid) != 25 {
		t.Fatalf("pages ls: code %d, %q", code, out)
	}
	out, _, code = runEngine(t, "pages", "show", "twitter", "--shards", "0", "--shard-mode", "tld")
	p, err := page.Parse([]byte(out))
	if code != 0 || err != nil || len(p.Origins) != 2 {
		t.Fatalf("pages show: code %d, %v", code, err)
	}
	file := filepath.Join(t.TempDir(), "p.json")
	os.WriteFile(file, []byte(out), 0o644)
	out, _, code = runEngine(t, "pages", "validate", file)
	if code != 0 || !strings.Contains(out, `"valid": true`) {
		t.Fatalf("pages validate: %d %q", code, out)
	}
	out, _, code = runEngine(t, "pages", "urls", "synthetic:2x1kB", "--token", "tk", "--scheme", "http", "--port", "8080")
	var urls []string
	if code != 0 || json.Unmarshal([]byte(out), &urls) != nil || len(urls) != 3 || urls[1] != "http://s1.wirelab.test:8080/L/tk/img/o1.png" {
		t.Fatalf("pages urls: %d %q", code, out)
	}
	out, _, code = runEngine(t, "pages", "schema")
	if code != 0 || !bytes.Equal([]byte(out), page.Schema) {
		t.Fatal("pages schema differs from the embedded schema")
	}
	// a page with a dependency cycle: one line naming the field, exit 2
	p.Activities[0].Deps = []page.Dep{{On: p.Activities[len(p.Activities)-1].ID}}
	os.WriteFile(file, p.JSON(), 0o644)
	_, errOut, code := runEngine(t, "pages", "validate", file)
	if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "activities[0].deps: got \"a0 → ") {
		t.Fatalf("cycle: code %d, %q", code, errOut)
	}
	os.WriteFile(file, []byte(`{"name":"x","seed":1,"origins":[{"host":"s1.wirelab.test"}],"objects":[{"id":"o0","path":"/index.html","origin":0,"size":900,"type":"html","content_type":"text/html","sise":3}]}`), 0o644)
	if _, errOut, code = runEngine(t, "pages", "validate", file); code != 2 || !strings.Contains(errOut, "objects[0].sise: unknown field; did you mean size?") {
		t.Fatalf("unknown field: code %d, %q", code, errOut)
	}
	for _, args := range [][]string{{"pages"}, {"pages", "nope"}, {"pages", "show"}, {"pages", "show", "synthetic:2x"}, {"pages", "show", "twitter", "--shards", "65"}, {"pages", "show", "twitter", "--bogus"}} {
		if _, errOut, code := runEngine(t, args...); code != 2 || errOut == "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: code %d, stderr %q", args, code, errOut)
		}
	}
}

// TestPagesShowStructuralGraph: --graph structural swaps a corpus page's recorded graph for
// page.BuildGraph's, in which twitter's objects reach depth 2 (what push by dependency level needs to
// tell objects apart); anything else is a usage error.
func TestPagesShowStructuralGraph(t *testing.T) {
	out, _, code := runEngine(t, "pages", "show", "twitter", "--graph", "structural")
	p, err := page.Parse([]byte(out))
	if code != 0 || err != nil {
		t.Fatalf("code %d, %v", code, err)
	}
	deepest := 0
	for _, d := range p.Depths() {
		deepest = max(deepest, d)
	}
	recorded, _ := page.Load("twitter", 1)
	if deepest != 2 || len(p.Activities) == len(recorded.Activities) {
		t.Errorf("depth %d, %d activities (recorded: %d)", deepest, len(p.Activities), len(recorded.Activities))
	}
	if _, stderr, code := runEngine(t, "pages", "show", "twitter", "--graph", "wprof"); code != 2 || !strings.Contains(stderr, "--graph wprof") {
		t.Errorf("--graph wprof: exit %d, %q", code, stderr)
	}
}
