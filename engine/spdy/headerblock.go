package spdy

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// HeaderField is one name/value pair of a name/value header block. Value holds every value of the
// name, separated by a single NUL byte (SPDY/3 section 2.6.10); it may be empty.
type HeaderField struct {
	Name  string // lowercase US-ASCII, never empty
	Value string // zero or more NUL-separated values, none of them empty
}

// Header is a header block in wire order. Names are unique within a block.
type Header []HeaderField

// Get returns the value of name ("" if absent); several values come NUL-separated.
func (h Header) Get(name string) string {
	for _, f := range h {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// Has reports whether name is present.
func (h Header) Has(name string) bool {
	for _, f := range h {
		if f.Name == name {
			return true
		}
	}
	return false
}

// Values returns the NUL-separated values of name, nil if absent.
func (h Header) Values(name string) []string {
	for _, f := range h {
		if f.Name == name {
			return strings.Split(f.Value, "\x00")
		}
	}
	return nil
}

// ValidateHeader checks the rules of SPDY/3 section 2.6.10 that a receiver enforces: names are
// non-empty, lowercase and unique, without NUL; a value is empty or NUL-separated non-empty values.
// A violation is a *StreamError PROTOCOL_ERROR (its StreamID is left 0 for the caller to fill in).
func ValidateHeader(h Header) error {
	seen := make(map[string]struct{}, len(h))
	for _, f := range h {
		if f.Name == "" {
			return streamErrorf(0, ProtocolError, "empty header name")
		}
		for i := 0; i < len(f.Name); i++ {
			if c := f.Name[i]; c == 0 || ('A' <= c && c <= 'Z') {
				return streamErrorf(0, ProtocolError, "header name %q is not lowercase or holds NUL", f.Name)
			}
		}
		if _, dup := seen[f.Name]; dup {
			return streamErrorf(0, ProtocolError, "duplicate header name %q", f.Name)
		}
		seen[f.Name] = struct{}{}
		v := f.Value
		if v != "" && (v[0] == 0 || v[len(v)-1] == 0 || strings.Contains(v, "\x00\x00")) {
			return streamErrorf(0, ProtocolError, "header %q has an empty value between NULs", f.Name)
		}
	}
	return nil
}

// AppendHeaderBlock appends the uncompressed name/value block of h:
//
//	| Number of Name/Value pairs (32) | { Length of name (32) | Name | Length of value (32) | Value } … |
func AppendHeaderBlock(b []byte, h Header) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(h)))
	for _, f := range h {
		b = binary.BigEndian.AppendUint32(b, uint32(len(f.Name)))
		b = append(b, f.Name...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(f.Value)))
		b = append(b, f.Value...)
	}
	return b
}

// ParseHeaderBlock parses an uncompressed name/value block that must fill b exactly. A structural
// fault (truncation, a length past the end, trailing bytes) is a *SessionError: the block's framing
// cannot be trusted. It does not apply ValidateHeader.
func ParseHeaderBlock(b []byte) (Header, error) {
	if len(b) < 4 {
		return nil, sessionErrorf("header block of %d bytes has no pair count", len(b))
	}
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
	if uint64(n)*8 > uint64(len(b)) {
		return nil, sessionErrorf("header block claims %d pairs in %d bytes", n, len(b))
	}
	h := make(Header, 0, n)
	for i := uint32(0); i < n; i++ {
		name, rest, ok := lengthPrefixed(b)
		if !ok {
			return nil, sessionErrorf("header block: name %d runs past the end", i)
		}
		value, rest, ok := lengthPrefixed(rest)
		if !ok {
			return nil, sessionErrorf("header block: value %d runs past the end", i)
		}
		h = append(h, HeaderField{Name: string(name), Value: string(value)})
		b = rest
	}
	if len(b) != 0 {
		return nil, sessionErrorf("header block has %d trailing bytes", len(b))
	}
	return h, nil
}

