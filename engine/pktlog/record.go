// Package pktlog keeps a compact record of every packet that crossed (or was dropped by) the
// emulated link and derives per-window metrics from it: packets and bytes per direction, drops by
// cause, TCP retransmissions and Time on Wire. The definitions are in docs/metrics.md.
package pktlog

import (
	"encoding/binary"
	"time"

	"github.com/wirelab/wirelab/engine/link"
)

// Dir is the direction a packet travelled: the link model's (engine/link), which the runner and
// the log share.
type Dir = link.Dir

// The directions, as the log's readers name them.
const (
	Up   = link.Up   // client → server
	Down = link.Down // server → client
)

// IP protocol numbers.
const (
	ProtoTCP = 6
	ProtoUDP = 17
)

// TCP flag bits as in the header.
const (
	FlagFIN = 0x01
	FlagSYN = 0x02
	FlagRST = 0x04
	FlagPSH = 0x08
	FlagACK = 0x10
)

// Record is one packet: 56 bytes, header facts and what the link did with it.
type Record struct {
	// In is when the packet entered the emulator from the sender's TUN (ns since the emulator
	// started): its arrival at the gateway.
	In int64
	// Out is when it left into the receiver's TUN — the instant the runner wrote it, its due time
	// plus the runner's lateness — or, for a dropped packet, when the link dropped it: In for the
	// loss model and for drops on arrival (a full drop-tail queue, PIE, RED, an AQM's limit),
	// later for CoDel's drops at dequeue and FQ-CoDel's overflow drops from the fattest flow.
	Out int64
	// SojournUS is how long the packet waited in the gateway's queue before the rate stage began
	// sending it (CoDel's sojourn time), in µs; 0 on an unlimited link and for drops on arrival.
	// Out − In − SojournUS is its transmission, propagation delay and the runner's lateness.
	SojournUS uint32
	Src, Dst  [4]byte // IPv4 addresses (zero for IPv6)
	Seq, Ack  uint32  // TCP
	IPLen     uint16  // IP total length in bytes
	Payload   uint16  // TCP or UDP payload length in bytes
	SrcPort   uint16  // TCP/UDP
	DstPort   uint16  // TCP/UDP
	Proto     uint8   // IP protocol (6 TCP, 17 UDP, …)
	Flags     uint8   // TCP flags
	ECN       uint8   // the IP header's ECN field as the packet left the link (3: CE, marked by it or before)
	Dir       Dir
	Fate      link.Fate // Delivered, Marked, or a drop (DroppedLoss, DroppedQueue, DroppedAQM, DroppedOverflow)
	// QUIC is the set of QUIC long-header packet types in a UDP datagram: its first packet's and
	// those of the packets coalesced behind it (RFC 9000 §12.2), read from their unencrypted
	// first bytes, versions and Length fields (RFC 9000 §17.2; RFC 9369 §3.2 for v2).
	QUIC QUICSet
}

// ClientTime is when the client's side of the link saw the packet: entering the link for Up
// packets, delivered to the client for Down packets (for a dropped Down packet, when it was dropped).
func (r *Record) ClientTime() time.Duration {
	if r.Dir == Down && r.Fate.Delivered() {
		return time.Duration(r.Out)
	}
	return time.Duration(r.In)
}

// SeqLen is the sequence space a TCP segment occupies: payload, plus one each for SYN and FIN.
func (r *Record) SeqLen() uint32 {
	if r.Proto != ProtoTCP {
		return 0
	}
	n := uint32(r.Payload)
	if r.Flags&FlagSYN != 0 {
		n++
	}
	if r.Flags&FlagFIN != 0 {
		n++
	}
	return n
}

// Parse fills the header facts of r from an IP packet. Truncated or unknown packets keep what
// could be read (IPLen at least).
func Parse(pkt []byte, r *Record) {
	r.IPLen = uint16(len(pkt))
	if len(pkt) < 1 {
		return
	}
	var l4 []byte
	switch pkt[0] >> 4 {
	case 4:
		if len(pkt) < 20 {
			return
		}
		r.ECN = link.ECNField(pkt)
		ihl := int(pkt[0]&0x0f) * 4
		total := int(binary.BigEndian.Uint16(pkt[2:]))
		if total >= 20 && total >= ihl && total <= len(pkt) { // a total below the fixed header is not a length
			pkt = pkt[:total]
			r.IPLen = uint16(total)
		}
		copy(r.Src[:], pkt[12:16])
		copy(r.Dst[:], pkt[16:20])
		r.Proto = pkt[9]
		// Only the first fragment carries the transport header.
		if ihl < 20 || ihl > len(pkt) || binary.BigEndian.Uint16(pkt[6:])&0x1fff != 0 {
			return
		}
		l4 = pkt[ihl:]
	case 6:
		if len(pkt) < 40 {
			return
		}
		r.ECN = link.ECNField(pkt)
		r.Proto = pkt[6] // extension headers are not followed
		l4 = pkt[40:]
	default:
		return
	}
	switch r.Proto {
	case ProtoTCP:
		if len(l4) < 20 {
			return
		}
		r.SrcPort = binary.BigEndian.Uint16(l4[0:])
		r.DstPort = binary.BigEndian.Uint16(l4[2:])
		r.Seq = binary.BigEndian.Uint32(l4[4:])
		r.Ack = binary.BigEndian.Uint32(l4[8:])
		r.Flags = l4[13]
		if off := int(l4[12]>>4) * 4; off >= 20 && off <= len(l4) {
			r.Payload = uint16(len(l4) - off)
		}
	case ProtoUDP:
		if len(l4) < 8 {
			return
		}
		r.SrcPort = binary.BigEndian.Uint16(l4[0:])
		r.DstPort = binary.BigEndian.Uint16(l4[2:])
		r.Payload = uint16(len(l4) - 8)
		r.QUIC = quicLongTypes(l4[8:])
	}
}

