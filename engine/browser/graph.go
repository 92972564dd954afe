package browser

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/wirelab/wirelab/engine/page"
)

// Dependency-graph recording (study W's WProf/Epload model, docs/browser.md "Recording"): a
// traced browser load becomes the page model's activities.
//
//   - download: one per object (every entry of the load that completed with a status below 400).
//   - parse: one per ParseHTML trace event of a document (a parser chunk), its duration the event's.
//     The first chunk depends on the document's first body bytes (first_chunk); each later chunk on
//     the chunk before it, on the document's complete download when the parser was waiting for
//     bytes (the chunk started after the download ended, the previous one before), and on every
//     script evaluation that ran between the two chunks (a parser-blocking script).
//   - evaluate: CSS from ParseAuthorStyleSheet events (by styleSheetUrl), JS from EvaluateScript
//     events (by url), durations summed over the object's events (0 when none was traced). An
//     evaluation depends on its object's download; a script's also on the last chunk of its
//     document's parser that ended before the script ran (the parser reached the tag) and on
//     every stylesheet evaluation that ended before it (CSSOM blocks scripts).
//   - a download depends on what discovered it, from its initiator: a stylesheet (its
//     evaluation), a script (its evaluation), or a document's parser. For the parser, the
//     dependency is the last activity of the document that had completed when the request was
//     issued: Chromium's preload scanner issues requests from the bytes received, before the
//     parser chunk that reaches their tags runs, so a request issued before the document's first
//     parse chunk depends on the document's first chunk of bytes (on its whole download when it
//     was issued after the document had arrived whole), and one issued during chunk k on chunk
//     k−1. A graph never delays a request beyond the moment the browser issued it.
//     Requests without a usable initiator depend on the root's first chunk.

// RecordOptions say how a recorded load becomes a page.
type RecordOptions struct {
	// Name of the page (default: the root URL's host and path).
	Name        string
	Description string
	Source      string
	// Base, when set, supplies the objects: the page that was served for the recording (a
	// corpus page, a mirrored directory). Entries are matched to its objects by path below the
	// load token, and the result is Base with the recorded activities. Without it, objects are
	// built from the load itself (sizes, types, content types, origins by host).
	Base *page.Page
}

var parserChunkURL = func(args json.RawMessage) (url string, startLine, endLine int) {
	var a struct {
		Begin struct {
			URL       string `json:"url"`
			StartLine int    `json:"startLine"`
		} `json:"beginData"`
		End struct {
			EndLine int `json:"endLine"`
		} `json:"endData"`
	}
	_ = json.Unmarshal(args, &a)
	return a.Begin.URL, a.Begin.StartLine, a.End.EndLine
}

func traceDataURL(args json.RawMessage, field string) string {
	var a struct {
		Data map[string]any `json:"data"`
	}
	_ = json.Unmarshal(args, &a)
	s, _ := a.Data[field].(string)
	return s
}

// span is a computation on the main thread, ms from the load's start.
type span struct{ start, end float64 }

