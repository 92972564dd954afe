// Package page is wirelab's page model: a page is a set of origins, the objects they serve (the
// first object is the root HTML document) and an optional dependency graph of the activities a
// browser performs to load it (download, parse, evaluate). The package holds the built-in corpus,
// synthetic pages, sharding over several origins, the URL scheme every load uses and the
// deterministic content each object is served with. docs/pages.md describes every field.
package page

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/internal/userpath"
)

// Type is the kind of an object, which decides how the root HTML references it and how its body
// is generated.
type Type string

// The object types.
const (
	TypeHTML  Type = "html"
	TypeCSS   Type = "css"
	TypeJS    Type = "js"
	TypeImage Type = "image"
	TypeFont  Type = "font"
	TypeOther Type = "other"
)

var types = []Type{TypeHTML, TypeCSS, TypeJS, TypeImage, TypeFont, TypeOther}

// Page is a web page as wirelab serves and loads it.
type Page struct {
	// Name identifies the page: a corpus name, a synthetic:NxS name or a file's own name.
	Name string `json:"name"`
	// Description says what the page stands for (free text).
	Description string `json:"description,omitempty"`
	// Source says where the page's numbers come from (free text).
	Source string `json:"source,omitempty"`
	// Seed seeds the generated content (0 ≤ Seed < 2^53). Corpus and synthetic pages take it from
	// the seed they were built with; it also drew their sizes.
	Seed int64 `json:"seed"`
	// RootDir is the directory holding the files of file-backed objects (a mirrored site,
	// docs/pages.md "Mirrored pages"). ReadFile makes a relative RootDir relative to the page
	// file's directory.
	RootDir string `json:"root_dir,omitempty"`
	// Origins are the hosts serving the page: Origins[i].Host is always s<i+1>.wirelab.test.
	Origins []Origin `json:"origins"`
	// Objects are the page's resources; Objects[0] is the root HTML document.
	Objects []Object `json:"objects"`
	// Activities is the optional dependency graph (empty: no graph).
	Activities []Activity `json:"activities,omitempty"`
}

// Origin is one host serving part of the page.
type Origin struct {
	// Host is s<N>.wirelab.test for the N-th origin (1-based).
	Host string `json:"host"`
}

// Object is one resource of the page.
type Object struct {
	// ID is unique within the page ([A-Za-z0-9_.-]{1,64}); activities refer to objects by it.
	ID string `json:"id"`
	// Path is the object's path below the per-load prefix /L/<token> (starts with "/").
	Path string `json:"path"`
	// Origin is the index into Page.Origins of the host serving the object.
	Origin int `json:"origin"`
	// Size is the exact body size in bytes (> 0).
	Size int64 `json:"size"`
	// Type decides how the object is referenced and generated.
	Type Type `json:"type"`
	// ContentType is the Content-Type response header.
	ContentType string `json:"content_type"`
	// Parent is the id of the object (the root HTML or a CSS) that references this one in the
	// original page; empty means the root HTML. The root HTML references every object anyway.
	Parent string `json:"parent,omitempty"`
	// Domain is the host the object came from in the original page (e.g. pbs.twimg.com).
	Domain string `json:"domain,omitempty"`
	// Group is the object's top-level-domain group (e.g. twimg.com), used by tld sharding.
	Group string `json:"group,omitempty"`
	// File, when set, is the file (relative to Page.RootDir) whose bytes are served as the
	// object's body instead of generated content.
	File string `json:"file,omitempty"`
	// Refs are the references inside a file-backed HTML or CSS object that the server rewrites
	// to the load's URL of the object they name.
	Refs []Ref `json:"refs,omitempty"`
	// CacheControl, when set, is the object's Cache-Control response header in place of the
	// default policy by type (CacheControlFor); every server under test sends it.
	CacheControl string `json:"cache_control,omitempty"`
}

// Ref is one reference inside a file-backed HTML or CSS object: the bytes [Offset,
// Offset+Length) of the file are replaced by the load's absolute URL of Object.
type Ref struct {
	Offset int64  `json:"offset"`
	Length int    `json:"length"`
	Object string `json:"object"`
}

// Root returns the root HTML document.
func (p *Page) Root() *Object { return &p.Objects[0] }

// TotalBytes is the sum of the objects' sizes.
func (p *Page) TotalBytes() int64 {
	var t int64
	for _, o := range p.Objects {
		t += o.Size
	}
	return t
}

// MeanBytes is TotalBytes divided by the object count.
func (p *Page) MeanBytes() float64 {
	if len(p.Objects) == 0 {
		return 0
	}
	return float64(p.TotalBytes()) / float64(len(p.Objects))
}

// Clone returns a deep copy.
func (p *Page) Clone() *Page {
	c := *p
	c.Origins = append([]Origin(nil), p.Origins...)
	c.Objects = append([]Object(nil), p.Objects...)
	for i := range c.Objects {
		c.Objects[i].Refs = append([]Ref(nil), c.Objects[i].Refs...)
		if p.Objects[i].Refs == nil {
			c.Objects[i].Refs = nil
		}
	}
	c.Activities = make([]Activity, len(p.Activities))
	for i, a := range p.Activities {
		a.Deps = append([]Dep(nil), a.Deps...)
		c.Activities[i] = a
	}
	if p.Activities == nil {
		c.Activities = nil
	}
	return &c
}

