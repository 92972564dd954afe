package server

import (
	"net"
	"sort"
	"sync"
)

// The stream map of an HTTP/2 connection says which bytes of the server's TCP byte stream carried
// which stream's DATA: what engine/why needs to tell head-of-line blocking (a lost segment
// holding other streams' bytes) from a stream's own loss, since TLS hides the frames from the
// packet log. The frame observer knows each DATA payload's offset in the plaintext the server
// writes; a rawCounter under the TLS connection sees each TLS record crypto/tls writes for it
// (one write per record), so every plaintext byte maps to its TCP payload offset exactly.

// rawCounter is the TCP socket under a TLS connection: it counts the bytes written to it and, while
// a byteMap's write is in progress, notes each record's place.
type rawCounter struct {
	net.Conn
	mu      sync.Mutex
	written int64
	records [][2]int64 // during a plaintext write: each record's raw offset and length
	noting  bool
}

func newRawCounter(c net.Conn) net.Conn { return &rawCounter{Conn: c} }

func (c *rawCounter) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.mu.Lock()
	if c.noting {
		c.records = append(c.records, [2]int64{c.written, int64(n)})
	}
	c.written += int64(n)
	c.mu.Unlock()
	return n, err
}

func (c *rawCounter) begin() {
	c.mu.Lock()
	c.noting, c.records = true, c.records[:0]
	c.mu.Unlock()
}

func (c *rawCounter) end() [][2]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.noting = false
	return c.records
}

// byteMap follows one h2 connection's plaintext to its TCP payload offsets.
type byteMap struct {
	mu    sync.Mutex
	raw   *rawCounter // nil for h2c: plaintext is the TCP payload
	plain int64       // plaintext bytes written so far
	segs  []mapSeg    // plaintext [p, p+n) went at TCP payload [r, r+n), in order
	data  []dataRange // DATA payloads in plaintext offsets, in order
}

type mapSeg struct{ p, r, n int64 }

type dataRange struct {
	stream uint32
	p, n   int64
}

func newByteMap(c net.Conn) *byteMap {
	m := &byteMap{}
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok {
		if rc, ok := tc.NetConn().(*rawCounter); ok {
			m.raw = rc
		} else {
			return nil // TLS over a socket we cannot see: no map
		}
	}
	return m
}

// write writes p (plaintext, the frames already fed to the observer) through w and maps it.
func (m *byteMap) write(p []byte, w func([]byte) (int, error)) (int, error) {
	if m.raw == nil {
		n, err := w(p)
		m.mu.Lock()
		m.segs = append(m.segs, mapSeg{m.plain, m.plain, int64(n)})
		m.plain += int64(n)
		m.mu.Unlock()
		return n, err
	}
	m.raw.begin()
	n, err := w(p)
	recs := m.raw.end()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(recs) == 0 {
		m.plain += int64(n)
		return n, err
	}
	var rawTotal int64
	for _, r := range recs {
		rawTotal += r[1]
	}
	overhead := (rawTotal - int64(n)) / int64(len(recs)) // per record: header, content type, tag
	for _, r := range recs {
		k := r[1] - overhead
		m.segs = append(m.segs, mapSeg{m.plain, r[0] + recordHeaderLen, k})
		m.plain += k
	}
	return n, err
}

// recordHeaderLen is a TLS record's header (type, version, length).
const recordHeaderLen = 5

// dataFrame notes a DATA payload of n bytes of stream at plaintext offset p.
func (m *byteMap) dataFrame(stream uint32, p, n int64) {
	if n <= 0 {
		return
	}
	m.mu.Lock()
	m.data = append(m.data, dataRange{stream, p, n})
	m.mu.Unlock()
}

// runs is the stream map: [stream, start, end) in TCP payload offsets from the server's first
// byte, consecutive runs of a stream merged.
func (m *byteMap) runs() [][3]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out [][3]int64
	for _, d := range m.data {
		p, end := d.p, d.p+d.n
		for p < end {
			k := sort.Search(len(m.segs), func(k int) bool { return m.segs[k].p+m.segs[k].n > p })
			if k == len(m.segs) || m.segs[k].p > p {
				break // written outside what was mapped (cannot happen): leave the rest out
			}
			s := m.segs[k]
			n := min(end, s.p+s.n) - p
			r := s.r + (p - s.p)
			if l := len(out); l > 0 && out[l-1][0] == int64(d.stream) && out[l-1][2] == r {
				out[l-1][2] += n
			} else {
				out = append(out, [3]int64{int64(d.stream), r, r + n})
			}
			p += n
		}
	}
	return out
}
