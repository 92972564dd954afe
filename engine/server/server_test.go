package server

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/internal/htmltest"
	"github.com/wirelab/wirelab/engine/page"
)

// loadPage loads pg from s over proto as a page loader would: the root, then every URL the HTML
// references. It checks every response against the page spec and returns the bytes received.
func loadPage(t *testing.T, s *Server, c *testClient, proto Protocol, token string) (objects int, total int64) {
	t.Helper()
	pg := s.Page()
	urls, err := s.URLs(proto, token)
	if err != nil {
		t.Fatal(err)
	}
	root := fetch(c, urls[0])
	if root.err != nil || root.status != 200 {
		t.Fatalf("%s %s: root: %v, status %d", pg.Name, proto, root.err, root.status)
	}
	refs, _, err := htmltest.Refs(root.body)
	if err != nil {
		t.Fatalf("%s %s: root: %v", pg.Name, proto, err)
	}
	sorted := append([]string(nil), refs...)
	sort.Strings(sorted)
	want := append([]string(nil), urls[1:]...)
	sort.Strings(want)
	if strings.Join(sorted, " ") != strings.Join(want, " ") {
		t.Fatalf("%s %s: the HTML references %d URLs that differ from page.URLs (%d)", pg.Name, proto, len(refs), len(want))
	}
	results := append([]result{root}, fetchAll(c, refs, 16)...)
	byURL := map[string]int{}
	for i, u := range urls {
		byURL[u] = i
	}
	port := s.Ports().Port(proto)
	for _, r := range results {
		if r.err != nil || r.status != 200 {
			t.Fatalf("%s %s %s: %v, status %d", pg.Name, proto, r.url, r.err, r.status)
		}
		i := byURL[r.url]
		o := pg.Objects[i]
		if int64(len(r.body)) != o.Size {
			t.Fatalf("%s %s %s: %d bytes, want %d", pg.Name, proto, r.url, len(r.body), o.Size)
		}
		b, _ := pg.Body(i, page.Base{Scheme: proto.Scheme(), Port: port, Token: token})
		if !bytes.Equal(r.body, b.Bytes()) {
			t.Fatalf("%s %s %s: body differs from the page's content", pg.Name, proto, r.url)
		}
		wantProto := map[Protocol]string{H1: "HTTP/1", H1S: "HTTP/1", H2: "HTTP/2", H2C: "HTTP/2", H3: "HTTP/3", SPDY3: "SPDY/3.1"}[proto]
		if !strings.HasPrefix(r.proto, wantProto) {
			t.Fatalf("%s over %s answered with %s", r.url, proto, r.proto)
		}
		objects++
		total += int64(len(r.body))
	}
	return objects, total
}

// Every corpus page loads over every protocol: 0 errors, object count and body bytes exactly as
// the page says, bodies identical to the page's content, HTML referencing exactly page.URLs.
func TestCorpusOverEveryProtocol(t *testing.T) {
	for _, name := range page.CorpusNames() {
		pg, err := page.Corpus(name, 1)
		if err != nil {
			t.Fatal(err)
		}
		s := startTest(t, pg, nil)
		for _, proto := range AllProtocols {
			c := newClient(t, s, proto, nil)
			n, b := loadPage(t, s, c, proto, "load-"+string(proto))
			if n != len(pg.Objects) || b != pg.TotalBytes() {
				t.Errorf("%s over %s: %d objects, %d bytes; want %d, %d", name, proto, n, b, len(pg.Objects), pg.TotalBytes())
			}
		}
		recs, dropped := s.Records()
		if n := len(AllProtocols) * len(pg.Objects); dropped != 0 || len(recs) != n {
			t.Errorf("%s: %d records (%d dropped), want %d", name, len(recs), dropped, n)
		}
		s.Close()
	}
}

