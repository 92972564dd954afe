package client

import (
	"math"
	"net/url"
	"path"
	"strings"

	"github.com/wirelab/wirelab/engine/internal/priority"
	"github.com/wirelab/wirelab/engine/internal/suggest"
	"github.com/wirelab/wirelab/engine/page"
)

// PriorityPolicy decides each request's priority (study W's prioritisation experiments).
type PriorityPolicy string

// The policies.
const (
	// PriorityNone signals nothing: no priority header, no PRIORITY_UPDATE; spdy3 streams all get
	// priority 3 (RFC 9218's default urgency). The server then treats every request alike.
	PriorityNone PriorityPolicy = "none"
	// PriorityChrome: HTML documents u=0, stylesheets and scripts u=1, everything else u=2 (study
	// W's "chrome-priority": HTML > CSS/JS > rest).
	PriorityChrome PriorityPolicy = "chrome"
	// PriorityDependency: an object's depth d in the page's dependency graph (page.Depths) mapped
	// linearly onto the 8 levels, u = round(7·d / D) with D the page's largest depth (the root is
	// u=0; a page whose objects are all at depth ≤ 1 uses u=0 and u=7). Study W's
	// "dependency-priority". Needs Config.Page.
	PriorityDependency PriorityPolicy = "dependency"
)

// PriorityPolicies lists the policies as the CLI documents them.
var PriorityPolicies = []PriorityPolicy{PriorityNone, PriorityChrome, PriorityDependency}

// ParsePriorityPolicy validates a policy name.
func ParsePriorityPolicy(s string) (PriorityPolicy, error) {
	return suggest.Parse(PriorityPolicies, s)
}

// Levels of the chrome policy.
const (
	chromeHTML   = 0
	chromeCSSJS  = 1
	chromeOthers = 2
)

// spdyDefaultPriority is the SYN_STREAM priority of every request under PriorityNone.
const spdyDefaultPriority = priority.DefaultUrgency

// prioritiser gives each request of a load its priority under the configured policy.
type prioritiser struct {
	policy PriorityPolicy
	pg     *page.Page
	index  map[string]int // object path → index
	levels []uint8        // PriorityDependency: urgency per object
}

func newPrioritiser(cfg Config) *prioritiser {
	p := &prioritiser{policy: cfg.Priority, pg: cfg.Page}
	if p.pg == nil {
		return p
	}
	p.index = p.pg.ObjectIndex()
	if p.policy == PriorityDependency {
		depths := p.pg.Depths()
		deepest := 0
		for _, d := range depths {
			deepest = max(deepest, d)
		}
		p.levels = make([]uint8, len(depths))
		for i, d := range depths {
			if deepest > 0 {
				p.levels[i] = uint8(math.Round(float64(priority.MaxUrgency*d) / float64(deepest)))
			}
		}
	}
	return p
}

// object finds the page object a URL names (/L/<token><path>); -1 if none.
func (p *prioritiser) object(u *url.URL) int {
	if p.pg == nil {
		return -1
	}
	_, objPath, ok := page.SplitPath(u.Path)
	if !ok {
		return -1
	}
	if objPath == "/" {
		return 0
	}
	if i, ok := p.index[objPath]; ok {
		return i
	}
	return -1
}

// of returns the priority of a request for u (kind: the object type where the reference was found,
// "" if unknown) and whether the policy signals one at all.
func (p *prioritiser) of(u *url.URL, kind page.Type) (priority.Priority, bool) {
	switch p.policy {
	case PriorityChrome:
		t := kind
		if i := p.object(u); i >= 0 {
			t = p.pg.Objects[i].Type
		}
		if t == "" {
			t = typeFromPath(u.Path)
		}
		switch t {
		case page.TypeHTML:
			return priority.Priority{Urgency: chromeHTML}, true
		case page.TypeCSS, page.TypeJS:
			return priority.Priority{Urgency: chromeCSSJS}, true
		}
		return priority.Priority{Urgency: chromeOthers}, true
	case PriorityDependency:
		if i := p.object(u); i >= 0 {
			return priority.Priority{Urgency: p.levels[i]}, true
		}
		return priority.Priority{Urgency: priority.MaxUrgency}, true // not in the page: last
	}
	return priority.Default, false
}

// spdyPriority is the SYN_STREAM priority of a request.
func spdyPriority(prio priority.Priority, signal bool) uint8 {
	if !signal {
		return spdyDefaultPriority
	}
	return prio.Urgency
}

// typeFromPath guesses an object's type from its URL path (objects mode without a page, CSS
// references): by extension; a path ending in "/" is a document.
func typeFromPath(p string) page.Type {
	if p == "" || strings.HasSuffix(p, "/") {
		return page.TypeHTML
	}
	switch strings.ToLower(path.Ext(p)) {
	case ".html", ".htm", ".xhtml":
		return page.TypeHTML
	case ".css":
		return page.TypeCSS
	case ".js", ".mjs":
		return page.TypeJS
	case ".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif", ".svg", ".ico", ".bmp":
		return page.TypeImage
	case ".woff", ".woff2", ".ttf", ".otf", ".eot":
		return page.TypeFont
	}
	return page.TypeOther
}