// RecordPage builds a page with a dependency graph from a traced load (Config.Trace).
func RecordPage(res *Result, opts RecordOptions) (*page.Page, error) {
	if len(res.Trace) == 0 {
		return nil, fmt.Errorf("record: the load has no trace (Config.Trace)")
	}
	var entries []Entry
	for _, e := range res.Entries {
		if e.Error == "" && e.Status > 0 && e.Status < 400 {
			entries = append(entries, e)
		}
	}
	if len(entries) == 0 || entries[0].ResourceType != "document" {
		return nil, fmt.Errorf("record: the load's first request is not a document that loaded (%v)", res.Err)
	}
	pg, objOf, err := objectsFor(entries, opts)
	if err != nil {
		return nil, err
	}
	// Trace events, in ms from the load's start, by object.
	t0us := res.T0() * 1e6
	at := func(ts float64) float64 { return (ts - t0us) / 1000 }
	byURL := map[string]int{} // entry URL (no fragment) → entry index
	for i, e := range entries {
		byURL[stripFragment(e.URL)] = i
	}
	parses := map[int][]span{} // document entry → its parser chunks, in order
	evals := map[int][]span{}  // css/js entry → its evaluations
	var evalOrder []int
	for _, ev := range res.Trace {
		if ev.Ph != "X" {
			continue
		}
		switch ev.Name {
		case "ParseHTML":
			u, _, _ := parserChunkURL(ev.Args)
			if i, ok := byURL[stripFragment(u)]; ok {
				parses[i] = append(parses[i], span{at(ev.Ts), at(ev.Ts + ev.Dur)})
			}
		case "ParseAuthorStyleSheet":
			if i, ok := byURL[stripFragment(traceDataURL(ev.Args, "styleSheetUrl"))]; ok {
				if len(evals[i]) == 0 {
					evalOrder = append(evalOrder, i)
				}
				evals[i] = append(evals[i], span{at(ev.Ts), at(ev.Ts + ev.Dur)})
			}
		case "EvaluateScript":
			if i, ok := byURL[stripFragment(traceDataURL(ev.Args, "url"))]; ok {
				if len(evals[i]) == 0 {
					evalOrder = append(evalOrder, i)
				}
				evals[i] = append(evals[i], span{at(ev.Ts), at(ev.Ts + ev.Dur)})
			}
		}
	}
	for _, s := range parses {
		sort.Slice(s, func(a, b int) bool { return s[a].start < s[b].start })
	}
	// A parser chunk's duration is its self time: synchronous scripts the parser ran (and
	// stylesheets parsed) inside it are evaluations of their own.
	nested := func(doc, k int) float64 {
		c := parses[doc][k]
		sum := 0.0
		for _, es := range evals {
			for _, e := range es {
				if e.start >= c.start && e.end <= c.end {
					sum += e.end - e.start
				}
			}
		}
		return sum
	}

	b := &graphBuilder{}
	download := make([]string, len(entries))
	for i := range entries {
		download[i] = b.add(page.KindDownload, pg.Objects[objOf[i]].ID, 0)
	}
	// Parser chunks of every document.
	chunkIDs := map[int][]string{}
	for i, e := range entries {
		if entryType(e) != page.TypeHTML {
			continue
		}
		chunks := parses[i]
		for k, c := range chunks {
			var deps []page.Dep
			if k == 0 {
				deps = append(deps, page.Dep{On: download[i], When: page.WhenFirstChunk})
			} else {
				prev := chunks[k-1]
				deps = append(deps, page.Dep{On: chunkIDs[i][k-1]})
				if c.start >= entries[i].EndMS && prev.end < entries[i].EndMS {
					deps = append(deps, page.Dep{On: download[i]})
				}
			}
			chunkIDs[i] = append(chunkIDs[i], b.add(page.KindParse, pg.Objects[objOf[i]].ID, c.end-c.start-nested(i, k), deps...))
		}
		if len(chunks) == 0 { // a document the parser never reported: one empty parse
			chunkIDs[i] = append(chunkIDs[i], b.add(page.KindParse, pg.Objects[objOf[i]].ID, 0, page.Dep{On: download[i]}))
			parses[i] = []span{{entries[i].EndMS, entries[i].EndMS}}
		}
	}
	// Evaluations, in the order they first ran.
	evalID := map[int]string{}
	type evalSpan struct {
		entry int
		span  span
	}
	var cssDone []evalSpan
	for _, i := range evalOrder {
		t := entryType(entries[i])
		if t != page.TypeCSS && t != page.TypeJS {
			continue
		}
		total := 0.0
		for _, s := range evals[i] {
			total += s.end - s.start
		}
		first := evals[i][0]
		deps := []page.Dep{{On: download[i]}}
		var parserNext string // the parser chunk that continues after this script
		if t == page.TypeJS {
			if doc, k, inside := b.parserAt(entries, parses, i, first); doc >= 0 {
				deps = append(deps, page.Dep{On: chunkIDs[doc][k]})
				if k+1 < len(chunkIDs[doc]) && (inside || parses[doc][k+1].start >= first.end) {
					parserNext = chunkIDs[doc][k+1]
				}
			}
			for _, c := range cssDone {
				if c.span.end <= first.start {
					deps = append(deps, page.Dep{On: evalID[c.entry]})
				}
			}
		}
		evalID[i] = b.add(page.KindEvaluate, pg.Objects[objOf[i]].ID, total, deps...)
		if parserNext != "" {
			b.addDep(parserNext, page.Dep{On: evalID[i]})
		}
		if t == page.TypeCSS {
			cssDone = append(cssDone, evalSpan{i, first})
		}
	}
	// Objects that need an evaluation but had none traced get a zero one.
	for i, e := range entries {
		if t := entryType(e); (t == page.TypeCSS || t == page.TypeJS) && evalID[i] == "" {
			evalID[i] = b.add(page.KindEvaluate, pg.Objects[objOf[i]].ID, 0, page.Dep{On: download[i]})
		}
	}
	// What discovered each download.
	for i := 1; i < len(entries); i++ {
		for _, dep := range b.discoveredBy(entries, parses, chunkIDs, evalID, download, byURL, i) {
			b.addDep(download[i], dep)
		}
	}
	pg.Activities = b.acts
	if err := pg.Validate(); err != nil {
		return nil, fmt.Errorf("record: the recorded page is invalid: %w", err)
	}
	return pg, nil
}

type graphBuilder struct {
	acts  []page.Activity
	index map[string]int
}

