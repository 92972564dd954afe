package server

import (
	"crypto/tls"
	"encoding/binary"
	"net"
	"sync"
)

// HTTP/2 frame types and flags the observer looks at (RFC 9113 §6).
const (
	frameData      = 0x0
	frameHeaders   = 0x1
	frameRSTStream = 0x3
	flagEndStream  = 0x1
	clientPreface  = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
)

// h2Observer watches the frames of one HTTP/2 connection as they cross the socket, in both
// directions, without touching them: it counts the streams open at once (a stream counts from
// the client's HEADERS until both sides have ended it or either reset it, as
// SETTINGS_MAX_CONCURRENT_STREAMS counts them) and the DATA frames the server sends.
type h2Observer struct {
	mu      sync.Mutex
	in, out frameScanner
	streams map[uint32]uint8 // bit 1: client ended, bit 2: server ended
	stats   H2Stats
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
	ResetsSent      int         `json:"resets_sent"`
	DataFrameCounts map[int]int `json:"-"` // payload size → count (tests)
}

func newH2Observer() *h2Observer {
	o := &h2Observer{streams: map[uint32]uint8{}}
	o.in.preface = len(clientPreface)
	o.in.onFrame = o.received
	o.out.onFrame = o.sent
	return o
}

func (o *h2Observer) received(typ, flags byte, stream uint32, length int) {
	o.stats.FramesReceived++
	switch typ {
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
}

func (o *h2Observer) sent(typ, flags byte, stream uint32, length int) {
	o.stats.FramesSent++
	switch typ {
	case frameData:
		o.stats.DataFrames++
		o.stats.DataBytes += int64(length)
		o.stats.MaxDataFrame = max(o.stats.MaxDataFrame, length)
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

// frameScanner parses a byte stream into frame headers, skipping payloads.
type frameScanner struct {
	preface int // bytes of client preface still to skip
	hdr     [9]byte
	hdrN    int
	skip    int // payload bytes still to skip
	onFrame func(typ, flags byte, stream uint32, length int)
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
			s.skip -= n
			p = p[n:]
		default:
			n := copy(s.hdr[s.hdrN:], p)
			s.hdrN += n
			p = p[n:]
			if s.hdrN == 9 {
				s.hdrN = 0
				length := int(s.hdr[0])<<16 | int(s.hdr[1])<<8 | int(s.hdr[2])
				stream := binary.BigEndian.Uint32(s.hdr[5:9]) & 0x7fffffff
				s.onFrame(s.hdr[3], s.hdr[4], stream, length)
				s.skip = length
			}
		}
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
