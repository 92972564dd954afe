package client

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Script is an h2c server (serveRaw) that answers each request with respond, which writes the
// response's frames (block encodes a header block into one HEADERS frame); it records the error
// codes of the RST_STREAM and GOAWAY frames the client sends.
type h2Script struct {
	respond func(fr *http2.Framer, block func(id uint32, endStream bool, fields ...string) error, id uint32, path string) error

	mu     sync.Mutex
	rsts   []http2.ErrCode
	goAway []http2.ErrCode
}

// h2cAccept starts the server's side of an h2c connection: it reads the client's preface and sends
// the server's SETTINGS; the framer decodes header blocks (ReadMetaHeaders) and henc encodes into
// hbuf. ok is false when the connection failed on the way.
func h2cAccept(c net.Conn) (fr *http2.Framer, henc *hpack.Encoder, hbuf *bytes.Buffer, ok bool) {
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c, preface); err != nil {
		return nil, nil, nil, false
	}
	fr = http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	hbuf = new(bytes.Buffer)
	henc = hpack.NewEncoder(hbuf)
	return fr, henc, hbuf, fr.WriteSettings() == nil
}

func (s *h2Script) serve(c net.Conn) {
	fr, henc, hbuf, ok := h2cAccept(c)
	if !ok {
		return
	}
	block := func(id uint32, endStream bool, fields ...string) error {
		hbuf.Reset()
		for i := 0; i+1 < len(fields); i += 2 {
			_ = henc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
		}
		return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hbuf.Bytes(), EndStream: endStream, EndHeaders: true})
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() && fr.WriteSettingsAck() != nil {
				return
			}
		case *http2.RSTStreamFrame:
			s.mu.Lock()
			s.rsts = append(s.rsts, f.ErrCode)
			s.mu.Unlock()
		case *http2.GoAwayFrame:
			s.mu.Lock()
			s.goAway = append(s.goAway, f.ErrCode)
			s.mu.Unlock()
		case *http2.MetaHeadersFrame:
			if s.respond(fr, block, f.StreamID, f.PseudoValue("path")) != nil {
				return
			}
		}
	}
}

// load loads /a alone (objects mode) from the script over h2c, with a 10 s timeout, and reports
// its result and how long it took. It loads in a Tab, which keeps the connection open after the
// load (until the test ends): the RST_STREAM or GOAWAY the client sent reaches the server before
// any close (a close with bytes unread is an RST, which could discard them).
func (s *h2Script) load(t *testing.T) (*Result, time.Duration) {
	t.Helper()
	ln, _ := serveRaw(t, s.serve)
	l, err := New(Config{Protocol: H2C, Mode: ModeObjects, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tab := l.NewTab(TabOptions{})
	t.Cleanup(tab.Close)
	start := time.Now()
	base := "http://" + ln.Addr().String()
	res, err := tab.Load(context.Background(), base+"/", []string{base + "/a"})
	if err != nil {
		t.Fatal(err)
	}
	return res, time.Since(start)
}

// codes waits briefly for the client's RST_STREAM or GOAWAY to reach the server and returns the
// codes seen.
func (s *h2Script) codes() (rsts, goAway []http2.ErrCode) {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		s.mu.Lock()
		rsts, goAway = slicesClone(s.rsts), slicesClone(s.goAway)
		s.mu.Unlock()
		if len(rsts)+len(goAway) > 0 {
			break
		}
	}
	return rsts, goAway
}

func slicesClone(v []http2.ErrCode) []http2.ErrCode { return append([]http2.ErrCode(nil), v...) }

// checkFailed: the load's one request failed at once (not at the timeout) with an error naming
// want, and the client reset its stream with PROTOCOL_ERROR.
func (s *h2Script) checkFailed(t *testing.T, want string) {
	t.Helper()
	res, took := s.load(t)
	if res.Err == nil || !strings.Contains(res.Err.Error(), want) || took > 5*time.Second {
		t.Errorf("load: %v after %v; want an error naming %q at once", res.Err, took.Round(time.Millisecond), want)
	}
	if rsts, _ := s.codes(); len(rsts) != 1 || rsts[0] != http2.ErrCodeProtocol {
		t.Errorf("client's RST_STREAMs %v; want one PROTOCOL_ERROR", rsts)
	}
}

// An informational (1xx) response with END_STREAM resets its stream (no final response can
// follow), as x/net does; so do more than five informational responses before the final one. Five
// pass.
func TestH2Informational(t *testing.T) {
	t.Run("end-stream", func(t *testing.T) {
		s := &h2Script{respond: func(fr *http2.Framer, block func(uint32, bool, ...string) error, id uint32, path string) error {
			return block(id, true, ":status", "103", "link", "</x.css>; rel=preload")
		}}
		s.checkFailed(t, "END_STREAM")
	})
	for _, n := range []int{5, 6} {
		s := &h2Script{respond: func(fr *http2.Framer, block func(uint32, bool, ...string) error, id uint32, path string) error {
			for range n {
				if err := block(id, false, ":status", "103"); err != nil {
					return err
				}
			}
			if n > 5 {
				// Nothing after the sixth: the client closes with nothing unread (unread bytes
				// would make its close an RST, which can discard its RST_STREAM here).
				return nil
			}
			if err := block(id, false, ":status", "200", "content-length", "2"); err != nil {
				return err
			}
			return fr.WriteData(id, true, []byte("ok"))
		}}
		if n == 6 {
			t.Run("six", func(t *testing.T) { s.checkFailed(t, "1xx informational responses") })
			continue
		}
		t.Run("five", func(t *testing.T) {
			if res, _ := s.load(t); res.Err != nil || res.Objects != 1 {
				t.Errorf("five 103s, then 200: %v, %d objects", res.Err, res.Objects)
			}
		})
	}
}

// A header block HPACK cannot decode is a connection error of type COMPRESSION_ERROR (RFC 9113
// §4.3): the client's GOAWAY says so; a CONTINUATION flood's stays PROTOCOL_ERROR.
func TestH2GoAwayCodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		want http2.ErrCode
		frag []byte // the HEADERS frame's fragment (END_HEADERS unless continued)
		cont bool   // followed by CONTINUATIONs
	}{
		{"hpack", http2.ErrCodeCompression, []byte{0xbf, 0x7f}, false}, // index 63 of an empty dynamic table
		{"flood", http2.ErrCodeProtocol, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &h2Script{respond: func(fr *http2.Framer, block func(uint32, bool, ...string) error, id uint32, path string) error {
				frag := tc.frag
				if tc.cont {
					var hbuf bytes.Buffer
					_ = hpack.NewEncoder(&hbuf).WriteField(hpack.HeaderField{Name: "X-Upper", Value: "1"})
					frag = append([]byte{0x88}, hbuf.Bytes()...) // :status 200, then an invalid name
				}
				err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: frag, EndHeaders: !tc.cont})
				// One CONTINUATION: the client fails at it, and closes with nothing unread (more
				// unread bytes would make its close an RST, which can discard its GOAWAY here).
				if tc.cont && err == nil {
					err = fr.WriteContinuation(id, false, []byte{0x40, 0x01, 'x', 0x01, 'y'})
				}
				return err
			}}
			res, _ := s.load(t)
			if res.Err == nil {
				t.Errorf("load complete; want it failed")
			}
			if _, goAway := s.codes(); len(goAway) != 1 || goAway[0] != tc.want {
				t.Errorf("client's GOAWAYs %v; want one %v", goAway, tc.want)
			}
		})
	}
}

