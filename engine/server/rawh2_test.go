package server

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	neturl "net/url"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// rawH2 is a test HTTP/2 client on x/net's Framer: it sends what a test says (settings, priority
// signals) and reports every frame it reads.
type rawH2 struct {
	t    *testing.T
	conn net.Conn
	fr   *http2.Framer
	enc  *hpack.Encoder
	hb   bytes.Buffer
	dec  *hpack.Decoder
	host string
}

// dialOrigin opens a TCP connection to the server's first origin for proto, with TLS (ALPN h2)
// for H2, and returns it with that origin's host:port. The caller closes it.
func dialOrigin(t *testing.T, s *Server, proto Protocol) (net.Conn, string) {
	t.Helper()
	root, _ := s.RootURL(proto, "raw")
	u, _ := neturl.Parse(root)
	conn := dialHost(t, s, u.Host)
	if proto != H2 {
		return conn, u.Host
	}
	tc := tls.Client(conn, &tls.Config{RootCAs: s.certs.CAPool(), ServerName: u.Hostname(), NextProtos: []string{"h2"}})
	if err := tc.Handshake(); err != nil {
		conn.Close()
		t.Fatal(err)
	}
	return tc, u.Host
}

// dialRawH2 connects to the server's first origin over proto (h2 or h2c), sends the preface with
// settings (plus a wide-open window) and returns the client.
func dialRawH2(t *testing.T, s *Server, proto Protocol, settings ...http2.Setting) *rawH2 {
	t.Helper()
	c, host := dialOrigin(t, s, proto)
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	r := &rawH2{t: t, conn: c, fr: http2.NewFramer(c, c), host: host}
	r.dec = hpack.NewDecoder(4096, nil)
	r.fr.ReadMetaHeaders = r.dec
	r.enc = hpack.NewEncoder(&r.hb)
	settings = append([]http2.Setting{{ID: http2.SettingInitialWindowSize, Val: 1 << 30}}, settings...)
	if err := r.fr.WriteSettings(settings...); err != nil {
		t.Fatal(err)
	}
	if err := r.fr.WriteWindowUpdate(0, 1<<30); err != nil {
		t.Fatal(err)
	}
	return r
}

// get sends a GET of path on stream id with extra header fields.
func (r *rawH2) get(id uint32, path string, extra ...[2]string) {
	r.t.Helper()
	r.hb.Reset()
	fields := append([][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", r.host}, {":path", path}}, extra...)
	if _, ok := r.conn.(*tls.Conn); !ok {
		fields[1][1] = "http"
	}
	for _, f := range fields {
		r.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := r.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: r.hb.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		r.t.Fatal(err)
	}
}

// promisedPath decodes a PUSH_PROMISE's (complete) header block and returns its :path.
func (r *rawH2) promisedPath(f *http2.PushPromiseFrame) string {
	r.t.Helper()
	if !f.HeadersEnded() {
		r.t.Fatal("PUSH_PROMISE with CONTINUATION: not handled by this test client")
	}
	fields, err := r.dec.DecodeFull(f.HeaderBlockFragment())
	if err != nil {
		r.t.Fatal(err)
	}
	for _, hf := range fields {
		if hf.Name == ":path" {
			return hf.Value
		}
	}
	return ""
}

// next reads a frame, answering SETTINGS; it fails the test on a read error.
func (r *rawH2) next() http2.Frame {
	r.t.Helper()
	for {
		f, err := r.fr.ReadFrame()
		if err != nil {
			r.t.Fatalf("reading frames: %v", err)
		}
		if sf, ok := f.(*http2.SettingsFrame); ok {
			if !sf.IsAck() {
				r.fr.WriteSettingsAck()
			}
			continue
		}
		return f
	}
}
