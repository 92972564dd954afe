package spdy

import (
	"encoding/binary"
	"fmt"
)

// Version is the protocol version carried by every control frame. SPDY/3.1 keeps version 3 on the
// wire; 3.1 is negotiated by ALPN (NextProtoTLS).
const Version = 3

// NextProtoTLS is the ALPN protocol id of SPDY/3.1.
const NextProtoTLS = "spdy/3.1"

// Wire limits.
const (
	FrameHeaderLen = 8         // every frame starts with an 8-byte header
	MaxFrameLength = 1<<24 - 1 // the 24-bit Length field
	MaxStreamID    = 1<<31 - 1 // stream ids are 31 bits
	MaxWindow      = 1<<31 - 1 // a flow-control window never exceeds 2^31-1
	MaxPriority    = 7         // priorities are 3 bits; 0 is the highest
)

// FrameType is a control frame's type. DATA frames have no type on the wire; TypeData stands for
// them in this package.
type FrameType uint16

// Frame types (SPDY/3 section 2.6). NOOP (5) was SPDY/2's; CREDENTIAL (10) was removed by 3.1:
// both arrive as UnknownFrame and are ignored, as the spec requires for unknown types.
const (
	TypeData         FrameType = 0
	TypeSynStream    FrameType = 1
	TypeSynReply     FrameType = 2
	TypeRstStream    FrameType = 3
	TypeSettings     FrameType = 4
	TypePing         FrameType = 6
	TypeGoAway       FrameType = 7
	TypeHeaders      FrameType = 8
	TypeWindowUpdate FrameType = 9
)

func (t FrameType) String() string {
	switch t {
	case TypeData:
		return "DATA"
	case TypeSynStream:
		return "SYN_STREAM"
	case TypeSynReply:
		return "SYN_REPLY"
	case TypeRstStream:
		return "RST_STREAM"
	case TypeSettings:
		return "SETTINGS"
	case TypePing:
		return "PING"
	case TypeGoAway:
		return "GOAWAY"
	case TypeHeaders:
		return "HEADERS"
	case TypeWindowUpdate:
		return "WINDOW_UPDATE"
	}
	return fmt.Sprintf("TYPE_%d", uint16(t))
}

// Flags is a frame's 8-bit flags field; its meaning depends on the frame type.
type Flags uint8

// Flag bits.
const (
	FlagFin            Flags = 0x01 // DATA, SYN_STREAM, SYN_REPLY, HEADERS: the sender's last frame on the stream
	FlagUnidirectional Flags = 0x02 // SYN_STREAM: the recipient may not send on the stream (server push)
	FlagClearSettings  Flags = 0x01 // SETTINGS: clear previously persisted settings
)

// Frame is one parsed SPDY frame: one of *DataFrame, *SynStreamFrame, *SynReplyFrame,
// *RstStreamFrame, *SettingsFrame, *PingFrame, *GoAwayFrame, *HeadersFrame, *WindowUpdateFrame,
// *UnknownFrame. Byte slices in a parsed frame alias the parser's input.
type Frame interface {
	// Type is the frame's type (TypeData for DATA frames).
	Type() FrameType
	// appendPayload appends the frame's header and payload to b.
	appendTo(b []byte) ([]byte, error)
}

// DataFrame carries stream data (section 2.6.1 of draft 3 / 2.2.2 of the framing layer).
type DataFrame struct {
	StreamID uint32 // the stream; never 0
	Flags    Flags  // FlagFin
	Data     []byte // the payload; at most MaxFrameLength bytes
}

// SynStreamFrame opens a stream (section 2.6.1).
type SynStreamFrame struct {
	StreamID             uint32 // the new stream: odd from the client, even from the server
	AssociatedToStreamID uint32 // for server push: the client stream this one is associated to; else 0
	Priority             uint8  // 0 (highest) … 7 (lowest)
	Slot                 uint8  // SPDY/3 CREDENTIAL slot; unused in 3.1, kept as received
	Flags                Flags  // FlagFin, FlagUnidirectional
	HeaderBlock          []byte // the compressed name/value header block
}

// SynReplyFrame answers a SYN_STREAM (section 2.6.2).
type SynReplyFrame struct {
	StreamID    uint32 // the stream being answered
	Flags       Flags  // FlagFin
	HeaderBlock []byte // the compressed name/value header block
}

