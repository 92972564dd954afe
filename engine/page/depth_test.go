package page

import (
	"slices"
	"testing"
)

// TestDepthsStructural: twitter with the structural graph (BuildGraph): its head's stylesheets and
// scripts at depth 1, the image a stylesheet owns and the body image behind the scripts at 2.
func TestDepthsStructural(t *testing.T) {
	p, err := Load("twitter", 1)
	if err != nil {
		t.Fatal(err)
	}
	p.Activities = BuildGraph(p)
	got := p.Depths()
	for i, o := range p.Objects {
		want := 0
		switch {
		case i == 0:
		case o.Type == TypeCSS || o.Type == TypeJS:
			want = 1 // referenced by <head>, fetched once the head is parsed
		case o.Type == TypeImage:
			want = 2 // behind a stylesheet (its owner) or behind the <head> scripts (body images)
		}
		if got[i] != want {
			t.Errorf("%s (%s, parent %q): depth %d, want %d", o.ID, o.Type, o.Parent, got[i], want)
		}
	}
}

func TestDepthsSynthetic(t *testing.T) {
	p, err := Load("synthetic:3x1kB", 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Depths(); !slices.Equal(got, []int{0, 1, 1, 1}) {
		t.Errorf("depths %v: images of a page without scripts are found by the root alone", got)
	}
}

// TestDepthsRecorded: the corpus pages carry graphs recorded from Chromium, whose preload scanner
// requests every sub-resource as soon as the root's first chunk has arrived: every object is at
// depth 1.
func TestDepthsRecorded(t *testing.T) {
	for _, name := range CorpusNames() {
		p, err := Load(name, 1)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range p.Depths() {
			if want := min(i, 1); d != want {
				t.Errorf("%s: %s at depth %d, want %d", name, p.Objects[i].ID, d, want)
			}
		}
	}
}

// TestDepthsGraph: a recorded graph decides, not the objects' types: the longest chain of downloads
// counts, computation in between does not, and a page without activities gets BuildGraph's.
func TestDepthsGraph(t *testing.T) {
	p, err := Load("synthetic:4x1kB", 1)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(p.Objects))
	for i, o := range p.Objects {
		ids[i] = o.ID
	}
	// root → a (first chunk) → evaluate-like parse of root → b; a → c; b + c → d; e on its own.
	p.Activities = []Activity{
		{ID: "dr", Kind: KindDownload, Object: ids[0]},
		{ID: "da", Kind: KindDownload, Object: ids[1], Deps: []Dep{{On: "dr", When: WhenFirstChunk}}},
		{ID: "pr", Kind: KindParse, Object: ids[0], DurationMs: 3, Deps: []Dep{{On: "da"}}},
		{ID: "db", Kind: KindDownload, Object: ids[2], Deps: []Dep{{On: "pr"}}},
		{ID: "dc", Kind: KindDownload, Object: ids[3], Deps: []Dep{{On: "dr"}}},
		{ID: "dd", Kind: KindDownload, Object: ids[4], Deps: []Dep{{On: "db"}, {On: "dc"}}},
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := p.Depths(), []int{0, 1, 2, 1, 3}; !slices.Equal(got, want) {
		t.Errorf("depths %v, want %v", got, want)
	}
	p.Activities = nil
	if got, want := p.Depths(), []int{0, 1, 1, 1, 1}; !slices.Equal(got, want) {
		t.Errorf("without a graph: depths %v, want %v (BuildGraph's)", got, want)
	}
}