// A sharded page: each origin serves its own objects and answers 404 for the others; the HTML
// references every origin.
func TestShardedServing(t *testing.T) {
	base, _ := page.Corpus("youtube", 1)
	for _, mode := range []page.ShardMode{page.ShardRoundRobin, page.ShardTLD} {
		n := 3
		pg, err := base.Shard(n, mode)
		if err != nil {
			t.Fatal(err)
		}
		s := startTest(t, pg, nil)
		for _, proto := range []Protocol{H1S, H2, H3} {
			c := newClient(t, s, proto, nil)
			loadPage(t, s, c, proto, "sharded")
		}
		counts := make([]int, n)
		recs, _ := s.Records()
		for _, r := range recs {
			counts[r.Origin]++
		}
		for i, want := range pg.ObjectsPerOrigin() {
			if counts[i] != 3*want {
				t.Errorf("%s: origin %d served %d requests, want %d", mode, i, counts[i], 3*want)
			}
		}
		conns := map[int]int{}
		for _, c := range s.Conns() {
			if c.Protocol == H2 || c.Protocol == H3 {
				conns[c.Origin]++
			}
		}
		for i := range n {
			if conns[i] != 2 { // one h2 and one h3 connection per origin
				t.Errorf("%s: origin %d had %d h2/h3 connections, want 2", mode, i, conns[i])
			}
		}
		// an object requested from the wrong origin is not found
		urls, _ := s.URLs(H2, "x")
		for i, o := range pg.Objects {
			if o.Origin == 0 {
				continue
			}
			wrong := strings.Replace(urls[i], pg.Origins[o.Origin].Host, "s1.wirelab.test", 1)
			if r := fetch(newClient(t, s, H2, nil), wrong); r.status != 404 {
				t.Errorf("%s from the wrong origin: status %d", wrong, r.status)
			}
			break
		}
		s.Close()
	}
}

