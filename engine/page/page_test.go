package page

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/contract/contracttest"
)

func mustCorpus(t *testing.T, name string, seed int64) *Page {
	t.Helper()
	p, err := Corpus(name, seed)
	if err != nil {
		t.Fatalf("Corpus(%s, %d): %v", name, seed, err)
	}
	return p
}

// The studies' numbers hold exactly for every seed: object count, and total = count × mean.
func TestCorpusExactNumbers(t *testing.T) {
	cases := []struct {
		name      string
		objects   int
		total     int64 // all objects, root included (0: not checked)
		root      int64 // fixed root size (0: not fixed)
		images    int
		imageSum  int64 // sum over images (0: not checked)
		imageType string
	}{
		{name: "twitter", objects: 7, total: 7 * 46400},
		{name: "youtube", objects: 50, total: 50 * 10630},
		{name: "imgur", objects: 133, total: 133 * 11780},
		{name: "nytimes", objects: 148, total: 148 * 12000},
		{name: "flags", objects: 51, root: 6000, images: 50, imageSum: 50 * 1000, imageType: "image/png"},
		{name: "neoload50", objects: 51, root: 9500, images: 50, imageSum: 50 * 2000, imageType: "image/png"},
		{name: "unh100", objects: 101, root: 12000, images: 100, imageSum: 3_400_000, imageType: "image/jpeg"},
	}
	if got := len(CorpusNames()); got != len(cases) {
		t.Fatalf("corpus has %d pages, test covers %d", got, len(cases))
	}
	for _, c := range cases {
		for _, seed := range []int64{0, 1, 2, 12345} {
			p := mustCorpus(t, c.name, seed)
			if len(p.Objects) != c.objects {
				t.Errorf("%s seed %d: %d objects, want %d", c.name, seed, len(p.Objects), c.objects)
			}
			if c.total != 0 && p.TotalBytes() != c.total {
				t.Errorf("%s seed %d: total %d, want %d", c.name, seed, p.TotalBytes(), c.total)
			}
			if c.root != 0 && p.Objects[0].Size != c.root {
				t.Errorf("%s seed %d: root %d, want %d", c.name, seed, p.Objects[0].Size, c.root)
			}
			if c.images != 0 {
				n, sum := 0, int64(0)
				for _, o := range p.Objects {
					if o.Type == TypeImage {
						n++
						sum += o.Size
						if o.ContentType != c.imageType {
							t.Errorf("%s: image %s has %s, want %s", c.name, o.ID, o.ContentType, c.imageType)
						}
					}
				}
				if n != c.images || sum != c.imageSum {
					t.Errorf("%s seed %d: %d images of %d bytes, want %d of %d", c.name, seed, n, sum, c.images, c.imageSum)
				}
			}
		}
	}
}

// Sizes are drawn: different seeds give different sizes, the same seed the same page.
func TestCorpusSeeded(t *testing.T) {
	a, b, c := mustCorpus(t, "imgur", 1), mustCorpus(t, "imgur", 1), mustCorpus(t, "imgur", 2)
	if !bytes.Equal(a.JSON(), b.JSON()) {
		t.Fatal("same seed built different pages")
	}
	same := 0
	for i := range a.Objects {
		if a.Objects[i].Size == c.Objects[i].Size {
			same++
		}
	}
	if same > len(a.Objects)/4 {
		t.Fatalf("seeds 1 and 2 share %d of %d sizes", same, len(a.Objects))
	}
	// a spread, not a constant
	lo, hi := a.Objects[1].Size, a.Objects[1].Size
	for _, o := range a.Objects[1:] {
		lo, hi = min(lo, o.Size), max(hi, o.Size)
	}
	if hi < 3*lo {
		t.Fatalf("imgur sizes span only %d…%d", lo, hi)
	}
}

func TestCorpusStructure(t *testing.T) {
	for _, name := range CorpusNames() {
		p := mustCorpus(t, name, 1)
		if p.Objects[0].Type != TypeHTML || p.Objects[0].Path != "/index.html" {
			t.Errorf("%s: root is %+v", name, p.Objects[0])
		}
		if len(p.Activities) == 0 {
			t.Errorf("%s: no dependency graph", name)
		}
		if p.Description == "" || p.Source == "" {
			t.Errorf("%s: no description/source", name)
		}
		for _, o := range p.Objects {
			if o.Group == "" || o.Domain == "" {
				t.Errorf("%s: object %s has no domain/group", name, o.ID)
			}
		}
	}
	// E's pages span several TLD groups
	for name, groups := range map[string]int{"twitter": 2, "youtube": 3, "imgur": 3, "nytimes": 4, "flags": 1} {
		if got := len(mustCorpus(t, name, 1).Summarize().Groups); got != groups {
			t.Errorf("%s: %d groups, want %d", name, got, groups)
		}
	}
}