// RstStreamFrame aborts a stream (section 2.6.3).
type RstStreamFrame struct {
	StreamID uint32    // the stream to abort
	Flags    Flags     // no flags are defined; kept as received
	Status   RstStatus // why
}

// SettingID identifies one SETTINGS entry.
type SettingID uint32

// Setting ids (section 2.6.4).
const (
	SettingUploadBandwidth             SettingID = 1 // expected upload bandwidth, kbit/s
	SettingDownloadBandwidth           SettingID = 2 // expected download bandwidth, kbit/s
	SettingRoundTripTime               SettingID = 3 // expected round-trip time, ms
	SettingMaxConcurrentStreams        SettingID = 4 // how many streams the sender lets its peer open
	SettingCurrentCwnd                 SettingID = 5 // the sender's current TCP cwnd, packets
	SettingDownloadRetransRate         SettingID = 6 // retransmission rate, percent
	SettingInitialWindowSize           SettingID = 7 // the initial per-stream window the sender grants, bytes
	SettingClientCertificateVectorSize SettingID = 8 // SPDY/3 CREDENTIAL slots (unused in 3.1)
)

// SettingFlags are the per-entry flags of a SETTINGS frame.
type SettingFlags uint8

// Per-entry setting flags.
const (
	SettingFlagPersistValue SettingFlags = 0x01 // (server → client) please persist this value
	SettingFlagPersisted    SettingFlags = 0x02 // (client → server) this value was persisted earlier
)

// Setting is one ID/value pair of a SETTINGS frame.
type Setting struct {
	Flags SettingFlags // SettingFlagPersistValue, SettingFlagPersisted
	ID    SettingID    // 24 bits on the wire
	Value uint32       // the value
}

// SettingsFrame carries connection settings (section 2.6.4).
type SettingsFrame struct {
	Flags    Flags     // FlagClearSettings
	Settings []Setting // in wire order
}

// PingFrame measures a round trip (section 2.6.5).
type PingFrame struct {
	Flags Flags  // no flags are defined; kept as received
	ID    uint32 // odd from the client, even from the server
}

// GoAwayFrame ends the session (section 2.6.6).
type GoAwayFrame struct {
	Flags            Flags        // no flags are defined; kept as received
	LastGoodStreamID uint32       // the last stream the sender accepted from its peer
	Status           GoAwayStatus // why
}

// HeadersFrame adds headers to an open stream (section 2.6.7).
type HeadersFrame struct {
	StreamID    uint32 // the stream
	Flags       Flags  // FlagFin
	HeaderBlock []byte // the compressed name/value header block
}

// WindowUpdateFrame grants flow-control credit (section 2.6.8); stream 0 is the session window
// (SPDY/3.1).
type WindowUpdateFrame struct {
	Flags           Flags  // no flags are defined; kept as received
	StreamID        uint32 // the stream, or 0 for the session
	DeltaWindowSize uint32 // 1 … 2^31-1 bytes of credit
}

// UnknownFrame is a control frame of a type this package does not know (NOOP, CREDENTIAL, future
// types, and the unassigned type 0, whose Type() equals TypeData: tell frames apart with a type
// switch, not by Type()). Receivers ignore it.
type UnknownFrame struct {
	FrameType FrameType // the type field
	Flags     Flags     // the flags field
	Payload   []byte    // the payload, uninterpreted
}

// Type implementations.

func (*DataFrame) Type() FrameType         { return TypeData }
func (*SynStreamFrame) Type() FrameType    { return TypeSynStream }
func (*SynReplyFrame) Type() FrameType     { return TypeSynReply }
func (*RstStreamFrame) Type() FrameType    { return TypeRstStream }
func (*SettingsFrame) Type() FrameType     { return TypeSettings }
func (*PingFrame) Type() FrameType         { return TypePing }
func (*GoAwayFrame) Type() FrameType       { return TypeGoAway }
func (*HeadersFrame) Type() FrameType      { return TypeHeaders }
func (*WindowUpdateFrame) Type() FrameType { return TypeWindowUpdate }
func (f *UnknownFrame) Type() FrameType    { return f.FrameType }

