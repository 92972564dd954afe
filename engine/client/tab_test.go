package client

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// serverConns is the number of transport connections the site's servers accepted, per origin.
func serverConns(s *site) []int64 {
	out := make([]int64, len(s.servers))
	for i, srv := range s.servers {
		out[i] = srv.stats.conns.Load()
	}
	return out
}

// newTab is a Tab of a loader configured for s, closed when the test ends.
func newTab(t *testing.T, s *site, opts TabOptions) *Tab {
	t.Helper()
	l, err := New(s.config())
	if err != nil {
		t.Fatal(err)
	}
	tab := l.NewTab(opts)
	t.Cleanup(tab.Close)
	return tab
}

func tabLoad(t *testing.T, tab *Tab, s *site) *Result {
	t.Helper()
	res, err := tab.Load(context.Background(), s.root(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestTabKeepsConnections: three loads on one Tab fetch the whole page each time over the
// connections of the first (h2, h2c, h3, spdy3: one per origin over all loads; HTTP/1.x at most
// six per origin over all loads), with the same discovery and timings as Loader.Load.
func TestTabKeepsConnections(t *testing.T) {
	for _, proto := range Protocols {
		t.Run(string(proto), func(t *testing.T) {
			t.Parallel()
			s := newSite(t, proto, 2, 30, serverOpts{})
			gauge := &ConnGauge{}
			tab := newTab(t, s, TabOptions{Conns: gauge})
			for i := range 3 {
				res := tabLoad(t, tab, s)
				checkComplete(t, res, s.page.want)
				checkTimings(t, res)
				if i > 0 && res.Connections != 0 {
					t.Errorf("load %d opened %d connections; the tab's were kept", i+1, res.Connections)
				}
				if i > 0 && (res.TLSHandshakes != 0 || res.DNSQueries != 0) {
					t.Errorf("load %d: %d TLS handshakes, %d DNS queries; want none", i+1, res.TLSHandshakes, res.DNSQueries)
				}
			}
			for i, n := range serverConns(s) {
				switch proto {
				case H1, H1S:
					if n < 1 || n > 6 {
						t.Errorf("origin %d accepted %d connections over 3 loads, want 1–6", i+1, n)
					}
				default:
					if n != 1 {
						t.Errorf("origin %d accepted %d connections over 3 loads, want 1", i+1, n)
					}
				}
			}
			var total int64
			for _, n := range serverConns(s) {
				total += n
			}
			if gauge.Opened() != total || gauge.Open() != total {
				t.Errorf("gauge: %d opened, %d open; the servers accepted %d", gauge.Opened(), gauge.Open(), total)
			}
			tab.Close()
			if gauge.Open() != 0 || gauge.ClosedByServer() != 0 {
				t.Errorf("gauge: %d connections open after Close, %d closed by the server; want none", gauge.Open(), gauge.ClosedByServer())
			}
		})
	}
}

// TestTabFresh: with Fresh every load opens its own connections, as Loader.Load does.
func TestTabFresh(t *testing.T) {
	for _, proto := range []Protocol{H1S, H2, H3} {
		t.Run(string(proto), func(t *testing.T) {
			t.Parallel()
			s := newSite(t, proto, 1, 10, serverOpts{})
			gauge := &ConnGauge{}
			tab := newTab(t, s, TabOptions{Fresh: true, Conns: gauge})
			opened := 0
			for range 3 {
				res := tabLoad(t, tab, s)
				checkComplete(t, res, s.page.want)
				if res.Connections < 1 || res.TLSHandshakes != res.Connections {
					t.Errorf("%d connections, %d TLS handshakes; want ≥ 1, one each", res.Connections, res.TLSHandshakes)
				}
				opened += res.Connections
				if gauge.Open() != 0 {
					t.Errorf("%d connections still open after a fresh load", gauge.Open())
				}
			}
			if n := serverConns(s)[0]; n != int64(opened) {
				t.Errorf("the server accepted %d connections, the loads opened %d", n, opened)
			}
		})
	}
}

// TestTabLean: a lean load has no entries but the same totals, and OnRequest sees every request.
func TestTabLean(t *testing.T) {
	for _, proto := range []Protocol{H1, H2, H3} {
		t.Run(string(proto), func(t *testing.T) {
			t.Parallel()
			s := newSite(t, proto, 2, 20, serverOpts{})
			var seen []RequestStats
			tab := newTab(t, s, TabOptions{Lean: true, OnRequest: func(st RequestStats) { seen = append(seen, st) }})
			want, wantBytes := len(s.page.want), int64(0)
			for _, n := range s.page.want {
				wantBytes += int64(n)
			}
			for i := range 2 {
				seen = seen[:0]
				res := tabLoad(t, tab, s)
				if res.Err != nil || res.Objects != want || res.BodyBytes != wantBytes {
					t.Fatalf("load %d: %v, %d objects %d bytes; want %d and %d", i+1, res.Err, res.Objects, res.BodyBytes, want, wantBytes)
				}
				if res.Entries != nil || res.Conns != nil {
					t.Errorf("lean load kept %d entries and %d connections", len(res.Entries), len(res.Conns))
				}
				if res.PLT <= 0 {
					t.Errorf("PLT %v", res.PLT)
				}
				if i == 0 && res.Connections < 2 || i == 1 && res.Connections != 0 {
					t.Errorf("load %d opened %d connections", i+1, res.Connections)
				}
				if len(seen) != want {
					t.Fatalf("OnRequest saw %d requests, the page has %d objects", len(seen), want)
				}
				var bytes int64
				for _, st := range seen {
					bytes += st.BodyBytes
					if st.Err != nil || st.Status != 200 || st.Aborted || st.Exchange < 0 || st.Exchange > st.Time || st.Time > res.PLT {
						t.Errorf("request stats %+v (PLT %v)", st, res.PLT)
					}
				}
				if bytes != wantBytes {
					t.Errorf("OnRequest saw %d body bytes, want %d", bytes, wantBytes)
				}
			}
		})
	}
}

// TestTabServerClosedIdle: when the server closes the tab's connections between loads (an idle
// timeout), the next load completes over new ones, without errors.
func TestTabServerClosedIdle(t *testing.T) {
	for _, proto := range Protocols {
		t.Run(string(proto), func(t *testing.T) {
			t.Parallel()
			s := newSite(t, proto, 1, 10, serverOpts{})
			gauge := &ConnGauge{}
			tab := newTab(t, s, TabOptions{Conns: gauge})
			checkComplete(t, tabLoad(t, tab, s), s.page.want)
			before := serverConns(s)[0]
			if gauge.ClosedByServer() != 0 {
				t.Errorf("%d connections closed by the server before it closed any", gauge.ClosedByServer())
			}
			s.servers[0].closeConns()
			// Wait until the closed connections are seen closed on the server side.
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				s.servers[0].stats.mu.Lock()
				open := s.servers[0].stats.openConns
				s.servers[0].stats.mu.Unlock()
				if open == 0 {
					break
				}
			}
			res := tabLoad(t, tab, s)
			checkComplete(t, res, s.page.want)
			after := serverConns(s)[0]
			if after <= before {
				t.Errorf("no new connection after the server closed the kept ones (%d accepted before, %d after)", before, after)
			}
			// HTTP/1.x: the server's FINs had come, so the pool saw its idle connections closed
			// before it used them — no request was sent on one and sent again, and the load opened
			// no more connections than it may hold.
			if proto == H1 || proto == H1S {
				if res.Retries != 0 || after-before > 6 {
					t.Errorf("second load: %d requests sent again, %d connections opened; want none, at most 6", res.Retries, after-before)
				}
			}
			// Every connection the server closed counts as closed by it — the ones the second load
			// found dead and any left idle until the tab closes — and the tab's own closes do not.
			tab.Close()
			if gauge.ClosedByServer() != before || gauge.Opened() != after {
				t.Errorf("gauge: %d closed by the server, %d opened; the server closed %d and accepted %d",
					gauge.ClosedByServer(), gauge.Opened(), before, after)
			}
		})
	}
}

// TestTabTimeoutStartsFresh: a load that times out closes the tab's connections; the next load
// opens new ones and completes.
func TestTabTimeoutStartsFresh(t *testing.T) {
	var stall atomic.Bool
	release := make(chan struct{})
	s := newSite(t, H2, 1, 5, serverOpts{before: func(r *http.Request) {
		if stall.Load() && r.URL.Path != "/" {
			<-release
		}
	}})
	defer close(release)
	cfg := s.config()
	cfg.Timeout = 300 * time.Millisecond
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var aborted, failed int
	tab := l.NewTab(TabOptions{Lean: true, OnRequest: func(st RequestStats) {
		if st.Err != nil {
			failed++
			if st.Aborted {
				aborted++
			}
		}
	}})
	defer tab.Close()
	stall.Store(true)
	res := tabLoad(t, tab, s)
	if res.Err == nil || res.Objects != 1 {
		t.Fatalf("stalled load: err %v, %d objects; want a timeout after the root", res.Err, res.Objects)
	}
	if aborted != failed || aborted == 0 {
		t.Errorf("%d requests failed, %d of them marked aborted; want all", failed, aborted)
	}
	stall.Store(false)
	res = tabLoad(t, tab, s)
	if res.Err != nil || res.Connections != 1 {
		t.Errorf("load after the timeout: %v, %d connections opened; want a complete load on a new connection", res.Err, res.Connections)
	}
}

// TestLoopbackOnly: under Config.LoopbackOnly an address outside loopback is refused before any
// packet is sent, whether written in the URL or resolved from a name; loopback passes.
func TestLoopbackOnly(t *testing.T) {
	s := newSite(t, H1, 1, 2, serverOpts{})
	cfg := s.config()
	cfg.LoopbackOnly = true
	cfg.Resolver = StaticResolver{"s1.wirelab.test": s.resolver["s1.wirelab.test"], "far.wirelab.test": mustAddr("10.77.1.1")}
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Load(context.Background(), "http://192.0.2.1/", nil); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("192.0.2.1: %v; want ErrNotLoopback", err)
	}
	res, err := l.Load(context.Background(), "http://far.wirelab.test/", nil)
	if err != nil || !errors.Is(res.Err, ErrNotLoopback) || res.Connections != 0 {
		t.Errorf("a name resolving to 10.77.1.1: %v / %v, %d connections; want ErrNotLoopback and none", err, res.Err, res.Connections)
	}
	checkComplete(t, s.load(t, cfg, nil), s.page.want)
	cfg.Resolver = &DNSResolver{Server: "10.77.2.53:53"}
	if _, err := New(cfg); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("DNS server 10.77.2.53 under LoopbackOnly: %v; want ErrNotLoopback", err)
	}
}

