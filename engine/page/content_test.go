package page

import (
	"bytes"
	"compress/flate"
	"image/jpeg"
	"image/png"
	"io"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/internal/htmltest"
)

var bases = []Base{
	{Scheme: "http", Token: "a"},
	{Scheme: "https", Token: "0123456789abcdef"},
	{Scheme: "https", Port: 8443, Token: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},
	{Scheme: "http", Port: 65535, Token: "load-7_rep-3"},
}

func body(t *testing.T, p *Page, i int, b Base) []byte {
	t.Helper()
	bd, err := p.Body(i, b)
	if err != nil {
		t.Fatalf("%s object %d: %v", p.Name, i, err)
	}
	data, err := io.ReadAll(bd) // through Read, not WriteTo
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Every body of every corpus page has exactly the object's size, for every base, and sharded.
func TestBodiesHaveExactSizes(t *testing.T) {
	for _, name := range CorpusNames() {
		p := mustCorpus(t, name, 1)
		pages := []*Page{p}
		if sh, err := p.Shard(min(len(p.Objects)-1, 64), ShardRoundRobin); err == nil {
			pages = append(pages, sh)
		}
		for _, q := range pages {
			for _, b := range bases {
				for i, o := range q.Objects {
					if got := int64(len(body(t, q, i, b))); got != o.Size {
						t.Fatalf("%s (%d origins) %s with %+v: %d bytes, want %d", name, len(q.Origins), o.ID, b, got, o.Size)
					}
				}
			}
		}
	}
}

// Objects right at their minimum and just above it (where the comment no longer fits) keep
// their exact size.
func TestBodiesAtTheEdges(t *testing.T) {
	for _, extra := range []int64{0, 1, 3, 6, 7, 8} {
		p, err := Synthetic("synthetic:3x100B", 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range []Type{TypeJS, TypeCSS, TypeFont, TypeOther} {
			p.Objects[1].Type = typ
			p.Objects[0].Size = MinSize(p, 0) + extra
			for _, size := range []int64{1, 2, 3, 4, 5, 20, 21} {
				p.Objects[1].Size = size
				for _, b := range bases {
					for i, o := range p.Objects {
						if got := int64(len(body(t, p, i, b))); got != o.Size {
							t.Fatalf("%s of %d bytes (root +%d): got %d", o.Type, o.Size, extra, got)
						}
					}
				}
			}
		}
	}
	// JPEG: 1–3 leftover bytes, exactly one and two COM segments, and a split into three
	for _, size := range []int64{MinJPEGSize, MinJPEGSize + 1, MinJPEGSize + 3, MinJPEGSize + 4, MinJPEGSize + 65537, MinJPEGSize + 65538, MinJPEGSize + 3*65537 - 2} {
		p := &Page{Name: "j", Origins: []Origin{{Host: OriginHost(0)}}, Objects: []Object{
			{ID: "o0", Path: "/index.html", Size: 2000, Type: TypeHTML, ContentType: "text/html"},
			{ID: "o1", Path: "/a.jpg", Size: size, Type: TypeImage, ContentType: "image/jpeg"}}}
		data := body(t, p, 1, bases[0])
		if int64(len(data)) != size {
			t.Fatalf("jpeg %d: %d bytes", size, len(data))
		}
		if _, err := jpeg.Decode(bytes.NewReader(data)); err != nil {
			t.Fatalf("jpeg %d bytes does not decode: %v", size, err)
		}
	}
}

// Images are valid files of their content type (PNG chunk CRCs are checked by the decoder).
func TestImagesDecode(t *testing.T) {
	for _, name := range []string{"twitter", "neoload50", "unh100"} {
		p := mustCorpus(t, name, 1)
		for i, o := range p.Objects {
			if o.Type != TypeImage {
				continue
			}
			data := body(t, p, i, bases[1])
			var err error
			switch o.ContentType {
			case "image/png":
				_, err = png.Decode(bytes.NewReader(data))
			case "image/jpeg":
				_, err = jpeg.Decode(bytes.NewReader(data))
			default:
				t.Fatalf("%s: unexpected %s", o.ID, o.ContentType)
			}
			if err != nil {
				t.Fatalf("%s %s (%s, %d bytes) does not decode: %v", name, o.ID, o.ContentType, o.Size, err)
			}
		}
	}
}

func TestContentDeterminism(t *testing.T) {
	p1, p2 := mustCorpus(t, "youtube", 1), mustCorpus(t, "youtube", 1)
	for i := range p1.Objects {
		if !bytes.Equal(body(t, p1, i, bases[1]), body(t, p2, i, bases[1])) {
			t.Fatalf("object %d differs between two builds with the same seed", i)
		}
	}
	// another seed: other filler (same structure)
	p3 := p1.Clone()
	p3.Seed = 2
	if bytes.Equal(body(t, p1, 3, bases[1]), body(t, p3, 3, bases[1])) {
		t.Fatal("seeds 1 and 2 give the same content")
	}
	// another token: bodies without URLs are byte-identical; HTML and CSS differ only in URLs
	for i, o := range p1.Objects {
		a, b := body(t, p1, i, bases[1]), body(t, p1, i, bases[2])
		if o.Type != TypeHTML && !(o.Type == TypeCSS && len(references(p1, i)) > 0) {
			if !bytes.Equal(a, b) {
				t.Fatalf("%s (%s) depends on the token", o.ID, o.Type)
			}
			continue
		}
		if bytes.Equal(a, b) {
			t.Fatalf("%s (%s) does not embed the token", o.ID, o.Type)
		}
		if !strings.Contains(string(b), "/L/"+bases[2].Token+"/") || strings.Contains(string(b), "/L/"+bases[1].Token+"/") {
			t.Fatalf("%s: wrong token in URLs", o.ID)
		}
	}
}

// Filler does not compress: a body deflates to at least 70 % (text filler carries 6 bits per
// byte: 75 %), binary bodies to ~100 %.
func TestContentIsIncompressible(t *testing.T) {
	p := mustCorpus(t, "twitter", 1)
	for i, o := range p.Objects {
		data := body(t, p, i, bases[1])
		var c bytes.Buffer
		w, _ := flate.NewWriter(&c, flate.BestCompression)
		w.Write(data)
		w.Close()
		ratio := float64(c.Len()) / float64(len(data))
		floor := 0.98
		if o.Type == TypeHTML || o.Type == TypeCSS || o.Type == TypeJS {
			floor = 0.70
		}
		if ratio < floor {
			t.Errorf("%s (%s) compresses to %.2f", o.ID, o.Type, ratio)
		}
	}
}

// collectRefs parses HTML and returns every src/href attribute value; the HTML holds the one
// filler comment.
func collectRefs(t *testing.T, doc []byte) []string {
	t.Helper()
	refs, comments, err := htmltest.Refs(doc)
	if err != nil {
		t.Fatal(err)
	}
	if comments != 1 {
		t.Fatalf("%d comments in the HTML, want the one filler comment", comments)
	}
	return refs
}

// The root HTML references every object directly; a CSS references exactly the objects it owns.
func TestHTMLAndCSSReferences(t *testing.T) {
	for _, name := range CorpusNames() {
		for _, shards := range []int{1, 3} {
			p, err := mustCorpus(t, name, 1).Shard(shards, ShardRoundRobin)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range bases {
				urls, err := p.URLsAt(b)
				if err != nil {
					t.Fatal(err)
				}
				got := collectRefs(t, body(t, p, 0, b))
				want := append([]string(nil), urls[1:]...)
				sort.Strings(got)
				sort.Strings(want)
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Fatalf("%s/%d shards: root references\n%v\nwant\n%v", name, shards, got, want)
				}
				for i, o := range p.Objects {
					if o.Type != TypeCSS {
						continue
					}
					var owned []string
					for j, x := range p.Objects {
						if x.Parent == o.ID {
							owned = append(owned, urls[j])
						}
					}
					refs := regexp.MustCompile(`url\("([^"]+)"\)`).FindAllStringSubmatch(string(body(t, p, i, b)), -1)
					var gotCSS []string
					for _, r := range refs {
						gotCSS = append(gotCSS, r[1])
					}
					sort.Strings(owned)
					sort.Strings(gotCSS)
					if strings.Join(owned, " ") != strings.Join(gotCSS, " ") {
						t.Fatalf("%s %s references %v, owns %v", name, o.ID, gotCSS, owned)
					}
				}
			}
		}
	}
}

func TestURLScheme(t *testing.T) {
	p, err := mustCorpus(t, "twitter", 1).Shard(2, ShardRoundRobin)
	if err != nil {
		t.Fatal(err)
	}
	urls, err := p.URLs("tok", "https")
	if err != nil {
		t.Fatal(err)
	}
	if urls[0] != "https://s1.wirelab.test/L/tok/" || urls[1] != "https://s1.wirelab.test/L/tok/css/o1.css" || urls[2] != "https://s2.wirelab.test/L/tok/css/o2.css" {
		t.Fatalf("URLs: %v", urls[:3])
	}
	if u, _ := p.URL(3, Base{Scheme: "http", Port: 8080, Token: "t"}); u != "http://s1.wirelab.test:8080/L/t/js/o3.js" {
		t.Fatalf("URL with port: %s", u)
	}
	if u, _ := p.URL(3, Base{Scheme: "http", Port: 80, Token: "t"}); u != "http://s1.wirelab.test/L/t/js/o3.js" {
		t.Fatalf("URL with default port: %s", u)
	}
	for _, bad := range []string{"", "a/b", "a b", strings.Repeat("x", 33), "ü"} {
		if _, err := p.URLs(bad, "http"); err == nil {
			t.Errorf("token %q accepted", bad)
		}
	}
	if _, err := p.URLs("t", "ftp"); err == nil {
		t.Error("scheme ftp accepted")
	}
	for path, want := range map[string][2]string{
		"/L/tok/":                              {"tok", "/"},
		"/L/tok/index.html":                    {"tok", "/index.html"},
		"/L/a-b_9/img/o5.png":                  {"a-b_9", "/img/o5.png"},
		"/L/tok":                               {},
		"/index.html":                          {},
		"/L//x":                                {},
		"/L/" + strings.Repeat("y", 33) + "/x": {},
	} {
		tok, op, ok := SplitPath(path)
		if ok != (want[0] != "") || tok != want[0] || op != want[1] {
			t.Errorf("SplitPath(%q) = %q %q %v", path, tok, op, ok)
		}
	}
}

// Base.Host names every origin's objects under one host (a local-internet site serving its page
// under its own name); a host that is not a plain DNS name is refused.
func TestURLHost(t *testing.T) {
	p, err := mustCorpus(t, "twitter", 1).Shard(2, ShardRoundRobin)
	if err != nil {
		t.Fatal(err)
	}
	urls, err := p.URLsAt(Base{Scheme: "https", Token: "tok", Host: "h3.wirelab.test"})
	if err != nil {
		t.Fatal(err)
	}
	if urls[0] != "https://h3.wirelab.test/L/tok/" || urls[2] != "https://h3.wirelab.test/L/tok/css/o2.css" {
		t.Errorf("URLs with Host: %v", urls[:3])
	}
	for _, bad := range []string{"a/b", "a b", ".x", "x.", "a..b", "h:443", strings.Repeat("x", 254)} {
		if _, err := p.URLsAt(Base{Scheme: "https", Token: "t", Host: bad}); err == nil {
			t.Errorf("host %q accepted", bad)
		}
	}
}
