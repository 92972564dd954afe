// Package cachetest is the page the HTTP-cache tests load (the engine loader's cache in
// engine/client, every server's cache policy in cmd/wirelab-engine): the corpus page twitter with
// objects overriding the default policy, and what a repeat view should make of each object.
package cachetest

import (
	"fmt"

	"github.com/wirelab/wirelab/engine/page"
)

// What a repeat view makes of an object (client.Entry's cache values, "" for a whole fetch).
const (
	Hit         = "hit"
	Revalidated = "revalidated"
	Fetched     = ""
)

// Overrides are the policies given to the first objects of each type; the rest keep the default.
var Overrides = map[page.Type][]string{
	page.TypeImage: {"no-store", "max-age=0"},
	page.TypeCSS:   {"public, max-age=600"},
	page.TypeJS:    {"no-cache"},
}

// Page is twitter (seed 1) with Overrides applied. Want maps each object's path to what a repeat
// view against a server sending the policy makes of it; NoStoreBytes is the body bytes it fetches.
type Page struct {
	*page.Page
	Want         map[string]string
	NoStoreBytes int64
}

// Hits and Revalidated count Want's values.
func (p Page) Hits() int        { return p.count(Hit) }
func (p Page) Revalidated() int { return p.count(Revalidated) }

func (p Page) count(v string) int {
	n := 0
	for _, w := range p.Want {
		if w == v {
			n++
		}
	}
	return n
}

// Load builds the page.
func Load() (Page, error) {
	pg, err := page.Load("twitter", 1)
	if err != nil {
		return Page{}, err
	}
	left := map[page.Type][]string{}
	for t, vs := range Overrides {
		left[t] = vs
	}
	p := Page{Page: pg, Want: map[string]string{}}
	for i := range pg.Objects {
		o := &pg.Objects[i]
		if vs := left[o.Type]; len(vs) > 0 {
			o.CacheControl, left[o.Type] = vs[0], vs[1:]
		}
		switch o.CachePolicy() {
		case "no-store":
			p.Want[o.Path], p.NoStoreBytes = Fetched, p.NoStoreBytes+o.Size
		case "no-cache", "max-age=0":
			p.Want[o.Path] = Revalidated
		default:
			p.Want[o.Path] = Hit
		}
	}
	for t, vs := range left {
		if len(vs) > 0 {
			return Page{}, fmt.Errorf("twitter has too few objects of type %s for the overrides %v", t, Overrides[t])
		}
	}
	return p, nil
}