// TestTabResendOnDeadConn: when a kept connection dies under a request before its response began
// (the server closes it as the request arrives), the request is sent once more on a new
// connection and the load completes.
func TestTabResendOnDeadConn(t *testing.T) {
	for _, proto := range Protocols {
		t.Run(string(proto), func(t *testing.T) {
			t.Parallel()
			var kill atomic.Bool
			var srv *testServer
			s := newSite(t, proto, 1, 5, serverOpts{before: func(r *http.Request) {
				if r.URL.Path == "/" && kill.CompareAndSwap(true, false) {
					srv.closeConns()
					time.Sleep(20 * time.Millisecond) // the close reaches the client before any response could
				}
			}})
			srv = s.servers[0]
			tab := newTab(t, s, TabOptions{})
			checkComplete(t, tabLoad(t, tab, s), s.page.want)
			kill.Store(true)
			res := tabLoad(t, tab, s)
			checkComplete(t, res, s.page.want)
			checkTimings(t, res)
			// The root is sent again, once, on a new connection. HTTP/1.x: the other kept connections
			// closed with the root's, and the pool sees that before it uses them (the root's response
			// came 20 ms after the FINs): no other request is sent again, and the load opens at most
			// its six connections.
			if root := res.Entries[0]; root.Retries != 1 || res.Connections < 1 || res.Connections > 1 && proto != H1 && proto != H1S {
				t.Errorf("root sent %d times more, %d connections opened; want 1 and 1", root.Retries, res.Connections)
			}
			if (proto == H1 || proto == H1S) && (res.Retries != 1 || res.Connections > 6) {
				t.Errorf("%d requests sent again, %d connections opened; want the root alone, at most 6", res.Retries, res.Connections)
			}
		})
	}
}

