package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/har"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/page/pagetest"
	"github.com/wirelab/wirelab/engine/server"
	"github.com/wirelab/wirelab/engine/spdy"
)

// pushLoad loads pg from a built-in server pushing with policy, over proto, with the client
// accepting pushes (or not) and prioritising with prio.
func pushLoad(t *testing.T, pg *page.Page, policy string, proto Protocol, accept bool, prio PriorityPolicy) (*Result, *server.Server) {
	t.Helper()
	p, err := server.ParsePushPolicy(policy)
	if err != nil {
		t.Fatal(err)
	}
	srv, resolver := startBuiltin(t, pg, func(c *server.Config) { c.Push = p })
	root, err := srv.RootURL(server.Protocol(proto), page.NewToken())
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(Config{Protocol: proto, Resolver: resolver, RootCAs: srv.Certs().CAPool(), Timeout: 60 * time.Second,
		AcceptPush: accept, Priority: prio, Page: pg})
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.Load(context.Background(), root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Err != nil {
		t.Fatalf("%s %s: %v", policy, proto, res.Err)
	}
	if res.Objects != len(pg.Objects) || res.BodyBytes != pg.TotalBytes() {
		t.Fatalf("%s %s: %d objects, %d bytes; the page has %d and %d", policy, proto, res.Objects, res.BodyBytes, len(pg.Objects), pg.TotalBytes())
	}
	return res, srv
}

// pushedSet is what the policy pushes: object paths and their total size.
func pushedSet(t *testing.T, pg *page.Page, policy string) (map[string]bool, int64) {
	p, _ := server.ParsePushPolicy(policy)
	paths := map[string]bool{}
	var bytes int64
	for _, i := range p.Objects(pg) {
		paths[pg.Objects[i].Path] = true
		bytes += pg.Objects[i].Size
	}
	return paths, bytes
}

// TestPushAll (the check): with push "all" the client issues no request for a pushed
// object (the server served only the root as a request), uses every push, and the pushed bytes
// equal the pushed objects' sizes; the HAR marks those entries _was_pushed. Over h2, h2c and
// spdy3, on a page of 133 objects (more pushes than SPDY's default 100 streams).
func TestPushAll(t *testing.T) {
	for _, name := range []string{"twitter", "imgur"} {
		pg, err := page.Load(name, 1)
		if err != nil {
			t.Fatal(err)
		}
		paths, size := pushedSet(t, pg, "all")
		for _, proto := range []Protocol{H2, H2C, SPDY3} {
			res, srv := pushLoad(t, pg, "all", proto, true, PriorityNone)
			recs, _ := srv.Records()
			requested := 0
			for _, r := range recs {
				if !r.Pushed {
					requested++
				}
			}
			if requested != 1 {
				t.Errorf("%s %s: the server answered %d requests; only the root should have been requested", name, proto, requested)
			}
			if res.Pushes.Bytes != size || res.Pushes.Used != len(paths) || res.Pushes.Unused != 0 {
				t.Errorf("%s %s: pushes %+v; want %d bytes, %d used, 0 unused", name, proto, res.Pushes, size, len(paths))
			}
			var pushedEntries int
			for _, e := range res.Entries {
				if e.Pushed {
					pushedEntries++
					if e.StreamID%2 != 0 || e.Timings.Send != 0 {
						t.Errorf("%s %s: pushed entry %+v", name, proto, e)
					}
				}
			}
			if pushedEntries != len(paths) {
				t.Errorf("%s %s: %d entries pushed, want %d", name, proto, pushedEntries, len(paths))
			}
			var buf bytes.Buffer
			if err := har.Write(&buf, res.HAR("test")); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Log struct {
					Entries []map[string]any `json:"entries"`
				} `json:"log"`
			}
			if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			marked := 0
			for _, e := range doc.Log.Entries {
				if e["_was_pushed"] == float64(1) {
					marked++
				}
			}
			if marked != len(paths) {
				t.Errorf("%s %s: %d HAR entries with _was_pushed: 1, want %d", name, proto, marked, len(paths))
			}
			if s := res.Summary(); s.PushedBytes != size || s.PushesUsed != len(paths) || s.PushesUnused != 0 {
				t.Errorf("%s %s: summary %+v", name, proto, s)
			}
		}
	}
}