// Trailers with a pseudo-header reset the stream (RFC 9113 §8.1: a malformed response); plain
// trailers end it.
func TestH2TrailersPseudoHeader(t *testing.T) {
	for _, pseudo := range []bool{true, false} {
		s := &h2Script{respond: func(fr *http2.Framer, block func(uint32, bool, ...string) error, id uint32, path string) error {
			if err := block(id, false, ":status", "200", "content-length", "2"); err != nil {
				return err
			}
			if err := fr.WriteData(id, false, []byte("ok")); err != nil {
				return err
			}
			if pseudo {
				return block(id, true, ":status", "200", "x-trailer", "1")
			}
			return block(id, true, "x-trailer", "1")
		}}
		if pseudo {
			s.checkFailed(t, "pseudo-header field in trailers")
		} else if res, _ := s.load(t); res.Err != nil || res.Objects != 1 {
			t.Errorf("plain trailers: %v, %d objects; want the object complete", res.Err, res.Objects)
		}
	}
}

// :status is three digits and content-length digits alone, as parseH1Head reads an HTTP/1.1 head:
// strconv's signs and other forms are not taken.
func TestH2StatusAndLength(t *testing.T) {
	for _, tc := range []struct {
		status string
		ok     bool
		want   int
	}{{"200", true, 200}, {"103", true, 103}, {"999", true, 999}, {"+200", false, 0}, {"0200", false, 0}, {"099", false, 0}, {"20", false, 0}, {"2000", false, 0}, {"-20", false, 0}, {"", false, 0}} {
		b := &h2HeaderBlock{status: tc.status}
		if got, ok := b.statusCode(); ok != tc.ok || ok && got != tc.want {
			t.Errorf(":status %q: %d, %v; want %d, %v", tc.status, got, ok, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		value string
		want  int64
	}{{"0", 0}, {"2147", 2147}, {"+5", -1}, {"-1", -1}, {" 5", -1}, {"5 ", -1}, {"0x10", -1}, {"", -1}, {"1234567890123456789", -1}, {"123456789012345678", 123456789012345678}} {
		if got := (&h2HeaderBlock{contentLen: tc.value}).contentLength(); got != tc.want {
			t.Errorf("content-length %q: %d; want %d", tc.value, got, tc.want)
		}
	}
}
