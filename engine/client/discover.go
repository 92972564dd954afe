package client

import (
	"bytes"
	"net/url"
	"strings"
	"sync"

	"github.com/wirelab/wirelab/engine/internal/refscan"
	"github.com/wirelab/wirelab/engine/page"
)

// ref is a sub-resource reference found in a document or stylesheet.
type ref struct {
	url   *url.URL
	key   string    // url.String(), once per discovery (a Tab's cached documents: once per document)
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
			out = append(out, ref{url: u, key: u.String(), frame: r.Kind == refscan.HTML, kind: page.Type(r.Kind)})
		}
	}
	return out
}

// discoverCSS lists the url() and @import references of a stylesheet, resolved against its URL.
func discoverCSS(body []byte, base *url.URL) []ref {
	var out []ref
	for _, r := range refscan.CSSRefs(body) {
		if u := resolveRef(r.URL, base); u != nil {
			out = append(out, ref{url: u, key: u.String()})
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

// discoveryCache remembers the references found in documents (HTML, CSS) by URL and exact
// content, for a Loader's Tabs: a load generator's VUs receive the same root document thousands
// of times, and parsing it again would find the same references (a document whose bytes differ is
// parsed). Loader.Load does not use it. Safe for concurrent use; the references it returns are
// shared and never modified.
type discoveryCache struct {
	mu      sync.Mutex
	entries map[string]discovered // by URL
}

type discovered struct {
	contentType string
	body        []byte
	refs        []ref
}

// maxCachedDocuments bounds the cache: a page has a few documents (root, stylesheets, frames).
const maxCachedDocuments = 256

func newDiscoveryCache() *discoveryCache { return &discoveryCache{entries: map[string]discovered{}} }

// discover returns the references of r's body (HTML or CSS), parsing it unless the same URL
// delivered the same bytes before. A nil cache always parses.
func (c *discoveryCache) discover(r *request) []ref {
	mt := mediaType(r.contentType)
	if mt != "text/html" && mt != "text/css" {
		return nil
	}
	var key string
	if c != nil {
		key = r.url.String()
		c.mu.Lock()
		e, ok := c.entries[key]
		c.mu.Unlock()
		if ok && e.contentType == mt && bytes.Equal(e.body, r.body) {
			return e.refs
		}
	}
	var refs []ref
	if mt == "text/html" {
		refs = discoverHTML(r.body, r.url)
	} else {
		refs = discoverCSS(r.body, r.url)
	}
	if c != nil {
		c.mu.Lock()
		if len(c.entries) < maxCachedDocuments {
			c.entries[key] = discovered{contentType: mt, body: bytes.Clone(r.body), refs: refs}
		}
		c.mu.Unlock()
	}
	return refs
}