// TestPushDependencyLevelPushesLess (the check): on a page whose graph puts objects below
// depth 1 (twitter with its structural graph), dependency-level:1 pushes fewer bytes than
// embedding-level; each pushes exactly its policy's objects, and the objects not pushed are
// requested.
func TestPushDependencyLevelPushesLess(t *testing.T) {
	pg := pagetest.Structural(t)
	pushed := map[string]int64{}
	for _, policy := range []string{"embedding-level", "dependency-level:1"} {
		paths, size := pushedSet(t, pg, policy)
		for _, proto := range []Protocol{H2, SPDY3} {
			res, srv := pushLoad(t, pg, policy, proto, true, PriorityNone)
			if res.Pushes.Bytes != size || res.Pushes.Used != len(paths) {
				t.Errorf("%s %s: pushes %+v, want %d bytes in %d pushes", policy, proto, res.Pushes, size, len(paths))
			}
			recs, _ := srv.Records()
			for _, r := range recs {
				_, objPath, _ := page.SplitPath(r.Path)
				if r.Pushed != paths[objPath] && objPath != "/" {
					t.Errorf("%s %s: %s pushed=%v, policy says %v", policy, proto, objPath, r.Pushed, paths[objPath])
				}
			}
			pushed[policy] = res.Pushes.Bytes
		}
	}
	if pushed["dependency-level:1"] >= pushed["embedding-level"] {
		t.Errorf("dependency-level:1 pushed %d bytes, embedding-level %d", pushed["dependency-level:1"], pushed["embedding-level"])
	}
	t.Logf("pushed bytes: embedding-level %d, dependency-level:1 %d (page %d)", pushed["embedding-level"], pushed["dependency-level:1"], pg.TotalBytes())
}

// TestPushNotAccepted: a client that does not accept pushes gets none (h2: SETTINGS_ENABLE_PUSH 0,
// so the server promises nothing; spdy3: it resets the pushed streams) and requests everything.
func TestPushNotAccepted(t *testing.T) {
	pg, _ := page.Load("twitter", 1)
	for _, proto := range []Protocol{H2, SPDY3} {
		res, srv := pushLoad(t, pg, "all", proto, false, PriorityNone)
		if res.Pushes != (PushStats{}) {
			t.Errorf("%s: pushes %+v", proto, res.Pushes)
		}
		recs, _ := srv.Records()
		requested := 0
		for _, r := range recs {
			if !r.Pushed {
				requested++
			}
		}
		if requested != len(pg.Objects) {
			t.Errorf("%s: %d objects requested, want all %d", proto, requested, len(pg.Objects))
		}
	}
}

// TestPushAlreadyRequested: in objects mode every object is requested at once, before the root's
// pushes arrive: each push of an object already requested is refused and counted unused, and no
// object is loaded twice.
func TestPushAlreadyRequested(t *testing.T) {
	pg, _ := page.Load("synthetic:8x20kB", 1)
	p, _ := server.ParsePushPolicy("all")
	srv, resolver := startBuiltin(t, pg, func(c *server.Config) { c.Push = p })
	token := page.NewToken()
	urls, _ := srv.URLs(server.H2, token)
	l, _ := New(Config{Protocol: H2, Mode: ModeObjects, Resolver: resolver, RootCAs: srv.Certs().CAPool(), AcceptPush: true})
	res, err := l.Load(context.Background(), urls[0], urls)
	if err != nil || res.Err != nil {
		t.Fatal(err, res.Err)
	}
	if res.Objects != len(pg.Objects) || res.BodyBytes != pg.TotalBytes() {
		t.Errorf("%d objects, %d bytes", res.Objects, res.BodyBytes)
	}
	if res.Pushes.Used+res.Pushes.Unused != len(pg.Objects)-1 {
		t.Errorf("pushes %+v: used and unused should add up to the %d promised", res.Pushes, len(pg.Objects)-1)
	}
	seen := map[string]bool{}
	for _, e := range res.Entries {
		if seen[e.URL] {
			t.Errorf("%s loaded twice", e.URL)
		}
		seen[e.URL] = true
	}
}