func TestSchemaAcceptsGeneratedPages(t *testing.T) {
	s := contracttest.Load(t)
	var pages []*Page
	for _, name := range CorpusNames() {
		pages = append(pages, mustCorpus(t, name, 7))
	}
	for _, name := range []string{"synthetic:64x10kB", "synthetic:0x1kB", "synthetic:2x100B,html=4KiB"} {
		p, err := Synthetic(name, 1)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, p)
	}
	sh, err := mustCorpus(t, "nytimes", 1).Shard(4, ShardTLD)
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, sh)
	for _, p := range pages {
		if err := s.Validate(contracttest.Page, p.JSON()); err != nil {
			t.Errorf("%s: schema rejects a generated page: %v", p.Name, err)
		}
		back, err := Parse(p.JSON())
		if err != nil {
			t.Errorf("%s: Parse(JSON()) = %v", p.Name, err)
			continue
		}
		if !bytes.Equal(back.JSON(), p.JSON()) {
			t.Errorf("%s: JSON round trip differs", p.Name)
		}
	}
}

// Bad pages: Validate names the field; the schema rejects the structural ones too.
func TestValidateRejects(t *testing.T) {
	s := contracttest.Load(t)
	cases := []struct {
		name   string
		mutate func(p *Page)
		field  string
		schema bool // the JSON Schema catches it as well
	}{
		{"zero size", func(p *Page) { p.Objects[3].Size = 0 }, "objects[3].size", true},
		{"negative size", func(p *Page) { p.Objects[2].Size = -5 }, "objects[2].size", true},
		{"unknown origin", func(p *Page) { p.Objects[4].Origin = 1 }, "objects[4].origin", false},
		{"bad host", func(p *Page) { p.Origins[0].Host = "s2.wirelab.test" }, "origins[0].host", false},
		{"root not html", func(p *Page) { p.Objects[0].Type = TypeCSS }, "objects[0].type", true},
		{"bad type", func(p *Page) { p.Objects[1].Type = "video" }, "objects[1].type", true},
		{"dup id", func(p *Page) { p.Objects[2].ID = p.Objects[1].ID }, "objects[2].id", false},
		{"dup path", func(p *Page) { p.Objects[2].Path = p.Objects[1].Path }, "objects[2].path", false},
		{"dotdot path", func(p *Page) { p.Objects[2].Path = "/a/../b" }, "objects[2].path", true},
		{"bad parent", func(p *Page) { p.Objects[5].Parent = "nope" }, "objects[5].parent", false},
		{"root too small", func(p *Page) { p.Objects[0].Size = 100 }, "objects[0].size", false},
		{"bad content type", func(p *Page) { p.Objects[1].ContentType = "css" }, "objects[1].content_type", true},
		{"unknown dep", func(p *Page) { p.Activities[3].Deps = append(p.Activities[3].Deps, Dep{On: "a999"}) }, "activities[3].deps[1].on", false},
		{"unknown object", func(p *Page) { p.Activities[2].Object = "o99" }, "activities[2].object", false},
		{"bad kind", func(p *Page) { p.Activities[1].Kind = "render" }, "activities[1].kind", true},
		{"first_chunk of a parse", func(p *Page) { p.Activities[2].Deps = []Dep{{On: "a1", When: WhenFirstChunk}} }, "activities[2].deps[0].when", false},
		{"bad when", func(p *Page) { p.Activities[2].Deps = []Dep{{On: "a1", When: "half"}} }, "activities[2].deps[0].when", true},
		{"download with duration", func(p *Page) { p.Activities[0].DurationMs = 3 }, "activities[0].duration_ms", true},
		{"negative duration", func(p *Page) { p.Activities[1].DurationMs = -1 }, "activities[1].duration_ms", true},
		{"cycle", func(p *Page) { p.Activities[0].Deps = []Dep{{On: "a1"}} }, "activities[0].deps", false},
		{"missing download", func(p *Page) { p.Activities[0].Kind = KindParse }, "activities", false},
		{"bad seed", func(p *Page) { p.Seed = -1 }, "seed", true},
	}
	for _, c := range cases {
		p := mustCorpus(t, "twitter", 1)
		p.Activities = BuildGraph(p) // the cases name activities of the structural graph
		c.mutate(p)
		err := p.Validate()
		fe, ok := AsFieldError(err)
		if !ok {
			t.Errorf("%s: Validate() = %v, want a FieldError", c.name, err)
			continue
		}
		if fe.Field != c.field {
			t.Errorf("%s: error names %q, want %q (%v)", c.name, fe.Field, c.field, err)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error spans lines: %q", c.name, err)
		}
		if _, err := Parse(p.JSON()); err == nil {
			t.Errorf("%s: Parse accepted it", c.name)
		}
		if c.schema {
			if err := s.Validate(contracttest.Page, p.JSON()); err == nil {
				t.Errorf("%s: the schema accepted it", c.name)
			}
		}
	}
}

