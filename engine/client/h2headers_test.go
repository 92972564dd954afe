package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// continuedServer is an h2c server (serveRaw) whose every response header block is large (40
// fields, values naming the request, so that the HPACK dynamic table fills and evicts) and split
// into a HEADERS frame and CONTINUATION frames of 64 bytes. /early.png is preceded by a 103 block;
// /bad.png carries a field name in upper case (RFC 9113 §8.2.1: a malformed response).
type continuedServer struct {
	html []byte
	sent atomic.Int64 // header blocks written
}

func (s *continuedServer) serve(c net.Conn) {
	fr, henc, hbuf, ok := h2cAccept(c)
	if !ok {
		return
	}
	block := func(id uint32, fields []hpack.HeaderField, endStream bool) error {
		s.sent.Add(1) // before the write: the client may end its load as soon as it has read the block
		hbuf.Reset()
		for _, hf := range fields {
			_ = henc.WriteField(hf)
		}
		b := hbuf.Bytes()
		n := min(len(b), 64)
		err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b[:n], EndStream: endStream, EndHeaders: n == len(b)})
		for b = b[n:]; err == nil && len(b) > 0; b = b[n:] {
			n = min(len(b), 64)
			err = fr.WriteContinuation(id, n == len(b), b[:n])
		}
		return err
	}
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
			path := f.PseudoValue("path")
			body, ctype := []byte("image"), "image/png"
			if path == "/" {
				body, ctype = s.html, "text/html"
			}
			if path == "/early.png" && block(f.StreamID, []hpack.HeaderField{{Name: ":status", Value: "103"}, {Name: "link", Value: "</x.css>; rel=preload"}}, false) != nil {
				return
			}
			fields := []hpack.HeaderField{{Name: ":status", Value: "200"}, {Name: "content-type", Value: ctype},
				{Name: "content-length", Value: fmt.Sprint(len(body))}}
			for i := range 40 {
				fields = append(fields, hpack.HeaderField{Name: fmt.Sprintf("x-filler-%d", i), Value: fmt.Sprintf("%s %d %s", path, i, strings.Repeat("v", 20))})
			}
			if path == "/bad.png" {
				fields = append(fields, hpack.HeaderField{Name: "X-Upper", Value: "1"})
			}
			if block(f.StreamID, fields, false) != nil || fr.WriteData(f.StreamID, true, body) != nil {
				return
			}
		}
	}
}

// TestH2HeaderBlocks: response header blocks continued in CONTINUATION frames are decoded (the
// loader's own decoding, h2HeaderBlock), an informational block is followed by the final one, a
// block with a field name in upper case fails its request alone (a stream error), and the HPACK
// context stays in step through all of them: two loads of a Tab complete every other object on
// one connection.
func TestH2HeaderBlocks(t *testing.T) {
	const images = 12
	var html strings.Builder
	html.WriteString("<!doctype html><html><body>")
	for i := range images {
		fmt.Fprintf(&html, `<img src="/i%d.png">`, i)
	}
	html.WriteString(`<img src="/early.png"><img src="/bad.png"></body></html>`)
	s := &continuedServer{html: []byte(html.String())}
	ln, accepted := serveRaw(t, s.serve)
	l, err := New(Config{Protocol: H2C, Resolver: StaticResolver{"s1.wirelab.test": mustAddr("127.0.0.1")}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var failed, ok, bodyBytes atomic.Int64
	tab := l.NewTab(TabOptions{OnRequest: func(st RequestStats) {
		if st.Err != nil {
			failed.Add(1)
			if !strings.Contains(st.Err.Error(), `"X-Upper"`) {
				t.Errorf("request failed with %v, want the invalid field name", st.Err)
			}
			return
		}
		ok.Add(1)
		bodyBytes.Add(st.BodyBytes)
	}})
	t.Cleanup(tab.Close)
	root := fmt.Sprintf("http://s1.wirelab.test:%d/", ln.Addr().(*net.TCPAddr).Port)
	for load := range 2 {
		res, err := tab.Load(context.Background(), root, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Err == nil || res.Objects != 1+images+1 {
			t.Errorf("load %d: %d objects complete, error %v; want %d and /bad.png's stream error", load+1, res.Objects, res.Err, 1+images+1)
		}
	}
	if failed.Load() != 2 || ok.Load() != 2*(1+images+1) {
		t.Errorf("%d requests failed and %d complete; want 2 and %d", failed.Load(), ok.Load(), 2*(1+images+1))
	}
	if want := int64(2 * (len(s.html) + (images+1)*len("image"))); bodyBytes.Load() != want {
		t.Errorf("body bytes %d, want %d", bodyBytes.Load(), want)
	}
	if n := accepted.Load(); n != 1 {
		t.Errorf("server accepted %d connections, want 1 (the HPACK context out of step fails the connection)", n)
	}
	if s.sent.Load() < 2*(images+4) {
		t.Errorf("the server wrote %d header blocks, want %d", s.sent.Load(), 2*(images+4))
	}
}

// TestH2HeaderBlockFlood: a CONTINUATION frame after a field that made the block invalid is a
// connection error (PROTOCOL_ERROR), as in x/net: the fields of an invalid block no longer count
// against the header list's budget, so a server could otherwise go on sending CONTINUATION frames
// that are all decoded (CVE-2023-45288). A block whose invalid field comes in its last fragment is
// a stream error alone.
func TestH2HeaderBlockFlood(t *testing.T) {
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	_ = enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
	_ = enc.WriteField(hpack.HeaderField{Name: "X-Upper", Value: "1"})
	first := bytes.Clone(hbuf.Bytes())
	hbuf.Reset()
	_ = enc.WriteField(hpack.HeaderField{Name: "x-more", Value: "1"})
	more := bytes.Clone(hbuf.Bytes())
	for _, continued := range []bool{true, false} {
		var wire bytes.Buffer
		fr := http2.NewFramer(&wire, &wire)
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: first, EndHeaders: !continued}); err != nil {
			t.Fatal(err)
		}
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		hf := f.(*http2.HeadersFrame)
		b := newH2HeaderBlock(1<<20, false)
		b.begin(hf)
		done, err := b.fragment(hf.HeaderBlockFragment(), hf.HeadersEnded())
		if err != nil || done == continued || b.streamError() == nil {
			t.Fatalf("continued %v: the HEADERS frame: done %v, %v, stream error %v; want a stream error to come", continued, done, err, b.streamError())
		}
		if !continued {
			continue
		}
		for i := range 3 {
			done, err = b.fragment(more, false)
			var ce http2.ConnectionError
			if !done || !errors.As(err, &ce) || http2.ErrCode(ce) != http2.ErrCodeProtocol {
				t.Fatalf("CONTINUATION %d after the invalid field: done %v, %v; want a PROTOCOL_ERROR connection error", i+1, done, err)
			}
		}
	}
}
