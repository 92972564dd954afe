package page

import (
	"errors"
	"fmt"
	"mime"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/internal/refscan"
	"golang.org/x/net/html"
)

// Mirror builds a page from a saved site directory (docs/pages.md "Mirrored pages"): the root
// document is DIR/index.html (or the only .html file at the top of DIR); every file reachable
// from it through HTML and CSS references becomes a file-backed object served as it is, except
// that its references are rewritten to the load's lab URLs.
//
// References found: those a browser fetches, exactly as the engine's loader finds them
// (internal/refscan: link, script, img/srcset, picture source, frames, embed, object, input
// type=image, video poster, background; url() and @import in style elements, style attributes and
// CSS). A reference with no exact span in the file (a style attribute holding character
// references) is left as it is and reported in Missing. A reference is
// resolved to a file in DIR: relative ones against the referencing file's directory, root-relative
// ones against DIR, absolute http(s) ones first as DIR/<host>/<path> (wget's layout), then as
// DIR/<path>. With a query, the file named path?query is tried before path. References that name
// no file are left as they are and reported in Missing.
//
// Origins: objects found in DIR through a relative or root-relative reference, or under an
// absolute URL of the root's own host, are on origin s1; each other host of an absolute URL gets
// the next origin (s2, s3, …), and its objects keep the host as domain (group: its registrable
// domain), so that study W's domain and tld sharding apply.
type MirrorResult struct {
	Page    *Page
	Missing []string // references that name no file in DIR ("file: reference")
}

// Mirror imports dir (see MirrorResult). name is the page's name ("" = the directory's name).
func Mirror(dir, name string) (*MirrorResult, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(abs)
	if err != nil || !st.IsDir() {
		return nil, fmt.Errorf("mirror: %s is not a directory", dir)
	}
	root, err := findRootHTML(abs)
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = filepath.Base(abs)
	}
	m := &mirror{dir: abs, byFile: map[string]int{}, hosts: map[string]int{}}
	m.page = &Page{Name: name, Seed: 1, RootDir: abs,
		Description: "mirrored site directory " + abs,
		Source:      "wirelab pages mirror: files served as they are, references rewritten to the lab's origins"}
	m.origin("")
	m.add(root, "", "", TypeHTML)
	for k := 0; k < len(m.page.Objects); k++ { // breadth first: objects are appended as found
		o := &m.page.Objects[k]
		if o.Type == TypeHTML || o.Type == TypeCSS {
			if err := m.scan(k); err != nil {
				return nil, err
			}
		}
	}
	for i := range m.page.Objects {
		o := &m.page.Objects[i]
		st, err := m.page.StatObjectFile(i)
		if err != nil {
			return nil, fmt.Errorf("mirror: %w", err)
		}
		o.Size = FileObjectSize(m.page, i, st.Size())
		if o.Size == 0 { // an empty file: served as one space (the model has no empty objects)
			return nil, fmt.Errorf("mirror: %s is empty; wirelab pages need objects of at least 1 byte", o.File)
		}
	}
	if err := m.page.Validate(); err != nil {
		return nil, fmt.Errorf("mirror: the page built from %s is invalid: %w", dir, err)
	}
	return &MirrorResult{Page: m.page, Missing: m.missing}, nil
}