func TestResponses(t *testing.T) {
	pg, _ := page.Corpus("twitter", 1)
	s := startTest(t, pg, nil)
	for _, proto := range AllProtocols {
		c := newClient(t, s, proto, nil)
		urls, _ := s.URLs(proto, "t1")
		for i, u := range urls {
			r := fetch(c, u)
			o := pg.Objects[i]
			if r.status != 200 || r.header.Get("Content-Type") != o.ContentType ||
				r.header.Get("Cache-Control") != o.CachePolicy() || r.header.Get("Content-Length") != itoa(o.Size) {
				t.Errorf("%s %s: status %d, headers %v", proto, u, r.status, r.header)
			}
		}
		root := strings.TrimSuffix(urls[0], "/")
		for _, bad := range []string{root + "/nope.css", root[:strings.Index(root, "/L/")] + "/", root[:strings.Index(root, "/L/")] + "/L/bad token/index.html", root + "/index.html/"} {
			if r := fetch(c, bad); r.status != 404 || r.err != nil {
				t.Errorf("%s %s: status %d, %v; want 404", proto, bad, r.status, r.err)
			}
		}
		if r := fetch(c, root+"/index.html"); r.status != 200 || int64(len(r.body)) != pg.Objects[0].Size {
			t.Errorf("%s: root by its path: %d", proto, r.status)
		}
		resp, err := c.Head(urls[3])
		if err != nil || resp.StatusCode != 200 || resp.ContentLength != pg.Objects[3].Size {
			t.Errorf("%s HEAD: %v %v", proto, resp, err)
		} else {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if len(b) != 0 {
				t.Errorf("%s HEAD returned a body", proto)
			}
		}
		resp, err = c.Post(urls[0], "text/plain", strings.NewReader("x"))
		if err != nil || resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s POST: %v %v", proto, resp, err)
		} else {
			resp.Body.Close()
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Stream ids reach the records: 0 for HTTP/1.1, odd for h2/h2c/spdy3, client bidi (multiples of 4)
// for h3; distinct within a connection.
func TestStreamIDs(t *testing.T) {
	pg, _ := page.Corpus("twitter", 1)
	s := startTest(t, pg, nil)
	for _, proto := range AllProtocols {
		loadPage(t, s, newClient(t, s, proto, nil), proto, "ids")
	}
	recs, _ := s.Records()
	seen := map[[2]uint64]bool{}
	for _, r := range recs {
		key := [2]uint64{r.Conn, r.Stream}
		switch r.Protocol {
		case H1, H1S:
			if r.Stream != 0 {
				t.Errorf("%s: stream %d", r.Protocol, r.Stream)
			}
			continue
		case H2, H2C, SPDY3:
			if r.Stream%2 != 1 {
				t.Errorf("%s: stream id %d is not a client stream (x/net/http2 internals changed?)", r.Protocol, r.Stream)
			}
		case H3:
			if r.Stream%4 != 0 {
				t.Errorf("h3: stream id %d is not a client bidirectional stream", r.Stream)
			}
		}
		if seen[key] {
			t.Errorf("%s: stream %d used twice on connection %d", r.Protocol, r.Stream, r.Conn)
		}
		seen[key] = true
	}
}

// singleConnClient is an HTTP/2 client on one connection (http2.ClientConn) that waits for a
// free stream when the server's MAX_CONCURRENT_STREAMS is reached. It bypasses
// http2.Transport's pool, whose reservations stall requests in StrictMaxConcurrentStreams mode
// (golang/go#70809).
func singleConnClient(t *testing.T, s *Server, proto Protocol) *testClient {
	t.Helper()
	conn, _ := dialOrigin(t, s, proto)
	tr := &http2.Transport{StrictMaxConcurrentStreams: true, AllowHTTP: true}
	cc, err := tr.NewClientConn(conn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return &testClient{Client: &http.Client{Transport: cc, Timeout: 60 * time.Second}, close: func() { cc.Close() }}
}

// With MaxConcurrentStreams = 1 an h2 client never has two streams open, as the server's frame
// observer sees them; with the default it does (so the observation can tell). The root is
// fetched first, as a page loader does: a client that sends requests before it has the server's
// SETTINGS assumes 100 streams, and the server refuses the extra ones.
func TestMaxConcurrentStreams(t *testing.T) {
	pg, _ := page.Corpus("imgur", 1)
	for _, mcs := range []int{1, 100} {
		s := startTest(t, pg, func(c *Config) { c.MaxConcurrentStreams = mcs })
		for _, proto := range []Protocol{H2, H2C} {
			c := singleConnClient(t, s, proto)
			urls, _ := s.URLs(proto, "mcs")
			for _, r := range append([]result{fetch(c, urls[0])}, fetchAll(c, urls[1:], 64)...) {
				if r.err != nil || r.status != 200 {
					t.Fatalf("mcs %d %s: %v %d", mcs, proto, r.err, r.status)
				}
			}
		}
		c3 := newClient(t, s, H3, nil)
		urls, _ := s.URLs(H3, "mcs")
		for _, r := range append([]result{fetch(c3, urls[0])}, fetchAll(c3, urls[1:], 64)...) {
			if r.err != nil || r.status != 200 {
				t.Fatalf("mcs %d h3: %v %d", mcs, r.err, r.status)
			}
		}
		seen := map[Protocol]int{}
		for _, c := range s.Conns() {
			seen[c.Protocol]++
			switch c.Protocol {
			case H2, H2C:
				if c.H2.Streams != len(pg.Objects) {
					t.Errorf("mcs %d %s: %d streams, want %d", mcs, c.Protocol, c.H2.Streams, len(pg.Objects))
				}
				if mcs == 1 && c.H2.MaxOpenStreams != 1 {
					t.Errorf("mcs 1 %s: %d streams open at once", c.Protocol, c.H2.MaxOpenStreams)
				}
				if mcs == 100 && c.H2.MaxOpenStreams < 2 {
					t.Errorf("mcs 100 %s: at most %d streams open at once; the observer cannot tell", c.Protocol, c.H2.MaxOpenStreams)
				}
				if c.H2.ResetsReceived+c.H2.ResetsSent != 0 {
					t.Errorf("%s: streams were reset", c.Protocol)
				}
			case H3:
				if mcs == 1 && c.MaxActive != 1 {
					t.Errorf("mcs 1 h3: %d requests in handlers at once", c.MaxActive)
				}
				if mcs == 100 && c.MaxActive < 2 {
					t.Errorf("mcs 100 h3: at most %d requests in handlers at once", c.MaxActive)
				}
			}
		}
		if seen[H2] != 1 || seen[H2C] != 1 || seen[H3] != 1 {
			t.Errorf("mcs %d: connections %v, want one each", mcs, seen)
		}
		s.Close()
	}
}

func TestKeepAlive(t *testing.T) {
	pg, _ := page.Synthetic("synthetic:8x1kB", 1)
	for _, keep := range []bool{true, false} {
		s := startTest(t, pg, func(c *Config) { c.KeepAlive = keep })
		for _, proto := range []Protocol{H1, H1S} {
			c := newClient(t, s, proto, nil)
			urls, _ := s.URLs(proto, "ka")
			for _, u := range urls { // one after another: a kept-alive connection is reused
				if r := fetch(c, u); r.status != 200 {
					t.Fatalf("%s: %d %v", u, r.status, r.err)
				}
			}
		}
		perProto := map[Protocol]int{}
		for _, c := range s.Conns() {
			perProto[c.Protocol]++
		}
		for _, proto := range []Protocol{H1, H1S} {
			want := 1
			if !keep {
				want = len(pg.Objects)
			}
			if perProto[proto] != want {
				t.Errorf("keep-alive %v %s: %d connections for %d requests, want %d", keep, proto, perProto[proto], len(pg.Objects), want)
			}
		}
		s.Close()
	}
}

func TestTLSVersionAndResumption(t *testing.T) {
	pg, _ := page.Synthetic("synthetic:1x1kB", 1)
	for _, c := range []struct {
		version string
		resume  bool
	}{{"1.3", false}, {"1.3", true}, {"1.2", false}, {"1.2", true}} {
		s := startTest(t, pg, func(cfg *Config) { cfg.TLSVersion, cfg.SessionResumption = c.version, c.resume })
		cache := tls.NewLRUClientSessionCache(8)
		var states []tls.ConnectionState
		for range 2 {
			for _, proto := range []Protocol{H1S, H2} {
				cl := newClient(t, s, proto, func(tr any) {
					switch tr := tr.(type) {
					case *http.Transport:
						tr.TLSClientConfig.ClientSessionCache = cache
					case *http2.Transport:
						tr.TLSClientConfig.ClientSessionCache = cache
					}
				})
				url, _ := s.RootURL(proto, "tls")
				resp, err := cl.Get(url)
				if err != nil {
					t.Fatalf("TLS %s %s: %v", c.version, proto, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				states = append(states, *resp.TLS)
				cl.close()
			}
		}
		want := uint16(tls.VersionTLS13)
		if c.version == "1.2" {
			want = tls.VersionTLS12
		}
		for i, st := range states {
			if st.Version != want {
				t.Errorf("TLS %s: negotiated %x", c.version, st.Version)
			}
			if i >= 2 && st.DidResume != c.resume {
				t.Errorf("TLS %s resumption %v: connection %d resumed = %v", c.version, c.resume, i, st.DidResume)
			}
			if i < 1 && st.DidResume {
				t.Errorf("first connection resumed")
			}
		}
		// a client that only speaks the other version fails
		other := uint16(tls.VersionTLS12)
		if c.version == "1.2" {
			other = tls.VersionTLS13
		}
		cl := newClient(t, s, H1S, func(tr any) {
			tr.(*http.Transport).TLSClientConfig.MinVersion, tr.(*http.Transport).TLSClientConfig.MaxVersion = other, other
		})
		url, _ := s.RootURL(H1S, "tls")
		if _, err := cl.Get(url); err == nil {
			t.Errorf("TLS %s server accepted a client restricted to %x", c.version, other)
		}
		s.Close()
	}
}

func TestCertificates(t *testing.T) {
	pg, _ := page.Corpus("twitter", 1)
	pg2, _ := pg.Shard(2, page.ShardRoundRobin)
	s := startTest(t, pg2, nil)
	certs := s.Certs()
	for name, mode := range map[string]os.FileMode{CAFile: 0o644, CertFile: 0o644, KeyFile: 0o600} {
		st, err := os.Stat(filepath.Join(certs.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", name, st.Mode().Perm(), mode)
		}
	}
	leaf := certs.Leaf.Leaf
	pool := certs.CAPool()
	for _, name := range []string{"s1.wirelab.test", "s64.wirelab.test", "www.wirelab.test", "127.0.0.1", "127.0.0.2"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: name}); err != nil {
			t.Errorf("leaf not valid for %s: %v", name, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "example.com"}); err == nil {
		t.Error("leaf valid for example.com")
	}
	sum := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	if certs.SPKIHash != base64.StdEncoding.EncodeToString(sum[:]) || s.Info().SPKIHash != certs.SPKIHash {
		t.Error("SPKI hash does not match the leaf")
	}
	pemCA, _ := os.ReadFile(certs.CAPath())
	if !bytes.Equal(pemCA, certs.CAPEM) {
		t.Error("ca.pem differs from CAPEM")
	}
	dir := certs.Dir
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cert dir %s still exists after Close: %v", dir, err)
	}
	// a given directory is kept, the files are removed
	given := t.TempDir()
	s = startTest(t, pg, func(c *Config) { c.CertDir = given })
	if _, err := os.Stat(filepath.Join(given, KeyFile)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	left, _ := os.ReadDir(given)
	if len(left) != 0 {
		t.Errorf("files left in %s: %v", given, left)
	}
	// two servers in one directory: the second refuses to overwrite
	s = startTest(t, pg, func(c *Config) { c.CertDir = given })
	cfg := DefaultConfig(netip.MustParseAddr("127.0.0.9"))
	cfg.PortHTTP, cfg.PortHTTPS, cfg.PortQUIC, cfg.CertDir = 0, 0, 0, given
	if s2, err := Start(pg, cfg); err == nil {
		s2.Close()
		t.Error("a second server overwrote the first one's certificates")
	}
	s.Close()
}

// After Close nothing listens and nothing answers.
func TestCloseStopsListeners(t *testing.T) {
	pg, _ := page.Corpus("twitter", 1)
	s := startTest(t, pg, nil)
	c := newClient(t, s, H2C, nil)
	url, _ := s.RootURL(H2C, "c")
	if r := fetch(c, url); r.status != 200 {
		t.Fatal(r.err)
	}
	ports := s.Ports()
	s.Close()
	for _, p := range []int{ports.HTTP, ports.HTTPS} {
		if conn, err := net.Dial("tcp", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(p)).String()); err == nil {
			conn.Close()
			t.Errorf("port %d still accepts connections", p)
		}
	}
	if r := fetch(c, url); r.err == nil {
		t.Error("a kept h2c connection still answers after Close")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	pg, _ := page.Corpus("twitter", 1)
	cases := []struct {
		mutate func(*Config)
		field  string
	}{
		{func(c *Config) { c.MaxConcurrentStreams = 1001 }, "max_concurrent_streams"},
		{func(c *Config) { c.MaxConcurrentStreams = -1 }, "max_concurrent_streams"},
		{func(c *Config) { c.WriteChunkBytes = 100 }, "write_chunk_bytes"},
		{func(c *Config) { c.WriteChunkBytes = 2 << 20 }, "write_chunk_bytes"},
		{func(c *Config) { c.TLSVersion = "1.1" }, "tls_version"},
		{func(c *Config) { c.Protocols = []Protocol{"spdy2"} }, "protocols"},
		{func(c *Config) { c.PortQUIC = 70000 }, "port_quic"},
		{func(c *Config) { c.PortHTTP, c.PortHTTPS = 8080, 8080 }, "port_https"},
		{func(c *Config) { c.Addrs = nil }, "addrs"},
		{func(c *Config) { c.Addrs = loopback(2) }, "addrs"},
		{func(c *Config) { c.Addrs = []netip.Addr{{}} }, "addrs[0]"},
	}
	for _, c := range cases {
		cfg := DefaultConfig(loopback(1)...)
		cfg.PortHTTP, cfg.PortHTTPS, cfg.PortQUIC = 0, 0, 0
		c.mutate(&cfg)
		s, err := Start(pg, cfg)
		if err == nil {
			s.Close()
			t.Errorf("%s: accepted", c.field)
			continue
		}
		if fe, ok := fielderr.As(err); !ok || fe.Field != c.field {
			t.Errorf("%s: error %v", c.field, err)
		}
	}
	dup := DefaultConfig(netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.1"))
	pg2, _ := pg.Shard(2, page.ShardRoundRobin)
	if _, err := Start(pg2, dup); err == nil || !strings.HasPrefix(err.Error(), "addrs[1]:") {
		t.Errorf("duplicate address: %v", err)
	}
	if _, err := ParseProtocols("h2,h9"); err == nil {
		t.Error("ParseProtocols accepted h9")
	}
	if ps, err := ParseProtocols("h3, h1,h3"); err != nil || len(ps) != 2 {
		t.Errorf("ParseProtocols: %v %v", ps, err)
	}
}

// Only the configured protocols are served.
func TestProtocolSubset(t *testing.T) {
	pg, _ := page.Corpus("twitter", 1)
	s := startTest(t, pg, func(c *Config) { c.Protocols = []Protocol{H2C, H1S} })
	if s.Ports().QUIC != 0 {
		t.Error("h3 listener started")
	}
	for proto, ok := range map[Protocol]bool{H2C: true, H1S: true, H1: false, H2: false} {
		url, _ := s.RootURL(proto, "sub")
		r := fetch(newClient(t, s, proto, nil), url)
		if (r.err == nil && r.status == 200) != ok {
			t.Errorf("%s: status %d, err %v; served = %v", proto, r.status, r.err, ok)
		}
	}
}
