package page

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// outsideFixture makes DIR/outside (a secret file and a directory holding a stylesheet) and returns
// DIR and a fresh empty site directory DIR/site.
func outsideFixture(t *testing.T) (base, site string) {
	t.Helper()
	base = t.TempDir()
	site = filepath.Join(base, "site")
	for _, d := range []string{site, filepath.Join(base, "outside", "dir")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(base, "outside", "secret.txt"), "root:x:0:0:SECRET\n")
	write(t, filepath.Join(base, "outside", "dir", "x.css"), "body{color:red} /* SECRET */\n")
	return base, site
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, target, at string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, at); err != nil {
		t.Fatal(err)
	}
}

// TestMirrorRefusesLinksOut: every way of reaching a file outside the site directory through a
// symbolic link is an import error that wraps ErrOutsideRoot and names the file.
func TestMirrorRefusesLinksOut(t *testing.T) {
	cases := []struct {
		name  string
		ref   string // what index.html references
		setup func(t *testing.T, base, site string)
	}{
		{"file link, absolute target", "secret.txt", func(t *testing.T, base, site string) {
			link(t, filepath.Join(base, "outside", "secret.txt"), filepath.Join(site, "secret.txt"))
		}},
		{"file link, relative target", "secret.txt", func(t *testing.T, base, site string) {
			link(t, "../outside/secret.txt", filepath.Join(site, "secret.txt"))
		}},
		{"directory link", "assets/x.css", func(t *testing.T, base, site string) {
			link(t, filepath.Join(base, "outside", "dir"), filepath.Join(site, "assets"))
		}},
		{"chain of links", "a.txt", func(t *testing.T, base, site string) {
			link(t, "b.txt", filepath.Join(site, "a.txt"))
			link(t, "sub/c.txt", filepath.Join(site, "b.txt"))
			link(t, "../../outside/secret.txt", filepath.Join(site, "sub", "c.txt"))
		}},
		{"dot-dot after resolution", "img/up.txt", func(t *testing.T, base, site string) {
			// img is a link to a directory inside the site, whose .. is the site's parent.
			link(t, "deep/er", filepath.Join(site, "img"))
			if err := os.MkdirAll(filepath.Join(site, "deep", "er"), 0o755); err != nil {
				t.Fatal(err)
			}
			link(t, "../../../outside/secret.txt", filepath.Join(site, "deep", "er", "up.txt"))
		}},
		{"root document is a link", "", func(t *testing.T, base, site string) {
			os.Remove(filepath.Join(site, "index.html"))
			link(t, filepath.Join(base, "outside", "secret.txt"), filepath.Join(site, "index.html"))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base, site := outsideFixture(t)
			write(t, filepath.Join(site, "index.html"), `<html><link rel="stylesheet" href="`+c.ref+`"><img src="`+c.ref+`"></html>`)
			c.setup(t, base, site)
			res, err := Mirror(site, "t")
			if err == nil {
				t.Fatalf("imported %d objects; want an error", len(res.Page.Objects))
			}
			if !errors.Is(err, ErrOutsideRoot) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q: want one line wrapping ErrOutsideRoot", err)
			}
		})
	}
}

// TestMirrorFollowsLinksInside: a link that stays inside the directory is followed.
func TestMirrorFollowsLinksInside(t *testing.T) {
	_, site := outsideFixture(t)
	write(t, filepath.Join(site, "index.html"), `<html><link rel="stylesheet" href="alias.css"></html>`)
	write(t, filepath.Join(site, "static", "real.css"), "body{}")
	link(t, "static/real.css", filepath.Join(site, "alias.css"))
	res, err := Mirror(site, "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Page.Objects) != 2 || res.Page.Objects[1].File != "alias.css" {
		t.Fatalf("objects %+v", res.Page.Objects)
	}
}

// TestPageFileOutsideRoot: a page file whose object names a file reached through a link out of
// root_dir is refused at validation (field named), and a file swapped for such a link after
// validation is refused when served (ErrOutsideRoot, which the server answers with 404).
func TestPageFileOutsideRoot(t *testing.T) {
	base, site := outsideFixture(t)
	write(t, filepath.Join(site, "index.html"), `<html><img src="pic.png"></html>`)
	write(t, filepath.Join(site, "pic.png"), "not really a png")
	res, err := Mirror(site, "t")
	if err != nil {
		t.Fatal(err)
	}
	pg := res.Page
	for _, target := range []string{filepath.Join(base, "outside", "secret.txt"), "../outside/secret.txt"} {
		os.Remove(filepath.Join(site, "pic.png"))
		link(t, target, filepath.Join(site, "pic.png"))
		// At serve time.
		if _, err := pg.Body(1, Base{Scheme: "http", Port: 80, Token: "t"}); !errors.Is(err, ErrOutsideRoot) {
			t.Errorf("Body after swap to %s: %v; want ErrOutsideRoot", target, err)
		}
		// In a page file read back.
		path := filepath.Join(base, "page.json")
		if err := os.WriteFile(path, pg.JSON(), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadFile(path)
		if err == nil || !strings.Contains(err.Error(), "objects[1].file") || !strings.Contains(err.Error(), "outside") {
			t.Errorf("page file with %s: %v; want an objects[1].file error", target, err)
		}
	}
	// A directory link: the object's file is under a directory that leaves the root.
	os.Remove(filepath.Join(site, "pic.png"))
	write(t, filepath.Join(base, "outside", "dir", "pic.png"), "not really a png")
	link(t, filepath.Join(base, "outside", "dir"), filepath.Join(site, "d"))
	pg.Objects[1].File = "d/pic.png"
	if _, err := pg.ReadObjectFile(1); !errors.Is(err, ErrOutsideRoot) {
		t.Errorf("directory link: %v", err)
	}
	if err := pg.Validate(); err == nil || !strings.Contains(err.Error(), "objects[1].file") {
		t.Errorf("directory link: Validate %v", err)
	}
}

// TestObjectFileNotRegular: a FIFO (or device) in the root is refused without blocking.
func TestObjectFileNotRegular(t *testing.T) {
	dir := t.TempDir()
	if err := mkfifo(filepath.Join(dir, "f")); err != nil {
		t.Skip(err)
	}
	pg := &Page{RootDir: dir, Objects: []Object{{File: "f"}}}
	if _, err := pg.ReadObjectFile(0); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("fifo: %v", err)
	}
}

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o644) }
