package spdy

import (
	"bytes"
	"compress/zlib"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// Chromium's SpdyFramerTest.CreateSynStreamCompressed (SPDY/3): a SYN_STREAM for stream 1,
// priority 4, whose headers {bar: foo, foo: bar} were compressed by Chromium's zlib with the SPDY/3
// dictionary. Decoding it checks the dictionary and the zlib handling against a real peer.
const chromiumSynStreamCompressed = "8003 0001 | 00 000027 | 00000001 | 00000000 | 80 00 |" +
	"38eae3c6a7c202e50e50c24b4a04e50be6b4fc7c240a280800 0000ffff"

func TestDecodeChromiumVector(t *testing.T) {
	f, n, err := ParseFrame(hexBytes(t, chromiumSynStreamCompressed))
	if err != nil || n != 0x27+8 {
		t.Fatalf("ParseFrame: %d %v", n, err)
	}
	syn := f.(*SynStreamFrame)
	if syn.StreamID != 1 || syn.Priority != 4 || syn.Fin() || syn.Unidirectional() {
		t.Fatalf("%+v", syn)
	}
	h, err := NewHeaderDecompressor(0).Decode(syn.HeaderBlock)
	if err != nil {
		t.Fatal(err)
	}
	want := Header{{"bar", "foo"}, {"foo", "bar"}}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("got %q", h)
	}
}

// Three consecutive request header blocks compressed by C zlib (Python's zlib module) with the
// SPDY/3 dictionary, windowBits 11 and memLevel 1 (Chromium's settings), one Z_SYNC_FLUSH per
// block: one context across several frames, as a real client sends them. Later blocks are short
// because they refer back to earlier ones.
var czlibBlocks = []struct {
	hex  string
	want Header
}{
	{"38ace3c6a7c202a523507ab442a45a77d7105006b32a4804974d8cfaa0446a853dc1b25a410b12504ed02b079632c090d72b49058bb15b15038bcf5c70199b515252508c91b338a13af40d01000000ffff",
		Header{{":method", "GET"}, {":path", "/"}, {":version", "HTTP/1.1"}, {":host", "www.wirelab.test"}, {":scheme", "https"}, {"user-agent", "wirelab/1"}}},
	{"22ec0e2efde292ca9c54bde4e2627a3808000000ffff",
		Header{{":method", "GET"}, {":path", "/style.css"}, {":version", "HTTP/1.1"}, {":host", "www.wirelab.test"}, {":scheme", "https"}, {"user-agent", "wirelab/1"}}},
	{"0229c7ef20767d6004ea65d1cb356cf062803dd1d69021c9d608000000ffff",
		Header{{":method", "GET"}, {":path", "/app.js"}, {":version", "HTTP/1.1"}, {":host", "www.wirelab.test"}, {":scheme", "https"}, {"user-agent", "wirelab/1"}, {"cookie", "a=1\x00b=2"}}},
}

func TestDecodeCZlibSharedContext(t *testing.T) {
	d := NewHeaderDecompressor(0)
	for i, b := range czlibBlocks {
		h, err := d.Decode(hexBytes(t, b.hex))
		if err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
		if !reflect.DeepEqual(h, b.want) {
			t.Fatalf("block %d: got %q", i, h)
		}
	}
	if got := (Header{{"cookie", "a=1\x00b=2"}}).Values("cookie"); !reflect.DeepEqual(got, []string{"a=1", "b=2"}) {
		t.Fatalf("Values: %q", got)
	}
	// The second block alone (a fresh context) cannot be decoded: it has no zlib header.
	if _, err := NewHeaderDecompressor(0).Decode(hexBytes(t, czlibBlocks[1].hex)); err == nil {
		t.Fatal("second block decoded without the first")
	}
}

func testRequestHeader(path string) Header {
	return Header{{":method", "GET"}, {":path", path}, {":version", "HTTP/1.1"},
		{":host", "www.wirelab.test"}, {":scheme", "https"}, {"accept-encoding", "gzip,deflate"}}
}