func lengthPrefixed(b []byte) (field, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return nil, nil, false
	}
	return b[4 : 4+n], b[4+n:], true
}

// HeaderDictionary returns a copy of the SPDY/3 zlib preset dictionary.
func HeaderDictionary() []byte { return append([]byte(nil), headerDictionary[:]...) }

// HeaderDictionaryID is the zlib DICTID of the SPDY/3 dictionary: its Adler-32.
var HeaderDictionaryID = adler32.Checksum(headerDictionary[:])

// syncFlushMarker ends every header block: Z_SYNC_FLUSH closes the deflate block and appends an
// empty stored block (LEN 0x0000, NLEN 0xffff).
var syncFlushMarker = []byte{0x00, 0x00, 0xff, 0xff}

// HeaderCompressor is one direction's compression context: a single zlib stream, seeded with the
// SPDY dictionary, that runs for the whole session; each header block ends with a sync flush.
type HeaderCompressor struct {
	buf   bytes.Buffer
	zw    *zlib.Writer
	plain []byte
}

// NewHeaderCompressor returns a context compressing at level (compress/zlib levels;
// zlib.DefaultCompression is a good choice).
func NewHeaderCompressor(level int) (*HeaderCompressor, error) {
	c := &HeaderCompressor{}
	zw, err := zlib.NewWriterLevelDict(&c.buf, level, headerDictionary[:])
	if err != nil {
		return nil, fmt.Errorf("spdy: header compressor: %w", err)
	}
	c.zw = zw
	return c, nil
}

// Compress returns the compressed block for h (a fresh slice). The first block of a session starts
// with the 2-byte zlib header and the DICTID; every block ends with a sync flush, so the peer can
// decompress it on its own.
func (c *HeaderCompressor) Compress(h Header) ([]byte, error) {
	c.plain = AppendHeaderBlock(c.plain[:0], h)
	if _, err := c.zw.Write(c.plain); err != nil {
		return nil, fmt.Errorf("spdy: compress header block: %w", err)
	}
	if err := c.zw.Flush(); err != nil {
		return nil, fmt.Errorf("spdy: compress header block: %w", err)
	}
	out := bytes.Clone(c.buf.Bytes())
	c.buf.Reset()
	return out, nil
}

// DefaultMaxHeaderBlockSize bounds a decompressed header block unless configured otherwise.
const DefaultMaxHeaderBlockSize = 256 << 10

// windowSize is deflate's maximum back-reference distance.
const windowSize = 32 << 10

// HeaderDecompressor is the receiving direction's context. It decodes one frame's block at a time:
// each block is inflated by a decompressor reset onto the last 32 KiB of everything inflated so far
// (the dictionary first), which is exactly the state a continuous zlib stream would be in, because
// every block ends at a deflate block boundary (the sync flush). Nothing reads ahead into the next
// frame, and a block can never make the decompressor wait for bytes that have not arrived.
//
// Any failure breaks the context for good (the peer's compressor and ours are out of step), so it
// is a *SessionError and every later call fails too.
type HeaderDecompressor struct {
	max     int
	started bool
	window  []byte
	fr      io.ReadCloser
	src     bytes.Reader
	out     []byte
	err     error
}

// NewHeaderDecompressor returns a context that refuses blocks inflating to more than max bytes
// (DefaultMaxHeaderBlockSize if max <= 0): the defence against zlib bombs.
func NewHeaderDecompressor(max int) *HeaderDecompressor {
	if max <= 0 {
		max = DefaultMaxHeaderBlockSize
	}
	return &HeaderDecompressor{max: max}
}

// errHeaderTooLarge marks a block that inflated past the limit (FRAME_TOO_LARGE for its stream).
var errHeaderTooLarge = errors.New("header block too large")

