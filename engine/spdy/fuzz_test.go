package spdy

import (
	"bytes"
	"compress/zlib"
	"errors"
	"reflect"
	"testing"
)

// seedFrames is the seed corpus shared by the frame fuzz targets: every hand-computed vector, the
// Chromium compressed SYN_STREAM, malformed frames and a few concatenations.
func seedFrames(f *testing.F) {
	var all []byte
	for _, v := range frameVectors {
		b := hexBytes(f, v.wire)
		f.Add(b)
		all = append(all, b...)
	}
	f.Add(all)
	f.Add(hexBytes(f, chromiumSynStreamCompressed))
	for _, s := range []string{
		"8003 0004 | 00 00000c | ffffffff | 00000004 00000064",
		"8002 0001 | 00 00000e | 00000005 00000000 0000 00000000",
		"8003 0003 | 00 000007 | 00000001 000000",
		"ffff ffff | ff ffffff",
		"",
	} {
		f.Add(hexBytes(f, s))
	}
}

// FuzzParseFrame: the parser never panics, consumes whole frames only, returns only typed
// errors, and header blocks of parsed frames go through a decompressor without panicking.
func FuzzParseFrame(f *testing.F) {
	seedFrames(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		d := NewHeaderDecompressor(64 << 10)
		for len(b) > 0 {
			fr, n, err := ParseFrame(b)
			if err != nil {
				var se *SessionError
				if !errors.As(err, &se) || fr != nil || n != 0 {
					t.Fatalf("error %v (%T) with frame %v n %d", err, err, fr, n)
				}
				return
			}
			if fr == nil {
				if n != 0 {
					t.Fatalf("need-more with n=%d", n)
				}
				h, ok := ParseFrameHeader(b)
				if ok && len(b) >= FrameHeaderLen+int(h.Length) {
					t.Fatalf("whole frame of %d bytes not parsed", FrameHeaderLen+h.Length)
				}
				return
			}
			if n < FrameHeaderLen || n > len(b) {
				t.Fatalf("consumed %d of %d", n, len(b))
			}
			var block []byte
			switch fr := fr.(type) {
			case *SynStreamFrame:
				block = fr.HeaderBlock
			case *SynReplyFrame:
				block = fr.HeaderBlock
			case *HeadersFrame:
				block = fr.HeaderBlock
			}
			if block != nil {
				if _, err := d.Decode(block); err != nil {
					var se *SessionError
					var ste *StreamError
					if !errors.As(err, &se) && !errors.As(err, &ste) {
						t.Fatalf("header error of type %T: %v", err, err)
					}
				}
			}
			b = b[n:]
		}
	})
}

// FuzzFrameRoundTrip: whatever parses re-encodes, and encode(decode(x)) is a fixed point.
func FuzzFrameRoundTrip(f *testing.F) {
	seedFrames(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, n, err := ParseFrame(b)
		if err != nil || fr == nil {
			return
		}
		y, err := AppendFrame(nil, fr)
		if err != nil {
			t.Fatalf("parsed frame does not encode: %v (%#v)", err, fr)
		}
		if len(y) != n {
			t.Fatalf("re-encoded %d bytes, parsed %d", len(y), n)
		}
		fr2, n2, err := ParseFrame(y)
		if err != nil || n2 != len(y) {
			t.Fatalf("re-encoded frame does not parse: %v", err)
		}
		if !reflect.DeepEqual(fr, fr2) {
			t.Fatalf("round trip changed the frame:\n%#v\n%#v", fr, fr2)
		}
		z, _ := AppendFrame(nil, fr2)
		if !bytes.Equal(y, z) {
			t.Fatalf("encode(decode(encode(decode(x)))) != encode(decode(x))")
		}
	})
}

// FuzzHeaderBlock: the name/value parser and the decompressor never panic; a parsed block
// re-encodes to the same bytes; a valid header survives compression through a shared context.
func FuzzHeaderBlock(f *testing.F) {
	f.Add(hexBytes(f, nvBarFoo))
	f.Add(hexBytes(f, "00000000"))
	f.Add(hexBytes(f, "00000001 00000001 61 00000003 620063"))
	f.Add(hexBytes(f, "ffffffff 00000000 00000000"))
	for _, b := range czlibBlocks {
		f.Add(hexBytes(f, b.hex))
	}
	f.Add(hexBytes(f, "38eae3c6a7c202e50e50c24b4a04e50be6b4fc7c240a280800 0000ffff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		// As a compressed block: bounded output, typed errors.
		d := NewHeaderDecompressor(16 << 10)
		if raw, err := d.Decompress(b); err == nil {
			if len(raw) > 16<<10 {
				t.Fatalf("inflated %d bytes past the limit", len(raw))
			}
		} else {
			var se *SessionError
			if !errors.As(err, &se) {
				t.Fatalf("decompress error of type %T", err)
			}
		}
		// As an uncompressed block.
		h, err := ParseHeaderBlock(b)
		if err != nil {
			var se *SessionError
			if !errors.As(err, &se) {
				t.Fatalf("parse error of type %T", err)
			}
			return
		}
		if got := AppendHeaderBlock(nil, h); !bytes.Equal(got, b) {
			t.Fatalf("re-encoded block differs")
		}
		if ValidateHeader(h) != nil {
			return
		}
		c, _ := NewHeaderCompressor(zlib.BestSpeed)
		d2 := NewHeaderDecompressor(1 << 20)
		for i := 0; i < 2; i++ { // twice: the second block leans on the first
			block, err := c.Compress(h)
			if err != nil {
				t.Fatal(err)
			}
			got, err := d2.Decode(block)
			if err != nil || !reflect.DeepEqual(got, h) && !(len(got) == 0 && len(h) == 0) {
				t.Fatalf("compressed round trip %d: %v", i, err)
			}
		}
	})
}

// FuzzConnReceive: a server session fed arbitrary bytes, split anywhere, never panics; it fails
// only with a *SessionError, after which its output is well-formed frames ending in GOAWAY.
func FuzzConnReceive(f *testing.F) {
	seedFrames(f)
	r := &rawPeer{t: nil}
	r.enc, _ = NewHeaderCompressor(zlib.DefaultCompression)
	script := []Frame{r.syn(1, 0, 0, getRequest("/")), data(1, 0, 10), &WindowUpdateFrame{StreamID: 1, DeltaWindowSize: 5},
		&PingFrame{ID: 1}, r.headers(1, FlagFin), rst(1, Cancel), &GoAwayFrame{}}
	var b []byte
	for _, fr := range script {
		b, _ = AppendFrame(b, fr)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := NewConn(RoleServer, Config{MaxConcurrentStreams: 4, InitialWindowSize: 1000, MaxControlFrameSize: 4096, MaxHeaderBlockSize: 4096})
		if err != nil {
			t.Fatal(err)
		}
		c.DataToSend()
		cut := 0
		if len(b) > 0 {
			cut = int(b[0]) % (len(b) + 1)
		}
		_, err = c.Receive(b[:cut])
		if err == nil {
			_, err = c.Receive(b[cut:])
		}
		out := c.DataToSend()
		var last Frame
		for len(out) > 0 {
			fr, n, perr := ParseFrame(out)
			if perr != nil || fr == nil {
				t.Fatalf("Conn wrote a malformed frame: %v", perr)
			}
			last = fr
			out = out[n:]
		}
		if err != nil {
			var se *SessionError
			if !errors.As(err, &se) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			if _, ok := last.(*GoAwayFrame); !ok {
				t.Fatalf("session error without a final GOAWAY: %v", last)
			}
		}
	})
}