func findRootHTML(dir string) (string, error) {
	st, err := statInRoot(dir, "index.html")
	if err == nil && st.Mode().IsRegular() {
		return "index.html", nil
	}
	if errors.Is(err, ErrOutsideRoot) {
		return "", fmt.Errorf("mirror: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var htmls []string
	for _, e := range entries {
		if e.Type().IsRegular() && (strings.HasSuffix(e.Name(), ".html") || strings.HasSuffix(e.Name(), ".htm")) {
			htmls = append(htmls, e.Name())
		}
	}
	if len(htmls) != 1 {
		return "", fmt.Errorf("mirror: %s has no index.html and %d .html files at its top; cannot tell the root document", dir, len(htmls))
	}
	return htmls[0], nil
}

type mirror struct {
	dir     string
	page    *Page
	byFile  map[string]int // file (relative, slash) → object index
	hosts   map[string]int // host → origin index ("" = the root's own)
	rootHst string
	missing []string
	paths   map[string]bool
}

func (m *mirror) origin(host string) int {
	if host == m.rootHst {
		host = ""
	}
	if n, ok := m.hosts[host]; ok {
		return n
	}
	n := len(m.page.Origins)
	if n >= MaxOrigins {
		n = 0 // more hosts than origins: the rest share s1
	} else {
		m.page.Origins = append(m.page.Origins, Origin{Host: OriginHost(n)})
	}
	m.hosts[host] = n
	return n
}

// add returns the object of file (relative to dir, slash-separated), creating it.
func (m *mirror) add(file, host, parent string, hint Type) int {
	if k, ok := m.byFile[file]; ok {
		return k
	}
	if m.paths == nil {
		m.paths = map[string]bool{}
	}
	t := typeOfFile(file, hint)
	o := Object{ID: fmt.Sprintf("o%d", len(m.page.Objects)), File: file, Type: t, ContentType: contentTypeOfFile(file, t),
		Origin: m.origin(host), Parent: parent}
	o.Path = "/" + file
	if !pathRE.MatchString(o.Path) || strings.Contains(o.Path, "//") {
		o.Path = "/" + strings.Trim(badPathChar.ReplaceAllString(file, "_"), "/")
	}
	if len(o.Path) > 200 {
		o.Path = o.Path[:200]
	}
	for n, p := 2, o.Path; m.paths[o.Path]; n++ {
		o.Path = fmt.Sprintf("%s.%d", p, n)
	}
	m.paths[o.Path] = true
	if host != "" && host != m.rootHst && domainRE.MatchString(host) {
		o.Domain, o.Group = host, RegistrableDomain(host)
	}
	m.byFile[file] = len(m.page.Objects)
	m.page.Objects = append(m.page.Objects, o)
	return len(m.page.Objects) - 1
}

var badPathChar = regexp.MustCompile(`[^A-Za-z0-9._~/-]`)

func typeOfFile(file string, hint Type) Type {
	switch strings.ToLower(path.Ext(strings.SplitN(file, "?", 2)[0])) {
	case ".html", ".htm", ".xhtml":
		return TypeHTML
	case ".css":
		return TypeCSS
	case ".js", ".mjs":
		return TypeJS
	case ".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".ico", ".avif", ".bmp":
		return TypeImage
	case ".woff", ".woff2", ".ttf", ".otf", ".eot":
		return TypeFont
	}
	if hint != "" {
		return hint
	}
	return TypeOther
}

func contentTypeOfFile(file string, t Type) string {
	ext := strings.ToLower(path.Ext(strings.SplitN(file, "?", 2)[0]))
	special := map[string]string{".js": "text/javascript", ".mjs": "text/javascript", ".woff2": "font/woff2",
		".woff": "font/woff", ".svg": "image/svg+xml", ".ico": "image/x-icon", ".json": "application/json", ".webp": "image/webp"}
	if ct, ok := special[ext]; ok {
		return ct
	}
	if t == TypeHTML {
		return "text/html; charset=utf-8"
	}
	if ct := mime.TypeByExtension(ext); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err == nil {
			if mt == "text/css" || strings.HasPrefix(mt, "text/") {
				return mt
			}
			if ValidContentType(mt) {
				return mt
			}
		}
	}
	return DefaultContentType(t)
}

// scan finds the references of object k and adds the objects they name.
func (m *mirror) scan(k int) error {
	data, err := m.page.ReadObjectFile(k)
	if err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	o := m.page.Objects[k]
	var refs []refscan.Ref
	if o.Type == TypeHTML {
		refs = refscan.HTMLRefs(data)
	} else {
		refs = refscan.CSSRefs(data)
	}
	parent := ""
	if o.Type == TypeCSS {
		parent = o.ID
	}
	var out []Ref
	for _, r := range refs {
		if r.Base {
			continue // rewritten references are absolute: the base no longer matters
		}
		file, host, ok, err := m.resolve(o.File, r.URL)
		if err != nil {
			return fmt.Errorf("mirror: %s, referenced from %s as %s: %w", file, o.File, fielderr.Quote(r.URL), err)
		}
		if !ok || !r.Spanned() {
			if !strings.HasPrefix(r.URL, "data:") && !strings.HasPrefix(r.URL, "#") && !strings.HasPrefix(r.URL, "javascript:") && r.URL != "" {
				m.missing = append(m.missing, o.File+": "+r.URL)
			}
			continue
		}
		j := m.add(file, host, parent, Type(r.Kind))
		if k == 0 && m.rootHst == "" && host != "" {
			// An absolute URL in the root that names the root's own file: its host is the root's.
			if file == m.page.Objects[0].File {
				m.rootHst = host
			}
		}
		out = append(out, Ref{Offset: int64(r.Offset), Length: r.Length, Object: m.page.Objects[j].ID})
	}
	m.page.Objects[k].Refs = out
	return nil
}

// resolve maps a reference in file from to a file of the directory and the host it named. A
// candidate that exists only by leaving the directory (a link out of it) is an error naming it.
func (m *mirror) resolve(from, raw string) (file, host string, ok bool, err error) {
	raw = strings.TrimSpace(html.UnescapeString(raw))
	if raw == "" || strings.HasPrefix(raw, "#") {
		return "", "", false, nil
	}
	u, perr := url.Parse(raw)
	if perr != nil || (u.Scheme != "" && u.Scheme != "http" && u.Scheme != "https") {
		return "", "", false, nil
	}
	var candidates []string
	withQuery := func(p string) {
		p = strings.TrimPrefix(path.Clean("/"+p), "/")
		if u.RawQuery != "" {
			candidates = append(candidates, p+"?"+u.RawQuery)
		}
		candidates = append(candidates, p)
	}
	switch {
	case u.Host != "":
		host = strings.ToLower(u.Hostname())
		withQuery(host + "/" + u.Path)
		withQuery(u.Path)
	case strings.HasPrefix(u.Path, "/"):
		withQuery(u.Path)
	default:
		withQuery(path.Join(path.Dir(from), u.Path))
	}
	for _, c := range candidates {
		if c == "" || c == "." || strings.HasPrefix(c, "../") {
			continue
		}
		st, err := statInRoot(m.dir, c)
		if errors.Is(err, ErrOutsideRoot) {
			return c, host, false, err
		}
		if err == nil && st.Mode().IsRegular() {
			return c, host, true, nil
		}
	}
	return "", "", false, nil
}
