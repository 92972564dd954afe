package client

import (
	"context"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/page/cachetest"
	"github.com/wirelab/wirelab/engine/server"
)

// A repeat view with a shared Profile against the built-in server, over every protocol: each
// object of the cache test page (page/cachetest: the default policy with per-object
// overrides) is answered as its Cache-Control says: max-age objects from the cache without a request, no-cache and max-age=0 ones by a
// 304 to a conditional request, no-store ones fetched whole. The planner still finds every object
// (the document's and the stylesheets' bodies come from the cache), and the body bytes received
// are exactly the no-store objects'. Its connection resumes (h3: with 0-RTT).
func TestRepeatViewUsesTheCache(t *testing.T) {
	cp, err := cachetest.Load()
	if err != nil {
		t.Fatal(err)
	}
	pg, want, noStoreBytes := cp.Page, cp.Want, cp.NoStoreBytes
	srv, resolver := startBuiltin(t, pg, func(c *server.Config) { c.SessionResumption = true })
	for _, proto := range Protocols {
		t.Run(string(proto), func(t *testing.T) {
			if proto == H3 {
				skipZeroRTTUnderRace(t)
			}
			root, err := srv.RootURL(server.Protocol(proto), page.NewToken())
			if err != nil {
				t.Fatal(err)
			}
			prof := NewProfile()
			var views [2]*Result
			for i := range views {
				ld, err := New(Config{Protocol: proto, Profile: prof, Resolver: resolver, RootCAs: srv.Certs().CAPool(), Timeout: 60 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				if views[i], err = ld.Load(context.Background(), root, nil); err != nil || views[i].Err != nil {
					t.Fatal(err, views[i].Err)
				}
			}
			first, repeat := views[0], views[1]
			if first.CacheHits+first.CacheRevalidated != 0 || first.BodyBytes != pg.TotalBytes() {
				t.Errorf("first view: %d hits, %d revalidated, %d bytes of %d", first.CacheHits, first.CacheRevalidated, first.BodyBytes, pg.TotalBytes())
			}
			if repeat.Objects != len(pg.Objects) || len(repeat.Entries) != len(pg.Objects) {
				t.Fatalf("repeat view: %d objects, %d entries; the page has %d", repeat.Objects, len(repeat.Entries), len(pg.Objects))
			}
			if repeat.BodyBytes != noStoreBytes {
				t.Errorf("repeat view: %d body bytes, want the no-store objects' %d", repeat.BodyBytes, noStoreBytes)
			}
			hits, revalidated := 0, 0
			for _, e := range repeat.Entries {
				_, path, _ := page.SplitPath(mustURL(e.URL).Path)
				if path == "/" {
					path = pg.Objects[0].Path
				}
				w, ok := want[path]
				switch {
				case !ok:
					t.Errorf("%s: not a page object", e.URL)
				case e.Cache != w:
					t.Errorf("%s (%s): cache %q, want %q", path, pg.Objects[0].Path, e.Cache, w)
				case w == cacheHit && (e.Connection != 0 || e.BodyBytes != 0 || e.Status != http.StatusOK):
					t.Errorf("%s: a hit with connection %d, %d bytes, status %d", path, e.Connection, e.BodyBytes, e.Status)
				case w == cacheRevalidated && (e.Status != http.StatusNotModified || e.BodyBytes != 0):
					t.Errorf("%s: revalidated with status %d, %d bytes", path, e.Status, e.BodyBytes)
				case w == "" && e.Status != http.StatusOK:
					t.Errorf("%s: status %d", path, e.Status)
				}
				switch e.Cache {
				case cacheHit:
					hits++
				case cacheRevalidated:
					revalidated++
				}
			}
			// The HAR shows the cache: the stored entry before each request (its validator), and a
			// revalidation's conditional request field.
			for i, he := range repeat.HAR("test").Entries {
				e := repeat.Entries[i]
				b := he.Cache.BeforeRequest
				inm := ""
				for _, h := range he.Request.Headers {
					if h.Name == "If-None-Match" {
						inm = h.Value
					}
				}
				switch {
				case e.Cache == "" && (b != nil || inm != ""):
					t.Errorf("%s: fetched whole, HAR cache %+v, If-None-Match %q", e.URL, b, inm)
				case e.Cache != "" && (b == nil || b.ETag == "" || he.Cache.Comment != e.Cache):
					t.Errorf("%s: %s, HAR cache %+v %q", e.URL, e.Cache, b, he.Cache.Comment)
				case e.Cache == cacheRevalidated && inm != b.ETag:
					t.Errorf("%s: revalidated with If-None-Match %q, stored ETag %q", e.URL, inm, b.ETag)
				case e.Cache == cacheHit && inm != "":
					t.Errorf("%s: a hit lists If-None-Match %q", e.URL, inm)
				}
			}
			if hits != repeat.CacheHits || revalidated != repeat.CacheRevalidated {
				t.Errorf("counts %d hits %d revalidated, entries say %d and %d", repeat.CacheHits, repeat.CacheRevalidated, hits, revalidated)
			}
			// The repeat view's connections resume, h3's with 0-RTT — noted even when the
			// answers beat the handshake (a few small requests).
			if proto != H1 && proto != H2C && (repeat.Connections < 1 || repeat.TLSResumed != repeat.Connections || repeat.TLSHandshakes != 0) {
				t.Errorf("repeat view: %d connections, %d resumed, %d full handshakes; want every one resumed", repeat.Connections, repeat.TLSResumed, repeat.TLSHandshakes)
			}
			if proto == H3 && repeat.ZeroRTT != repeat.Connections {
				t.Errorf("h3 repeat view: %d 0-RTT connections of %d", repeat.ZeroRTT, repeat.Connections)
			}
			if s := repeat.Summary(); s.CacheHits != hits || s.Protocols[proto.wireName()] != len(pg.Objects)-hits {
				t.Errorf("summary: %d hits, protocols %v; want %d hits and %d requests over %s", s.CacheHits, s.Protocols, hits, len(pg.Objects)-hits, proto.wireName())
			}
		})
	}
}

// Freshness as RFC 9111 §4.2 computes it from the fields the cache reads.
func TestCacheFreshness(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	date := t0.Format(http.TimeFormat)
	for _, c := range []struct {
		f     cacheFields
		after time.Duration
		fresh bool
	}{
		{cacheFields{cacheControl: "max-age=60"}, 59 * time.Second, true},
		{cacheFields{cacheControl: "max-age=60"}, 60 * time.Second, false},
		{cacheFields{cacheControl: "public, max-age=60", age: "30"}, 31 * time.Second, false},
		{cacheFields{cacheControl: "max-age=60, no-cache"}, 0, false},
		{cacheFields{cacheControl: `max-age="60"`}, time.Second, true},
		{cacheFields{cacheControl: "max-age=-1"}, 0, false},
		{cacheFields{cacheControl: "max-age=60, max-age=0"}, time.Second, true}, // the first counts
		{cacheFields{expires: t0.Add(time.Hour).Format(http.TimeFormat), date: date}, 59 * time.Minute, true},
		{cacheFields{expires: t0.Add(time.Hour).Format(http.TimeFormat), date: date}, time.Hour, false},
		{cacheFields{cacheControl: "max-age=0", expires: t0.Add(time.Hour).Format(http.TimeFormat), date: date}, 0, false},
		{cacheFields{expires: "0", date: date}, 0, false},
		{cacheFields{lastModified: date}, 0, false}, // no heuristic freshness
		{cacheFields{}, 0, false},
	} {
		e := &cacheEntry{status: http.StatusOK, fields: c.f, stored: t0}
		if got := e.fresh(t0.Add(c.after)); got != c.fresh {
			t.Errorf("%+v after %v: fresh %v, want %v", c.f, c.after, got, c.fresh)
		}
	}
	for _, c := range []struct {
		f      cacheFields
		status int
		want   bool
	}{
		{cacheFields{cacheControl: "no-store"}, 200, false},
		{cacheFields{cacheControl: "max-age=60, No-Store"}, 200, false},
		{cacheFields{cacheControl: "no-cache"}, 200, true},
		{cacheFields{cacheControl: "max-age=60", vary: "*"}, 200, false},
		{cacheFields{cacheControl: "max-age=60", vary: "accept-encoding"}, 200, true},
		{cacheFields{cacheControl: "max-age=60"}, 404, false},
	} {
		if got := c.f.storable(c.status); got != c.want {
			t.Errorf("%+v status %d: storable %v, want %v", c.f, c.status, got, c.want)
		}
	}
}

// The cache reads a response's fields by one rule whatever carried them: HTTP/2's header fields
// one by one (set) and a net/http header (fromHeader, h1/h3/spdy3) give the same fields —
// Cache-Control and Vary lines joined, a repeated singleton's first line kept — and Cache-Control
// is parsed once, its directives kept with the stored fields.
func TestCacheFieldsOneRule(t *testing.T) {
	lines := [][2]string{
		{"cache-control", "max-age=60"}, {"etag", `"a"`}, {"vary", "accept-encoding"},
		{"cache-control", "no-cache"}, {"etag", `"b"`}, {"vary", "user-agent"}, {"age", "5"}, {"age", "9"},
		{"date", "Sun, 29 Nov 2026 07:00:00 GMT"}, {"x-other", "1"},
	}
	var byField cacheFields
	h := http.Header{}
	for _, l := range lines {
		byField.set(l[0], l[1])
		h.Add(l[0], l[1])
	}
	h["last-modified"] = []string{"Sat, 28 Nov 2026 07:00:00 GMT"} // a key set directly, not canonical
	byField.set("last-modified", "Sat, 28 Nov 2026 07:00:00 GMT")
	var byHeader cacheFields
	byHeader.fromHeader(h)
	want := cacheFields{cacheControl: "max-age=60, no-cache", etag: `"a"`, vary: "accept-encoding, user-agent", age: "5",
		date: "Sun, 29 Nov 2026 07:00:00 GMT", lastModified: "Sat, 28 Nov 2026 07:00:00 GMT"}
	for name, got := range map[string]cacheFields{"set": byField, "fromHeader": byHeader} {
		if got.cc = nil; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	if d := byField.directives(); d["max-age"] != "60" || len(d) != 2 {
		t.Errorf("directives %v", d)
	}
	// fromHeader lowers no name: reading a header whose singletons are set allocates nothing (the
	// list fields' joins allocate; none here).
	single := http.Header{"Etag": {`"a"`}, "Date": {"Sun, 29 Nov 2026 07:00:00 GMT"}, "Content-Type": {"text/html"}, "Server": {"x"}}
	if n := testing.AllocsPerRun(100, func() { byHeader.fromHeader(single) }); n != 0 {
		t.Errorf("fromHeader: %v allocations per call, want 0", n)
	}
	byField.cacheControl = "no-store" // not read again: parsed once
	if _, noStore := byField.directives()["no-store"]; noStore {
		t.Error("Cache-Control parsed again")
	}
}

// skipZeroRTTUnderRace skips a test whose h3 repeat view sends 0-RTT when the race detector is on:
// quic-go opens a 0-RTT stream reading the peer's flow-control limits while its handshake installs
// the server's transport parameters from EncryptedExtensions, unsynchronised — a race in quic-go
// itself (quic-go/quic-go#4303, open), reported in 1 of 30 -race runs of TestRepeatViewUsesTheCache/h3
// at load 9. The go phase runs these tests without the detector, assertions unchanged.
func skipZeroRTTUnderRace(t *testing.T) {
	t.Helper()
	if raceDetector {
		t.Skip("0-RTT under -race: quic-go's own data race on the peer's transport parameters (quic-go/quic-go#4303)")
	}
}
