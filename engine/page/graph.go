package page

import (
	"fmt"
	"math"
	"strings"
)

// Kind is what an activity does.
type Kind string

// The activity kinds of a dependency graph (as in WProf/Epload).
const (
	// KindDownload fetches an object; it takes network time, never computation time.
	KindDownload Kind = "download"
	// KindParse parses an HTML document (or a part of it); DurationMs is its computation time.
	KindParse Kind = "parse"
	// KindEvaluate evaluates a CSS or JS object; DurationMs is its computation time.
	KindEvaluate Kind = "evaluate"
)

var kinds = []Kind{KindDownload, KindParse, KindEvaluate}

// When says which point of the activity a dependency waits for.
type When string

// Dependency points.
const (
	// WhenComplete waits until the activity has finished (the default when "when" is absent).
	WhenComplete When = "complete"
	// WhenFirstChunk waits until the first chunk of a download's body has arrived (downloads only).
	WhenFirstChunk When = "first_chunk"
)

// Activity is one node of a page's dependency graph.
type Activity struct {
	// ID is unique among the activities ([A-Za-z0-9_.-]{1,64}).
	ID string `json:"id"`
	// Kind is download, parse or evaluate.
	Kind Kind `json:"kind"`
	// Object is the id of the object the activity works on.
	Object string `json:"object"`
	// DurationMs is the computation time of a parse or evaluate activity in milliseconds (≥ 0);
	// always 0 for downloads.
	DurationMs float64 `json:"duration_ms,omitempty"`
	// Deps are the activities this one waits for; it starts when all of them are satisfied.
	Deps []Dep `json:"deps,omitempty"`
}

// Dep is a (possibly partial) dependency on another activity.
type Dep struct {
	// On is the id of the activity waited for.
	On string `json:"on"`
	// When is complete (default) or first_chunk.
	When When `json:"when,omitempty"`
}

// Point returns the dependency point, complete when unset.
func (d Dep) Point() When {
	if d.When == "" {
		return WhenComplete
	}
	return d.When
}

// validateGraph checks the activities of p (whose objects are already valid).
func (p *Page) validateGraph() error {
	if len(p.Activities) == 0 {
		return nil
	}
	objByID := map[string]int{}
	for i, o := range p.Objects {
		objByID[o.ID] = i
	}
	actByID := map[string]int{}
	downloads := make([]int, len(p.Objects))
	for i := range downloads {
		downloads[i] = -1
	}
	for i, a := range p.Activities {
		f := fmt.Sprintf("activities[%d]", i)
		if err := uniqueID(actByID, "activities", i, a.ID); err != nil {
			return err
		}
		if !containsKind(a.Kind) {
			return fieldErr(f+".kind", string(a.Kind), "must be one of download, parse, evaluate")
		}
		oi, ok := objByID[a.Object]
		if !ok {
			return fieldErr(f+".object", a.Object, "must be the id of an object of the page")
		}
		if math.IsNaN(a.DurationMs) || math.IsInf(a.DurationMs, 0) || a.DurationMs < 0 || a.DurationMs > 3.6e6 {
			return fieldErr(f+".duration_ms", a.DurationMs, "must be a number of milliseconds in [0, 3600000]")
		}
		switch a.Kind {
		case KindDownload:
			if a.DurationMs != 0 {
				return fieldErr(f+".duration_ms", a.DurationMs, "must be 0 (or absent) for a download: its time is network time")
			}
			if downloads[oi] >= 0 {
				return fieldErr(f+".object", a.Object, "has two download activities (activities[%d] and this one); each object has exactly one", downloads[oi])
			}
			downloads[oi] = i
		case KindParse:
			if t := p.Objects[oi].Type; t != TypeHTML {
				return fieldErr(f+".object", a.Object, "is a %s object; parse applies to html objects (use evaluate for css/js)", t)
			}
		case KindEvaluate:
			if t := p.Objects[oi].Type; t != TypeCSS && t != TypeJS {
				return fieldErr(f+".object", a.Object, "is a %s object; evaluate applies to css and js objects", t)
			}
		}
	}
	for oi, d := range downloads {
		if d < 0 {
			return fieldErr("activities", nil, "object %q (objects[%d]) has no download activity; with a graph every object needs exactly one", p.Objects[oi].ID, oi)
		}
	}
	for i, a := range p.Activities {
		for j, d := range a.Deps {
			f := fmt.Sprintf("activities[%d].deps[%d]", i, j)
			k, ok := actByID[d.On]
			if !ok {
				return fieldErr(f+".on", d.On, "must be the id of an activity of the page")
			}
			if k == i {
				return fieldErr(f+".on", d.On, "an activity cannot depend on itself")
			}
			switch d.Point() {
			case WhenComplete:
			case WhenFirstChunk:
				if p.Activities[k].Kind != KindDownload {
					return fieldErr(f+".when", string(d.When), "first_chunk applies to download activities only; %q is a %s", d.On, p.Activities[k].Kind)
				}
			default:
				return fieldErr(f+".when", string(d.When), "must be complete or first_chunk")
			}
		}
	}
	if cycle := findCycle(p.Activities, actByID); cycle != nil {
		first := actByID[cycle[0]]
		return fieldErr(fmt.Sprintf("activities[%d].deps", first), strings.Join(cycle, " → "), "dependency cycle; the graph must be acyclic")
	}
	return nil
}

