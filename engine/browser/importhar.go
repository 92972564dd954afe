package browser

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/har"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/internal/userpath"
	"github.com/wirelab/wirelab/engine/page"
)

// HAR import (docs/browser.md "Importing a HAR"): a HAR saved by a browser's developer tools (or
// by wirelab) becomes a page model.
//
//   - Objects: the GET entries with a 2xx status, one per URL (the first), in the HAR's order;
//     the root is the first document entry. Size: response.content.size, else response.bodySize,
//     else _transferSize (Chrome); type from _resourceType, else the MIME type; origins by host
//     (lab hosts sN.wirelab.test keep their origin; other hosts get origins in order of appearance,
//     their host as domain and its registrable domain as group); parent: the stylesheet named by
//     _initiator.url.
//   - Graph: every object has a download. A document, stylesheet or script P that initiated other
//     requests (_initiator.url, or the first frame of _initiator.stack) gets a computation X(P)
//     (parse for html, evaluate for css/js) depending on P's download. Its duration estimates
//     the computation from timings: the gap between P's end and the start of the first of its
//     children that started after P ended (0 when none did). Each child depends on X(P) if it
//     started after P ended, else on P's first chunk (a document's preload scanner). Requests
//     without a usable initiator depend on the root the same way. Stylesheets and scripts that
//     initiated nothing get a zero evaluation.
// A HAR has no trace: computations that delayed nothing visible are invisible to it, and a gap
// also holds the browser's own scheduling. Record with Chromium (pages record) for measured ones.

type harEntry struct {
	StartedDateTime time.Time `json:"startedDateTime"`
	Time            float64   `json:"time"`
	Request         struct {
		Method string `json:"method"`
		URL    string `json:"url"`
	} `json:"request"`
	Response struct {
		Status  int             `json:"status"`
		Headers []har.NameValue `json:"headers"`
		Content struct {
			Size     json.Number `json:"size"`
			MimeType string      `json:"mimeType"`
		} `json:"content"`
		BodySize json.Number `json:"bodySize"`
	} `json:"response"`
	Timings      har.Timings  `json:"timings"`
	ResourceType string       `json:"_resourceType"`
	TransferSize *json.Number `json:"_transferSize"`
	Initiator    *struct {
		Type  string `json:"type"`
		URL   string `json:"url"`
		Stack *struct {
			CallFrames []struct {
				URL string `json:"url"`
			} `json:"callFrames"`
		} `json:"stack"`
	} `json:"_initiator"`
}

// harSizes checks an entry's sizes while reading (content.size, bodySize, _transferSize): integers,
// ≥ 0 (bodySize and _transferSize may be -1, HAR's "unknown"), at most page.MaxObjectBytes.
func harSizes(field string, he harEntry) ([3]int64, error) {
	var out [3]int64
	for k, f := range []struct {
		name    string
		v       json.Number
		minimum int64
	}{{".response.content.size", he.Response.Content.Size, 0}, {".response.bodySize", he.Response.BodySize, -1}, {"._transferSize", ptrNumber(he.TransferSize), -1}} {
		if f.v == "" {
			out[k] = -1
			continue
		}
		n, err := f.v.Int64()
		if err != nil || n < f.minimum || n > page.MaxObjectBytes {
			return out, fielderr.New(field+f.name, f.v.String(), "must be a whole number of bytes, %d–%d", f.minimum, int64(page.MaxObjectBytes))
		}
		out[k] = n
	}
	return out, nil
}

func ptrNumber(n *json.Number) json.Number {
	if n == nil {
		return ""
	}
	return *n
}

// MaxHARFileBytes bounds a HAR file (bodies included; the page's own limits usually refuse a HAR
// long before, at the entry that crosses them).
const MaxHARFileBytes = 2 << 30