// Compile-time checks that every frame type is a Frame.
var (
	_ Frame = (*DataFrame)(nil)
	_ Frame = (*SynStreamFrame)(nil)
	_ Frame = (*SynReplyFrame)(nil)
	_ Frame = (*RstStreamFrame)(nil)
	_ Frame = (*SettingsFrame)(nil)
	_ Frame = (*PingFrame)(nil)
	_ Frame = (*GoAwayFrame)(nil)
	_ Frame = (*HeadersFrame)(nil)
	_ Frame = (*WindowUpdateFrame)(nil)
	_ Frame = (*UnknownFrame)(nil)
)

// FrameHeader is the common 8-byte header of every frame.
//
//	control: |1| Version(15) | Type(16) | Flags(8) | Length(24) |
//	data:    |0| Stream-ID(31)          | Flags(8) | Length(24) |
type FrameHeader struct {
	Control  bool      // the C bit
	Version  uint16    // control frames: the protocol version (3)
	Type     FrameType // control frames: the type; TypeData for DATA frames
	StreamID uint32    // DATA frames: the stream
	Flags    Flags     // the flags
	Length   uint32    // the payload length after the 8-byte header
}

// ParseFrameHeader decodes the 8-byte header at the front of b; ok is false if b is shorter.
func ParseFrameHeader(b []byte) (h FrameHeader, ok bool) {
	if len(b) < FrameHeaderLen {
		return h, false
	}
	first := binary.BigEndian.Uint32(b[0:4])
	h.Flags = Flags(b[4])
	h.Length = uint32(b[5])<<16 | uint32(b[6])<<8 | uint32(b[7])
	if first&0x80000000 != 0 {
		h.Control = true
		h.Version = uint16(first>>16) & 0x7fff
		h.Type = FrameType(first & 0xffff)
	} else {
		h.Type = TypeData
		h.StreamID = first & MaxStreamID
	}
	return h, true
}

// ParseFrame parses the frame at the front of b. It returns the frame and the number of bytes it
// occupies, or (nil, 0, nil) when b does not yet hold a whole frame. It never panics; a malformed
// frame is a *SessionError (PROTOCOL_ERROR, or UNSUPPORTED_VERSION for a SYN_STREAM of another
// version). Reserved bits are ignored. Byte slices in the frame alias b.
//
// ParseFrame checks layout only (lengths, versions); the session rules (stream ids, states,
// windows) are the Conn's.
func ParseFrame(b []byte) (Frame, int, error) {
	h, ok := ParseFrameHeader(b)
	if !ok {
		return nil, 0, nil
	}
	total := FrameHeaderLen + int(h.Length)
	if len(b) < total {
		return nil, 0, nil
	}
	f, err := parsePayload(h, b[FrameHeaderLen:total])
	if err != nil {
		return nil, 0, err
	}
	return f, total, nil
}