// QUICType is a QUIC long-header packet type, the same for every version this reader knows.
type QUICType uint8

// The long-header packet types; QUICNone for anything else (a short header, an unknown version,
// a version negotiation packet, not QUIC at all).
const (
	QUICNone QUICType = iota
	QUICInitial
	QUIC0RTT
	QUICHandshake
	QUICRetry
)

// QUICSet is a set of long-header packet types (bit 1<<t for type t): those a datagram carries.
type QUICSet uint8

// Has reports whether the set holds type t.
func (s QUICSet) Has(t QUICType) bool { return t != QUICNone && s&(1<<t) != 0 }

// quicLongType reads the type of the QUIC packet at the start of p: header form and fixed bits
// set, version 1 or 2, and the two type bits mapped by that version's table.
func quicLongType(p []byte) QUICType {
	if len(p) < 5 || p[0]&0xc0 != 0xc0 {
		return QUICNone
	}
	t := (p[0] >> 4) & 3
	switch binary.BigEndian.Uint32(p[1:5]) {
	case 0x00000001: // RFC 9000 §17.2: 0 Initial, 1 0-RTT, 2 Handshake, 3 Retry
		return QUICType(t + 1)
	case 0x6b3343cf: // RFC 9369 §3.2: 1 Initial, 2 0-RTT, 3 Handshake, 0 Retry
		return [4]QUICType{QUICRetry, QUICInitial, QUIC0RTT, QUICHandshake}[t]
	}
	return QUICNone
}

// quicLongTypes reads the long-header packets of a UDP payload and returns their types. A long
// header's lengths are outside header protection (which covers the first byte's low bits and the
// packet number only), so the packets coalesced behind the first are found by skipping
// Destination and Source Connection IDs, an Initial's Token, and the Length field's count of
// packet-number and payload bytes (RFC 9000 §17.2). It stops at a short header (which runs to the
// datagram's end), a Retry (no Length), an unknown version, padding, or a length that overruns.
func quicLongTypes(p []byte) QUICSet {
	var s QUICSet
	for {
		t := quicLongType(p)
		if t == QUICNone {
			return s
		}
		s |= 1 << t
		if t == QUICRetry {
			return s
		}
		off := 5
		for range 2 { // Destination, then Source Connection ID: a length byte and the ID
			if off >= len(p) {
				return s
			}
			off += 1 + int(p[off])
		}
		if off > len(p) {
			return s
		}
		if t == QUICInitial {
			tok, n := quicVarint(p[off:])
			if n == 0 || tok > uint64(len(p)-off-n) {
				return s
			}
			off += n + int(tok)
		}
		length, n := quicVarint(p[off:])
		if n == 0 || length > uint64(len(p)-off-n) {
			return s
		}
		p = p[off+n+int(length):]
	}
}

// quicVarint reads a QUIC variable-length integer (RFC 9000 §16); n = 0 when p is too short.
func quicVarint(p []byte) (v uint64, n int) {
	if len(p) == 0 {
		return 0, 0
	}
	n = 1 << (p[0] >> 6)
	if len(p) < n {
		return 0, 0
	}
	v = uint64(p[0] & 0x3f)
	for _, b := range p[1:n] {
		v = v<<8 | uint64(b)
	}
	return v, n
}

// QUICPackets counts the datagrams in dir that carry a QUIC packet of type t, first or coalesced.
// A client's 0-RTT datagrams on a load: QUICPackets(recs, Up, QUIC0RTT).
func QUICPackets(recs []Record, dir Dir, t QUICType) int {
	n := 0
	for i := range recs {
		if recs[i].Dir == dir && recs[i].Proto == ProtoUDP && recs[i].QUIC.Has(t) {
			n++
		}
	}
	return n
}
