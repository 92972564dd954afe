package client

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sort"
	"sync"
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
