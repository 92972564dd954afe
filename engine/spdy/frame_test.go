package spdy

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// hexBytes decodes a hex string that may contain spaces and '|' separators (one field per group,
// as in the spec's diagrams).
func hexBytes(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "|", "", "\n", "", "\t", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// nvBarFoo is the uncompressed block {bar: foo, foo: bar} (Chromium's framer test headers).
const nvBarFoo = "00000002 | 00000003 626172 | 00000003 666f6f | 00000003 666f6f | 00000003 626172"

// Every vector below is computed by hand from the frame layouts of SPDY/3 section 2.6:
//
//	control: |1| version 0x0003 | type (16) | flags (8) | length (24) | payload
//	data:    |0| stream id (31)            | flags (8) | length (24) | payload
var frameVectors = []struct {
	name  string
	frame Frame
	wire  string
}{
	{"DATA fin", &DataFrame{StreamID: 1, Flags: FlagFin, Data: []byte("hello")},
		"00000001 | 01 000005 | 68656c6c6f"},
	{"DATA empty max stream id", &DataFrame{StreamID: MaxStreamID, Data: []byte{}},
		"7fffffff | 00 000000"},
	{"SYN_STREAM low priority no fin", &SynStreamFrame{StreamID: 1, Priority: 4, HeaderBlock: hexBytes(t0, nvBarFoo)},
		"8003 0001 | 00 00002a | 00000001 | 00000000 | 80 00 | " + nvBarFoo},
	// Chromium's "SYN_STREAM frame with a 0-length header val, high pri, FIN, max stream ID".
	{"SYN_STREAM fin max ids empty value", &SynStreamFrame{StreamID: MaxStreamID, AssociatedToStreamID: MaxStreamID, Priority: 1, Flags: FlagFin,
		HeaderBlock: hexBytes(t0, "00000002 00000003 626172 00000003 666f6f 00000003 666f6f 00000000")},
		"8003 0001 | 01 000027 | 7fffffff | 7fffffff | 20 00 | 00000002 00000003 626172 00000003 666f6f 00000003 666f6f 00000000"},
	{"SYN_STREAM push unidirectional slot", &SynStreamFrame{StreamID: 2, AssociatedToStreamID: 1, Priority: 7, Slot: 5, Flags: FlagUnidirectional, HeaderBlock: []byte{0, 0, 0, 0}},
		"8003 0001 | 02 00000e | 00000002 | 00000001 | e0 05 | 00000000"},
	{"SYN_REPLY no fin", &SynReplyFrame{StreamID: 1, HeaderBlock: hexBytes(t0, nvBarFoo)},
		"8003 0002 | 00 000024 | 00000001 | " + nvBarFoo},
	{"SYN_REPLY fin empty block", &SynReplyFrame{StreamID: MaxStreamID, Flags: FlagFin, HeaderBlock: []byte{}},
		"8003 0002 | 01 000004 | 7fffffff"},
	{"RST_STREAM protocol error", &RstStreamFrame{StreamID: 1, Status: ProtocolError},
		"8003 0003 | 00 000008 | 00000001 | 00000001"},
	{"RST_STREAM stream already closed", &RstStreamFrame{StreamID: MaxStreamID, Status: StreamAlreadyClosed},
		"8003 0003 | 00 000008 | 7fffffff | 00000009"},
	{"SETTINGS empty", &SettingsFrame{Settings: []Setting{}},
		"8003 0004 | 00 000004 | 00000000"},
	{"SETTINGS clear persist", &SettingsFrame{Flags: FlagClearSettings, Settings: []Setting{
		{Flags: SettingFlagPersistValue, ID: SettingMaxConcurrentStreams, Value: 100},
		{ID: SettingInitialWindowSize, Value: 65536}}},
		"8003 0004 | 01 000014 | 00000002 | 01 000004 | 00000064 | 00 000007 | 00010000"},
	// Chromium's "Network byte order SETTINGS frame": flags before a 24-bit id, all big-endian.
	{"SETTINGS byte order", &SettingsFrame{Settings: []Setting{{Flags: 0x04, ID: 0x030201, Value: 0x0a0b0c0d}}},
		"8003 0004 | 00 00000c | 00000001 | 04 030201 | 0a0b0c0d"},
	{"PING", &PingFrame{ID: 0x12345678},
		"8003 0006 | 00 000004 | 12345678"},
	{"GOAWAY ok", &GoAwayFrame{},
		"8003 0007 | 00 000008 | 00000000 | 00000000"},
	{"GOAWAY internal error", &GoAwayFrame{LastGoodStreamID: MaxStreamID, Status: GoAwayInternalError},
		"8003 0007 | 00 000008 | 7fffffff | 00000002"},
	{"HEADERS fin", &HeadersFrame{StreamID: 3, Flags: FlagFin, HeaderBlock: []byte{0, 0, 0, 0}},
		"8003 0008 | 01 000008 | 00000003 | 00000000"},
	{"WINDOW_UPDATE session", &WindowUpdateFrame{StreamID: 0, DeltaWindowSize: MaxWindow},
		"8003 0009 | 00 000008 | 00000000 | 7fffffff"},
	{"WINDOW_UPDATE stream", &WindowUpdateFrame{StreamID: 5, DeltaWindowSize: 4096},
		"8003 0009 | 00 000008 | 00000005 | 00001000"},
	{"CREDENTIAL is unknown in 3.1", &UnknownFrame{FrameType: 10, Payload: []byte{0xab, 0xcd}},
		"8003 000a | 00 000002 | abcd"},
	{"NOOP is unknown", &UnknownFrame{FrameType: 5, Payload: []byte{}},
		"8003 0005 | 00 000000"},
}

// t0 lets the table call hexBytes outside a test; a bad literal panics at init.
var t0 = panicTB{}

type panicTB struct{ testing.TB }

func (panicTB) Helper()                        {}
func (panicTB) Fatalf(format string, a ...any) { panic(format) }

func TestFrameVectors(t *testing.T) {
	for _, v := range frameVectors {
		t.Run(v.name, func(t *testing.T) {
			want := hexBytes(t, v.wire)
			got, err := AppendFrame(nil, v.frame)
			if err != nil {
				t.Fatalf("AppendFrame: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("encoded\n got %x\nwant %x", got, want)
			}
			f, n, err := ParseFrame(append(want, 0xee)) // a trailing byte of the next frame
			if err != nil || n != len(want) {
				t.Fatalf("ParseFrame: n=%d err=%v", n, err)
			}
			if !reflect.DeepEqual(f, v.frame) {
				t.Fatalf("decoded %#v\nwant    %#v", f, v.frame)
			}
			if f.Type() != v.frame.Type() {
				t.Fatalf("type %v", f.Type())
			}
			for i := 0; i < len(want); i++ {
				if f, n, err := ParseFrame(want[:i]); f != nil || n != 0 || err != nil {
					t.Fatalf("prefix of %d bytes: %v %d %v, want need-more", i, f, n, err)
				}
			}
		})
	}
}

// Reserved bits are ignored on receipt and zero on send.
func TestFrameReservedBitsIgnored(t *testing.T) {
	wire := hexBytes(t, "8003 0001 | 00 00000e | 80000003 | 80000001 | 7f ff | 00000000")
	f, _, err := ParseFrame(wire)
	if err != nil {
		t.Fatal(err)
	}
	want := &SynStreamFrame{StreamID: 3, AssociatedToStreamID: 1, Priority: 3, Slot: 0xff, HeaderBlock: []byte{0, 0, 0, 0}}
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("got %#v", f)
	}
	out, _ := AppendFrame(nil, f)
	if !bytes.Equal(out, hexBytes(t, "8003 0001 | 00 00000e | 00000003 | 00000001 | 60 ff | 00000000")) {
		t.Fatalf("re-encoded %x", out)
	}
	wu, _, err := ParseFrame(hexBytes(t, "8003 0009 | 00 000008 | 80000005 | 80000010"))
	if err != nil || wu.(*WindowUpdateFrame).StreamID != 5 || wu.(*WindowUpdateFrame).DeltaWindowSize != 16 {
		t.Fatalf("WINDOW_UPDATE reserved bits: %#v %v", wu, err)
	}
}

func TestFrameParseErrors(t *testing.T) {
	cases := []struct {
		name    string
		wire    string
		rstID   uint32
		rstCode RstStatus
	}{
		{"SYN_STREAM too short", "8003 0001 | 00 000009 | 00000001 00000000 00", 0, 0},
		{"SYN_REPLY too short", "8003 0002 | 00 000003 | 000000", 0, 0},
		{"HEADERS too short", "8003 0008 | 00 000000", 0, 0},
		{"RST_STREAM length 7", "8003 0003 | 00 000007 | 00000001 000000", 0, 0},
		{"RST_STREAM length 9", "8003 0003 | 00 000009 | 00000001 00000001 00", 0, 0},
		{"SETTINGS too short", "8003 0004 | 00 000002 | 0000", 0, 0},
		{"SETTINGS count larger than payload", "8003 0004 | 00 00000c | 00000002 | 00000004 00000064", 0, 0},
		{"SETTINGS count smaller than payload", "8003 0004 | 00 00000c | 00000000 | 00000004 00000064", 0, 0},
		{"SETTINGS huge count", "8003 0004 | 00 00000c | ffffffff | 00000004 00000064", 0, 0},
		{"PING length 8 (SPDY/4 style)", "8003 0006 | 00 000008 | 00000001 00000002", 0, 0},
		{"GOAWAY length 4 (SPDY/2 style)", "8003 0007 | 00 000004 | 00000001", 0, 0},
		{"WINDOW_UPDATE length 4", "8003 0009 | 00 000004 | 00000001", 0, 0},
		{"SPDY/2 SYN_STREAM", "8002 0001 | 00 00000e | 00000005 00000000 0000 00000000", 5, UnsupportedVersion},
		{"SPDY/4 PING", "8004 0006 | 00 000004 | 00000001", 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, n, err := ParseFrame(hexBytes(t, c.wire))
			var se *SessionError
			if !errors.As(err, &se) || f != nil || n != 0 {
				t.Fatalf("got %v %d %v, want a SessionError", f, n, err)
			}
			if se.Status != GoAwayProtocolError || se.RstStreamID != c.rstID || (c.rstID != 0 && se.RstStatus != c.rstCode) {
				t.Fatalf("got %+v", se)
			}
		})
	}
}

