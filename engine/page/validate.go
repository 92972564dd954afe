package page

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	idRE     = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	pathRE   = regexp.MustCompile(`^/[A-Za-z0-9._~/-]{0,255}$`)
	domainRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)
	cacheRE  = regexp.MustCompile(`^[a-z][a-z-]*(=[0-9]{1,10})?(, ?[a-z][a-z-]*(=[0-9]{1,10})?)*$`)
	ctypeRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9.+-]*/[a-z0-9][a-z0-9.+-]*(; ?[a-z0-9-]+=[A-Za-z0-9.-]+)*$`)
)

// Limits of a page.
const (
	MaxObjects     = 10000
	MaxObjectBytes = 1 << 30 // 1 GiB per object
	MaxPageBytes   = 8 << 30 // 8 GiB for all of a page's objects
	MaxSeed        = 1<<53 - 1
)

// Validate checks the page and returns the first problem as a *FieldError.
func (p *Page) Validate() error {
	if p.Name == "" || len(p.Name) > 200 || strings.ContainsAny(p.Name, "\n\r\t") {
		return fieldErr("name", p.Name, "must be 1–200 characters on one line")
	}
	if p.Seed < 0 || p.Seed > MaxSeed {
		return fieldErr("seed", p.Seed, "must be an integer in [0, 2^53-1]")
	}
	if len(p.Origins) < 1 || len(p.Origins) > MaxOrigins {
		return fieldErr("origins", len(p.Origins), "must list 1–%d origins", MaxOrigins)
	}
	for i, o := range p.Origins {
		if want := OriginHost(i); o.Host != want {
			return fieldErr(fmt.Sprintf("origins[%d].host", i), o.Host, "must be %q (origin N is sN.wirelab.test)", want)
		}
	}
	if len(p.Objects) < 1 || len(p.Objects) > MaxObjects {
		return fieldErr("objects", len(p.Objects), "must list 1–%d objects, the first being the root HTML", MaxObjects)
	}
	ids := map[string]int{}
	paths := map[string]int{}
	var total int64
	for i, o := range p.Objects {
		f := fmt.Sprintf("objects[%d]", i)
		if err := uniqueID(ids, "objects", i, o.ID); err != nil {
			return err
		}
		if !pathRE.MatchString(o.Path) || o.Path == "/" || strings.Contains(o.Path, "//") ||
			strings.Contains(o.Path+"/", "/../") || strings.Contains(o.Path+"/", "/./") || strings.HasSuffix(o.Path, "/") {
			return fieldErr(f+".path", o.Path, "must be an absolute path of [A-Za-z0-9._~/-] (≤ 256 characters, no empty, . or .. segments, not ending in /)")
		}
		if j, dup := paths[o.Path]; dup {
			return fieldErr(f+".path", o.Path, "must be unique; objects[%d] has the same path", j)
		}
		paths[o.Path] = i
		if o.Origin < 0 || o.Origin >= len(p.Origins) {
			return fieldErr(f+".origin", o.Origin, "must be an index into origins (0–%d)", len(p.Origins)-1)
		}
		if o.Size <= 0 || o.Size > MaxObjectBytes {
			return fieldErr(f+".size", o.Size, "must be a positive number of bytes ≤ %d", int64(MaxObjectBytes))
		}
		if total += o.Size; total > MaxPageBytes {
			return fieldErr(f+".size", o.Size, "brings the page's objects past %d bytes in all; a page has at most %d", int64(MaxPageBytes), int64(MaxPageBytes))
		}
		if !containsType(o.Type) {
			return fieldErr(f+".type", string(o.Type), "must be one of html, css, js, image, font, other")
		}
		if !ctypeRE.MatchString(o.ContentType) {
			return fieldErr(f+".content_type", o.ContentType, "must be a media type such as text/css or text/html; charset=utf-8")
		}
		if o.CacheControl != "" && !cacheRE.MatchString(o.CacheControl) {
			return fieldErr(f+".cache_control", o.CacheControl, "must be Cache-Control directives such as max-age=31536000 or no-cache, public")
		}
		if o.Domain != "" && !domainRE.MatchString(o.Domain) {
			return fieldErr(f+".domain", o.Domain, "must be a lower-case DNS name")
		}
		if o.Group != "" && !domainRE.MatchString(o.Group) {
			return fieldErr(f+".group", o.Group, "must be a lower-case DNS name (the top-level-domain group, e.g. twimg.com)")
		}
	}
	root := p.Objects[0]
	if root.Type != TypeHTML {
		return fieldErr("objects[0].type", string(root.Type), "must be html: the first object is the root document")
	}
	if root.Parent != "" {
		return fieldErr("objects[0].parent", root.Parent, "must be empty: the root document has no parent")
	}
	for i, o := range p.Objects[1:] {
		if o.Parent == "" {
			continue
		}
		f := fmt.Sprintf("objects[%d].parent", i+1)
		j, ok := ids[o.Parent]
		if !ok {
			return fieldErr(f, o.Parent, "must be the id of the root document or of a css object")
		}
		if j != 0 && p.Objects[j].Type != TypeCSS {
			return fieldErr(f, o.Parent, "is a %s object; a parent is the root document or a css object", p.Objects[j].Type)
		}
		if j == i+1 {
			return fieldErr(f, o.Parent, "an object cannot be its own parent")
		}
	}
	if err := p.validateFiles(); err != nil {
		return err
	}
	for i, o := range p.Objects {
		if o.File != "" {
			continue // its size is checked against its file
		}
		if min := MinSize(p, i); o.Size < min {
			return fieldErr(fmt.Sprintf("objects[%d].size", i), o.Size, "must be ≥ %d bytes: this %s object holds %d references, each with room for the longest URL", min, o.Type, len(references(p, i)))
		}
	}
	return p.validateGraph()
}

func containsType(t Type) bool {
	for _, x := range types {
		if x == t {
			return true
		}
	}
	return false
}

// uniqueID checks the id of list[i] (objects, activities): its form, and that no earlier member of
// the list has it (seen: the ids so far, by index; it records this one).
func uniqueID(seen map[string]int, list string, i int, id string) error {
	f := fmt.Sprintf("%s[%d].id", list, i)
	if !idRE.MatchString(id) {
		return fieldErr(f, id, "must match [A-Za-z0-9_.-]{1,64}")
	}
	if j, dup := seen[id]; dup {
		return fieldErr(f, id, "must be unique; %s[%d] has the same id", list, j)
	}
	seen[id] = i
	return nil
}
