package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/page"
)

// pages generate: N valid page files, the same bytes for the same seed; ls --corpus; bad input.
func TestPagesGenerate(t *testing.T) {
	dir := t.TempDir()
	var files [2][]string
	for k := range 2 {
		out, errOut, code := runEngine(t, "pages", "generate", "--like", "httparchive-2014", "--count", "20", "--seed", "3", "--out", filepath.Join(dir, string(rune('a'+k))))
		var l corpusListing
		if code != 0 || json.Unmarshal([]byte(out), &l) != nil || len(l.Pages) != 20 || len(l.Written) != 20 {
			t.Fatalf("generate: code %d %s %.300s", code, errOut, out)
		}
		files[k] = l.Written
	}
	for i := range files[0] {
		a, _ := os.ReadFile(files[0][i])
		b, _ := os.ReadFile(files[1][i])
		p, err := page.Parse(a)
		if err != nil || !bytes.Equal(a, b) {
			t.Fatalf("%s: %v; same seed, same bytes: %v", files[0][i], err, bytes.Equal(a, b))
		}
		byName, err := page.Load(p.Name, 1)
		if err != nil || !bytes.Equal(byName.JSON(), a) {
			t.Fatalf("%s: the file is not the page its name builds: %v", p.Name, err)
		}
	}
	out, _, code := runEngine(t, "pages", "ls", "--corpus", "web200")
	var l corpusListing
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil || len(l.Pages) != 200 || l.Pages[16].Name != "web200:17" {
		t.Fatalf("ls --corpus web200: code %d", code)
	}
	for _, args := range [][]string{
		{"pages", "generate", "--like", "httparchive-1999", "--count", "3"},
		{"pages", "generate", "--like", "httparchive-2014", "--count", "0"},
		{"pages", "generate", "--like", "httparchive-2014", "--count", "3", "--seed", "-1"},
		{"pages", "ls", "--corpus", "web300"},
		{"pages", "profiles", "nope"},
		{"pages", "show", "web200:201"},
	} {
		if _, errOut, code := runEngine(t, args...); code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: code %d, %q", args, code, errOut)
		}
	}
}

// docs/pages.md's profile tables are the output of `pages profiles --markdown`.
func TestPagesProfilesTableInDocs(t *testing.T) {
	out, _, code := runEngine(t, "pages", "profiles", "--markdown")
	if code != 0 {
		t.Fatal(code)
	}
	docs, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "pages.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(docs), out) {
		t.Error("docs/pages.md does not hold the output of `wirelab-engine pages profiles --markdown`; paste it under \"Generated corpora\"")
	}
}

// pages import: exit 0 with the pages written when one is imported, exit 2 naming the first
// skipped entry when none is.
func TestPagesImportDir(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "junk.txt"), []byte("junk"), 0o644)
	_, errOut, code := runEngine(t, "pages", "import", dir, "--out", out)
	if code != 2 || !strings.Contains(errOut, "no page imported") || !strings.Contains(errOut, "junk.txt") {
		t.Fatalf("garbage only: code %d %q", code, errOut)
	}
	har := `{"log":{"entries":[{"startedDateTime":"2026-01-01T00:00:00Z","time":3,"request":{"method":"GET","url":"https://a.example/"},` +
		`"response":{"status":200,"headers":[],"content":{"size":5000,"mimeType":"text/html"}},"timings":{"wait":3}}]}}`
	os.WriteFile(filepath.Join(dir, "home page.har"), []byte(har), 0o644)
	stdout, _, code := runEngine(t, "pages", "import", dir, "--out", out, "--prefix", "my-")
	var s struct {
		Imported []struct{ Name, File string }
		Skipped  []struct{ Entry, Reason string }
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &s) != nil || len(s.Imported) != 1 || len(s.Skipped) != 1 || s.Imported[0].Name != "my-home-page" {
		t.Fatalf("code %d %s", code, stdout)
	}
	if _, err := page.ReadFile(s.Imported[0].File); err != nil {
		t.Fatal(err)
	}
}