func parsePayload(h FrameHeader, p []byte) (Frame, error) {
	if !h.Control {
		return &DataFrame{StreamID: h.StreamID, Flags: h.Flags, Data: p}, nil
	}
	if h.Version != Version {
		e := sessionErrorf("control frame %s with version %d; only %d is spoken", h.Type, h.Version, Version)
		if h.Type == TypeSynStream && len(p) >= 4 {
			e.RstStreamID = be31(p[0:4])
			e.RstStatus = UnsupportedVersion
		}
		return nil, e
	}
	switch h.Type {
	case TypeSynStream:
		if len(p) < 10 {
			return nil, sessionErrorf("SYN_STREAM length %d < 10", len(p))
		}
		return &SynStreamFrame{
			StreamID:             be31(p[0:4]),
			AssociatedToStreamID: be31(p[4:8]),
			Priority:             p[8] >> 5,
			Slot:                 p[9],
			Flags:                h.Flags,
			HeaderBlock:          p[10:],
		}, nil
	case TypeSynReply, TypeHeaders:
		if len(p) < 4 {
			return nil, sessionErrorf("%s length %d < 4", h.Type, len(p))
		}
		if h.Type == TypeSynReply {
			return &SynReplyFrame{StreamID: be31(p[0:4]), Flags: h.Flags, HeaderBlock: p[4:]}, nil
		}
		return &HeadersFrame{StreamID: be31(p[0:4]), Flags: h.Flags, HeaderBlock: p[4:]}, nil
	case TypeRstStream:
		if len(p) != 8 {
			return nil, sessionErrorf("RST_STREAM length %d != 8", len(p))
		}
		return &RstStreamFrame{StreamID: be31(p[0:4]), Flags: h.Flags, Status: RstStatus(binary.BigEndian.Uint32(p[4:8]))}, nil
	case TypeSettings:
		if len(p) < 4 {
			return nil, sessionErrorf("SETTINGS length %d < 4", len(p))
		}
		n := binary.BigEndian.Uint32(p[0:4])
		if uint64(len(p)) != 4+8*uint64(n) {
			return nil, sessionErrorf("SETTINGS with %d entries has length %d, want %d", n, len(p), 4+8*uint64(n))
		}
		f := &SettingsFrame{Flags: h.Flags, Settings: make([]Setting, n)}
		for i := range f.Settings {
			e := p[4+8*i:]
			f.Settings[i] = Setting{
				Flags: SettingFlags(e[0]),
				ID:    SettingID(uint32(e[1])<<16 | uint32(e[2])<<8 | uint32(e[3])),
				Value: binary.BigEndian.Uint32(e[4:8]),
			}
		}
		return f, nil
	case TypePing:
		if len(p) != 4 {
			return nil, sessionErrorf("PING length %d != 4", len(p))
		}
		return &PingFrame{Flags: h.Flags, ID: binary.BigEndian.Uint32(p)}, nil
	case TypeGoAway:
		if len(p) != 8 {
			return nil, sessionErrorf("GOAWAY length %d != 8", len(p))
		}
		return &GoAwayFrame{Flags: h.Flags, LastGoodStreamID: be31(p[0:4]), Status: GoAwayStatus(binary.BigEndian.Uint32(p[4:8]))}, nil
	case TypeWindowUpdate:
		if len(p) != 8 {
			return nil, sessionErrorf("WINDOW_UPDATE length %d != 8", len(p))
		}
		return &WindowUpdateFrame{Flags: h.Flags, StreamID: be31(p[0:4]), DeltaWindowSize: be31(p[4:8])}, nil
	}
	return &UnknownFrame{FrameType: h.Type, Flags: h.Flags, Payload: p}, nil
}

func be31(b []byte) uint32 { return binary.BigEndian.Uint32(b) & MaxStreamID }

// AppendFrame appends the wire form of f to b. It fails (and appends nothing) if a field does not
// fit its wire width: stream ids and deltas above 2^31-1, a priority above 7, a payload above
// MaxFrameLength, a setting id above 2^24-1.
func AppendFrame(b []byte, f Frame) ([]byte, error) {
	out, err := f.appendTo(b)
	if err != nil {
		return b, err
	}
	return out, nil
}

func appendControlHeader(b []byte, t FrameType, flags Flags, length int) ([]byte, error) {
	if length > MaxFrameLength {
		return b, fmt.Errorf("spdy: %s payload of %d bytes exceeds %d", t, length, MaxFrameLength)
	}
	b = binary.BigEndian.AppendUint32(b, 0x80000000|Version<<16|uint32(t))
	return append(b, byte(flags), byte(length>>16), byte(length>>8), byte(length)), nil
}

func check31(what string, v uint32) error {
	if v > MaxStreamID {
		return fmt.Errorf("spdy: %s %d exceeds 2^31-1", what, v)
	}
	return nil
}

func (f *DataFrame) appendTo(b []byte) ([]byte, error) {
	if err := check31("stream id", f.StreamID); err != nil {
		return b, err
	}
	if len(f.Data) > MaxFrameLength {
		return b, fmt.Errorf("spdy: DATA payload of %d bytes exceeds %d", len(f.Data), MaxFrameLength)
	}
	b = binary.BigEndian.AppendUint32(b, f.StreamID)
	n := len(f.Data)
	b = append(b, byte(f.Flags), byte(n>>16), byte(n>>8), byte(n))
	return append(b, f.Data...), nil
}

func (f *SynStreamFrame) appendTo(b []byte) ([]byte, error) {
	if err := check31("stream id", f.StreamID); err != nil {
		return b, err
	}
	if err := check31("associated stream id", f.AssociatedToStreamID); err != nil {
		return b, err
	}
	if f.Priority > MaxPriority {
		return b, fmt.Errorf("spdy: priority %d exceeds %d", f.Priority, MaxPriority)
	}
	b, err := appendControlHeader(b, TypeSynStream, f.Flags, 10+len(f.HeaderBlock))
	if err != nil {
		return b, err
	}
	b = binary.BigEndian.AppendUint32(b, f.StreamID)
	b = binary.BigEndian.AppendUint32(b, f.AssociatedToStreamID)
	b = append(b, f.Priority<<5, f.Slot)
	return append(b, f.HeaderBlock...), nil
}