func TestCycleNamesThePath(t *testing.T) {
	p := mustCorpus(t, "twitter", 1)
	// a1 (parse head) depends on a0; make a0 depend on the last activity, which depends
	// transitively on a1.
	last := p.Activities[len(p.Activities)-1].ID
	p.Activities[0].Deps = []Dep{{On: last}}
	err := p.Validate()
	if err == nil || !strings.Contains(err.Error(), "dependency cycle") || !strings.Contains(err.Error(), "a0") || !strings.Contains(err.Error(), last) {
		t.Fatalf("Validate() = %v, want a cycle through a0 and %s", err, last)
	}
	fe, _ := AsFieldError(err)
	if !strings.HasPrefix(fe.Value, `"a0 → `) || !strings.HasSuffix(fe.Value, ` → a0"`) {
		t.Fatalf("cycle path %q does not run through a0", fe.Value)
	}
}

func TestParseUnknownFieldSuggests(t *testing.T) {
	p := mustCorpus(t, "twitter", 1)
	var raw map[string]any
	if err := json.Unmarshal(p.JSON(), &raw); err != nil {
		t.Fatal(err)
	}
	obj := raw["objects"].([]any)[2].(map[string]any)
	obj["sise"] = obj["size"]
	data, _ := json.Marshal(raw)
	_, err := Parse(data)
	if err == nil || err.Error() != "objects[2].sise: unknown field; did you mean size?" {
		t.Fatalf("Parse() = %v", err)
	}
	if _, err := Parse([]byte(`{"name": 3}`)); err == nil || !strings.HasPrefix(err.Error(), "name: ") {
		t.Fatalf("wrong type: %v", err)
	}
}

// TestGraphShape checks the structural graph (BuildGraph) of a corpus page.
func TestGraphShape(t *testing.T) {
	p := mustCorpus(t, "nytimes", 1)
	p.Activities = BuildGraph(p)
	acts := map[string]Activity{}
	for _, a := range p.Activities {
		acts[a.ID] = a
	}
	if a := p.Activities[1]; a.Kind != KindParse || a.Deps[0].When != WhenFirstChunk || a.Deps[0].On != "a0" {
		t.Fatalf("parse of the head does not start on the root's first chunk: %+v", a)
	}
	computing := 0
	for _, a := range p.Activities {
		if a.Kind != KindDownload {
			computing++
			if a.DurationMs <= 0 {
				t.Errorf("%s: no computation time", a.ID)
			}
		}
	}
	if computing != 2+6+18 { // head+body parse, 6 CSS, 18 JS evaluations
		t.Errorf("%d computation activities, want 26", computing)
	}
	// an image owned by a CSS waits for that CSS's evaluation
	for _, a := range p.Activities {
		if a.Kind != KindDownload {
			continue
		}
		var o Object
		for _, x := range p.Objects {
			if x.ID == a.Object {
				o = x
			}
		}
		if o.Parent != "" && o.Parent != "o0" {
			dep := acts[a.Deps[0].On]
			if dep.Kind != KindEvaluate || dep.Object != o.Parent {
				t.Errorf("%s (owned by %s) waits for %+v", o.ID, o.Parent, dep)
			}
		}
	}
}

func TestFitTotalProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		n := 1 + r.IntN(60)
		w := make([]float64, n)
		mins := make([]int64, n)
		var minSum int64
		for i := range w {
			w[i] = r.ExpFloat64() * 1000
			mins[i] = int64(r.IntN(500))
			minSum += mins[i]
		}
		total := minSum + int64(r.IntN(100000))
		got, err := fitTotal(w, mins, total)
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for i, s := range got {
			sum += s
			if s < mins[i] {
				t.Fatalf("size %d below its minimum %d", s, mins[i])
			}
		}
		if sum != total {
			t.Fatalf("sum %d, want %d", sum, total)
		}
	}
	if _, err := fitTotal([]float64{1, 1}, []int64{10, 10}, 19); err == nil {
		t.Fatal("fitTotal accepted a total below the minimums")
	}
}

func TestLoadResolvesNames(t *testing.T) {
	if p, err := Load("youtube", 3); err != nil || p.Name != "youtube" || p.Seed != 3 {
		t.Fatalf("corpus: %v %v", p, err)
	}
	if p, err := Load("synthetic:8x1kB", 1); err != nil || len(p.Objects) != 9 {
		t.Fatalf("synthetic: %v", err)
	}
	path := t.TempDir() + "/page.json"
	if err := os.WriteFile(path, mustCorpus(t, "flags", 5).JSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := Load(path, 1); err != nil || p.Name != "flags" || p.Seed != 5 {
		t.Fatalf("file: %v", err)
	}
	_, err := Load("twiter", 1)
	if fe, ok := AsFieldError(err); !ok || fe.Field != "page" {
		t.Fatalf("unknown name: %v", err)
	}
}

// TestCorpusSourceNamesOneRecording: a corpus page's provenance names the recording its graph came
// from once (re-recording a page replaced the clause rather than appending another).
func TestCorpusSourceNamesOneRecording(t *testing.T) {
	for _, name := range CorpusNames() {
		p, err := Corpus(name, 1)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(p.Source, "graph recorded with"); n != 1 {
			t.Errorf("%s: source names %d recordings, want 1: %q", name, n, p.Source)
		}
	}
}
