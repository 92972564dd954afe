package server

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"time"

	"golang.org/x/net/http2"
)

// clientPreface opens every HTTP/2 connection from the client (RFC 9113 §3.4).
const clientPreface = http2.ClientPreface

// h2Observer watches the frames of one HTTP/2 connection as they cross the socket, in both
// directions, without touching them: it counts the streams open at once (a stream counts from
// the client's HEADERS until both sides have ended it or either reset it, as
// SETTINGS_MAX_CONCURRENT_STREAMS counts them) and the DATA frames the server sends, which it
// records in the connection's send log. It hands PRIORITY_UPDATE frames to the write scheduler
// as they are read (x/net ignores them when the scheduler is not its own).
type h2Observer struct {
	mu      sync.Mutex
	in, out frameScanner
	streams map[uint32]uint8 // bit 1: client ended, bit 2: server ended
	stats   H2Stats
	sends   *sendLog
	sched   *h2Scheduler
	bytes   *byteMap // the connection's stream map; nil when not kept
}

// H2Stats is what the observer saw on one connection.
type H2Stats struct {
	Streams         int         `json:"streams"`          // streams the client opened
	MaxOpenStreams  int         `json:"max_open_streams"` // most streams open at once
	DataFrames      int         `json:"data_frames"`      // DATA frames sent by the server
	MaxDataFrame    int         `json:"max_data_frame"`   // largest DATA payload sent
	DataBytes       int64       `json:"data_bytes"`       // DATA payload bytes sent
	FramesReceived  int         `json:"frames_received"`
	FramesSent      int         `json:"frames_sent"`
	ResetsReceived  int         `json:"resets_received"`
	PriorityUpdates int         `json:"priority_updates"` // PRIORITY_UPDATE frames received (RFC 9218)
	ResetsSent      int         `json:"resets_sent"`
	DataFrameCounts map[int]int `json:"-"` // payload size → count (tests)
}

func newH2Observer(sends *sendLog, sched *h2Scheduler) *h2Observer {
	o := &h2Observer{streams: map[uint32]uint8{}, sends: sends, sched: sched}
	o.in.preface = len(clientPreface)
	o.in.onFrame = o.received
	o.in.onPayload = o.receivedFrame
	o.out.onFrame = o.sent
	return o
}

// maxCapturedPayload bounds the PRIORITY_UPDATE payloads the observer reads (quic-go's limit);
// larger ones are skipped.
const maxCapturedPayload = 4 << 10

// receivedFrame gets the whole frames that received asked for (PRIORITY_UPDATE), as x/net's
// Framer parsed them; a frame the Framer refuses (stream 0 prioritised, a short payload) is
// ignored, as x/net's own server ends such a connection anyway.
func (o *h2Observer) receivedFrame(f http2.Frame) {
	if pu, ok := f.(*http2.PriorityUpdateFrame); ok && o.sched != nil {
		o.sched.priorityUpdate(pu.PrioritizedStreamID, pu.Priority)
	}
}

func (o *h2Observer) received(fh http2.FrameHeader) (capture bool) {
	o.stats.FramesReceived++
	stream := fh.StreamID
	switch fh.Type {
	case http2.FramePriorityUpdate:
		o.stats.PriorityUpdates++
		return stream == 0 && fh.Length <= maxCapturedPayload
	case http2.FrameHeaders:
		if _, known := o.streams[stream]; !known && stream%2 == 1 {
			o.streams[stream] = 0
			o.stats.Streams++
			o.stats.MaxOpenStreams = max(o.stats.MaxOpenStreams, len(o.streams))
		}
		if fh.Flags.Has(http2.FlagHeadersEndStream) {
			o.end(stream, 1)
		}
	case http2.FrameData:
		if fh.Flags.Has(http2.FlagDataEndStream) {
			o.end(stream, 1)
		}
	case http2.FrameRSTStream:
		o.stats.ResetsReceived++
		delete(o.streams, stream)
	}
	return false
}

func (o *h2Observer) sent(fh http2.FrameHeader) bool {
	o.stats.FramesSent++
	stream, length := fh.StreamID, int(fh.Length)
	switch fh.Type {
	case http2.FrameData:
		o.stats.DataFrames++
		o.stats.DataBytes += int64(length)
		o.stats.MaxDataFrame = max(o.stats.MaxDataFrame, length)
		if o.sends != nil {
			o.sends.data(uint64(stream), int64(length), time.Now())
		}
		if o.bytes != nil {
			o.bytes.dataFrame(stream, o.out.payloadAt, int64(length))
		}
		if fh.Flags.Has(http2.FlagDataEndStream) {
			o.end(stream, 2)
		}
	case http2.FrameHeaders:
		if fh.Flags.Has(http2.FlagHeadersEndStream) {
			o.end(stream, 2)
		}
	case http2.FrameRSTStream:
		o.stats.ResetsSent++
		delete(o.streams, stream)
	}
	return false
}

