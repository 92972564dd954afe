package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/page"
)

// TestBrowseBadFlags: bad input is one line naming the flag, exit 2, before Chromium starts.
func TestBrowseBadFlags(t *testing.T) {
	u := "https://s1.wirelab.test/L/t/"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{u}, "--proto: required"},
		{[]string{u, "--proto", "h2c"}, "Chromium does not speak h2c"},
		{[]string{u, "--proto", "h2", "--dns", "10.77.2.53", "--resolve", "s1.wirelab.test=10.77.1.1"}, "choose one"},
		{[]string{"https://www.google.com/", "--proto", "h2"}, "URL https://www.google.com/"},
		{[]string{u, "--proto", "h2", "--cert", "/nonexistent.pem"}, "--cert /nonexistent.pem"},
		{[]string{u, "--proto", "h2", "--timeout", "0s"}, "-timeout"},
		{[]string{u, u, "--proto", "h2"}, "want exactly one URL"},
	} {
		_, errOut, code := runEngine(t, append([]string{"browse"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%q: exit %d, %q; want exit 2 naming %q", tc.args, code, errOut, tc.want)
		}
	}
	// --dns checks the resolver configuration: outside a run's client namespace it is not the run's.
	if _, errOut, code := runEngine(t, "browse", u, "--proto", "h2", "--dns", "10.77.2.53"); code != 2 || !strings.Contains(errOut, "resolv.conf") {
		t.Errorf("--dns outside the namespace: exit %d, %q", code, errOut)
	}
}

// TestPagesMirrorAndImport: pages mirror writes a valid file-backed page; pages import-har builds
// the corpus page's objects back from Chromium's HAR; bad input is one line and exit 2.
func TestPagesMirrorAndImport(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "mirror.json")
	if _, errOut, code := runEngine(t, "pages", "mirror", "../../page/testdata/mirror-site", "--out", out); code != 0 || !strings.Contains(errOut, "pages mirror: mirror-site: 9 objects") {
		t.Fatalf("pages mirror: exit %d, %q", code, errOut)
	}
	if stdout, _, code := runEngine(t, "pages", "validate", out); code != 0 || !strings.Contains(stdout, `"valid": true`) {
		t.Fatalf("validate the mirror: %d %q", code, stdout)
	}
	imp := filepath.Join(dir, "imported.json")
	if _, errOut, code := runEngine(t, "pages", "import-har", "../../browser/testdata/twitter-chromium-h2.har", "--out", imp, "--name", "tw"); code != 0 {
		t.Fatalf("import-har: exit %d, %q", code, errOut)
	}
	pg, err := page.ReadFile(imp)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := page.Corpus("twitter", 1)
	if len(pg.Objects) != len(want.Objects) || pg.TotalBytes() != want.TotalBytes() || pg.Name != "tw" {
		t.Errorf("imported %s: %d objects, %d bytes; want %d, %d", pg.Name, len(pg.Objects), pg.TotalBytes(), len(want.Objects), want.TotalBytes())
	}
	os.WriteFile(filepath.Join(dir, "bad.har"), []byte(`{"log":{"entries":[]}}`), 0o644)
	for _, args := range [][]string{
		{"pages", "import-har", filepath.Join(dir, "bad.har")},
		{"pages", "mirror", filepath.Join(dir, "nonexistent")},
		{"pages", "record", "https://www.google.com/", "--out", filepath.Join(dir, "x.json")},
		{"pages", "record", "twitter", "--proto", "spdy3"},
	} {
		if _, errOut, code := runEngine(t, args...); code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%q: exit %d, %q; want one line and exit 2", args, code, errOut)
		}
	}
}

// TestPagesRecord: pages record of a corpus page (served on loopback) keeps the page's objects
// and adds a graph with measured computation.
func TestPagesRecord(t *testing.T) {
	requireChromium(t)
	out := filepath.Join(t.TempDir(), "youtube.json")
	if _, errOut, code := runEngine(t, "pages", "record", "youtube", "--out", out); code != 0 {
		t.Fatalf("pages record: exit %d, %q", code, errOut)
	}
	pg, err := page.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := page.Corpus("youtube", 1)
	b1, _ := json.Marshal(pg.Objects)
	b2, _ := json.Marshal(want.Objects)
	if string(b1) != string(b2) {
		t.Error("the recorded page's objects differ from the corpus page's")
	}
	var downloads, compute int
	for _, a := range pg.Activities {
		if a.Kind == page.KindDownload {
			downloads++
		} else if a.DurationMs > 0 {
			compute++
		}
	}
	if downloads != len(want.Objects) || compute == 0 || !strings.Contains(pg.Source, "graph recorded with Chrome/") {
		t.Errorf("%d downloads, %d timed computations, source %q", downloads, compute, pg.Source)
	}
}
