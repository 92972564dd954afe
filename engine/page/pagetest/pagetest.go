// Package pagetest holds hand-made pages whose loads the tests of several packages know in
// advance (the engine loader's replay in engine/client, Chromium's and the replay's in
// cmd/wirelab-engine).
package pagetest

import (
	"testing"

	"github.com/wirelab/wirelab/engine/page"
)

// CriticalPath is a page whose replay time is known: a small root, a script, two images;
// durations in ms.
//
//	d0 root ─first chunk→ p0 parse 50 ─→ d1 js ─→ e1 evaluate 80 ─┬→ d2 image
//	d0 root ─────────────────────────────────────────→ p1 parse 40 (after e1) ─→ d3 image
func CriticalPath() *page.Page {
	p := &page.Page{Name: "critical-path", Seed: 1, Origins: []page.Origin{{Host: page.OriginHost(0)}},
		Objects: []page.Object{
			{ID: "root", Path: "/index.html", Size: 1, Type: page.TypeHTML, ContentType: "text/html; charset=utf-8"},
			{ID: "js", Path: "/app.js", Size: 900, Type: page.TypeJS, ContentType: "text/javascript"},
			{ID: "img1", Path: "/a.png", Size: 900, Type: page.TypeImage, ContentType: "image/png"},
			{ID: "img2", Path: "/b.png", Size: 900, Type: page.TypeImage, ContentType: "image/png"},
		},
		Activities: []page.Activity{
			{ID: "d0", Kind: page.KindDownload, Object: "root"},
			{ID: "p0", Kind: page.KindParse, Object: "root", DurationMs: 50, Deps: []page.Dep{{On: "d0", When: page.WhenFirstChunk}}},
			{ID: "d1", Kind: page.KindDownload, Object: "js", Deps: []page.Dep{{On: "p0"}}},
			{ID: "e1", Kind: page.KindEvaluate, Object: "js", DurationMs: 80, Deps: []page.Dep{{On: "d1"}}},
			{ID: "p1", Kind: page.KindParse, Object: "root", DurationMs: 40, Deps: []page.Dep{{On: "d0"}, {On: "e1"}}},
			{ID: "d2", Kind: page.KindDownload, Object: "img1", Deps: []page.Dep{{On: "e1"}}},
			{ID: "d3", Kind: page.KindDownload, Object: "img2", Deps: []page.Dep{{On: "p1"}}},
		}}
	p.Objects[0].Size = page.MinSize(p, 0) + 100
	if err := p.Validate(); err != nil {
		panic("pagetest: the critical-path page is invalid: " + err.Error()) // a bug in this file
	}
	return p
}

// Structural is the corpus page twitter (seed 1) with its structural dependency graph
// (page.BuildGraph), which puts objects below depth 1 — what the push policies tell apart: HTML;
// 2 CSS and 2 JS at depth 1; an image owned by a CSS and a <body> image behind the scripts at
// depth 2. (The corpus's recorded Chromium graph puts every object at depth 1.)
func Structural(t testing.TB) *page.Page {
	t.Helper()
	pg, err := page.Load("twitter", 1)
	if err != nil {
		t.Fatal(err)
	}
	pg.Activities = page.BuildGraph(pg)
	return pg
}