func TestAppendFrameRejectsOutOfRangeFields(t *testing.T) {
	cases := []Frame{
		&DataFrame{StreamID: 1 << 31},
		&SynStreamFrame{StreamID: 1, Priority: 8},
		&SynStreamFrame{StreamID: 1, AssociatedToStreamID: 1 << 31},
		&SynReplyFrame{StreamID: 1 << 31},
		&HeadersFrame{StreamID: 1 << 31},
		&RstStreamFrame{StreamID: 1 << 31, Status: Cancel},
		&WindowUpdateFrame{StreamID: 1, DeltaWindowSize: 1 << 31},
		&WindowUpdateFrame{StreamID: 1 << 31, DeltaWindowSize: 1},
		&GoAwayFrame{LastGoodStreamID: 1 << 31},
		&SettingsFrame{Settings: []Setting{{ID: 1 << 24}}},
		&DataFrame{StreamID: 1, Data: make([]byte, MaxFrameLength+1)},
		&HeadersFrame{StreamID: 1, HeaderBlock: make([]byte, MaxFrameLength-3)},
	}
	for _, f := range cases {
		prefix := []byte("keep")
		out, err := AppendFrame(prefix, f)
		if err == nil {
			t.Errorf("%s %+v: no error", f.Type(), f)
		}
		if string(out) != "keep" {
			t.Errorf("%s: appended on error: %q", f.Type(), out)
		}
	}
}

func TestParseFrameHeader(t *testing.T) {
	h, ok := ParseFrameHeader(hexBytes(t, "8003 0004 | 01 abcdef"))
	if !ok || !h.Control || h.Version != 3 || h.Type != TypeSettings || h.Flags != 1 || h.Length != 0xabcdef {
		t.Fatalf("%+v %v", h, ok)
	}
	h, ok = ParseFrameHeader(hexBytes(t, "7fffffff | 01 000001"))
	if !ok || h.Control || h.StreamID != MaxStreamID || h.Type != TypeData || h.Length != 1 {
		t.Fatalf("%+v %v", h, ok)
	}
	if _, ok := ParseFrameHeader(make([]byte, 7)); ok {
		t.Fatal("7 bytes parsed as a header")
	}
}