func (b *graphBuilder) add(kind page.Kind, obj string, durMs float64, deps ...page.Dep) string {
	if b.index == nil {
		b.index = map[string]int{}
	}
	id := fmt.Sprintf("a%d", len(b.acts))
	b.index[id] = len(b.acts)
	b.acts = append(b.acts, page.Activity{ID: id, Kind: kind, Object: obj, DurationMs: roundTenth(durMs), Deps: deps})
	return id
}

func (b *graphBuilder) addDep(id string, d page.Dep) {
	a := &b.acts[b.index[id]]
	for _, x := range a.Deps {
		if x.On == d.On {
			return
		}
	}
	a.Deps = append(a.Deps, d)
}

func roundTenth(ms float64) float64 { return math.Max(0, math.Round(ms*10)/10) }

// parserAt finds the parser chunk that reached a script's tag: the chunk of the script's
// initiating document that contains the evaluation (a synchronous script run by the parser), else
// the last chunk that ended before it. doc is -1 when there is none.
func (b *graphBuilder) parserAt(entries []Entry, parses map[int][]span, script int, ev span) (doc, chunk int, inside bool) {
	doc, chunk = -1, -1
	best := math.Inf(-1)
	initiator := ""
	if in := entries[script].Initiator; in != nil {
		initiator = stripFragment(in.URL)
	}
	for i, chunks := range parses {
		if initiator != "" && stripFragment(entries[i].URL) != initiator {
			continue
		}
		for k, c := range chunks {
			if c.start <= ev.start && ev.end <= c.end {
				return i, k, true
			}
			if c.end <= ev.start && c.end > best {
				best, doc, chunk = c.end, i, k
			}
		}
	}
	return doc, chunk, false
}

// discoveredBy is the dependency of download i on what discovered it (see the package comment).
func (b *graphBuilder) discoveredBy(entries []Entry, parses map[int][]span, chunkIDs map[int][]string,
	evalID map[int]string, download []string, byURL map[string]int, i int) []page.Dep {
	e := entries[i]
	rootFirst := []page.Dep{{On: download[0], When: page.WhenFirstChunk}}
	if e.Initiator == nil || e.Initiator.URL == "" {
		return rootFirst
	}
	src, ok := byURL[stripFragment(e.Initiator.URL)]
	if !ok || src == i {
		return rootFirst
	}
	switch entryType(entries[src]) {
	case page.TypeCSS, page.TypeJS:
		if id := evalID[src]; id != "" {
			return []page.Dep{{On: id}}
		}
		return []page.Dep{{On: download[src]}}
	case page.TypeHTML:
		chunks := parses[src]
		last := -1
		for k, c := range chunks {
			if c.end <= e.StartMS {
				last = k
			}
		}
		if last >= 0 && last < len(chunkIDs[src]) {
			return []page.Dep{{On: chunkIDs[src][last]}}
		}
		if e.StartMS >= entries[src].EndMS {
			// Found by the preload scanner in the document's last bytes.
			return []page.Dep{{On: download[src]}}
		}
		return []page.Dep{{On: download[src], When: page.WhenFirstChunk}}
	}
	return []page.Dep{{On: download[src]}}
}

func stripFragment(u string) string {
	if i := strings.IndexByte(u, '#'); i >= 0 {
		return u[:i]
	}
	return u
}

// entryType maps Chromium's resource type (and the MIME type) to the page model's type.
func entryType(e Entry) page.Type {
	switch e.ResourceType {
	case "document":
		return page.TypeHTML
	case "stylesheet":
		return page.TypeCSS
	case "script":
		return page.TypeJS
	case "image":
		return page.TypeImage
	case "font":
		return page.TypeFont
	}
	return page.TypeFromMIME(e.MimeType)
}

var badPathChars = regexp.MustCompile(`[^A-Za-z0-9._~/-]`)

