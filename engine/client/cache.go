package client

import (
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wirelab/wirelab/engine/har"
)

// httpCache is the loader's HTTP cache: a private cache (RFC 9111) kept in a Profile, so that a
// repeat view finds what the first view stored (docs/vitals.md, "Views"). It models what the
// lab's servers send and a browser's cache does with it:
//
//   - storing (§3): a complete 200 response to a GET, unless its Cache-Control has no-store or
//     its Vary is "*"; public, private and s-maxage make no difference to a private cache;
//   - freshness (§4.2): max-age, else Expires − Date; the current age is the Age field plus the
//     time the response has been stored. A response without either is stale (no heuristic
//     freshness, §4.2.2: Chromium would give it 10 % of its Last-Modified age);
//   - no-cache (without field names) and a stale response are revalidated (§4.3.1): the request
//     carries If-None-Match (its ETag) and If-Modified-Since (its Last-Modified); a 304 updates
//     the stored response's fields and its body is used; without a validator the request is sent
//     as it would be without a cache;
//   - a fresh response is used without a request (§4.2), at no network cost.
//
// Not modelled: Vary beyond "*" (the loader's request fields never change between loads, so any
// other Vary selects the same response), heuristic freshness, stale-while-revalidate and
// stale-if-error, must-revalidate's stale case (no stale response is ever used), invalidation by
// unsafe methods (the loader only GETs), the cache's size limit, and pushed responses (not
// stored). The body is kept only when the request kept it for discovery (HTML and CSS): the
// cache's answer to a later request carries the same bytes for the planner.
type httpCache struct {
	mu      sync.Mutex
	entries map[string]*cacheEntry
}

func newHTTPCache() *httpCache { return &httpCache{entries: map[string]*cacheEntry{}} }

// cacheEntry is a stored response.
type cacheEntry struct {
	status      int
	contentType string
	size        int64  // body bytes
	body        []byte // the body, when the storing request kept it (HTML, CSS)
	kept        bool
	proto       Protocol // what carried it
	fields      cacheFields
	stored      time.Time // response_time (§4.2.3)
	hits        int       // times used (a hit or a 304) since stored
}

// cacheFields are the response fields the cache reads, as received.
type cacheFields struct {
	cacheControl, etag, lastModified, expires, date, age, vary string
	// cc is cacheControl's directives, parsed once (directives), nil until asked for.
	cc map[string]string
}

// set records a response field (lower-case name) if the cache reads it — the one rule for every
// protocol's fields: the list fields Cache-Control and Vary join their lines (RFC 9110 §5.3),
// a singleton field keeps its first line (as net/http's Header.Get reads it).
func (f *cacheFields) set(name, value string) {
	var dst *string
	switch name {
	case "cache-control":
		f.cacheControl, f.cc = joinField(f.cacheControl, value), nil
		return
	case "vary":
		f.vary = joinField(f.vary, value)
		return
	case "etag":
		dst = &f.etag
	case "last-modified":
		dst = &f.lastModified
	case "expires":
		dst = &f.expires
	case "date":
		dst = &f.date
	case "age":
		dst = &f.age
	default:
		return
	}
	if *dst == "" {
		*dst = value
	}
}

func joinField(have, line string) string {
	if have == "" {
		return line
	}
	return have + ", " + line
}

// cacheFieldNames maps the canonical form (net/http's, textproto.CanonicalMIMEHeaderKey) of each
// field name set reads to the lower-case one it takes.
var cacheFieldNames = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{"cache-control", "vary", "etag", "last-modified", "expires", "date", "age"} {
		m[textproto.CanonicalMIMEHeaderKey(n)] = n
	}
	return m
}()

// fromHeader reads the fields from a net/http header (set for each line). Only the names set
// reads are looked at: no other line's name is lowered (an allocation per line on the h1 path).
func (f *cacheFields) fromHeader(h http.Header) {
	*f = cacheFields{}
	for name, lines := range h {
		lower, ok := cacheFieldNames[name]
		if !ok { // a key not in canonical form (set directly in the map)
			if lower, ok = cacheFieldNames[textproto.CanonicalMIMEHeaderKey(name)]; !ok {
				continue
			}
		}
		for _, v := range lines {
			f.set(lower, v)
		}
	}
}

// directives are the response's Cache-Control directives (parsed at the first call).
func (f *cacheFields) directives() map[string]string {
	if f.cc == nil {
		f.cc = directives(f.cacheControl)
	}
	return f.cc
}

// merge updates f with the fields a 304 carries (§4.3.4: the stored response's fields are
// replaced by those in the 304).
func (f *cacheFields) merge(n cacheFields) {
	if n.cacheControl != "" {
		f.cacheControl, f.cc = n.cacheControl, n.cc
	}
	for _, p := range []struct {
		dst *string
		src string
	}{
		{&f.etag, n.etag}, {&f.lastModified, n.lastModified},
		{&f.expires, n.expires}, {&f.date, n.date}, {&f.age, n.age}, {&f.vary, n.vary},
	} {
		if p.src != "" {
			*p.dst = p.src
		}
	}
}

