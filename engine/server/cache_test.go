package server

import (
	"net/http"
	"testing"

	"github.com/wirelab/wirelab/engine/page"
)

// Every object carries its cache policy (the default by type, or the page's own cache_control)
// and a validator; a conditional request with the validator is answered 304 without a body, over
// every protocol; an answer that is no object is no-store.
func TestCacheHeadersAndValidators(t *testing.T) {
	pg, _ := page.Corpus("twitter", 1)
	pg.Objects[1].CacheControl = "no-cache, private"
	if err := pg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := startTest(t, pg, nil)
	for _, proto := range AllProtocols {
		c := newClient(t, s, proto, nil)
		urls, _ := s.URLs(proto, "t1")
		for i, u := range urls[:3] {
			o := pg.Objects[i]
			want := page.CacheControlFor(o.Type)
			if i == 1 {
				want = "no-cache, private"
			}
			r := fetch(c, u)
			etag := r.header.Get("ETag")
			if r.status != 200 || r.header.Get("Cache-Control") != want || etag == "" {
				t.Fatalf("%s %s: status %d, Cache-Control %q (want %q), ETag %q", proto, u, r.status, r.header.Get("Cache-Control"), want, etag)
			}
			req, _ := http.NewRequest(http.MethodGet, u, nil)
			req.Header.Set("If-None-Match", etag)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotModified || resp.Header.Get("ETag") != etag || resp.Header.Get("Cache-Control") != want {
				t.Errorf("%s %s revalidated: status %d, headers %v", proto, u, resp.StatusCode, resp.Header)
			}
			req.Header.Set("If-None-Match", `"other"`)
			if r2, err := c.Do(req); err != nil || r2.StatusCode != 200 {
				t.Errorf("%s %s with another validator: %v %v", proto, u, r2, err)
			} else {
				r2.Body.Close()
			}
		}
		if other, _ := s.URLs(proto, "t2"); len(other) > 0 {
			if a, b := fetch(c, urls[0]).header.Get("ETag"), fetch(c, other[0]).header.Get("ETag"); a == b {
				t.Errorf("%s: two loads' documents share the validator %s", proto, a)
			}
		}
		if r := fetch(c, urls[0]+"nope.css"); r.status != 404 || r.header.Get("Cache-Control") != page.CacheNone {
			t.Errorf("%s 404: status %d, Cache-Control %q", proto, r.status, r.header.Get("Cache-Control"))
		}
	}
}