// ImportHAR reads a HAR file and builds a page with a dependency graph (see above). The file is
// read as a stream, one entry at a time, and the page's limits are checked as entries arrive: time
// and memory are linear in the file's size, and a HAR past a limit is refused without being read
// to its end.
func ImportHAR(path string, opts RecordOptions) (*page.Page, error) {
	// a regular file only, never blocking on a FIFO or reading a device (docs/bad-input.md)
	f, err := userpath.Open(path, MaxHARFileBytes)
	if err != nil {
		return nil, userpath.Field("har", err)
	}
	defer f.Close()
	return ImportHARFrom(f, path, opts)
}

// ImportHARFrom is ImportHAR of a HAR read from r; label names it in errors and in the page's
// default source.
func ImportHARFrom(r io.Reader, label string, opts RecordOptions) (*page.Page, error) {
	if opts.Source == "" {
		opts.Source = "imported from the HAR file " + label
	}
	im := &harImport{opts: opts, seen: map[string]bool{}}
	if err := im.read(json.NewDecoder(bufio.NewReaderSize(r, 1<<16)), label); err != nil {
		return nil, err
	}
	return PageFromEntries(im.entries, im.opts)
}

// harImport collects a HAR's entries as they are read.
type harImport struct {
	opts    RecordOptions
	entries []Entry
	seen    map[string]bool
	t0      time.Time
	bytes   int64 // the objects' bytes so far
	found   bool  // log.entries was there
}

