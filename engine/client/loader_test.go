package client

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/wirelab/wirelab/engine/internal/offmachine"
	"github.com/wirelab/wirelab/engine/internal/timebound"
	"github.com/wirelab/wirelab/engine/policy"
	"github.com/wirelab/wirelab/engine/why"
	"golang.org/x/net/http2"
)

// TestFlatLoad loads a page spread over two origins with every protocol: every object arrives
// with its exact size, nothing else is requested, sub-resources are requested only after the
// root document has arrived whole, stylesheet references only after their stylesheet, and the
// connection discipline holds on the server side.
func TestFlatLoad(t *testing.T) {
	for _, proto := range Protocols {
		t.Run(string(proto), func(t *testing.T) {
			t.Parallel()
			s := newSite(t, proto, 2, 30, serverOpts{rootSplit: 30 * time.Millisecond})
			res := s.load(t, s.config(), nil)
			checkComplete(t, res, s.page.want)
			checkTimings(t, res)
			checkTimeline(t, res)

			// Connection discipline, counted by the servers.
			for i, srv := range s.servers {
				n := srv.stats.conns.Load()
				switch proto {
				case H1, H1S:
					if peak, _ := srv.stats.peaks(); n < 1 || n > 6 || peak > 6 {
						t.Errorf("origin %d: %d connections accepted (peak %d open), want 1–6", i+1, n, peak)
					}
				default:
					if n != 1 {
						t.Errorf("origin %d: %d connections accepted, want exactly 1", i+1, n)
					}
				}
			}
			if proto == H2 || proto == H2C || proto == H3 {
				if res.Connections != 2 {
					t.Errorf("client reports %d connections, want 2 (one per origin)", res.Connections)
				}
			}
			if proto.usesTLS() || proto == H3 {
				if res.TLSHandshakes != res.Connections || res.TLSResumed != 0 {
					t.Errorf("tls_handshakes %d tls_resumed %d for %d connections", res.TLSHandshakes, res.TLSResumed, res.Connections)
				}
			} else if res.TLSHandshakes != 0 {
				t.Errorf("tls_handshakes %d over %s", res.TLSHandshakes, proto)
			}

			// Ordering: the root first, alone; its sub-resources only once it has arrived whole.
			root := res.Entries[0]
			if root.URL != s.root() || root.Start != 0 {
				t.Fatalf("first entry %s at %v, want the root at 0", root.URL, root.Start)
			}
			rootEnd := root.Start + time.Duration(root.Time*float64(time.Millisecond))
			rootDone := s.servers[0].stats.finished["/"]
			byURL := map[string]Entry{}
			for _, e := range res.Entries {
				byURL[e.URL] = e
			}
			for _, e := range res.Entries[1:] {
				if e.Start < rootEnd {
					t.Errorf("%s issued at %v, before the root completed at %v", e.URL, e.Start, rootEnd)
				}
				if e.Initiator == "" {
					t.Errorf("%s has no initiator", e.URL)
				} else if init := byURL[e.Initiator]; e.Start < init.Start+time.Duration(init.Time*float64(time.Millisecond)) {
					t.Errorf("%s issued before its initiator %s completed", e.URL, e.Initiator)
				}
			}
			for i, srv := range s.servers {
				srv.stats.mu.Lock()
				for path, at := range srv.stats.arrivals {
					if path != "/" && at.Before(rootDone) {
						t.Errorf("origin %d: %s arrived %v before the root's handler returned", i+1, path, rootDone.Sub(at))
					}
				}
				srv.stats.mu.Unlock()
			}
			// References found in stylesheets and the frame name them as initiator.
			for u, initiator := range map[string]string{
				"/img/css1.png": "/css/main.css", "/img/css2.png": "/css/main.css",
				"/img/imp.png": "/css/imported.css", "/img/frame.png": "/frame.html",
			} {
				if got := byURL[s.origins[0]+u].Initiator; got != s.origins[0]+initiator && u != "/img/css1.png" {
					t.Errorf("%s: initiator %q, want %s", u, got, initiator)
				}
			}
		})
	}
}

