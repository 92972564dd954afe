package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/page"
)

// TestLinkOutOfRootIs404: a mirrored page's file swapped, after import, for a link to a file
// outside the site directory (or reached through a directory link out of it) is answered 404 and
// its content never sent.
func TestLinkOutOfRootIs404(t *testing.T) {
	base := t.TempDir()
	site := filepath.Join(base, "site")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(site, "img"), 0o755))
	must(os.MkdirAll(filepath.Join(base, "outside", "img"), 0o755))
	must(os.WriteFile(filepath.Join(site, "index.html"), []byte(`<html><img src="a.png"><img src="img/b.png"></html>`), 0o644))
	must(os.WriteFile(filepath.Join(site, "a.png"), []byte("aaaaaaaaaaaaaaaaaa"), 0o644))
	must(os.WriteFile(filepath.Join(site, "img", "b.png"), []byte("bbbbbbbbbbbbbbbbbb"), 0o644))
	must(os.WriteFile(filepath.Join(base, "outside", "secret"), []byte("SECRETSECRETSECRET"), 0o644))
	must(os.WriteFile(filepath.Join(base, "outside", "img", "b.png"), []byte("SECRETSECRETSECRET"), 0o644))
	res, err := page.Mirror(site, "t")
	must(err)
	s := startTest(t, res.Page, nil)
	c := newClient(t, s, H1, nil)
	urls, _ := s.URLs(H1, "t1")
	if r := fetch(c, urls[1]); r.status != 200 {
		t.Fatalf("before the swap: %d %v", r.status, r.err)
	}
	must(os.Remove(filepath.Join(site, "a.png")))
	must(os.Symlink("../outside/secret", filepath.Join(site, "a.png")))
	must(os.RemoveAll(filepath.Join(site, "img")))
	must(os.Symlink(filepath.Join(base, "outside", "img"), filepath.Join(site, "img")))
	for _, u := range urls[1:] {
		r := fetch(c, u)
		if r.status != 404 || strings.Contains(string(r.body), "SECRET") {
			t.Errorf("%s after the swap: status %d, body %q; want 404", u, r.status, r.body)
		}
	}
}