// A Tab's loader parses a document it has seen before only if its bytes changed: a page whose
// root now references other objects is discovered anew.
func TestTabDiscoveryFollowsContent(t *testing.T) {
	s := newSite(t, H2, 1, 10, serverOpts{})
	tab := newTab(t, s, TabOptions{})
	checkComplete(t, tabLoad(t, tab, s), s.page.want)
	checkComplete(t, tabLoad(t, tab, s), s.page.want) // from the cache
	s.setPage(buildPage(s.origins, 4, 99))            // same URLs for the documents, other content
	checkComplete(t, tabLoad(t, tab, s), s.page.want)
}

// A Tab's h2 connections write the HEADERS of requests issued together in one flush; requests
// that must wait for a stream (a server allowing 1 or 3 at once) flush what was left for them and
// the page still completes, every time.
func TestTabH2CoalescedWrites(t *testing.T) {
	for _, limit := range []int{1, 3} {
		s := newSite(t, H2, 1, 20, serverOpts{maxStreams: limit})
		tab := newTab(t, s, TabOptions{})
		for range 5 {
			checkComplete(t, tabLoad(t, tab, s), s.page.want)
		}
		tab.Close()
		if _, active := s.servers[0].stats.peaks(); active > limit {
			t.Errorf("limit %d: %d requests in handlers at once", limit, active)
		}
	}
}

// TestTabH2GoAway: a Tab's requests written at once on its kept connection (h2Pool.submit) follow
// a server that ends each connection with GOAWAY after a few requests (nginx's
// keepalive_requests) to new connections, as Loader.Load's do: every load completes, every object
// once, each load on a new connection, and each connection the server accepted is one the tab
// opened.
func TestTabH2GoAway(t *testing.T) {
	for _, proto := range []Protocol{H2, H2C} {
		t.Run(string(proto), func(t *testing.T) {
			t.Parallel()
			s := newSite(t, proto, 1, 24, serverOpts{goAwayAfter: 5, before: func(*http.Request) { time.Sleep(time.Millisecond) }})
			tab := newTab(t, s, TabOptions{})
			opened := 0
			for i := range 4 {
				res := tabLoad(t, tab, s)
				checkComplete(t, res, s.page.want)
				checkTimings(t, res)
				// Each load's 25 requests pass 5: the server sent GOAWAY on every connection the
				// load used, so none is kept for the next load.
				if res.Connections < 1 {
					t.Errorf("load %d opened no connection; the one kept from before had gone away", i+1)
				}
				opened += res.Connections
			}
			if got := s.servers[0].stats.conns.Load(); int(got) != opened {
				t.Errorf("server accepted %d connections, the loads record %d", got, opened)
			}
		})
	}
}