// TestH1ConnectionLimit: HTTP/1.x opens at most MaxConnectionsPerOrigin connections per origin,
// reuses them, and queues the other requests (blocked time).
func TestH1ConnectionLimit(t *testing.T) {
	for _, tc := range []struct {
		proto Protocol
		max   int
	}{{H1, 0}, {H1S, 0}, {H1, 2}} {
		name := string(tc.proto)
		if tc.max != 0 {
			name += "-max2"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newSite(t, tc.proto, 1, 40, serverOpts{before: func(*http.Request) { time.Sleep(3 * time.Millisecond) }})
			cfg := s.config()
			cfg.Mode = ModeObjects
			cfg.MaxConnectionsPerOrigin = tc.max
			want := tc.max
			if want == 0 {
				want = 6
			}
			res := s.load(t, cfg, imageURLs(s))
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			st := s.servers[0].stats
			peakConns, peakActive := st.peaks()
			if n := st.conns.Load(); n != int64(want) || res.Connections != want {
				t.Errorf("server accepted %d connections, client opened %d; want %d", n, res.Connections, want)
			}
			if peakConns > want || peakActive > want {
				t.Errorf("peak %d connections, %d concurrent requests; limit %d", peakConns, peakActive, want)
			}
			blocked := 0
			for _, e := range res.Entries {
				if e.Timings.Blocked > 1 {
					blocked++
				}
			}
			if blocked < len(res.Entries)-want {
				t.Errorf("%d of %d requests blocked > 1 ms; with %d connections at least %d must queue", blocked, len(res.Entries), want, len(res.Entries)-want)
			}
			carried := 0
			for _, c := range res.Conns {
				carried += c.Requests
				// Under -short (the race detector's run, 2–20× slower) a connection whose TLS
				// handshake ends after the queue drained carries only its opener's request.
				if c.Requests < 2 && !testing.Short() {
					t.Errorf("connection %d carried %d requests: not reused", c.ID, c.Requests)
				}
			}
			if carried < 2*len(res.Conns) {
				t.Errorf("%d requests on %d connections: keep-alive connections not reused", carried, len(res.Conns))
			}
		})
	}
}

func imageURLs(s *site) []string {
	var out []string
	for u := range s.page.want {
		if strings.Contains(u, "/img/0") {
			out = append(out, u)
		}
	}
	return out
}

// TestH2MaxConcurrentStreams: with a server limit of one stream, no two streams are ever open at
// once on the server, in flat mode and in objects mode (where the client starts with its assumed
// limit and the server refuses the excess streams until its SETTINGS are known).
func TestH2MaxConcurrentStreams(t *testing.T) {
	for _, proto := range []Protocol{H2, H2C, H3} {
		for _, mode := range []Mode{ModeFlat, ModeObjects} {
			t.Run(string(proto)+"-"+string(mode), func(t *testing.T) {
				t.Parallel()
				s := newSite(t, proto, 1, 20, serverOpts{maxStreams: 1, before: func(*http.Request) { time.Sleep(2 * time.Millisecond) }})
				cfg := s.config()
				cfg.Mode = mode
				var objects []string
				if mode == ModeObjects {
					objects = imageURLs(s)
				}
				res := s.load(t, cfg, objects)
				if res.Err != nil {
					t.Fatal(res.Err)
				}
				if mode == ModeFlat {
					checkComplete(t, res, s.page.want)
				}
				_, peak := s.servers[0].stats.peaks()
				if peak != 1 {
					t.Errorf("server saw %d concurrent requests, limit 1", peak)
				}
				if res.Connections != 1 {
					t.Errorf("%d connections", res.Connections)
				}
				if proto != H3 && res.Conns[0].MaxStreams != 1 {
					t.Errorf("connection records max_streams %d", res.Conns[0].MaxStreams)
				}
				queued := 0
				for _, e := range res.Entries {
					if e.Timings.Blocked > 1 {
						queued++
					}
				}
				if queued < len(res.Entries)/2 {
					t.Errorf("only %d of %d requests were blocked > 1 ms behind a one-stream limit", queued, len(res.Entries))
				}
			})
		}
	}
}

