package page

import (
	"io"
	"strings"
	"testing"
)

// TestMirror imports the test site: every referenced file becomes an object, the CDN host its own
// origin, missing references reported, and the served HTML/CSS has exactly the model's size with
// every reference rewritten to the load's lab URL.
func TestMirror(t *testing.T) {
	res, err := Mirror("testdata/mirror-site", "mirror-site")
	if err != nil {
		t.Fatal(err)
	}
	p := res.Page
	got := map[string]Object{}
	for _, o := range p.Objects {
		got[o.File] = o
	}
	want := map[string]Type{
		"index.html": TypeHTML, "static/css/site.css": TypeCSS, "static/css/print.css": TypeCSS,
		"cdn.example.com/lib/lib.js": TypeJS, "static/js/app.js": TypeJS, "img/hero.png": TypeImage,
		"img/photo.jpg": TypeImage, "img/small.png": TypeImage, "img/sprite.png": TypeImage,
	}
	if len(got) != len(want) {
		t.Errorf("objects %v, want %d", keys(got), len(want))
	}
	for f, ty := range want {
		if got[f].Type != ty {
			t.Errorf("%s: type %q, want %q", f, got[f].Type, ty)
		}
	}
	if o := got["cdn.example.com/lib/lib.js"]; o.Origin != 1 || o.Domain != "cdn.example.com" || o.Group != "example.com" {
		t.Errorf("cdn object: origin %d domain %q group %q", o.Origin, o.Domain, o.Group)
	}
	if got["img/sprite.png"].Parent != got["static/css/site.css"].ID {
		t.Errorf("sprite's parent %q, want the stylesheet", got["img/sprite.png"].Parent)
	}
	if len(res.Missing) != 0 {
		t.Errorf("missing %v", res.Missing)
	}
	b := Base{Scheme: "https", Port: 8443, Token: "tok"}
	for i, o := range p.Objects {
		body, err := p.Body(i, b)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(body)
		if int64(len(data)) != o.Size {
			t.Errorf("%s: served %d bytes, size %d", o.File, len(data), o.Size)
		}
		if o.Type == TypeHTML || o.Type == TypeCSS {
			for _, r := range o.Refs {
				u, _ := p.URL(p.objectByID(r.Object), b)
				if r.Object == "o0" {
					u = b.objectURL(OriginHost(0), p.Objects[0].Path)
				}
				if !strings.Contains(string(data), u) {
					t.Errorf("%s: served body lacks %s", o.File, u)
				}
			}
		}
	}
	root, _ := p.Body(0, b)
	data, _ := io.ReadAll(root)
	for _, s := range []string{`href="https://s1.wirelab.test:8443/L/tok/static/css/site.css"`, `src="https://s2.wirelab.test:8443/L/tok/cdn.example.com/lib/lib.js"`,
		`url('https://s1.wirelab.test:8443/L/tok/img/hero.png')`, `href="https://www.example.org/elsewhere.html"`, `srcset="https://s1.wirelab.test:8443/L/tok/img/small.png 1x`} {
		if !strings.Contains(string(data), s) {
			t.Errorf("root lacks %s:\n%s", s, data)
		}
	}
	// The page round-trips through JSON and validates.
	if _, err := Parse(p.JSON()); err != nil {
		t.Fatal(err)
	}
}

func keys(m map[string]Object) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