// read walks the HAR's top level and its log, decoding log.entries element by element and
// skipping every other member without keeping it.
func (im *harImport) read(dec *json.Decoder, path string) error {
	notHAR := func(err error) error {
		return fielderr.New("har", nil, "%s is not a HAR (JSON) file: %v", fielderr.Cut(path), err)
	}
	if err := expectDelim(dec, '{'); err != nil {
		return notHAR(err)
	}
	sawLog := false
	for dec.More() {
		key, err := objectKey(dec)
		if err != nil {
			return notHAR(err)
		}
		if key != "log" {
			if err := skipValue(dec); err != nil {
				return notHAR(err)
			}
			continue
		}
		if sawLog {
			return fielderr.New("log", nil, "appears twice; a HAR file has one log")
		}
		sawLog = true
		if err := expectDelim(dec, '{'); err != nil {
			var wt *wrongToken
			if !errors.As(err, &wt) {
				return notHAR(err)
			}
			return fielderr.New("log", nil, "must be an object (a HAR 1.2 file): %v", err)
		}
		for dec.More() {
			key, err := objectKey(dec)
			if err != nil {
				return notHAR(err)
			}
			if key != "entries" {
				if err := skipValue(dec); err != nil {
					return notHAR(err)
				}
				continue
			}
			if im.found {
				return fielderr.New("log.entries", nil, "appears twice; a HAR file has one list of entries")
			}
			im.found = true
			if err := expectDelim(dec, '['); err != nil {
				var wt *wrongToken
				if !errors.As(err, &wt) {
					return notHAR(err)
				}
				return fielderr.New("log.entries", nil, "must be a list of requests (a HAR 1.2 file)")
			}
			for i := 0; dec.More(); i++ {
				var he harEntry
				if err := dec.Decode(&he); err != nil {
					field := fmt.Sprintf("entries[%d]", i)
					var te *json.UnmarshalTypeError
					if errors.As(err, &te) {
						if te.Field == "" {
							return fielderr.New(field, te.Value, "must be an object (a HAR 1.2 entry)")
						}
						return fielderr.New(field+"."+te.Field, te.Value, "must be a %s (a HAR 1.2 entry)", te.Type)
					}
					return fielderr.New(field, nil, "is not a HAR entry: %v", err)
				}
				if err := im.add(i, he); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil { // ]
				return notHAR(err)
			}
		}
		if _, err := dec.Token(); err != nil { // } of log
			return notHAR(err)
		}
	}
	if _, err := dec.Token(); err != nil { // } of the file
		return notHAR(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return notHAR(errors.New("more after the HAR's object"))
	}
	if !im.found {
		return fielderr.New("log.entries", nil, "missing; a HAR file has log.entries (a list of requests)")
	}
	return nil
}

// expectDelim reads the next token and wants it to be d.
func expectDelim(dec *json.Decoder, d json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != d {
		return &wrongToken{found: t, want: d}
	}
	return nil
}

// wrongToken is a well-formed JSON value of the wrong kind where a HAR needs an object or a list.
type wrongToken struct {
	found json.Token
	want  json.Delim
}

func (e *wrongToken) Error() string {
	return fmt.Sprintf("found %v where %q was expected", e.found, e.want)
}

// objectKey reads a member's name.
func objectKey(dec *json.Decoder) (string, error) {
	t, err := dec.Token()
	if err != nil {
		return "", err
	}
	k, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("found %v where a member name was expected", t)
	}
	return k, nil
}

// skipValue reads one value, token by token, keeping none of it.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// add takes entry i: checked (URL, sizes), kept when it is a new successful GET, counted
// against the page's limits.
func (im *harImport) add(i int, he harEntry) error {
	field := fmt.Sprintf("entries[%d]", i)
	if _, err := url.Parse(he.Request.URL); err != nil {
		return fielderr.New(field+".request.url", he.Request.URL, "must be a URL")
	}
	sizes, err := harSizes(field, he)
	if err != nil {
		return err
	}
	u := stripFragment(he.Request.URL)
	if !strings.EqualFold(he.Request.Method, http.MethodGet) || he.Response.Status < 200 || he.Response.Status >= 300 || im.seen[u] {
		return nil
	}
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return nil
	}
	im.seen[u] = true
	if len(im.entries)+1 > page.MaxObjects {
		return fielderr.New("entries", nil, "more than %d objects (GET 2xx entries); a page has at most %d", page.MaxObjects, page.MaxObjects)
	}
	size := sizes[0]
	if size <= 0 {
		size = sizes[1]
	}
	if size <= 0 {
		size = sizes[2]
	}
	size = max(size, 1)
	if im.bytes += size; im.bytes > page.MaxPageBytes {
		return fielderr.New(field, nil, "brings the page's objects past %d bytes; a page has at most %d", int64(page.MaxPageBytes), int64(page.MaxPageBytes))
	}
	e := Entry{URL: u, Method: http.MethodGet, ResourceType: strings.ToLower(he.ResourceType), Status: he.Response.Status,
		MimeType: he.Response.Content.MimeType, BodyBytes: size, StartedAt: he.StartedDateTime}
	for _, h := range he.Response.Headers {
		if strings.EqualFold(h.Name, "content-type") && e.MimeType == "" {
			e.MimeType = h.Value
		}
	}
	if e.ResourceType == "" {
		e.ResourceType = resourceTypeOf(page.TypeFromMIME(e.MimeType))
	}
	if he.Initiator != nil {
		in := &har.Initiator{Type: he.Initiator.Type, URL: he.Initiator.URL}
		if in.URL == "" && he.Initiator.Stack != nil {
			for _, cf := range he.Initiator.Stack.CallFrames {
				if cf.URL != "" {
					in.URL = cf.URL
					break
				}
			}
		}
		e.Initiator = in
	}
	if len(im.entries) == 0 {
		im.t0 = he.StartedDateTime
	}
	e.StartMS = float64(he.StartedDateTime.Sub(im.t0)) / float64(time.Millisecond)
	e.EndMS = e.StartMS + math.Max(he.Time, he.Timings.Total())
	tm := he.Timings
	fb := 0.0
	for _, v := range []float64{tm.Blocked, tm.DNS, tm.Connect, tm.Send, tm.Wait} {
		fb += math.Max(v, 0)
	}
	e.FirstByteMS = e.StartMS + fb
	im.entries = append(im.entries, e)
	return nil
}

