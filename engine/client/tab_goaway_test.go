package client

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// goAwayAfterServer is an h2c server (serveRaw) that answers the first perConn requests of each
// connection and, when a request beyond them arrives, sends GOAWAY naming the last one it
// answered — so the requests the client already sent above it must be sent again on a new
// connection (RFC 9113 §6.8). The page is html, a document with images images of the same origin.
type goAwayAfterServer struct {
	perConn int
	html    []byte
	mu      sync.Mutex
	got     []int // requests received on each connection, in accept order
}

func (g *goAwayAfterServer) serve(c net.Conn) {
	fr, henc, hbuf, ok := h2cAccept(c)
	if !ok {
		return
	}
	g.mu.Lock()
	k := len(g.got)
	g.got = append(g.got, 0)
	g.mu.Unlock()
	answered, lastID, goneAway := 0, uint32(0), false
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return // the client closed the connection
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() && fr.WriteSettingsAck() != nil {
				return
			}
		case *http2.MetaHeadersFrame:
			g.mu.Lock()
			g.got[k]++
			g.mu.Unlock()
			if goneAway {
				continue // above the last stream id: never processed
			}
			if answered == g.perConn {
				goneAway = true
				if fr.WriteGoAway(lastID, http2.ErrCodeNo, nil) != nil {
					return
				}
				continue
			}
			body, ctype := []byte("image"), "image/png"
			if f.PseudoValue("path") == "/" {
				body, ctype = g.html, "text/html"
			}
			hbuf.Reset()
			for _, hf := range []hpack.HeaderField{{Name: ":status", Value: "200"}, {Name: "content-type", Value: ctype},
				{Name: "content-length", Value: fmt.Sprint(len(body))}} {
				_ = henc.WriteField(hf)
			}
			if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: hbuf.Bytes(), EndHeaders: true}) != nil ||
				fr.WriteData(f.StreamID, true, body) != nil {
				return
			}
			answered, lastID = answered+1, f.StreamID
		}
	}
}

func (g *goAwayAfterServer) received() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.got...)
}

// TestTabH2GoAwayRetriesSubmitted: requests a Tab sent on its kept connection without a goroutine
// of their own (h2Pool.submit) that a GOAWAY leaves unprocessed (their stream ids above its last
// one) are sent again on a new connection (h2Pool.again): every load completes, and its retries
// are at least the requests the first connection received beyond those the server answered.
func TestTabH2GoAwayRetriesSubmitted(t *testing.T) {
	const images, perConn = 24, 5
	var html strings.Builder
	html.WriteString("<!doctype html><html><body>")
	for i := range images {
		fmt.Fprintf(&html, `<img src="/i%d.png">`, i)
	}
	html.WriteString("</body></html>")
	g := &goAwayAfterServer{perConn: perConn, html: []byte(html.String())}
	ln, accepted := serveRaw(t, g.serve)
	cfg := Config{Protocol: H2C, Resolver: StaticResolver{"s1.wirelab.test": mustAddr("127.0.0.1")}, Timeout: 10 * time.Second}
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tab := l.NewTab(TabOptions{})
	t.Cleanup(tab.Close)
	root := fmt.Sprintf("http://s1.wirelab.test:%d/", ln.Addr().(*net.TCPAddr).Port)
	opened := 0
	for load := range 2 {
		before := len(g.received())
		res, err := tab.Load(context.Background(), root, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Err != nil || res.Objects != 1+images {
			t.Fatalf("load %d: %d objects of %d, error %v", load+1, res.Objects, 1+images, res.Err)
		}
		checkTimings(t, res)
		got := g.received()
		// The load's first connection: the root (stream 1) and then the images, sent together
		// once the root's body named them — on the connection by then kept and open (submit).
		if beyond := got[before] - perConn; beyond < 1 || res.Retries < beyond {
			t.Errorf("load %d: its first connection received %d requests (server answers %d), the load retried %d; want requests beyond %d, each retried",
				load+1, got[before], perConn, res.Retries, perConn)
		}
		opened += res.Connections
	}
	if n := accepted.Load(); int(n) != opened {
		t.Errorf("server accepted %d connections, the loads record %d", n, opened)
	}
}