// TestPriorityPolicies: what each policy signals reaches the built-in server as the request's
// priority (h2, h3: the priority header; spdy3: the SYN_STREAM priority): chrome puts HTML at
// u=0, CSS/JS at u=1, the rest at u=2; dependency maps twitter's depths 0/1/2 (structural graph)
// onto u=0/4/7; none signals nothing. With push, h2 sends one PRIORITY_UPDATE per pushed stream.
func TestPriorityPolicies(t *testing.T) {
	pg := pagetest.Structural(t)
	depths := pg.Depths()
	want := func(policy PriorityPolicy, i int) string {
		switch policy {
		case PriorityChrome:
			switch pg.Objects[i].Type {
			case page.TypeHTML:
				return "u=0"
			case page.TypeCSS, page.TypeJS:
				return "u=1"
			}
			return "u=2"
		case PriorityDependency:
			return []string{"u=0", "u=4", "u=7"}[depths[i]]
		}
		return ""
	}
	index := pg.ObjectIndex()
	for _, policy := range PriorityPolicies {
		for _, proto := range []Protocol{H2, H2C, H3, SPDY3} {
			res, srv := pushLoad(t, pg, "none", proto, false, policy)
			recs, _ := srv.Records()
			for _, r := range recs {
				_, objPath, _ := page.SplitPath(r.Path)
				i := 0
				if objPath != "/" {
					i = index[objPath]
				}
				w := want(policy, i)
				if proto == SPDY3 && policy == PriorityNone {
					w = "u=3" // SPDY has no "no priority": every stream gets 3
				}
				if r.Priority != w {
					t.Errorf("%s %s: %s arrived with priority %q, want %q", policy, proto, objPath, r.Priority, w)
				}
			}
			for _, e := range res.Entries {
				if (e.Priority != "") != (policy != PriorityNone) {
					t.Errorf("%s %s: entry %s priority %q", policy, proto, e.URL, e.Priority)
				}
			}
		}
	}
	// With push, one PRIORITY_UPDATE per pushed stream (that the server applies them is
	// server.TestPushPriorityUpdate's check).
	res, _ := pushLoad(t, pg, "all", H2, true, PriorityChrome)
	updates := 0
	for _, c := range res.Conns {
		updates += c.PriorityUpdates
	}
	if updates != res.Pushes.Used || updates != len(pg.Objects)-1 {
		t.Errorf("%d PRIORITY_UPDATEs for %d pushes", updates, res.Pushes.Used)
	}
}

// TestPriorityDependencyNeedsPage: the dependency policy without a page is refused at New.
func TestPriorityDependencyNeedsPage(t *testing.T) {
	if _, err := New(Config{Protocol: H2, Priority: PriorityDependency}); err == nil {
		t.Error("dependency without a page accepted")
	}
	if _, err := New(Config{Protocol: H2, Priority: "urgent"}); err == nil {
		t.Error("unknown policy accepted")
	}
}

// TestPushFailedFallsBack: a push the server resets (its handler aborts) is given back: the
// request for that URL is sent as if nothing had been pushed and the load completes; the failed push
// counts as unused, the other one as used (spdy3, a test server that pushes both images).
func TestPushFailedFallsBack(t *testing.T) {
	bodies := map[string][]byte{
		"/":      []byte(`<!doctype html><img src="/a.png"><img src="/b.png">`),
		"/a.png": bytes.Repeat([]byte{1}, 3000),
		"/b.png": bytes.Repeat([]byte{2}, 5000),
	}
	var mu sync.Mutex
	requested := map[string]int{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pushed := w.(interface{ StreamID() uint32 }).StreamID()%2 == 0
		if !pushed {
			mu.Lock()
			requested[r.URL.Path]++
			mu.Unlock()
		}
		if r.URL.Path == "/" {
			for _, p := range []string{"/a.png", "/b.png"} {
				if err := w.(http.Pusher).Push(p, nil); err != nil {
					t.Errorf("push %s: %v", p, err)
				}
			}
			w.Header().Set("Content-Type", "text/html")
		}
		if pushed && r.URL.Path == "/b.png" {
			panic(http.ErrAbortHandler) // RST_STREAM INTERNAL_ERROR on the pushed stream
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(bodies[r.URL.Path])))
		w.Write(bodies[r.URL.Path])
	})
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &spdy.Server{Handler: handler, TLSConfig: &tls.Config{Certificates: []tls.Certificate{testPKI().cert}}, ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close(); ln.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	l, err := New(Config{Protocol: SPDY3, Resolver: StaticResolver{"s1.wirelab.test": mustAddr("127.0.0.1")}, RootCAs: testPKI().pool,
		Timeout: 20 * time.Second, AcceptPush: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.Load(context.Background(), "https://s1.wirelab.test:"+strconv.Itoa(port)+"/", nil)
	if err != nil || res.Err != nil {
		t.Fatal(err, res.Err)
	}
	if res.Objects != 3 || res.BodyBytes != int64(len(bodies["/"])+3000+5000) {
		t.Errorf("%d objects, %d bytes", res.Objects, res.BodyBytes)
	}
	mu.Lock()
	defer mu.Unlock()
	if requested["/b.png"] != 1 || requested["/a.png"] != 0 {
		t.Errorf("requests the server got: %v; want b.png (its push failed) and not a.png", requested)
	}
	if res.Pushes.Used != 1 || res.Pushes.Unused != 1 {
		t.Errorf("pushes %+v, want 1 used and 1 unused", res.Pushes)
	}
}
