package server

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	neturl "net/url"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/wirelab/wirelab/engine/page"
)

// teeConn keeps every byte read from the socket: what crossed the wire towards the client.
type teeConn struct {
	net.Conn
	mu  sync.Mutex
	got bytes.Buffer
}

func (c *teeConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.got.Write(p[:n])
	c.mu.Unlock()
	return n, err
}

// TestStreamMap: the map of which TCP bytes carried which stream's DATA is exact. Over h2c the
// wire is the frames themselves, so the map must name every DATA payload's bytes; over h2 every
// run must lie inside a TLS record's payload and add up to the stream's DATA bytes.
func TestStreamMap(t *testing.T) {
	pg, _ := page.Corpus("twitter", 1)
	maps := make(chan H2Closed, 4)
	s := startTest(t, pg, func(c *Config) { c.OnH2Closed = func(h H2Closed) { maps <- h } })
	for _, proto := range []Protocol{H2C, H2} {
		t.Run(string(proto), func(t *testing.T) {
			root, _ := s.RootURL(proto, "map")
			u, _ := neturl.Parse(root)
			raw := dialHost(t, s, u.Host)
			tee := &teeConn{Conn: raw}
			var c net.Conn = tee
			if proto == H2 {
				tc := tls.Client(tee, &tls.Config{RootCAs: s.certs.CAPool(), ServerName: u.Hostname(), NextProtos: []string{"h2"}})
				if err := tc.Handshake(); err != nil {
					t.Fatal(err)
				}
				c = tc
			}
			io.WriteString(c, http2.ClientPreface)
			fr := http2.NewFramer(c, c)
			fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 30})
			fr.WriteWindowUpdate(0, 1<<30)
			var hb bytes.Buffer
			enc := hpack.NewEncoder(&hb)
			scheme := map[Protocol]string{H2: "https", H2C: "http"}[proto]
			want := map[uint32]int64{}
			for i, o := range pg.Objects[:4] {
				id := uint32(2*i + 1)
				hb.Reset()
				path := u.Path
				if i > 0 {
					path += o.Path[1:]
				}
				for _, f := range [][2]string{{":method", "GET"}, {":scheme", scheme}, {":authority", u.Host}, {":path", path}} {
					enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
				}
				fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
				want[id] = 0
			}
			open := len(want)
			for open > 0 {
				f, err := fr.ReadFrame()
				if err != nil {
					t.Fatal(err)
				}
				switch f := f.(type) {
				case *http2.SettingsFrame:
					if !f.IsAck() {
						fr.WriteSettingsAck()
					}
				case *http2.DataFrame:
					want[f.StreamID] += int64(len(f.Data()))
					if f.StreamEnded() {
						open--
					}
				}
			}
			c.Close()
			var got H2Closed
			select {
			case got = <-maps:
			case <-time.After(5 * time.Second):
				t.Fatal("no stream map reported")
			}
			if got.Remote != raw.LocalAddr().String() {
				t.Errorf("remote %s, the client is %s", got.Remote, raw.LocalAddr())
			}
			tee.mu.Lock()
			wire := tee.got.Bytes()
			tee.mu.Unlock()
			perStream := map[uint32]int64{}
			prevEnd := int64(-1)
			for _, r := range got.StreamMap {
				if r[1] < prevEnd || r[2] <= r[1] || r[2] > int64(len(wire)) {
					t.Fatalf("run %v out of order or outside the %d bytes received", r, len(wire))
				}
				prevEnd = r[2]
				perStream[uint32(r[0])] += r[2] - r[1]
			}
			for id, n := range want {
				if perStream[id] != n {
					t.Errorf("stream %d: %d DATA bytes received, %d mapped", id, n, perStream[id])
				}
			}
			if proto == H2C {
				// The wire is the frames: walk them and compare each DATA payload with the map.
				var runs [][3]int64
				for off := int64(0); off+9 <= int64(len(wire)); {
					n := int64(wire[off])<<16 | int64(wire[off+1])<<8 | int64(wire[off+2])
					typ, id := http2.FrameType(wire[off+3]), binary.BigEndian.Uint32(wire[off+5:])&0x7fffffff
					if typ == http2.FrameData && n > 0 {
						if l := len(runs); l > 0 && runs[l-1][0] == int64(id) && runs[l-1][2] == off+9 {
							runs[l-1][2] += n
						} else {
							runs = append(runs, [3]int64{int64(id), off + 9, off + 9 + n})
						}
					}
					off += 9 + n
				}
				if len(runs) != len(got.StreamMap) {
					t.Fatalf("%d DATA runs on the wire, %d in the map", len(runs), len(got.StreamMap))
				}
				for i := range runs {
					if runs[i] != got.StreamMap[i] {
						t.Errorf("run %d: wire %v, map %v", i, runs[i], got.StreamMap[i])
					}
				}
				return
			}
			// h2: every run inside one record's payload (header, then payload, then 17 bytes of
			// content type and tag).
			type rec struct{ from, to int64 }
			var recs []rec
			for off := int64(0); off+5 <= int64(len(wire)); {
				n := int64(binary.BigEndian.Uint16(wire[off+3:]))
				recs = append(recs, rec{off + 5, off + 5 + n - 17})
				off += 5 + n
			}
			for _, r := range got.StreamMap {
				inside := false
				for _, rc := range recs {
					if r[1] >= rc.from && r[2] <= rc.to {
						inside = true
						break
					}
				}
				if !inside {
					t.Errorf("run %v is not inside one record's payload", r)
				}
			}
		})
	}
}
