package realtime

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/wirelab/wirelab/engine/internal/rtlock"
)

// pool recycles packet buffers between a direction's reader (which takes them) and its writer
// (which returns them). It grows as needed and never shrinks: its size is the peak number of
// packets inside the link (queue plus delay line) plus a read batch.
//
// Every buffer has an id, its index in the pool's registry, and that id is the Handle under which
// the runner pushes the buffer's packet into the link: when the link hands the handle back, the
// buffer is the registry's entry, and what the runner knows of the packet — its length and when
// it was read — lies in the buffer's own headroom (meta). A table of entries beside the buffers
// (the runner's until 2026-11-29) was written by the reader at every push and by the writer at
// every pop, so its lines moved between the two CPUs with every packet (5–7 % of the capacity
// run's CPU: docs/network.md, "The per-packet path, session 41"); the registry is written once per buffer, when it is
// made, and the headroom shares its cache line with the packet's headers, which the writer reads
// anyway.
type pool struct {
	mu   rtlock.Mutex
	free []Handle
	size int
	n    int // buffers made (the next id)
	// chunks is the registry: buffer id → buffer, chunkLen per chunk. The top level never moves,
	// so the writer reads it under the pipe's lock while the reader adds chunks under the pool's.
	chunks [maxChunks]*[chunkLen][]byte
}

const (
	chunkLen  = 1024
	maxChunks = 4096 // 4 M buffers: a 10 Gbit/s path with a 5 s one-way delay
)

// errPoolFull: the registry has no room for another buffer.
var errPoolFull = errors.New("realtime: more than 4 M packets inside the link")

func newPool(size int) *pool { return &pool{size: size} }

// fill replaces the nil entries of bufs with buffers and writes their ids to ids. It stops at the
// first it cannot fill (errPoolFull; the reader then reads into what it has).
func (p *pool) fill(bufs [][]byte, ids []Handle) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range bufs {
		if bufs[i] != nil {
			continue
		}
		var id Handle
		if n := len(p.free); n > 0 {
			id = p.free[n-1]
			p.free = p.free[:n-1]
		} else {
			if p.n >= maxChunks*chunkLen {
				return errPoolFull
			}
			id = Handle(p.n)
			c := p.chunks[id/chunkLen]
			if c == nil {
				c = new([chunkLen][]byte)
				p.chunks[id/chunkLen] = c
			}
			c[id%chunkLen] = make([]byte, p.size)
			p.n++
		}
		bufs[i], ids[i] = p.chunks[id/chunkLen][id%chunkLen], id
	}
	return nil
}

// buf is the buffer with id h; false for an id the pool never made (a bug of the link). Safe for
// the writer: an id it got from the link was made before the reader pushed it.
func (p *pool) buf(h Handle) ([]byte, bool) {
	if h >= maxChunks*chunkLen {
		return nil, false
	}
	c := p.chunks[h/chunkLen]
	if c == nil || c[h%chunkLen] == nil {
		return nil, false
	}
	return c[h%chunkLen], true
}

func (p *pool) put(h Handle) {
	p.mu.Lock()
	p.free = append(p.free, h)
	p.mu.Unlock()
}

func (p *pool) putAll(hs []Handle) {
	p.mu.Lock()
	p.free = append(p.free, hs...)
	p.mu.Unlock()
}

// allocated is how many buffers exist.
func (p *pool) allocated() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// The runner's record of a packet in its buffer's headroom, before the packet at offset (tundev
// keeps its mark in the byte just before the packet, offset-1): when it was read, its length, and
// whether it is inside the link — set when the reader pushes it, cleared when the writer takes it
// (readMeta), so that a handle the link hands back twice, or one it was never given, is caught
// (Unmatched) rather than written out or freed twice.
const (
	metaIn     = 0  // int64, little-endian: Now() at the read
	metaLen    = 8  // uint16: the packet's length
	metaInside = 10 // byte: 1 from the push until the writer takes the packet
)

func setMeta(buf []byte, in time.Duration, n int) {
	binary.LittleEndian.PutUint64(buf[metaIn:], uint64(in))
	binary.LittleEndian.PutUint16(buf[metaLen:], uint16(n))
	buf[metaInside] = 1
}

func meta(buf []byte) (in time.Duration, n int) {
	return time.Duration(binary.LittleEndian.Uint64(buf[metaIn:])), int(binary.LittleEndian.Uint16(buf[metaLen:]))
}

// The record and tundev's mark (offset-1) fit the headroom.
const _ = uint(offset - (metaInside + 1) - 1)