// directives parses a Cache-Control value: lower-case directive names, their values unquoted.
func directives(v string) map[string]string {
	d := map[string]string{}
	for _, part := range strings.Split(v, ",") {
		name, val, _ := strings.Cut(strings.TrimSpace(part), "=")
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" {
			continue
		}
		if _, dup := d[name]; !dup { // the first occurrence counts (§4.2.1)
			d[name] = strings.Trim(strings.TrimSpace(val), `"`)
		}
	}
	return d
}

// storable reports whether a response with these fields may be stored (§3).
func (f *cacheFields) storable(status int) bool {
	if status != http.StatusOK || strings.TrimSpace(f.vary) == "*" {
		return false
	}
	_, noStore := f.directives()["no-store"]
	return !noStore
}

// lifetime is the freshness lifetime (§4.2.1): max-age, else Expires − Date; ok false when the
// response has neither (or they do not parse).
func (f *cacheFields) lifetime() (d time.Duration, ok bool) {
	if v, has := f.directives()["max-age"]; has {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, false // an invalid max-age makes the response stale (§4.2.1)
		}
		return time.Duration(min(n, 1<<31)) * time.Second, true
	}
	if f.expires == "" {
		return 0, false
	}
	exp, err := http.ParseTime(f.expires)
	if err != nil {
		return 0, true // an invalid Expires is in the past (§5.3)
	}
	date, err := http.ParseTime(f.date)
	if err != nil {
		return 0, false
	}
	return max(exp.Sub(date), 0), true
}

// fresh reports whether the entry may be used without a request at now (§4.2).
func (e *cacheEntry) fresh(now time.Time) bool {
	if _, noCache := e.fields.directives()["no-cache"]; noCache {
		return false
	}
	life, ok := e.fields.lifetime()
	if !ok {
		return false
	}
	age := now.Sub(e.stored)
	if n, err := strconv.ParseInt(strings.TrimSpace(e.fields.age), 10, 64); err == nil && n > 0 {
		age += time.Duration(n) * time.Second
	}
	return age < life
}

// lookup returns the stored response for url, whether it is fresh at now, and its state before
// this use (a fresh one is counted as used).
func (c *httpCache) lookup(url string, now time.Time) (e *cacheEntry, fresh bool, before *har.CacheState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e = c.entries[url]
	if e == nil {
		return nil, false, nil
	}
	before = e.state()
	if fresh = e.fresh(now); fresh {
		e.hits++
	}
	return e, fresh, before
}

// state is the entry as it is now (the HAR's cache.beforeRequest); c.mu held.
func (e *cacheEntry) state() *har.CacheState {
	return &har.CacheState{LastAccess: e.stored.UTC(), ETag: e.fields.etag, HitCount: e.hits}
}

// completed is the cache's part in a request's completion (the load loop calls it before the
// planner sees r): a 304 to a revalidation takes the stored response (its body for discovery)
// and refreshes it; a storable 200 is stored; anything else leaves the cache as it was.
func (c *httpCache) completed(r *request, proto Protocol, now time.Time) {
	if r.err != nil || r.cache == cacheHit || r.pushed {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key := r.url.String()
	if r.status == http.StatusNotModified && r.validate != nil {
		e := r.validate
		r.cacheBefore = e.state()
		e.hits++
		e.fields.merge(r.cacheResp)
		e.stored = now
		if !e.fields.storable(e.status) {
			delete(c.entries, key)
		}
		r.cache = cacheRevalidated
		r.contentType = e.contentType
		if r.parse && e.kept {
			r.body, r.keep = e.body, true
		}
		return
	}
	if !r.cacheResp.storable(r.status) {
		delete(c.entries, key) // a no-store answer replaces nothing it could be used for
		return
	}
	c.entries[key] = &cacheEntry{status: r.status, contentType: r.contentType, size: r.bodyBytes,
		body: r.body, kept: r.keep, proto: proto, fields: r.cacheResp, stored: now}
}

// Entry.Cache values: how the cache took part in a request.
const (
	cacheHit         = "hit"         // the fresh stored response was used; no request was sent
	cacheRevalidated = "revalidated" // a conditional request was answered 304; the stored body was used
)

// fromCache makes r the stored response e, used at now without a request.
func (r *request) fromCache(e *cacheEntry, before *har.CacheState, now time.Duration) {
	r.cache, r.cacheBefore = cacheHit, before
	r.status, r.contentType, r.contentLength = e.status, e.contentType, -1
	r.proto = e.proto
	if r.parse && e.kept {
		r.body, r.keep = e.body, true
	}
	r.end = now
}

// conditional is the revalidation's request fields (If-None-Match, If-Modified-Since), empty
// without a revalidation.
func (r *request) conditional() (ifNoneMatch, ifModifiedSince string) {
	if r.validate == nil {
		return "", ""
	}
	return r.validate.fields.etag, r.validate.fields.lastModified
}

// setConditional adds the revalidation's fields to a net/http request header (h3, spdy3).
func setConditional(h http.Header, r *request) {
	if inm, ims := r.conditional(); inm != "" || ims != "" {
		if inm != "" {
			h.Set("If-None-Match", inm)
		}
		if ims != "" {
			h.Set("If-Modified-Since", ims)
		}
	}
}