// PageFromEntries builds a page and its graph from requests (see the comment at the top): the
// HAR importer's and the mahimahi importer's (engine/pageimport) last step. Entries need URL,
// ResourceType or MimeType, BodyBytes, StartMS, EndMS, FirstByteMS and, where known, Initiator.
func PageFromEntries(entries []Entry, opts RecordOptions) (*page.Page, error) {
	entries = append([]Entry(nil), entries...)
	// The root: the first document.
	rootAt := -1
	for i, e := range entries {
		if e.ResourceType == "document" || page.TypeFromMIME(e.MimeType) == page.TypeHTML {
			rootAt = i
			break
		}
	}
	if rootAt < 0 {
		return nil, fmt.Errorf("import-har: no HTML document among the HAR's successful GET entries")
	}
	entries = append([]Entry{entries[rootAt]}, append(entries[:rootAt:rootAt], entries[rootAt+1:]...)...)
	entries[0].ResourceType = "document"
	base := entries[0].StartMS
	for i := range entries {
		entries[i].StartMS -= base
		entries[i].EndMS -= base
		entries[i].FirstByteMS -= base
	}
	sort.SliceStable(entries[1:], func(a, b int) bool { return entries[1+a].StartMS < entries[1+b].StartMS })
	pg, objOf, err := objectsFor(entries, opts)
	if err != nil {
		return nil, err
	}
	if opts.Base == nil {
		// The lab's URLs (https://sN.wirelab.test:port/L/<token>/…) are longer than most original
		// references: an HTML or CSS body must hold them (page.MinSize), so it grows where needed.
		for i := range pg.Objects {
			if t := pg.Objects[i].Type; t == page.TypeHTML || t == page.TypeCSS {
				pg.Objects[i].Size = max(pg.Objects[i].Size, page.MinSize(pg, i))
			}
		}
	}
	byURL := map[string]int{}
	for i, e := range entries {
		byURL[e.URL] = i
	}
	// Children by initiator (unknown initiators: the root).
	parentOf := make([]int, len(entries))
	children := map[int][]int{}
	for i := 1; i < len(entries); i++ {
		p := 0
		if in := entries[i].Initiator; in != nil && in.URL != "" {
			if j, ok := byURL[stripFragment(in.URL)]; ok && j != i && j < len(entries) {
				if t := entryType(entries[j]); t == page.TypeHTML || t == page.TypeCSS || t == page.TypeJS {
					p = j
				}
			}
		}
		parentOf[i] = p
		children[p] = append(children[p], i)
	}
	b := &graphBuilder{}
	download := make([]string, len(entries))
	for i := range entries {
		download[i] = b.add(page.KindDownload, pg.Objects[objOf[i]].ID, 0)
	}
	compute := map[int]string{}
	for i, e := range entries {
		t := entryType(e)
		if t != page.TypeHTML && t != page.TypeCSS && t != page.TypeJS {
			continue
		}
		if t == page.TypeHTML && len(children[i]) == 0 && i != 0 {
			continue
		}
		gap := math.Inf(1)
		for _, c := range children[i] {
			if entries[c].StartMS >= e.EndMS {
				gap = math.Min(gap, entries[c].StartMS-e.EndMS)
			}
		}
		if math.IsInf(gap, 1) {
			gap = 0
		}
		kind := page.KindEvaluate
		if t == page.TypeHTML {
			kind = page.KindParse
		}
		compute[i] = b.add(kind, pg.Objects[objOf[i]].ID, gap, page.Dep{On: download[i]})
	}
	for i := 1; i < len(entries); i++ {
		p := parentOf[i]
		if entries[i].StartMS >= entries[p].EndMS && compute[p] != "" {
			b.addDep(download[i], page.Dep{On: compute[p]})
		} else if entryType(entries[p]) == page.TypeHTML {
			b.addDep(download[i], page.Dep{On: download[p], When: page.WhenFirstChunk})
		} else {
			b.addDep(download[i], page.Dep{On: download[p]})
		}
	}
	pg.Activities = b.acts
	if err := pg.Validate(); err != nil {
		return nil, fmt.Errorf("import-har: the page built is invalid: %w", err)
	}
	return pg, nil
}

// resourceTypeOf is Chromium's resource type for a page type (for HARs without _resourceType).
func resourceTypeOf(t page.Type) string {
	switch t {
	case page.TypeHTML:
		return "document"
	case page.TypeCSS:
		return "stylesheet"
	case page.TypeJS:
		return "script"
	case page.TypeImage:
		return "image"
	case page.TypeFont:
		return "font"
	}
	return "other"
}
