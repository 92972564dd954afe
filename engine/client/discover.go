package client

import (
	"net/url"
	"strings"

	"github.com/wirelab/wirelab/engine/internal/refscan"
	"github.com/wirelab/wirelab/engine/page"
)

// ref is a sub-resource reference found in a document or stylesheet.
type ref struct {
	url   *url.URL
	frame bool      // an iframe/frame document: parsed in turn when it is HTML
	kind  page.Type // what the referencing element loads ("" when it does not say: CSS url())
}

// discoverHTML lists, in document order, the sub-resources a browser would fetch for an HTML
// document without running scripts (internal/refscan says which), resolved against base; the
// first base href changes the base. data:, javascript:, fragment-only and non-http(s) references
// are skipped; fragments are removed. Duplicates are left to the caller.
func discoverHTML(body []byte, base *url.URL) []ref {
	var out []ref
	baseSet := false
	for _, r := range refscan.HTMLRefs(body) {
		if r.Base {
			if u := resolveRef(r.URL, base); u != nil && !baseSet {
				base, baseSet = u, true
			}
			continue
		}
		if u := resolveRef(r.URL, base); u != nil {
			out = append(out, ref{url: u, frame: r.Kind == refscan.HTML, kind: page.Type(r.Kind)})
		}
	}
	return out
}

// discoverCSS lists the url() and @import references of a stylesheet, resolved against its URL.
func discoverCSS(body []byte, base *url.URL) []ref {
	var out []ref
	for _, r := range refscan.CSSRefs(body) {
		if u := resolveRef(r.URL, base); u != nil {
			out = append(out, ref{url: u})
		}
	}
	return out
}

// resolveRef resolves a reference against base; nil for what a page load does not fetch.
func resolveRef(raw string, base *url.URL) *url.URL {
	raw = strings.TrimSpace(raw)
	if raw == "" || raw[0] == '#' {
		return nil
	}
	u, err := base.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil
	}
	u.Fragment, u.RawFragment = "", ""
	return u
}
