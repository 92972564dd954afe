package page

// Depths returns each object's depth in the page's dependency graph: the root document is 0, and
// every other object is the largest number of downloads on any dependency chain from the root's
// download to its own download, its own included. A download waits for everything it depends on,
// so an object at depth d cannot start before d downloads one after the other (with computation
// between them) have completed: the CSS and scripts the root's <head> references are at depth 1,
// images of the <body> behind a synchronous script at depth 2 (the script's download and
// evaluation block the parser), images a stylesheet owns at depth 2.
//
// A page without activities uses the graph BuildGraph derives from its structure. The root's own
// download is not counted, so an object the root does not lead to (possible in recorded graphs)
// is counted the same way from wherever its chains start: at least 1. The page must be valid
// (Validate): the graph is acyclic.
func (p *Page) Depths() []int {
	acts := p.Activities
	if len(acts) == 0 {
		acts = BuildGraph(p)
	}
	objIndex := make(map[string]int, len(p.Objects))
	for i, o := range p.Objects {
		objIndex[o.ID] = i
	}
	actIndex := make(map[string]int, len(acts))
	for i, a := range acts {
		actIndex[a.ID] = i
	}
	// level[i]: downloads other than the root's on the deepest chain ending at activity i (i's own
	// download included); -1 while not computed. Memoised depth-first search; the graph is acyclic.
	level := make([]int, len(acts))
	for i := range level {
		level[i] = -1
	}
	var visit func(i int) int
	visit = func(i int) int {
		if level[i] >= 0 {
			return level[i]
		}
		deepest := 0
		for _, d := range acts[i].Deps {
			if k, ok := actIndex[d.On]; ok {
				deepest = max(deepest, visit(k))
			}
		}
		if acts[i].Kind == KindDownload && acts[i].Object != p.Objects[0].ID {
			deepest++
		}
		level[i] = deepest
		return deepest
	}
	depths := make([]int, len(p.Objects))
	for i, a := range acts {
		if a.Kind != KindDownload {
			continue
		}
		if oi, ok := objIndex[a.Object]; ok && oi != 0 {
			depths[oi] = visit(i)
		}
	}
	return depths
}