// Decompress inflates one frame's compressed block into the uncompressed name/value block. The
// returned slice is valid until the next call.
func (d *HeaderDecompressor) Decompress(block []byte) ([]byte, error) {
	if d.err != nil {
		return nil, d.err
	}
	out, err := d.inflate(block)
	if err != nil {
		se := sessionErrorf("header decompression: %v", err)
		if errors.Is(err, errHeaderTooLarge) {
			se.RstStatus = FrameTooLarge
		}
		d.err = se
		return nil, se
	}
	return out, nil
}

func (d *HeaderDecompressor) inflate(p []byte) ([]byte, error) {
	if !d.started {
		if len(p) < 6 {
			return nil, fmt.Errorf("first block of %d bytes has no zlib header and DICTID", len(p))
		}
		cmf, flg := p[0], p[1]
		if cmf&0x0f != 8 || cmf>>4 > 7 || (uint16(cmf)<<8|uint16(flg))%31 != 0 {
			return nil, fmt.Errorf("bad zlib header %#02x %#02x", cmf, flg)
		}
		if flg&0x20 == 0 {
			return nil, errors.New("zlib stream without the SPDY preset dictionary")
		}
		if id := binary.BigEndian.Uint32(p[2:6]); id != HeaderDictionaryID {
			return nil, fmt.Errorf("zlib DICTID %#08x, want %#08x", id, HeaderDictionaryID)
		}
		p = p[6:]
		d.started = true
		d.window = append(make([]byte, 0, 2*windowSize), headerDictionary[:]...)
	}
	if !bytes.HasSuffix(p, syncFlushMarker) {
		return nil, errors.New("block does not end with a zlib sync flush")
	}
	d.src.Reset(p)
	if d.fr == nil {
		d.fr = flate.NewReaderDict(&d.src, d.window)
	} else if err := d.fr.(flate.Resetter).Reset(&d.src, d.window); err != nil {
		return nil, err
	}
	out := d.out[:0]
	for {
		if len(out) == cap(out) {
			out = append(out, make([]byte, min(max(512, cap(out)), d.max+1-len(out)))...)[:len(out)]
		}
		n, err := d.fr.Read(out[len(out):cap(out)])
		out = out[:len(out)+n]
		if len(out) > d.max {
			return nil, fmt.Errorf("%w: inflates past %d bytes", errHeaderTooLarge, d.max)
		}
		if err == nil {
			continue
		}
		// The reader stops when it wants the next block header and the frame is exhausted: the
		// expected end of a sync-flushed block.
		if errors.Is(err, io.ErrUnexpectedEOF) && d.src.Len() == 0 {
			break
		}
		if err == io.EOF {
			return nil, errors.New("peer finished its zlib stream; later blocks cannot be decoded")
		}
		return nil, err
	}
	d.out = out
	d.window = append(d.window, out...)
	if len(d.window) > windowSize {
		keep := d.window[len(d.window)-windowSize:]
		d.window = append(d.window[:0], keep...)
	}
	return out, nil
}

// Decode decompresses, parses and validates one compressed block. Structural and compression faults
// are *SessionError; a well-formed block that breaks a header rule is a *StreamError (StreamID 0)
// and the context stays usable.
func (d *HeaderDecompressor) Decode(block []byte) (Header, error) {
	raw, err := d.Decompress(block)
	if err != nil {
		return nil, err
	}
	h, err := ParseHeaderBlock(raw)
	if err != nil {
		d.err = err
		return nil, err
	}
	if err := ValidateHeader(h); err != nil {
		return nil, err
	}
	return h, nil
}

// httpHeader adds h's regular fields (not the ":" ones) to hdr, a value holding several NUL-separated
// values as several, and returns the Content-Length it gives if valid, else contentLength.
func (h Header) httpHeader(hdr http.Header, contentLength int64) int64 {
	for _, f := range h {
		if strings.HasPrefix(f.Name, ":") {
			continue
		}
		for _, v := range strings.Split(f.Value, "\x00") {
			hdr.Add(f.Name, v)
		}
	}
	if cl := hdr.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
			return n
		}
	}
	return contentLength
}