func appendStreamHeaderBlock(b []byte, t FrameType, flags Flags, id uint32, block []byte) ([]byte, error) {
	if err := check31("stream id", id); err != nil {
		return b, err
	}
	b, err := appendControlHeader(b, t, flags, 4+len(block))
	if err != nil {
		return b, err
	}
	b = binary.BigEndian.AppendUint32(b, id)
	return append(b, block...), nil
}

func (f *SynReplyFrame) appendTo(b []byte) ([]byte, error) {
	return appendStreamHeaderBlock(b, TypeSynReply, f.Flags, f.StreamID, f.HeaderBlock)
}

func (f *HeadersFrame) appendTo(b []byte) ([]byte, error) {
	return appendStreamHeaderBlock(b, TypeHeaders, f.Flags, f.StreamID, f.HeaderBlock)
}

func (f *RstStreamFrame) appendTo(b []byte) ([]byte, error) {
	if err := check31("stream id", f.StreamID); err != nil {
		return b, err
	}
	b, _ = appendControlHeader(b, TypeRstStream, f.Flags, 8)
	b = binary.BigEndian.AppendUint32(b, f.StreamID)
	return binary.BigEndian.AppendUint32(b, uint32(f.Status)), nil
}

func (f *SettingsFrame) appendTo(b []byte) ([]byte, error) {
	for _, s := range f.Settings {
		if s.ID > 0xffffff {
			return b, fmt.Errorf("spdy: setting id %d exceeds 24 bits", s.ID)
		}
	}
	b, err := appendControlHeader(b, TypeSettings, f.Flags, 4+8*len(f.Settings))
	if err != nil {
		return b, err
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(f.Settings)))
	for _, s := range f.Settings {
		b = append(b, byte(s.Flags), byte(s.ID>>16), byte(s.ID>>8), byte(s.ID))
		b = binary.BigEndian.AppendUint32(b, s.Value)
	}
	return b, nil
}

func (f *PingFrame) appendTo(b []byte) ([]byte, error) {
	b, _ = appendControlHeader(b, TypePing, f.Flags, 4)
	return binary.BigEndian.AppendUint32(b, f.ID), nil
}

func (f *GoAwayFrame) appendTo(b []byte) ([]byte, error) {
	if err := check31("last good stream id", f.LastGoodStreamID); err != nil {
		return b, err
	}
	b, _ = appendControlHeader(b, TypeGoAway, f.Flags, 8)
	b = binary.BigEndian.AppendUint32(b, f.LastGoodStreamID)
	return binary.BigEndian.AppendUint32(b, uint32(f.Status)), nil
}

func (f *WindowUpdateFrame) appendTo(b []byte) ([]byte, error) {
	if err := check31("stream id", f.StreamID); err != nil {
		return b, err
	}
	if err := check31("delta window size", f.DeltaWindowSize); err != nil {
		return b, err
	}
	b, _ = appendControlHeader(b, TypeWindowUpdate, f.Flags, 8)
	b = binary.BigEndian.AppendUint32(b, f.StreamID)
	return binary.BigEndian.AppendUint32(b, f.DeltaWindowSize), nil
}

func (f *UnknownFrame) appendTo(b []byte) ([]byte, error) {
	b, err := appendControlHeader(b, f.FrameType, f.Flags, len(f.Payload))
	if err != nil {
		return b, err
	}
	return append(b, f.Payload...), nil
}

// Fin reports whether the frame carries FLAG_FIN.
func (f *DataFrame) Fin() bool { return f.Flags&FlagFin != 0 }

// Fin reports whether the frame carries FLAG_FIN.
func (f *SynStreamFrame) Fin() bool { return f.Flags&FlagFin != 0 }

// Unidirectional reports whether the frame carries FLAG_UNIDIRECTIONAL.
func (f *SynStreamFrame) Unidirectional() bool { return f.Flags&FlagUnidirectional != 0 }

// Fin reports whether the frame carries FLAG_FIN.
func (f *SynReplyFrame) Fin() bool { return f.Flags&FlagFin != 0 }

// Fin reports whether the frame carries FLAG_FIN.
func (f *HeadersFrame) Fin() bool { return f.Flags&FlagFin != 0 }