func (o *h2Observer) end(stream uint32, side uint8) {
	st, ok := o.streams[stream]
	if !ok {
		return
	}
	st |= side
	if st == 3 {
		delete(o.streams, stream)
	} else {
		o.streams[stream] = st
	}
}

func (o *h2Observer) snapshot() H2Stats {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.stats
}

// frameScanner follows one direction of a connection's byte stream frame by frame, as the bytes
// come, without holding them up: x/net's http2.ReadFrameHeader parses each frame header; payloads
// are skipped without a copy, except those onFrame asks for, which are gathered and parsed whole
// by an http2.Framer and go to onPayload. There is no second HTTP/2 parser here: only the
// bookkeeping of where a frame ends.
type frameScanner struct {
	preface   int // bytes of client preface still to skip
	hdr       [http2FrameHeaderLen]byte
	hdrN      int
	fh        http2.FrameHeader // the frame being skipped or captured
	skip      int               // payload bytes still to skip (or to capture)
	frame     []byte            // header and payload of the frame being captured
	capturing bool
	onFrame   func(fh http2.FrameHeader) (capture bool)
	onPayload func(f http2.Frame)
	// pos counts the bytes fed (after the preface); payloadAt is where the current frame's payload
	// starts in that count (the stream map's plaintext offsets).
	pos, payloadAt int64
}

// http2FrameHeaderLen is the fixed size of a frame header (RFC 9113 §4.1).
const http2FrameHeaderLen = 9

func (s *frameScanner) feed(p []byte) {
	for len(p) > 0 {
		switch {
		case s.preface > 0:
			n := min(s.preface, len(p))
			s.preface -= n
			p = p[n:]
		case s.skip > 0:
			n := min(s.skip, len(p))
			if s.capturing {
				s.frame = append(s.frame, p[:n]...)
			}
			s.skip -= n
			p = p[n:]
			s.pos += int64(n)
			if s.skip == 0 {
				s.deliver()
			}
		default:
			n := copy(s.hdr[s.hdrN:], p)
			s.hdrN += n
			p = p[n:]
			s.pos += int64(n)
			if s.hdrN == http2FrameHeaderLen {
				s.hdrN = 0
				s.payloadAt = s.pos
				fh, _ := http2.ReadFrameHeader(bytes.NewReader(s.hdr[:])) // 9 bytes: cannot fail
				s.fh = fh
				s.capturing = s.onFrame(fh) && s.onPayload != nil
				s.frame = append(s.frame[:0], s.hdr[:]...)
				s.skip = int(fh.Length)
				if fh.Length == 0 {
					s.deliver()
				}
			}
		}
	}
}

// deliver parses a captured frame with x/net's Framer and hands it to onPayload.
func (s *frameScanner) deliver() {
	if !s.capturing {
		return
	}
	s.capturing = false
	f, err := http2.NewFramer(io.Discard, bytes.NewReader(s.frame)).ReadFrame()
	if err == nil {
		s.onPayload(f)
	}
}

// observedConn feeds an h2Observer with what is read from and written to the connection.
type observedConn struct {
	net.Conn
	obs *h2Observer
}

func (c *observedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.obs.mu.Lock()
		c.obs.in.feed(p[:n])
		c.obs.mu.Unlock()
	}
	return n, err
}

// Write records the frames before writing them: once the bytes are on the wire the peer may
// answer (e.g. open the next stream) before a Write that returned later could be recorded. A
// failed write ends the connection, so over-counting its bytes does not matter.
func (c *observedConn) Write(p []byte) (int, error) {
	c.obs.mu.Lock()
	c.obs.out.feed(p)
	m := c.obs.bytes
	c.obs.mu.Unlock()
	if m != nil {
		return m.write(p, c.Conn.Write)
	}
	return c.Conn.Write(p)
}

// observedTLSConn keeps the TLS state visible to golang.org/x/net/http2, which checks the
// negotiated version and cipher suite through this method.
type observedTLSConn struct {
	observedConn
	tc *tls.Conn
}

func (c *observedTLSConn) ConnectionState() tls.ConnectionState { return c.tc.ConnectionState() }
