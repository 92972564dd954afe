package page

import (
	"reflect"
	"testing"
)

func TestModelFlatFoundBy(t *testing.T) {
	// Generated content: the root references every object, so a flat load finds all of them in it.
	p, err := Load("twitter", 1)
	if err != nil {
		t.Fatal(err)
	}
	m := p.Model()
	if len(m.Size) != len(p.Objects) || m.Origins != 1 || len(m.Activities) != len(p.Activities) {
		t.Fatalf("model %+v", m)
	}
	for i, f := range m.FoundBy {
		if want := map[bool]int{true: -1, false: 0}[i == 0]; f != want {
			t.Errorf("found_by[%d] = %d, want %d", i, f, want)
		}
	}
	// File-backed documents: the root references a stylesheet, which references a font; an object
	// nobody references is never requested.
	q := &Page{Name: "f", Origins: []Origin{{Host: OriginHost(0)}}, Objects: []Object{
		{ID: "root", Type: TypeHTML, Size: 100, File: "index.html", Refs: []Ref{{Object: "css"}}},
		{ID: "css", Type: TypeCSS, Size: 50, File: "a.css", Refs: []Ref{{Object: "font"}, {Object: "root"}}},
		{ID: "font", Type: TypeFont, Size: 20, File: "f.woff2"},
		{ID: "orphan", Type: TypeImage, Size: 10, File: "x.png"},
	}}
	if got, want := q.Model().FoundBy, []int{-1, 0, 1, -1}; !reflect.DeepEqual(got, want) {
		t.Errorf("file-backed found_by = %v, want %v", got, want)
	}
}

func TestModelActivities(t *testing.T) {
	// Without a graph of its own a page gets BuildGraph's, by index.
	p, err := Load("twitter", 1)
	if err != nil {
		t.Fatal(err)
	}
	p.Activities = nil
	m := p.Model()
	g := BuildGraph(p)
	if len(m.Activities) != len(g) {
		t.Fatalf("%d activities, want %d", len(m.Activities), len(g))
	}
	ids := map[string]int{}
	for i, a := range g {
		ids[a.ID] = i
	}
	for i, a := range g {
		ma := m.Activities[i]
		if ma.Kind != a.Kind || p.Objects[ma.Object].ID != a.Object || ma.DurationMs != a.DurationMs || len(ma.Deps) != len(a.Deps) {
			t.Fatalf("activity %d: %+v vs %+v", i, ma, a)
		}
		for j, d := range a.Deps {
			if ma.Deps[j] != ids[d.On] || ma.FirstChunk[j] != (d.Point() == WhenFirstChunk) {
				t.Errorf("activity %d dep %d: %d/%v vs %+v", i, j, ma.Deps[j], ma.FirstChunk[j], d)
			}
		}
	}
}