// Our compressor and decompressor keep one context per direction across many frames.
func TestHeaderRoundTripSharedContext(t *testing.T) {
	c, err := NewHeaderCompressor(zlib.DefaultCompression)
	if err != nil {
		t.Fatal(err)
	}
	d := NewHeaderDecompressor(0)
	var sizes []int
	for i := 0; i < 20; i++ {
		h := testRequestHeader("/object/" + strings.Repeat("x", i))
		block, err := c.Compress(h)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 && !bytes.Equal(block[2:6], []byte{0xe3, 0xc6, 0xa7, 0xc2}) {
			t.Fatalf("first block's DICTID %x", block[2:6])
		}
		if !bytes.HasSuffix(block, syncFlushMarker) {
			t.Fatalf("block %d does not end with a sync flush: %x", i, block)
		}
		sizes = append(sizes, len(block))
		got, err := d.Decode(block)
		if err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, h) {
			t.Fatalf("block %d: got %q", i, got)
		}
	}
	if sizes[5] >= sizes[0]/2 {
		t.Fatalf("later blocks are not smaller than the first: %v (context not shared?)", sizes)
	}
	// A long session: the history slides past the 32 KiB window and decoding stays right.
	for i := 0; i < 200; i++ {
		h := Header{{"x-filler", strings.Repeat(string(rune('a'+i%26)), 300+i)}, {"n", strings.Repeat("7", i%9+1)}}
		block, _ := c.Compress(h)
		got, err := d.Decode(block)
		if err != nil || !reflect.DeepEqual(got, h) {
			t.Fatalf("long session block %d: %v", i, err)
		}
	}
}

func TestHeaderDecompressorZlibBomb(t *testing.T) {
	c, _ := NewHeaderCompressor(zlib.BestCompression)
	block, _ := c.Compress(Header{{"x", strings.Repeat("a", 8<<20)}})
	if len(block) > 64<<10 {
		t.Fatalf("bomb is %d bytes compressed", len(block))
	}
	d := NewHeaderDecompressor(64 << 10)
	_, err := d.Decode(block)
	var se *SessionError
	if !errors.As(err, &se) || se.RstStatus != FrameTooLarge {
		t.Fatalf("got %v, want a SessionError with FRAME_TOO_LARGE", err)
	}
	if _, err2 := d.Decode(block); err2 == nil {
		t.Fatal("context usable after a failure")
	}
	// Just under the limit passes.
	c2, _ := NewHeaderCompressor(zlib.BestCompression)
	h := Header{{"x", strings.Repeat("a", 1000)}}
	block, _ = c2.Compress(h)
	if _, err := NewHeaderDecompressor(len(AppendHeaderBlock(nil, h))).Decode(block); err != nil {
		t.Fatalf("block of exactly the limit: %v", err)
	}
	if _, err := NewHeaderDecompressor(len(AppendHeaderBlock(nil, h)) - 1).Decode(block); err == nil {
		t.Fatal("block one byte over the limit accepted")
	}
}

func TestHeaderDecompressorRejects(t *testing.T) {
	good := hexBytes(t, czlibBlocks[0].hex)
	cases := map[string][]byte{
		"empty":            {},
		"short header":     good[:5],
		"not deflate":      append([]byte{0x39, 0xe9}, good[2:]...),
		"bad FCHECK":       append([]byte{0x38, 0xad}, good[2:]...),
		"no dictionary":    {0x78, 0x9c, 0x63, 0x60, 0x60, 0x60, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff},
		"wrong DICTID":     append([]byte{0x38, 0xac, 0xdf, 0xa2, 0x51, 0xb2}, good[6:]...),
		"no sync flush":    good[:len(good)-4],
		"corrupt deflate":  append(append(append([]byte(nil), good[:6]...), 0xff, 0xff, 0xff), syncFlushMarker...),
		"final block":      finishedStream(t),
		"truncated middle": append(append([]byte(nil), good[:30]...), syncFlushMarker...),
	}
	for name, block := range cases {
		t.Run(name, func(t *testing.T) {
			d := NewHeaderDecompressor(0)
			_, err := d.Decode(block)
			var se *SessionError
			if !errors.As(err, &se) || se.Status != GoAwayProtocolError {
				t.Fatalf("got %v, want a SessionError", err)
			}
			if _, err := d.Decode(good); err == nil {
				t.Fatal("context usable after a failure")
			}
		})
	}
}

