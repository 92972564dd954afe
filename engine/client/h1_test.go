package client

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestConnectionClose: a server that closes every connection after one response (keep-alive off)
// gets one connection per request, never more than the limit at once.
func TestConnectionClose(t *testing.T) {
	for _, proto := range []Protocol{H1, H1S} {
		t.Run(string(proto), func(t *testing.T) {
			t.Parallel()
			s := newSite(t, proto, 1, 15, serverOpts{noKeepAlive: true})
			res := s.load(t, s.config(), nil)
			checkComplete(t, res, s.page.want)
			checkTimings(t, res)
			if res.Connections != len(res.Entries) || s.servers[0].stats.conns.Load() != int64(len(res.Entries)) {
				t.Errorf("%d connections (server: %d) for %d requests, want one each", res.Connections, s.servers[0].stats.conns.Load(), len(res.Entries))
			}
			// At most 6 at once on the client: each connection lives from its dial to the end of its
			// only response. (The server's count lags: it closes its side after the client has.)
			if peak := maxOverlap(res.Entries); peak > 6 {
				t.Errorf("peak %d connections open at once", peak)
			}
		})
	}
}

// TestStaleKeepAlive: a server that silently closes each connection after one response (no
// Connection: close) breaks the reused connection; the request is sent again on a new one.
func TestStaleKeepAlive(t *testing.T) {
	ln, conns := serveRaw(t, func(c net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		body := "object " + req.URL.Path
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	})
	l, err := New(Config{Protocol: H1, Mode: ModeObjects, MaxConnectionsPerOrigin: 1})
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	objects := []string{"/a", "/b", "/c", "/d"}
	res, err := l.Load(context.Background(), base+"/", objects)
	if err != nil {
		t.Fatal(err)
	}
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	for _, e := range res.Entries {
		if want := int64(len("object ") + 2); e.BodyBytes != want {
			t.Errorf("%s: %d bytes, want %d", e.URL, e.BodyBytes, want)
		}
	}
	// Each response needs a connection of its own; the second request is certain to meet the
	// first's stale connection, later ones may meet a fresh one opened by a retry.
	if res.Retries < 1 || res.Retries > 3 || res.Connections != 4 || conns.Load() != 4 {
		t.Errorf("%d retries, %d connections (server: %d); want 1–3 retries on 4 connections", res.Retries, res.Connections, conns.Load())
	}
	for _, e := range res.Entries {
		if e.Retries > 1 {
			t.Errorf("%s sent %d more times: a retry must use a fresh connection", e.URL, e.Retries)
		}
	}
	checkTimings(t, res)
}

// TestUnknownLength: bodies without Content-Length (chunked on HTTP/1.1, DATA frames until
// END_STREAM on h2, until FIN on h3) are counted exactly.
func TestUnknownLength(t *testing.T) {
	for _, proto := range Protocols {
		t.Run(string(proto), func(t *testing.T) {
			t.Parallel()
			s := newSite(t, proto, 1, 10, serverOpts{streamBody: true})
			res := s.load(t, s.config(), nil)
			checkComplete(t, res, s.page.want)
		})
	}
}

// TestContentLengthMismatch: a response shorter than its Content-Length fails its object.
func TestContentLengthMismatch(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		http.ReadRequest(bufio.NewReader(c))
		fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
	}()
	l, _ := New(Config{Protocol: H1})
	res, err := l.Load(context.Background(), "http://"+ln.Addr().String()+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Err == nil || res.Objects != 0 || res.BodyBytes != 5 {
		t.Errorf("truncated body: error %v, %d objects, %d bytes", res.Err, res.Objects, res.BodyBytes)
	}
}

// maxOverlap is the largest number of entries whose [dial start, end) intervals overlap, for
// entries that each opened their connection.
func maxOverlap(entries []Entry) int {
	type edge struct {
		at    float64
		delta int
	}
	var edges []edge
	for _, e := range entries {
		start := float64(e.Start)/1e6 + e.Timings.Blocked
		edges = append(edges, edge{start, +1}, edge{float64(e.Start)/1e6 + e.Time, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].delta < edges[j].delta // an end before a start at the same instant
	})
	open, peak := 0, 0
	for _, e := range edges {
		open += e.delta
		peak = max(peak, open)
	}
	return peak
}

