package server

import (
	"crypto/tls"
	"encoding/binary"
	"net"
	"sync"
	"time"
)

// HTTP/2 frame types and flags the observer looks at (RFC 9113 §6).
const (
	frameData      = 0x0
	frameHeaders   = 0x1
	frameRSTStream = 0x3
	// framePriorityUpdate is RFC 9218's PRIORITY_UPDATE (§7.1).
	framePriorityUpdate = 0x10
	flagEndStream       = 0x1
	clientPreface       = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
)

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
	o.in.onPayload = o.receivedPayload
	o.out.onFrame = o.sent
	return o
}

// maxCapturedPayload bounds the PRIORITY_UPDATE payloads the observer reads (quic-go's limit);
// larger ones are skipped.
const maxCapturedPayload = 4 << 10

// receivedPayload gets the payload of frames whose type received asked for (PRIORITY_UPDATE).
func (o *h2Observer) receivedPayload(typ, _ byte, _ uint32, payload []byte) {
	if typ != framePriorityUpdate || len(payload) < 4 || o.sched == nil {
		return
	}
	id := binary.BigEndian.Uint32(payload[:4]) & 0x7fffffff
	if id != 0 {
		o.sched.priorityUpdate(id, string(payload[4:]))
	}
}

func (o *h2Observer) received(typ, flags byte, stream uint32, length int) (capture bool) {
	o.stats.FramesReceived++
	switch typ {
	case framePriorityUpdate:
		o.stats.PriorityUpdates++
		return stream == 0 && length <= maxCapturedPayload
	case frameHeaders:
		if _, known := o.streams[stream]; !known && stream%2 == 1 {
			o.streams[stream] = 0
			o.stats.Streams++
			o.stats.MaxOpenStreams = max(o.stats.MaxOpenStreams, len(o.streams))
		}
		if flags&flagEndStream != 0 {
			o.end(stream, 1)
		}
	case frameData:
		if flags&flagEndStream != 0 {
			o.end(stream, 1)
		}
	case frameRSTStream:
		o.stats.ResetsReceived++
		delete(o.streams, stream)
	}
	return false
}

func (o *h2Observer) sent(typ, flags byte, stream uint32, length int) bool {
	o.stats.FramesSent++
	switch typ {
	case frameData:
		o.stats.DataFrames++
		o.stats.DataBytes += int64(length)
		o.stats.MaxDataFrame = max(o.stats.MaxDataFrame, length)
		if o.sends != nil {
			o.sends.data(uint64(stream), int64(length), time.Now())
		}
		if flags&flagEndStream != 0 {
			o.end(stream, 2)
		}
	case frameHeaders:
		if flags&flagEndStream != 0 {
			o.end(stream, 2)
		}
	case frameRSTStream:
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

// frameScanner parses a byte stream into frame headers, skipping payloads except those onFrame
// asks for, which go to onPayload whole.
type frameScanner struct {
	preface   int // bytes of client preface still to skip
	hdr       [9]byte
	hdrN      int
	skip      int    // payload bytes still to skip (or to capture)
	capture   []byte // the payload being captured; nil when skipping
	capturing bool
	onFrame   func(typ, flags byte, stream uint32, length int) (capture bool)
	onPayload func(typ, flags byte, stream uint32, payload []byte)
}

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
				s.capture = append(s.capture, p[:n]...)
			}
			s.skip -= n
			p = p[n:]
			if s.skip == 0 {
				s.deliver()
			}
		default:
			n := copy(s.hdr[s.hdrN:], p)
			s.hdrN += n
			p = p[n:]
			if s.hdrN == 9 {
				s.hdrN = 0
				length := int(s.hdr[0])<<16 | int(s.hdr[1])<<8 | int(s.hdr[2])
				stream := binary.BigEndian.Uint32(s.hdr[5:9]) & 0x7fffffff
				s.capturing = s.onFrame(s.hdr[3], s.hdr[4], stream, length) && s.onPayload != nil
				s.capture = s.capture[:0]
				s.skip = length
				if length == 0 {
					s.deliver()
				}
			}
		}
	}
}

// deliver hands a captured payload to onPayload once it is complete.
func (s *frameScanner) deliver() {
	if !s.capturing {
		return
	}
	s.capturing = false
	stream := binary.BigEndian.Uint32(s.hdr[5:9]) & 0x7fffffff
	s.onPayload(s.hdr[3], s.hdr[4], stream, s.capture)
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
	c.obs.mu.Unlock()
	return c.Conn.Write(p)
}

// observedTLSConn keeps the TLS state visible to golang.org/x/net/http2, which checks the
// negotiated version and cipher suite through this method.
type observedTLSConn struct {
	observedConn
	tc *tls.Conn
}

func (c *observedTLSConn) ConnectionState() tls.ConnectionState { return c.tc.ConnectionState() }