// finishedStream is a zlib stream whose compressor closed it (final block) followed by a sync
// marker: data after the end cannot belong to the session's context.
func finishedStream(t *testing.T) []byte {
	var buf bytes.Buffer
	w, _ := zlib.NewWriterLevelDict(&buf, zlib.DefaultCompression, headerDictionary[:])
	w.Write(AppendHeaderBlock(nil, Header{{"a", "b"}}))
	w.Close()
	return append(buf.Bytes(), syncFlushMarker...)
}

func TestValidateHeader(t *testing.T) {
	cases := []struct {
		h  Header
		ok bool
	}{
		{Header{{":method", "GET"}, {"x", ""}, {"y", "a\x00b"}}, true},
		{Header{}, true},
		{Header{{"", "v"}}, false},
		{Header{{"Host", "v"}}, false},
		{Header{{"a\x00b", "v"}}, false},
		{Header{{"a", "1"}, {"a", "2"}}, false},
		{Header{{"a", "\x00b"}}, false},
		{Header{{"a", "b\x00"}}, false},
		{Header{{"a", "b\x00\x00c"}}, false},
		{Header{{"a", "\x00"}}, false},
	}
	for _, c := range cases {
		err := ValidateHeader(c.h)
		var se *StreamError
		if c.ok != (err == nil) || (err != nil && (!errors.As(err, &se) || se.Status != ProtocolError)) {
			t.Errorf("%q: %v", c.h, err)
		}
	}
}

// A block that breaks a header rule is a stream error and the context stays in step.
func TestDecodeInvalidHeaderKeepsContext(t *testing.T) {
	c, _ := NewHeaderCompressor(zlib.DefaultCompression)
	d := NewHeaderDecompressor(0)
	bad, _ := c.Compress(Header{{"Upper", "x"}})
	_, err := d.Decode(bad)
	var se *StreamError
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want StreamError", err)
	}
	good, _ := c.Compress(Header{{"lower", "x"}})
	h, err := d.Decode(good)
	if err != nil || h.Get("lower") != "x" || !h.Has("lower") || h.Has("upper") || h.Get("upper") != "" {
		t.Fatalf("after a stream error: %q %v", h, err)
	}
}

func TestParseHeaderBlock(t *testing.T) {
	ok := map[string]Header{
		"00000000":                      {},
		nvBarFoo:                        {{"bar", "foo"}, {"foo", "bar"}},
		"00000001 00000001 61 00000000": {{"a", ""}},
	}
	for in, want := range ok {
		h, err := ParseHeaderBlock(hexBytes(t, in))
		if err != nil || !reflect.DeepEqual(h, want) {
			t.Errorf("%s: %q %v", in, h, err)
		}
		if got := AppendHeaderBlock(nil, want); !bytes.Equal(got, hexBytes(t, in)) {
			t.Errorf("AppendHeaderBlock(%q) = %x", want, got)
		}
	}
	bad := []string{
		"", "000000", "00000001", "00000001 00000001 61", "00000001 00000002 61 00000000",
		"00000001 00000001 61 00000002 62", "00000000 00", "ffffffff 00000000 00000000",
		"00000001 ffffffff 61 00000000",
	}
	for _, in := range bad {
		_, err := ParseHeaderBlock(hexBytes(t, in))
		var se *SessionError
		if !errors.As(err, &se) {
			t.Errorf("%q: %v, want SessionError", in, err)
		}
	}
}
