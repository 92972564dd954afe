package page

// ModelFacts is what an analytic model of a page load needs to know of a page, and nothing else:
// each object's size, origin and type, which document a flat load finds it in, and the dependency
// graph a replay follows. The control plane's prediction model (wirelab predict, docs/predict.md)
// reads it from `wirelab-engine pages model` instead of building pages itself.
type ModelFacts struct {
	// Name is the page's name as given (web200:17, twitter, synthetic:8x10kB, a file).
	Name string `json:"name"`
	// Origins is the number of origins serving the page (after sharding).
	Origins int `json:"origins"`
	// Size, Origin and Type are per object, root first.
	Size   []int64  `json:"size"`
	Origin []int    `json:"origin"`
	Type   []string `json:"type"`
	// FoundBy is, per object, the object whose body a flat load finds it in: -1 for the root; the
	// root (0) for what it references; a stylesheet or frame for what only that document
	// references. A flat load requests an object once FoundBy's response has arrived whole.
	FoundBy []int `json:"found_by"`
	// Activities is the graph a replay follows: the page's own, else BuildGraph's.
	Activities []ModelActivity `json:"activities"`
}

// ModelActivity is one activity of ModelFacts.Activities, by index instead of id.
type ModelActivity struct {
	// Kind is download, parse or evaluate.
	Kind Kind `json:"kind"`
	// Object is the index of the object the activity works on.
	Object int `json:"object"`
	// DurationMs is a computation's recorded time (0 for downloads).
	DurationMs float64 `json:"duration_ms"`
	// Deps are indexes of the activities waited for; FirstChunk[i] says Deps[i] waits only for a
	// download's first body bytes.
	Deps       []int  `json:"deps"`
	FirstChunk []bool `json:"first_chunk"`
}

// Model returns p's ModelFacts. The page must be valid (Validate): references and the graph name
// existing objects and activities.
func (p *Page) Model() ModelFacts {
	n := len(p.Objects)
	m := ModelFacts{Name: p.Name, Origins: len(p.Origins), Size: make([]int64, n), Origin: make([]int, n),
		Type: make([]string, n), FoundBy: p.flatFoundBy()}
	objIndex := make(map[string]int, n)
	for i, o := range p.Objects {
		m.Size[i], m.Origin[i], m.Type[i] = o.Size, o.Origin, string(o.Type)
		objIndex[o.ID] = i
	}
	acts := p.Activities
	if len(acts) == 0 {
		acts = BuildGraph(p)
	}
	actIndex := make(map[string]int, len(acts))
	for i, a := range acts {
		actIndex[a.ID] = i
	}
	m.Activities = make([]ModelActivity, len(acts))
	for i, a := range acts {
		ma := ModelActivity{Kind: a.Kind, Object: objIndex[a.Object], DurationMs: a.DurationMs,
			Deps: make([]int, 0, len(a.Deps)), FirstChunk: make([]bool, 0, len(a.Deps))}
		for _, d := range a.Deps {
			ma.Deps = append(ma.Deps, actIndex[d.On])
			ma.FirstChunk = append(ma.FirstChunk, d.Point() == WhenFirstChunk)
		}
		m.Activities[i] = ma
	}
	return m
}

// flatFoundBy walks the documents as a flat load does — the root, then every document the root
// references, then theirs — and gives each object the first document (in that order, by object
// index within a level) whose body references it. Objects no document references keep -1 (a
// flat load never requests them); the root is -1 too.
func (p *Page) flatFoundBy() []int {
	found := make([]int, len(p.Objects))
	for i := range found {
		found[i] = -1
	}
	index := make(map[string]int, len(p.Objects))
	for i, o := range p.Objects {
		index[o.ID] = i
	}
	seen := make([]bool, len(p.Objects))
	seen[0] = true
	level := []int{0}
	for len(level) > 0 {
		var next []int
		for _, d := range level {
			for _, j := range p.bodyReferences(d, index) {
				if seen[j] {
					continue
				}
				seen[j], found[j] = true, d
				if t := p.Objects[j].Type; t == TypeHTML || t == TypeCSS {
					next = append(next, j)
				}
			}
		}
		level = next
	}
	return found
}

// bodyReferences returns the objects object i's body references: a file-backed object's Refs,
// else what the generated content embeds (references). index maps object ids to indexes.
func (p *Page) bodyReferences(i int, index map[string]int) []int {
	o := p.Objects[i]
	if o.File == "" {
		return references(p, i)
	}
	out := make([]int, 0, len(o.Refs))
	for _, r := range o.Refs {
		if j, ok := index[r.Object]; ok {
			out = append(out, j)
		}
	}
	return out
}
