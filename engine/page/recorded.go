package page

import (
	"embed"
	"fmt"
	"strings"
)

// Recorded dependency graphs of the corpus pages: recorded/<name>.json is the page as
// `wirelab-engine pages record <name> --net wang-epload --proto h2` wrote it
// (scripts/record-corpus-graphs.sh): Chromium loaded the page through the emulated path with a
// devtools.timeline trace, and engine/browser turned the trace into activities (docs/browser.md).
// Corpus uses the recorded activities instead of the structural graph (BuildGraph) when the file
// exists and its objects are the page's (same ids, paths and types; the sizes were those of
// seed 1). Its source field says which Chromium recorded it, how and when.
//
//go:embed recorded/*.json
var recordedFS embed.FS

// recordedGraph returns the recorded activities for corpus page p and their provenance, or nil.
func recordedGraph(p *Page) ([]Activity, string, error) {
	data, err := recordedFS.ReadFile("recorded/" + p.Name + ".json")
	if err != nil {
		return nil, "", nil // none recorded
	}
	rec, err := Parse(data)
	if err != nil {
		return nil, "", fmt.Errorf("recorded graph of %s: %w", p.Name, err)
	}
	if len(rec.Objects) != len(p.Objects) {
		return nil, "", fmt.Errorf("recorded graph of %s: %d objects, the page has %d; record it again (scripts/record-corpus-graphs.sh)", p.Name, len(rec.Objects), len(p.Objects))
	}
	for i, o := range rec.Objects {
		if q := p.Objects[i]; o.ID != q.ID || o.Path != q.Path || o.Type != q.Type {
			return nil, "", fmt.Errorf("recorded graph of %s: objects[%d] is %s %s (%s), the page's is %s %s (%s); record it again", p.Name, i, o.ID, o.Path, o.Type, q.ID, q.Path, q.Type)
		}
	}
	prov := rec.Source
	if i := strings.LastIndex(prov, "graph recorded with"); i >= 0 { // the latest recording's clause only
		prov = prov[i:]
	}
	return rec.Activities, prov, nil
}

// HasRecordedGraph reports whether corpus page name ships a recorded graph.
func HasRecordedGraph(name string) bool {
	_, err := recordedFS.ReadFile("recorded/" + name + ".json")
	return err == nil
}