// TestH2GoAway: a server that ends each connection with GOAWAY after a few requests (nginx's
// keepalive_requests) does not fail the page: requests it did not process are sent again on a new
// connection, as browsers do, and later ones go there directly; every object arrives once.
func TestH2GoAway(t *testing.T) {
	for _, proto := range []Protocol{H2, H2C} {
		t.Run(string(proto), func(t *testing.T) {
			t.Parallel()
			s := newSite(t, proto, 1, 24, serverOpts{goAwayAfter: 5, before: func(*http.Request) { time.Sleep(time.Millisecond) }})
			res := s.load(t, s.config(), nil)
			checkComplete(t, res, s.page.want)
			checkTimings(t, res)
			if res.Connections < 2 {
				t.Errorf("%d connections; a server closing each after 5 requests needs more", res.Connections)
			}
			if got := s.servers[0].stats.conns.Load(); int(got) != res.Connections {
				t.Errorf("server accepted %d connections, the load records %d", got, res.Connections)
			}
		})
	}
}

// TestH2GoAwayWithoutProgress: a server that answers every connection with GOAWAY before it
// processes any stream (last stream id 0) is followed to new connections a bounded number of
// times; then the load fails, naming the GOAWAY.
func TestH2GoAwayWithoutProgress(t *testing.T) {
	ln, accepted := serveRaw(t, func(c net.Conn) {
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(c, preface); err != nil {
			return
		}
		fr := http2.NewFramer(c, c)
		if fr.WriteSettings() != nil || fr.WriteGoAway(0, http2.ErrCodeNo, nil) != nil {
			return
		}
		for {
			if _, err := fr.ReadFrame(); err != nil {
				return
			}
		}
	})
	port := ln.Addr().(*net.TCPAddr).Port
	cfg := Config{Protocol: H2C, Resolver: StaticResolver{"s1.wirelab.test": mustAddr("127.0.0.1")}, Timeout: 10 * time.Second}
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.Load(context.Background(), fmt.Sprintf("http://s1.wirelab.test:%d/", port), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Err == nil || !strings.Contains(res.Err.Error(), "GOAWAY") {
		t.Fatalf("load error %v; want the GOAWAY named", res.Err)
	}
	if n := accepted.Load(); n != 1+maxGoAwayRetries {
		t.Errorf("server accepted %d connections; want %d (the first and %d retries)", n, 1+maxGoAwayRetries, maxGoAwayRetries)
	}
}

// TestObjectsModeAllAtOnce: in objects mode every object is requested before any completes; on
// h2 and h3 the server sees all of them at the same time (a barrier releases only then).
func TestObjectsModeAllAtOnce(t *testing.T) {
	for _, proto := range Protocols {
		t.Run(string(proto), func(t *testing.T) {
			t.Parallel()
			const n = 30
			var s *site
			var mu sync.Mutex
			arrived := 0
			all := make(chan struct{})
			barrier := func(r *http.Request) {
				if proto == H1 || proto == H1S {
					time.Sleep(5 * time.Millisecond)
					return
				}
				mu.Lock()
				arrived++
				if arrived == n {
					close(all)
				}
				mu.Unlock()
				select {
				case <-all:
				case <-time.After(5 * time.Second):
				}
			}
			s = newSite(t, proto, 1, n, serverOpts{before: barrier})
			cfg := s.config()
			cfg.Mode = ModeObjects
			objects := imageURLs(s)
			res := s.load(t, cfg, objects)
			want := map[string]int{}
			for _, u := range objects {
				want[u] = s.page.want[u]
			}
			checkComplete(t, res, want)
			checkTimings(t, res)
			var lastIssue, firstEnd time.Duration = 0, time.Hour
			for _, e := range res.Entries {
				lastIssue = max(lastIssue, e.Start)
				firstEnd = min(firstEnd, e.Start+time.Duration(e.Time*float64(time.Millisecond)))
			}
			if lastIssue >= firstEnd {
				t.Errorf("last request issued at %v, after the first completed at %v", lastIssue, firstEnd)
			}
			if proto != H1 && proto != H1S {
				select {
				case <-all:
				default:
					t.Errorf("the server never had all %d requests at once (%d arrived)", n, arrived)
				}
			}
		})
	}
}

// TestFreshState: two loads with one Loader open two sets of connections with full handshakes,
// although the server would resume a session for a client that kept one.
func TestFreshState(t *testing.T) {
	for _, proto := range []Protocol{H1S, H2, H3} {
		t.Run(string(proto), func(t *testing.T) {
			t.Parallel()
			s := newSite(t, proto, 1, 5, serverOpts{})
			l, err := New(s.config())
			if err != nil {
				t.Fatal(err)
			}
			var conns int
			for range 2 {
				res, err := l.Load(context.Background(), s.root(), nil)
				if err != nil || res.Err != nil {
					t.Fatal(err, res.Err)
				}
				if res.TLSHandshakes != res.Connections || res.TLSResumed != 0 {
					t.Errorf("%d full and %d resumed handshakes for %d connections", res.TLSHandshakes, res.TLSResumed, res.Connections)
				}
				conns += res.Connections
			}
			st := s.servers[0].stats
			if st.conns.Load() != int64(conns) || st.handshakes.Load() != int64(conns) || st.resumed.Load() != 0 {
				t.Errorf("server: %d connections, %d handshakes, %d resumed; client opened %d",
					st.conns.Load(), st.handshakes.Load(), st.resumed.Load(), conns)
			}
		})
	}
	// The control: this server resumes sessions for a client with a session cache.
	t.Run("control", func(t *testing.T) {
		s := newSite(t, H1S, 1, 1, serverOpts{})
		tr := &http.Transport{
			TLSClientConfig:   tlsClientWithCache(),
			DisableKeepAlives: true,
			DialContext:       staticDial(s.resolver),
		}
		for range 2 {
			resp, err := (&http.Client{Transport: tr}).Get(s.root())
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		if got := s.servers[0].stats.resumed.Load(); got != 1 {
			t.Fatalf("h1s server resumed %d sessions for a caching client, want 1: the fresh-state check would prove nothing", got)
		}
	})
	t.Run("control-h3", func(t *testing.T) {
		s := newSite(t, H3, 1, 1, serverOpts{})
		conf := tlsClientWithCache()
		for range 2 {
			tr := &http3.Transport{TLSClientConfig: conf, Dial: func(ctx context.Context, addr string, tlsConf *tls.Config, qconf *quic.Config) (*quic.Conn, error) {
				host, port, _ := net.SplitHostPort(addr)
				return quic.DialAddr(ctx, net.JoinHostPort(s.resolver[host].String(), port), tlsConf, qconf)
			}}
			resp, err := (&http.Client{Transport: tr}).Get(s.root())
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			tr.Close()
		}
		if got := s.servers[0].stats.resumed.Load(); got != 1 {
			t.Fatalf("h3 server resumed %d sessions for a caching client, want 1: the fresh-state check would prove nothing", got)
		}
	})
}

// TestTimeout: a load that does not complete in time ends with a timeout error, promptly.
func TestTimeout(t *testing.T) {
	for _, proto := range Protocols {
		t.Run(string(proto), func(t *testing.T) {
			t.Parallel()
			// The 3 s depend on the machine: retried once (internal/timebound).
			timebound.Retry(t, func(a *timebound.Attempt) {
				stop := make(chan struct{})
				s := newSite(t, proto, 1, 3, serverOpts{before: func(r *http.Request) {
					if r.URL.Path == "/img/001.png" {
						<-stop
					}
				}})
				t.Cleanup(func() { close(stop) }) // before the servers' cleanups, which wait for handlers
				cfg := s.config()
				cfg.Timeout = 300 * time.Millisecond
				start := time.Now()
				res := s.load(t, cfg, nil)
				if elapsed := time.Since(start); elapsed > 3*time.Second {
					a.Errorf("load returned after %v with a 300 ms timeout", elapsed)
				}
				if res.Err == nil || !strings.Contains(res.Err.Error(), "timeout") {
					t.Fatalf("error %v, want a timeout", res.Err)
				}
				if res.Objects >= len(s.page.want) {
					t.Errorf("%d objects complete although one never was", res.Objects)
				}
				// The timeout runs from the load's start, PLT from its first request, issued a moment
				// later — 28 ms later once under -race beside other tests (a CI of 3dcd7ce): the bound
				// takes that moment from the result, not from a guess.
				lead := res.StartedAt.Sub(start)
				if res.PLT < cfg.Timeout-lead-10*time.Millisecond {
					t.Errorf("plt %v shorter than the %v timeout less the %v before the first request", res.PLT, cfg.Timeout, lead)
				}
			})
		})
	}
}

// TestFailedObject: a missing object fails the load with the first failure; the rest still loads.
func TestFailedObject(t *testing.T) {
	s := newSite(t, H2, 1, 5, serverOpts{})
	s.page.edit(func(objects map[string]*testObject) { delete(objects, "/img/002.png") })
	res := s.load(t, s.config(), nil)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "/img/002.png: status 404") {
		t.Fatalf("error %v, want the 404 of /img/002.png", res.Err)
	}
	if res.Objects != len(s.page.want)-1 {
		t.Errorf("%d objects complete, want %d", res.Objects, len(s.page.want)-1)
	}
}

// TestRefusesNonLabTargets: hosts and addresses outside the lab are refused before any traffic.
func TestRefusesNonLabTargets(t *testing.T) {
	offmachine.Require(t) // a broken guard would contact 192.0.2.1
	l, err := New(Config{Protocol: H2, Resolver: StaticResolver{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Load(context.Background(), "https://example.com/", nil); !errors.Is(err, ErrNotLabTarget) {
		t.Errorf("example.com: %v, want ErrNotLabTarget", err)
	}
	// A lab name that resolves outside the lab.
	l, _ = New(Config{Protocol: H2, Resolver: StaticResolver{"s1.wirelab.test": mustAddr("192.0.2.1")}})
	res, err := l.Load(context.Background(), "https://s1.wirelab.test/", nil)
	if err != nil || !errors.Is(res.Err, ErrNotLabTarget) || res.Connections != 0 {
		t.Errorf("s1 → 192.0.2.1: err %v, load error %v, %d connections", err, res.Err, res.Connections)
	}
	// A page referencing a non-lab host: that object fails, without a connection to it.
	s := newSite(t, H1, 1, 2, serverOpts{})
	s.page.edit(func(objects map[string]*testObject) {
		root := *objects["/"]
		root.body = append(root.body, `<img src="http://example.com/x.png">`...)
		objects["/"] = &root
	})
	res = s.load(t, s.config(), nil)
	if !errors.Is(res.Err, ErrNotLabTarget) {
		t.Errorf("page with an external image: load error %v, want ErrNotLabTarget", res.Err)
	}
	for _, c := range res.Conns {
		if !strings.Contains(c.Origin, "wirelab.test") {
			t.Errorf("connection to %s", c.Origin)
		}
	}
	// A DNS server outside the lab.
	if _, err := New(Config{Protocol: H1, Resolver: &DNSResolver{Server: "8.8.8.8:53"}}); !errors.Is(err, ErrNotLabTarget) {
		t.Errorf("DNS server 8.8.8.8: %v", err)
	}
	// The explicit override lets them through the check.
	l, _ = New(Config{Protocol: H2, AllowAnyTarget: true})
	if err := l.checkURL(mustURL("https://example.com/")); err != nil {
		t.Errorf("with AllowAnyTarget: %v", err)
	}
}

// TestInternetTargets: with Config.Internet any name passes the URL check, but an IP literal or a
// resolved address must be the lab's or public, checked before any connection.
func TestInternetTargets(t *testing.T) {
	offmachine.Require(t) // a broken guard would contact 192.0.2.1
	l, err := New(Config{Protocol: H2, Internet: true, Resolver: StaticResolver{}})
	if err != nil {
		t.Fatal(err)
	}
	for raw, ok := range map[string]bool{
		"https://example.com/": true, "https://93.184.215.14/": true, "https://10.77.1.1/": true,
		"https://192.0.2.1/": false, "https://127.0.0.1/": false, "https://[::1]/": false, "https://10.1.2.3/": false,
	} {
		if err := l.checkURL(mustURL(raw)); (err == nil) != ok {
			t.Errorf("%s: %v", raw, err)
		}
	}
	for _, a := range []string{"192.0.2.1", "127.0.0.1", "169.254.169.254"} {
		l, _ := New(Config{Protocol: H2, Internet: true, Resolver: StaticResolver{"www.example.com": mustAddr(a)}})
		res, err := l.Load(context.Background(), "https://www.example.com/", nil)
		if err != nil || !errors.Is(res.Err, policy.ErrRefused) || res.Connections != 0 {
			t.Errorf("www.example.com → %s: err %v, load error %v, %d connections", a, err, res.Err, res.Connections)
		}
	}
	// The DNS server stays the lab's.
	if _, err := New(Config{Protocol: H1, Internet: true, Resolver: &DNSResolver{Server: "8.8.8.8:53"}}); !errors.Is(err, ErrNotLabTarget) {
		t.Errorf("DNS server 8.8.8.8 with Internet: %v", err)
	}
}

func TestIsLabHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.9.9.9": true, "::1": true, "[::1]": true, "10.77.1.1": true, "10.77.255.255": true,
		"localhost": true, "s1.wirelab.test": true, "S2.WireLab.Test.": true, "wirelab.test": true,
		"10.78.0.1": false, "192.168.1.1": false, "8.8.8.8": false, "example.com": false,
		"wirelab.test.example.com": false, "evilwirelab.test": false, "localhost.example.com": false, "": false,
	} {
		if got := IsLabHost(host); got != want {
			t.Errorf("IsLabHost(%q) = %v, want %v", host, got, want)
		}
	}
}

// TestSchemeMismatch: a URL whose scheme does not fit the protocol is refused up front.
func TestSchemeMismatch(t *testing.T) {
	l, _ := New(Config{Protocol: H2, Resolver: StaticResolver{}})
	if _, err := l.Load(context.Background(), "http://s1.wirelab.test/", nil); err == nil || !strings.Contains(err.Error(), "does not match protocol h2") {
		t.Errorf("http URL over h2: %v", err)
	}
}

func TestModeInputs(t *testing.T) {
	l, _ := New(Config{Protocol: H1, Resolver: StaticResolver{}})
	if _, err := l.Load(context.Background(), "http://s1.wirelab.test/", []string{"/a"}); err == nil {
		t.Error("flat mode accepted an object list")
	}
	l, _ = New(Config{Protocol: H1, Mode: ModeObjects, Resolver: StaticResolver{}})
	if _, err := l.Load(context.Background(), "http://s1.wirelab.test/", nil); err == nil {
		t.Error("objects mode accepted no objects")
	}
	if _, err := New(Config{Protocol: H1, Mode: ModeReplay}); err == nil || !strings.Contains(err.Error(), "client.page") {
		t.Errorf("replay mode without a page: %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "client.protocol"},
		{Config{Protocol: "h4"}, "client.protocol"},
		{Config{Protocol: H1, Mode: "eager"}, "client.mode"},
		{Config{Protocol: H1, MaxConnectionsPerOrigin: 65}, "client.max_connections_per_origin"},
		{Config{Protocol: H1, MaxConnectionsPerOrigin: -1}, "client.max_connections_per_origin"},
		{Config{Protocol: H1, Timeout: -time.Second}, "client.timeout_s"},
		{Config{Protocol: H2, StreamReceiveWindow: 100}, "client.stream_receive_window"},
		{Config{Protocol: H3, ConnReceiveWindow: 1 << 31}, "client.conn_receive_window"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
	l, err := New(Config{Protocol: H1})
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config()
	if c.Mode != ModeFlat || c.MaxConnectionsPerOrigin != 6 || c.Timeout != 120*time.Second || c.H2AssumedMaxStreams != 100 {
		t.Errorf("defaults: %+v", c)
	}
}

// checkTimeline: the load's timeline (fetch --json's, for the trial's decomposition) says what the
// entries say — one request per entry, issued at its start, ending its time later, on its connection,
// its initiator the earliest entry of the initiator's URL — and names each connection's local port.
func checkTimeline(t *testing.T, res *Result) {
	t.Helper()
	tl := res.Summary().Timeline
	if tl == nil || len(tl.Requests) != len(res.Entries) || len(tl.Conns) != len(res.Conns) {
		t.Fatalf("timeline %+v for %d entries and %d connections", tl, len(res.Entries), len(res.Conns))
	}
	first := map[string]int{}
	for i, e := range res.Entries {
		if _, ok := first[e.URL]; !ok {
			first[e.URL] = i
		}
		r := tl.Requests[i]
		if r.URL != e.URL || r.Conn != e.Connection || r.Stream != e.StreamID {
			t.Errorf("request %d: %s conn %d stream %d, the entry says %s conn %d stream %d", i, r.URL, r.Conn, r.Stream, e.URL, e.Connection, e.StreamID)
		}
		if r.Issued != int64(e.Start/time.Microsecond) || math.Abs(float64(r.End-r.Issued)/1000-e.Time) > 0.002 {
			t.Errorf("request %d: issued %d µs, ends %d µs; the entry starts at %v and takes %.3f ms", i, r.Issued, r.End, e.Start, e.Time)
		}
		for _, b := range []int64{r.DNSStart, r.Connect, r.ConnectEnd, r.SendStart, r.SendEnd, r.FirstByte} {
			if b != why.Unset && (b < r.Issued || b > r.End) {
				t.Errorf("request %d: a boundary at %d µs outside [%d, %d]", i, b, r.Issued, r.End)
			}
		}
		want := -1
		if p, ok := first[e.Initiator]; ok && e.Initiator != "" {
			want = p
		}
		if r.Initiator != want {
			t.Errorf("request %d (%s): initiator %d, want %d (%q)", i, e.URL, r.Initiator, want, e.Initiator)
		}
	}
	// h3: every response's stream arrived whole in the connection's arrivals (engine/why follows
	// the stream's own bytes with them): a contiguous prefix from offset 0, longer than the body
	// (HTTP/3's HEADERS and DATA frames carry it).
	if res.Protocol == H3 {
		got := map[[2]int64][][2]int64{} // (conn, stream) → ranges received
		for _, c := range tl.Conns {
			for _, a := range c.Arrivals {
				got[[2]int64{int64(c.ID), a[0]}] = append(got[[2]int64{int64(c.ID), a[0]}], [2]int64{a[2], a[2] + a[3]})
			}
		}
		for i, e := range res.Entries {
			if e.Error != "" || e.Connection == 0 {
				continue
			}
			ranges := got[[2]int64{int64(e.Connection), e.StreamID}]
			slices.SortFunc(ranges, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
			var prefix int64
			for _, r := range ranges {
				if r[0] <= prefix {
					prefix = max(prefix, r[1])
				}
			}
			if prefix <= e.BodyBytes {
				t.Errorf("request %d (%s, stream %d): its stream's arrivals hold a prefix of %d bytes for a body of %d", i, e.URL, e.StreamID, prefix, e.BodyBytes)
			}
		}
	}
	for _, c := range tl.Conns {
		if _, port, err := net.SplitHostPort(c.Local); err != nil || port == "0" {
			t.Errorf("connection %d: local %q", c.ID, c.Local)
		}
		if (c.Transport == "udp") != (res.Protocol == H3) {
			t.Errorf("connection %d: transport %s over %s", c.ID, c.Transport, res.Protocol)
		}
	}
}