// TestIPv6Loopback: an IPv6 literal is dialled as such (the lab is IPv4, loopback may be either).
func TestIPv6Loopback(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "six") })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	l, _ := New(Config{Protocol: H1})
	res, err := l.Load(context.Background(), "http://"+ln.Addr().String()+"/", nil)
	if err != nil || res.Err != nil || res.BodyBytes != 3 {
		t.Fatalf("%v %v, %d bytes", err, res.Err, res.BodyBytes)
	}
}

// TestH1QueueOrder: requests that wait for a connection are sent in the order they were issued
// (the origin's FIFO queue, served by the connection's worker), each after the previous one's
// response on the one kept connection; only the first request opens it, the others are blocked.
func TestH1QueueOrder(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	ln, conns := serveRaw(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			mu.Lock()
			paths = append(paths, req.URL.Path)
			mu.Unlock()
			time.Sleep(time.Millisecond) // the others queue meanwhile
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	l, err := New(Config{Protocol: H1, Mode: ModeObjects, MaxConnectionsPerOrigin: 1})
	if err != nil {
		t.Fatal(err)
	}
	var objects []string
	for i := range 20 {
		objects = append(objects, fmt.Sprintf("/o%02d", i))
	}
	res, err := l.Load(context.Background(), "http://"+ln.Addr().String()+"/", objects)
	if err != nil || res.Err != nil {
		t.Fatalf("load: %v %v", err, res.Err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(paths, objects) {
		t.Errorf("the server saw %v; want the issue order %v", paths, objects)
	}
	if res.Connections != 1 || conns.Load() != 1 {
		t.Errorf("%d connections (server: %d); want 1", res.Connections, conns.Load())
	}
	for i, e := range res.Entries {
		if (e.Timings.Connect >= 0) != (i == 0) {
			t.Errorf("%s: connect %.3f ms; only the first request opens the connection", e.URL, e.Timings.Connect)
		}
		if i > 0 && e.Timings.Blocked < 1 {
			t.Errorf("%s: blocked %.3f ms; it waited for the requests before it (≥ 1 ms each)", e.URL, e.Timings.Blocked)
		}
	}
	checkTimings(t, res)
}

// TestH1IdleHalfClose: a server that half-closes a kept connection while it idles (a FIN, then it
// goes on reading and answers nothing more: Apache's lingering close) — the next request meets
// the closed connection and is sent again on a new one at once, not left waiting for a response
// that never comes.
func TestH1IdleHalfClose(t *testing.T) {
	var served atomic.Int64
	ln, conns := serveRaw(t, func(c net.Conn) {
		first := served.Add(1) == 1
		br := bufio.NewReader(c)
		for {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			if first {
				c.(*net.TCPConn).CloseWrite()
				io.Copy(io.Discard, c)
				return
			}
		}
	})
	cfg, err := Config{Protocol: H1, MaxConnectionsPerOrigin: 1}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(cfg)
	s.keep = true // a Tab's session: its connections are tracked, and send may wait first
	u, _ := url.Parse("http://" + ln.Addr().String() + "/a")
	o, _ := originOf(u)
	p := newH1Pool(s, o)
	defer p.close()
	var waitFirst bool
	for i := range 2 {
		if i == 1 {
			time.Sleep(50 * time.Millisecond) // the FIN comes while the connection idles
		}
		r, _ := newRequest(plannedRequest{url: u})
		done := make(chan struct{})
		go func() { p.do(context.Background(), r); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			p.close() // the request hangs on the half-closed connection
			<-done
			t.Fatalf("request %d: no end within 5 s on a half-closed idle connection", i+1)
		}
		if r.err != nil || r.bodyBytes != 2 {
			t.Fatalf("request %d: %v, %d bytes", i+1, r.err, r.bodyBytes)
		}
		if i == 0 {
			waitFirst = p.all[0].raw != nil
		}
		if want := i; r.retries != want {
			t.Errorf("request %d sent %d more times, want %d", i+1, r.retries, want)
		}
	}
	if conns.Load() != 2 || !waitFirst {
		t.Errorf("%d connections, want 2; the first could wait first: %v, want true", conns.Load(), waitFirst)
	}
}
