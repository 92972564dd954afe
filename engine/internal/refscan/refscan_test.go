package refscan

import (
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

func urls(refs []Ref) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.URL)
	}
	return out
}

func TestCSSRefs(t *testing.T) {
	for _, tc := range []struct {
		css  string
		want []string
	}{
		{`a{background:url(x.png)}`, []string{"x.png"}},
		{`a{background:URL( "y.png" )}`, []string{"y.png"}},
		{`a{background:url(  'z w.png'  )}`, []string{"z w.png"}},
		{`@import "a.css"; @import 'b.css' screen; @IMPORT url(c.css);`, []string{"a.css", "b.css", "c.css"}},
		{`/* url(no.png) @import "no.css"; */ a{b:url(yes.png)}`, []string{"yes.png"}},
		{`a{content:"url(no.png)"} b{content:'\'url(no2.png)'}`, nil},
		{`a{background:myurl(no.png)} b{x:url(ok.png)}`, []string{"ok.png"}},
		{`a{background:url("esc\"aped.png")}`, []string{`esc"aped.png`}},
		{`@font-face{src:url(f.woff2) format("woff2"),url(f.woff) format("woff")}`, []string{"f.woff2", "f.woff"}},
		{`a{b:url(unterminated`, []string{"unterminated"}},
		{`/* unterminated comment url(x)`, nil},
		{`a{b:url()}`, []string{""}},
	} {
		refs := CSSRefs([]byte(tc.css))
		if got := urls(refs); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.css, got, tc.want)
		}
		checkSpans(t, tc.css, refs, false)
	}
}

func TestFirstSrcsetURL(t *testing.T) {
	for in, want := range map[string]string{
		"a.png 1x, b.png 2x": "a.png", "  ,, a.png": "a.png", "a.png,b.png": "a.png,b.png", "a.png, b.png": "a.png", "": "", "a.png": "a.png",
		"a.png\t100w": "a.png",
	} {
		if got := FirstSrcsetURL(in); got != want {
			t.Errorf("FirstSrcsetURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestHTMLSpans: each reference's span is exactly the text a rewriter must replace, also with
// unquoted values, spaces around =, upper-case names, character references, srcset, style.
func TestHTMLSpans(t *testing.T) {
	doc := `<HTML><LINK REL="stylesheet" HREF = 'a.css'><img src=b.png alt=x><img srcset="  c.png 1x, d.png 2x">` +
		`<script src=" e.js "></script><div style="background:url(f.png)"></div><style>@import "g.css";</style>` +
		`<img src="h.png?a=1&amp;b=2"><p style="x:url(&quot;nospan.png&quot;)"><base href="/b/">`
	refs := HTMLRefs([]byte(doc))
	want := []string{"a.css", "b.png", "c.png", "e.js", "f.png", "g.css", "h.png?a=1&b=2", `nospan.png`, "/b/"}
	if got := urls(refs); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	raws := []string{"a.css", "b.png", "c.png", "e.js", "f.png", "g.css", "h.png?a=1&amp;b=2"}
	for i, r := range raws {
		if got := doc[refs[i].Offset : refs[i].Offset+refs[i].Length]; got != r {
			t.Errorf("ref %d: span %q, want %q", i, got, r)
		}
	}
	if refs[7].Spanned() {
		t.Errorf("a style attribute with character references has no exact span: %+v", refs[7])
	}
	if !refs[8].Base || refs[0].Kind != CSS || refs[1].Kind != Image || refs[3].Kind != JS {
		t.Errorf("kinds %+v", refs)
	}
}

// checkSpans: spans lie in the input, ascend without overlap, and hold the reference (decoded).
func checkSpans(t *testing.T, in string, refs []Ref, isHTML bool) {
	t.Helper()
	end := 0
	for _, r := range refs {
		if !r.Spanned() {
			continue
		}
		if r.Offset < end || r.Length < 0 || r.Offset+r.Length > len(in) {
			t.Fatalf("span [%d,+%d) of %q out of order or out of the input (%d bytes, previous end %d)", r.Offset, r.Length, r.URL, len(in), end)
		}
		end = r.Offset + r.Length
		raw := in[r.Offset:end]
		if isHTML && strings.TrimSpace(html.UnescapeString(raw)) != r.URL && raw != r.URL && !strings.Contains(raw, "\\") {
			t.Fatalf("span %q does not hold %q", raw, r.URL)
		}
		if !isHTML && !strings.Contains(raw, "\\") && raw != r.URL {
			t.Fatalf("css span %q does not hold %q", raw, r.URL)
		}
	}
}

// FuzzHTMLRefs: any document scans without panicking; spans ascend inside the input and hold
// their reference.
func FuzzHTMLRefs(f *testing.F) {
	f.Add(`<link rel=stylesheet href=a.css><img srcset="b.png 2x"><style>@import "c.css"</style>`)
	f.Add(`<base href="//x.wirelab.test/"><picture><source srcset=","><img src=d#e></picture>`)
	f.Add(`<div style="background:url('`)
	f.Add(`<img =src=a src="b"/ src=c>`)
	f.Add(`<img src="&amp;&#x41;&notin;x">`)
	f.Fuzz(func(t *testing.T, doc string) {
		checkSpans(t, doc, HTMLRefs([]byte(doc)), true)
	})
}

// FuzzCSSRefs: any stylesheet scans without panicking; spans ascend inside the input.
func FuzzCSSRefs(f *testing.F) {
	f.Add(`a{b:url("x\"y")} @import 'z'; /* c */`)
	f.Add(`url(`)
	f.Add(`@import`)
	f.Add(`\`)
	f.Fuzz(func(t *testing.T, css string) {
		checkSpans(t, css, CSSRefs([]byte(css)), false)
	})
}