// ObjectIndex maps each object's path to its index.
func (p *Page) ObjectIndex() map[string]int {
	m := make(map[string]int, len(p.Objects))
	for i, o := range p.Objects {
		m[o.Path] = i
	}
	return m
}

// OriginHost is the host name of the n-th origin (0-based): s<n+1>.wirelab.test.
func OriginHost(n int) string { return fmt.Sprintf("s%d.wirelab.test", n+1) }

// WWWHost is the alias of the first origin.
const WWWHost = "www.wirelab.test"

// Zone is the DNS zone all origins live in.
const Zone = "wirelab.test"

// MaxOrigins is the largest number of origins a page can have (the topology has 64 origin addresses).
const MaxOrigins = 64

// Load resolves a page by name: a corpus name (twitter, …), a synthetic name (synthetic:64x10kB),
// a page of a generated corpus (web200:17, gen:PROFILE:SEED:COUNT:INDEX) or the path of a page
// JSON file. seed draws the sizes of corpus pages and seeds the content of corpus and synthetic
// pages; a generated page is its corpus's (its name says everything) and a file's page keeps its
// own seed.
func Load(name string, seed int64) (*Page, error) {
	switch {
	case strings.HasPrefix(name, SyntheticPrefix):
		return Synthetic(name, seed)
	case isCorpus(name):
		return Corpus(name, seed)
	case IsGeneratedName(name):
		spec, i, err := ParseGeneratedName(name)
		if err != nil {
			return nil, err
		}
		return spec.Generate(i)
	case strings.ContainsAny(name, "/\\") || strings.HasSuffix(name, ".json"):
		return ReadFile(name)
	}
	return nil, &FieldError{Field: "page", Value: fmt.Sprintf("%q", name),
		Allowed: "must be a corpus page (" + strings.Join(CorpusNames(), ", ") +
			"), a synthetic:NxS name (e.g. synthetic:64x10kB), a generated corpus's page (web200:17) or the path of a page JSON file"}
}

// ReadFile reads and validates a page JSON file. A relative root_dir is taken relative to the
// file's directory. Only a regular file of at most MaxPageFileBytes is read (a FIFO or a device is
// refused without blocking, docs/bad-input.md); a problem of the file as a whole (not JSON, the
// wrong type) names the file.
func ReadFile(path string) (*Page, error) {
	data, err := userpath.ReadFile(path, MaxPageFileBytes)
	if err != nil {
		return nil, userpath.Field("page", err)
	}
	p, err := parse(data, filepath.Dir(path))
	if fe, ok := fielderr.As(err); ok && fe.Field == "page" && fe.Value == "" {
		c := *fe
		c.Value, c.ValueShown = fielderr.QuotePath(path), true
		return nil, &c
	}
	return p, err
}

// MaxPageFileBytes bounds a page JSON file (10000 objects with their activities fit many times).
const MaxPageFileBytes = 64 << 20

// Parse decodes a page from JSON, rejecting unknown fields, and validates it. A relative
// root_dir is taken relative to the working directory.
func Parse(data []byte) (*Page, error) { return parse(data, "") }

func parse(data []byte, dir string) (*Page, error) {
	if err := checkFields(data); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p Page
	if err := dec.Decode(&p); err != nil {
		return nil, decodeError(err)
	}
	if p.RootDir != "" && !filepath.IsAbs(p.RootDir) && dir != "" {
		p.RootDir = filepath.Join(dir, p.RootDir)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// JSON returns the page as indented JSON.
func (p *Page) JSON() []byte {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		panic(err) // a Page always marshals
	}
	return append(b, '\n')
}

// Summary is a short description of a page for listings.
type Summary struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Objects     int            `json:"objects"`
	TotalBytes  int64          `json:"total_bytes"`
	MeanBytes   float64        `json:"mean_bytes"`
	ByType      map[Type]int   `json:"by_type"`
	Groups      []string       `json:"groups,omitempty"`
	Origins     int            `json:"origins"`
	Activities  int            `json:"activities"`
	BytesByType map[Type]int64 `json:"bytes_by_type"`
}

// Summarize describes p.
func (p *Page) Summarize() Summary {
	s := Summary{Name: p.Name, Description: p.Description, Objects: len(p.Objects),
		TotalBytes: p.TotalBytes(), MeanBytes: p.MeanBytes(), ByType: map[Type]int{},
		BytesByType: map[Type]int64{}, Origins: len(p.Origins), Activities: len(p.Activities)}
	seen := map[string]bool{}
	for _, o := range p.Objects {
		s.ByType[o.Type]++
		s.BytesByType[o.Type] += o.Size
		if o.Group != "" && !seen[o.Group] {
			seen[o.Group] = true
			s.Groups = append(s.Groups, o.Group)
		}
	}
	sort.Strings(s.Groups)
	return s
}
