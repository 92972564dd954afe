package server

import (
	"testing"

	"golang.org/x/net/http2"

	"github.com/wirelab/wirelab/engine/page"
)

// rawGet opens a fresh HTTP/2 connection with a Framer, requests path and returns the sizes of
// the DATA frames of the response, in order. The client opens its windows wide so that flow
// control never splits a frame.
func rawGet(t *testing.T, s *Server, proto Protocol, path string) []int {
	t.Helper()
	c := dialRawH2(t, s, proto)
	defer c.conn.Close()
	c.get(1, path)
	var sizes []int
	for {
		switch f := c.next().(type) {
		case *http2.DataFrame:
			if f.StreamID == 1 {
				sizes = append(sizes, len(f.Data()))
				if f.StreamEnded() {
					return sizes
				}
			}
		case *http2.MetaHeadersFrame:
			if f.StreamID == 1 && f.StreamEnded() {
				t.Fatalf("%s: no body", path)
			}
		case *http2.RSTStreamFrame, *http2.GoAwayFrame:
			t.Fatalf("%s: %v", path, f)
		}
	}
}

// WriteChunkBytes caps every DATA frame: all but the last carry exactly the chunk; without it the
// frames carry the peer's default max frame size (16384). The server's own frame observer agrees.
func TestWriteChunkBytes(t *testing.T) {
	pg, _ := page.Synthetic("synthetic:1x100kB", 1)
	path := "/L/raw" + pg.Objects[1].Path
	for _, chunk := range []int{0, 4096, 1000, 256, 16384, 40000} {
		s := startTest(t, pg, func(c *Config) { c.WriteChunkBytes = chunk })
		for _, proto := range []Protocol{H2, H2C} {
			sizes := rawGet(t, s, proto, path)
			// x/net/http2 ends the stream with an empty DATA frame of its own
			if len(sizes) > 0 && sizes[len(sizes)-1] == 0 {
				sizes = sizes[:len(sizes)-1]
			}
			want := chunk
			if chunk == 0 || chunk > 16384 {
				want = 16384 // the peer's SETTINGS_MAX_FRAME_SIZE (default) bounds a frame
			}
			total, inChunk := 0, 0
			for i, n := range sizes {
				total += n
				inChunk += n
				full := n == want
				if chunk > 16384 { // a chunk is split at the frame size limit: 16384, 16384, rest
					full = n == want || inChunk == chunk
				}
				if inChunk == chunk {
					inChunk = 0
				}
				if n == 0 || n > want || (i < len(sizes)-1 && !full) {
					t.Errorf("chunk %d %s: frame %d carries %d bytes; frames %v", chunk, proto, i, n, sizes)
					break
				}
			}
			if total != 100000 {
				t.Errorf("chunk %d %s: %d body bytes", chunk, proto, total)
			}
		}
		for _, c := range s.Conns() {
			if c.H2 == nil {
				continue
			}
			limit := chunk
			if chunk == 0 || chunk > 16384 {
				limit = 16384
			}
			if c.H2.MaxDataFrame != limit || c.H2.DataBytes != 100000 {
				t.Errorf("chunk %d: the observer saw max DATA %d, %d bytes", chunk, c.H2.MaxDataFrame, c.H2.DataBytes)
			}
		}
		s.Close()
	}
}

// For HTTP/1.1 and HTTP/3 the chunk size is not visible as frames on a plain client; the body
// still arrives whole and exact.
func TestWriteChunkBytesOtherProtocols(t *testing.T) {
	pg, _ := page.Synthetic("synthetic:3x50kB", 1)
	s := startTest(t, pg, func(c *Config) { c.WriteChunkBytes = 4096 })
	for _, proto := range []Protocol{H1, H1S, H3} {
		n, b := loadPage(t, s, newClient(t, s, proto, nil), proto, "chunked")
		if n != 4 || b != pg.TotalBytes() {
			t.Errorf("%s: %d objects, %d bytes", proto, n, b)
		}
	}
}