// objectsFor returns the page whose objects the entries are, and each entry's object index.
func objectsFor(entries []Entry, opts RecordOptions) (*page.Page, []int, error) {
	objOf := make([]int, len(entries))
	if opts.Base != nil {
		pg := opts.Base.Clone()
		pg.Activities = nil
		byPath := pg.ObjectIndex()
		seen := map[int]bool{}
		for i, e := range entries {
			p := labPath(e.URL)
			oi, ok := 0, p == "/" || p == pg.Objects[0].Path
			if !ok {
				oi, ok = byPath[p]
			}
			if !ok {
				return nil, nil, fmt.Errorf("record: %s is not an object of page %s", e.URL, pg.Name)
			}
			if seen[oi] {
				return nil, nil, fmt.Errorf("record: %s was loaded twice", e.URL)
			}
			seen[oi] = true
			objOf[i] = oi
		}
		if len(seen) != len(pg.Objects) {
			// Objects the browser did not load (a rule that matched nothing, an invalid @import)
			// are left out: the graph is the load as the browser performed it.
			keep := map[int]int{}
			var objs []page.Object
			var dropped []string
			for oi, o := range pg.Objects {
				if seen[oi] {
					keep[oi] = len(objs)
					objs = append(objs, o)
				} else {
					dropped = append(dropped, o.Path)
				}
			}
			ids := map[string]bool{}
			for _, o := range objs {
				ids[o.ID] = true
			}
			for k := range objs {
				o := &objs[k]
				if o.Parent != "" && !ids[o.Parent] {
					o.Parent = ""
				}
				var refs []page.Ref
				for _, r := range o.Refs {
					if ids[r.Object] {
						refs = append(refs, r)
					}
				}
				o.Refs = refs
			}
			pg.Objects = objs
			for k := range pg.Objects {
				if pg.Objects[k].File != "" {
					if st, err := pg.StatObjectFile(k); err == nil {
						pg.Objects[k].Size = page.FileObjectSize(pg, k, st.Size())
					}
				}
			}
			for i := range objOf {
				objOf[i] = keep[objOf[i]]
			}
			pg.Source = strings.TrimSpace(pg.Source + "; not loaded by the browser and left out: " + strings.Join(dropped, ", "))
		}
		return pg, objOf, nil
	}
	root, _ := url.Parse(entries[0].URL)
	name := opts.Name
	if name == "" && root != nil {
		name = root.Host + root.Path
	}
	pg := &page.Page{Name: name, Description: opts.Description, Source: opts.Source, Seed: 1}
	hosts := map[string]int{}
	paths := map[string]bool{}
	for i, e := range entries {
		u, err := url.Parse(e.URL)
		if err != nil {
			return nil, nil, err
		}
		host := strings.ToLower(u.Hostname())
		oi, ok := hosts[host]
		if !ok {
			if n, isLab := labOrigin(host); isLab {
				oi = n
			} else {
				oi = len(hosts)
			}
			hosts[host] = oi
		}
		for len(pg.Origins) <= oi {
			pg.Origins = append(pg.Origins, page.Origin{Host: page.OriginHost(len(pg.Origins))})
		}
		t := entryType(e)
		p := labPath(e.URL)
		if i == 0 {
			p = "/index.html"
		}
		p = uniquePath(sanitizePath(p, t), paths)
		ct := e.MimeType
		if t == page.TypeHTML {
			ct = "text/html; charset=utf-8"
		}
		if ct == "" || !page.ValidContentType(ct) {
			ct = page.DefaultContentType(t)
		}
		o := page.Object{ID: fmt.Sprintf("o%d", i), Path: p, Origin: oi, Size: max(e.BodyBytes, 1), Type: t, ContentType: ct}
		if !strings.HasSuffix(host, "."+page.Zone) && page.ValidDomain(host) {
			o.Domain, o.Group = host, page.RegistrableDomain(host)
		}
		if i > 0 && e.Initiator != nil && e.Initiator.URL != "" {
			// Parent: the root or a stylesheet that references it.
			for j := range i {
				if stripFragment(entries[j].URL) == stripFragment(e.Initiator.URL) && entryType(entries[j]) == page.TypeCSS {
					o.Parent = fmt.Sprintf("o%d", j)
				}
			}
		}
		pg.Objects = append(pg.Objects, o)
		objOf[i] = i
	}
	return pg, objOf, nil
}

// labPath is a URL's path below /L/<token>/ for lab URLs, else its path.
func labPath(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	if _, p, ok := page.SplitPath(u.Path); ok {
		return p
	}
	if u.Path == "" {
		return "/"
	}
	return u.Path
}

// labOrigin maps sN.wirelab.test to origin index N−1.
func labOrigin(host string) (int, bool) {
	if host == page.WWWHost {
		return 0, true
	}
	var n int
	if _, err := fmt.Sscanf(host, "s%d.wirelab.test", &n); err == nil && n >= 1 && n <= page.MaxOrigins && page.OriginHost(n-1) == host {
		return n - 1, true
	}
	return 0, false
}

// sanitizePath turns a URL path into a valid object path.
func sanitizePath(p string, t page.Type) string {
	p = badPathChars.ReplaceAllString(p, "_")
	var segs []string
	for _, s := range strings.Split(p, "/") {
		if s == "" || s == "." || s == ".." {
			continue
		}
		segs = append(segs, s)
	}
	if len(segs) == 0 {
		segs = []string{"index"}
		if t == page.TypeHTML {
			segs[0] = "index.html"
		}
	}
	out := "/" + strings.Join(segs, "/")
	if len(out) > 200 {
		out = out[:200]
	}
	return out
}

func uniquePath(p string, used map[string]bool) string {
	q := p
	for n := 2; used[q]; n++ {
		q = fmt.Sprintf("%s.%d", p, n)
	}
	used[q] = true
	return q
}