func containsKind(k Kind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

// findCycle returns the ids along a dependency cycle (first id repeated at the end), or nil.
func findCycle(acts []Activity, byID map[string]int) []string {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(acts))
	parent := make([]int, len(acts))
	var cycle []string
	var visit func(i int) bool
	visit = func(i int) bool {
		color[i] = grey
		for _, d := range acts[i].Deps {
			k := byID[d.On]
			switch color[k] {
			case grey:
				// k … i is a cycle: walk parents back from i to k.
				path := []string{acts[k].ID}
				var rev []string
				for x := i; x != k; x = parent[x] {
					rev = append(rev, acts[x].ID)
				}
				for m := len(rev) - 1; m >= 0; m-- {
					path = append(path, rev[m])
				}
				cycle = append(path, acts[k].ID)
				return true
			case white:
				parent[k] = i
				if visit(k) {
					return true
				}
			}
		}
		color[i] = black
		return false
	}
	for i := range acts {
		if color[i] == white && visit(i) {
			return cycle
		}
	}
	return nil
}

// Computation durations of the built-in graphs. They are plausible orders of magnitude for a
// desktop browser, chosen by us (docs/pages.md); recorded graphs replace them.
const (
	parseHTMLBaseMs    = 5.0  // per HTML document
	parseHTMLPerKBMs   = 0.2  // per 1000 bytes of HTML
	parseHeadShare     = 0.3  // share of the parse spent on <head>
	evalCSSBaseMs      = 2.0  // per stylesheet
	evalCSSPerKBMs     = 0.1  // per 1000 bytes of CSS
	evalJSBaseMs       = 5.0  // per script
	evalJSPerKBMs      = 0.5  // per 1000 bytes of JS
	durationResolution = 10.0 // durations are rounded to 0.1 ms
)

func roundMs(x float64) float64 { return math.Round(x*durationResolution) / durationResolution }

// BuildGraph returns the dependency graph a browser would follow for p's structure:
//
//	download root → (first chunk) parse <head> → download head resources (css, js, fonts, other)
//	download css → evaluate css; download js + evaluate earlier css → evaluate js
//	download root complete + parse <head> + evaluate every js → parse <body>
//	parse <body> → download images and iframes (objects whose parent is the root)
//	evaluate css X → download the objects whose parent is X
func BuildGraph(p *Page) []Activity {
	var acts []Activity
	add := func(kind Kind, obj string, dur float64, deps ...Dep) string {
		id := fmt.Sprintf("a%d", len(acts))
		acts = append(acts, Activity{ID: id, Kind: kind, Object: obj, DurationMs: roundMs(dur), Deps: deps})
		return id
	}
	dep := func(on string) Dep { return Dep{On: on, When: WhenComplete} }
	root := p.Objects[0]
	parseMs := parseHTMLBaseMs + parseHTMLPerKBMs*float64(root.Size)/1000
	dlRoot := add(KindDownload, root.ID, 0)
	parseHead := add(KindParse, root.ID, parseMs*parseHeadShare, Dep{On: dlRoot, When: WhenFirstChunk})

	evalOf := map[string]string{} // css id → its evaluate activity
	var cssEvals, jsEvals []string
	for _, o := range p.Objects[1:] {
		if !inHead(o) || (o.Parent != "" && o.Parent != root.ID) {
			continue
		}
		dl := add(KindDownload, o.ID, 0, dep(parseHead))
		switch o.Type {
		case TypeCSS:
			ev := add(KindEvaluate, o.ID, evalCSSBaseMs+evalCSSPerKBMs*float64(o.Size)/1000, dep(dl))
			evalOf[o.ID] = ev
			cssEvals = append(cssEvals, ev)
		case TypeJS:
			deps := []Dep{dep(dl)}
			for _, c := range cssEvals { // CSSOM blocks script execution
				deps = append(deps, dep(c))
			}
			jsEvals = append(jsEvals, add(KindEvaluate, o.ID, evalJSBaseMs+evalJSPerKBMs*float64(o.Size)/1000, deps...))
		}
	}
	bodyDeps := []Dep{dep(dlRoot), dep(parseHead)}
	for _, j := range jsEvals { // synchronous scripts in <head> block the parser
		bodyDeps = append(bodyDeps, dep(j))
	}
	parseBody := add(KindParse, root.ID, parseMs*(1-parseHeadShare), bodyDeps...)
	for _, o := range p.Objects[1:] {
		if inHead(o) && (o.Parent == "" || o.Parent == root.ID) {
			continue
		}
		trigger := parseBody
		if ev, ok := evalOf[o.Parent]; ok {
			trigger = ev
		}
		dl := add(KindDownload, o.ID, 0, dep(trigger))
		switch o.Type { // CSS or JS found in the body (or owned by a CSS) is evaluated too
		case TypeCSS:
			evalOf[o.ID] = add(KindEvaluate, o.ID, evalCSSBaseMs+evalCSSPerKBMs*float64(o.Size)/1000, dep(dl))
		case TypeJS:
			add(KindEvaluate, o.ID, evalJSBaseMs+evalJSPerKBMs*float64(o.Size)/1000, dep(dl))
		}
	}
	return acts
}

// inHead reports whether the root HTML references o from its <head>.
func inHead(o Object) bool {
	switch o.Type {
	case TypeCSS, TypeJS, TypeFont, TypeOther:
		return true
	}
	return false
}
