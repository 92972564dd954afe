package client

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

func refURLs(refs []ref) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.url.String()
		if r.frame {
			out[i] += " (frame)"
		}
	}
	return out
}

func TestDiscoverHTML(t *testing.T) {
	base := mustURL("https://s1.wirelab.test/L/tok/index.html")
	for _, tc := range []struct {
		name, html string
		want       []string
	}{
		{"stylesheet and script in order",
			`<link rel=stylesheet href="a.css"><script src="/b.js"></script><script>var x = "<img src=no.png>";</script>`,
			[]string{"https://s1.wirelab.test/L/tok/a.css", "https://s1.wirelab.test/b.js"}},
		{"link rels",
			`<link rel="preload" href="p.woff2"><link rel="modulepreload" href="m.js"><link rel="SHORTCUT ICON" href="i.ico">
			 <link rel="apple-touch-icon" href="t.png"><link rel="prefetch" href="no1"><link rel="dns-prefetch" href="//no2">
			 <link rel="preconnect" href="//no3"><link rel="next" href="no4"><link rel="manifest" href="no5">`,
			[]string{"https://s1.wirelab.test/L/tok/p.woff2", "https://s1.wirelab.test/L/tok/m.js", "https://s1.wirelab.test/L/tok/i.ico", "https://s1.wirelab.test/L/tok/t.png"}},
		{"img src wins over srcset; srcset first candidate otherwise (a comma inside a URL is part of it)",
			`<img src="a.png" srcset="b.png 2x"><img srcset=" c.png 1x, d.png 2x"><img srcset="e.png,f.png 2x"><img srcset="g.png, h.png 2x"><img>`,
			[]string{"https://s1.wirelab.test/L/tok/a.png", "https://s1.wirelab.test/L/tok/c.png", "https://s1.wirelab.test/L/tok/e.png,f.png", "https://s1.wirelab.test/L/tok/g.png"}},
		{"picture: first unconditional source, not the img",
			`<picture><source media="(min-width: 800px)" srcset="wide.png"><source srcset="s.webp 1x, s2.webp 2x"><img src="fallback.png"></picture><img src="after.png">`,
			[]string{"https://s1.wirelab.test/L/tok/s.webp", "https://s1.wirelab.test/L/tok/after.png"}},
		{"picture without a usable source falls back to img",
			`<picture><source media="print" srcset="p.png"><img src="fallback.png"></picture>`,
			[]string{"https://s1.wirelab.test/L/tok/fallback.png"}},
		{"frames, embeds, objects, posters, image inputs, backgrounds",
			`<iframe src="f.html"></iframe><frame src="g.html"><embed src="e.swf"><object data="o.svg"></object>
			 <video poster="v.jpg" src="no.mp4"></video><input type=image src="btn.png"><input type=text src="no.png">
			 <body background="bg.gif"><table background="t.gif"><td background="td.gif">`,
			[]string{"https://s1.wirelab.test/L/tok/f.html (frame)", "https://s1.wirelab.test/L/tok/g.html (frame)", "https://s1.wirelab.test/L/tok/e.swf",
				"https://s1.wirelab.test/L/tok/o.svg", "https://s1.wirelab.test/L/tok/v.jpg", "https://s1.wirelab.test/L/tok/btn.png",
				"https://s1.wirelab.test/L/tok/bg.gif", "https://s1.wirelab.test/L/tok/t.gif", "https://s1.wirelab.test/L/tok/td.gif"}},
		{"inline css: style elements and attributes",
			`<style>@import url(imp.css); .a{background:url("s.png")} /* url(no.png) */</style><div style="background: url('d.png')">`,
			[]string{"https://s1.wirelab.test/L/tok/imp.css", "https://s1.wirelab.test/L/tok/s.png", "https://s1.wirelab.test/L/tok/d.png"}},
		{"base href changes the base, first one only",
			`<base href="https://s2.wirelab.test/x/"><base href="/ignored/"><img src="a.png">`,
			[]string{"https://s2.wirelab.test/x/a.png"}},
		{"skipped: data, javascript, fragment-only, other schemes; fragments removed",
			`<img src="data:image/png;base64,AA"><img src="javascript:void(0)"><img src="#x"><img src="ftp://h/f"><img src="mailto:a@b"><img src="ok.png#frag">`,
			[]string{"https://s1.wirelab.test/L/tok/ok.png"}},
		{"nomodule scripts are skipped; absolute and protocol-relative URLs",
			`<script nomodule src="legacy.js"></script><script type=module src="//s3.wirelab.test/m.js"></script><script src="http://s4.wirelab.test/x.js"></script>`,
			[]string{"https://s3.wirelab.test/m.js", "http://s4.wirelab.test/x.js"}},
		{"links are not fetched",
			`<a href="other.html">x</a><area href="no.html">`,
			nil},
		{"malformed markup is tokenized as a browser does: first src wins, an unclosed tag at EOF is dropped",
			`<img src="a.png"<img src=b.png><<<img src='c.png'`,
			[]string{"https://s1.wirelab.test/L/tok/a.png"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := refURLs(discoverHTML([]byte(tc.html), base))
			if !slices.Equal(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestDiscoverCSS(t *testing.T) {
	// Relative references resolve against the stylesheet, empty ones are dropped.
	got := refURLs(discoverCSS([]byte(`a{b:url(../img/a.png)} c{d:url()} e{f:url(data:x)}`), mustURL("https://s1.wirelab.test/css/main.css")))
	if want := []string{"https://s1.wirelab.test/img/a.png"}; !slices.Equal(got, want) {
		t.Errorf("discoverCSS: %q, want %q", got, want)
	}
}

// FuzzDiscoverHTML: any input parses without panicking, and every reference is an absolute
// http(s) URL without a fragment.
func FuzzDiscoverHTML(f *testing.F) {
	f.Add(`<link rel=stylesheet href=a.css><img srcset="b.png 2x"><style>@import "c.css"</style>`)
	f.Add(`<base href="//x.wirelab.test/"><picture><source srcset=","><img src=d#e></picture>`)
	f.Add(`<div style="background:url('`)
	base := mustURL("https://s1.wirelab.test/dir/page.html")
	f.Fuzz(func(t *testing.T, doc string) {
		for _, r := range discoverHTML([]byte(doc), base) {
			checkRef(t, r.url)
		}
	})
}

// FuzzDiscoverCSS: every reference of any stylesheet is an absolute http(s) URL without a fragment.
func FuzzDiscoverCSS(f *testing.F) {
	f.Add(`a{b:url("x\"y")} @import 'z'; /* c */`)
	f.Add(`url(`)
	f.Fuzz(func(t *testing.T, css string) {
		for _, r := range discoverCSS([]byte(css), mustURL("https://s1.wirelab.test/a.css")) {
			checkRef(t, r.url)
		}
	})
}

func checkRef(t *testing.T, u *url.URL) {
	t.Helper()
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" || strings.Contains(u.String(), "#") {
		t.Fatalf("bad reference %q", u)
	}
}
