package pktlog

import (
	"encoding/binary"
	"testing"
	"unsafe"
)

// udp4 builds an IPv4/UDP packet carrying payload.
func udp4(payload []byte) []byte {
	pkt := make([]byte, 28+len(payload))
	pkt[0] = 0x45
	binary.BigEndian.PutUint16(pkt[2:], uint16(len(pkt)))
	pkt[9] = ProtoUDP
	copy(pkt[12:], []byte{10, 0, 0, 1})
	copy(pkt[16:], []byte{10, 0, 0, 2})
	binary.BigEndian.PutUint16(pkt[20:], 50000)
	binary.BigEndian.PutUint16(pkt[22:], 443)
	binary.BigEndian.PutUint16(pkt[24:], uint16(8+len(payload)))
	copy(pkt[28:], payload)
	return pkt
}

func long(first byte, version uint32) []byte {
	p := []byte{first, 0, 0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8}
	binary.BigEndian.PutUint32(p[1:], version)
	return p
}

func TestParseQUICLongHeaderTypes(t *testing.T) {
	for _, c := range []struct {
		name    string
		payload []byte
		want    QUICType
	}{
		{"v1 initial", long(0xc3, 1), QUICInitial},
		{"v1 0-RTT", long(0xd1, 1), QUIC0RTT},
		{"v1 handshake", long(0xe0, 1), QUICHandshake},
		{"v1 retry", long(0xf0, 1), QUICRetry},
		{"v2 0-RTT", long(0xe0, 0x6b3343cf), QUIC0RTT},
		{"v2 initial", long(0xd0, 0x6b3343cf), QUICInitial},
		{"v2 retry", long(0xc0, 0x6b3343cf), QUICRetry},
		{"short header", []byte{0x43, 1, 2, 3, 4, 5}, QUICNone},
		{"version negotiation", long(0xc0, 0), QUICNone},
		{"fixed bit clear", long(0x90, 1), QUICNone},
		{"too short", []byte{0xd0, 0, 0}, QUICNone},
	} {
		var r Record
		Parse(udp4(c.payload), &r)
		if want := set(c.want); r.QUIC != want {
			t.Errorf("%s: QUIC = %b, want %b", c.name, r.QUIC, want)
		}
	}
	// A TCP segment whose payload looks like a 0-RTT packet is not QUIC.
	pkt := udp4(long(0xd1, 1))
	pkt[9] = ProtoTCP
	var r Record
	Parse(pkt, &r)
	if r.QUIC != 0 {
		t.Errorf("TCP: QUIC = %b, want none", r.QUIC)
	}
}

func TestQUICPacketsCountsOneDirection(t *testing.T) {
	var recs []Record
	for _, c := range []struct {
		p   []byte
		dir Dir
	}{{long(0xc0, 1), Up}, {long(0xd0, 1), Up}, {long(0xd0, 1), Up}, {long(0xd0, 1), Down}, {[]byte{0x40, 1, 2, 3, 4}, Up}} {
		var r Record
		Parse(udp4(c.p), &r)
		r.Dir = c.dir
		recs = append(recs, r)
	}
	if n := QUICPackets(recs, Up, QUIC0RTT); n != 2 {
		t.Errorf("0-RTT up = %d, want 2", n)
	}
	if n := QUICPackets(recs, Up, QUICInitial); n != 1 {
		t.Errorf("initial up = %d, want 1", n)
	}
	if n := QUICPackets(recs, Down, QUIC0RTT); n != 1 {
		t.Errorf("0-RTT down = %d, want 1", n)
	}
}

func set(ts ...QUICType) QUICSet {
	var s QUICSet
	for _, t := range ts {
		if t != QUICNone {
			s |= 1 << t
		}
	}
	return s
}

// packet builds a whole long-header packet: first byte, version, an 8-byte DCID, a 4-byte SCID,
// for an Initial a token, then the Length field (a 2-byte varint) and that many bytes.
func packet(first byte, version uint32, token []byte, body int) []byte {
	p := []byte{first, 0, 0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8, 4, 9, 9, 9, 9}
	binary.BigEndian.PutUint32(p[1:], version)
	if token != nil {
		p = append(p, byte(len(token)))
		p = append(p, token...)
	}
	p = append(p, 0x40|byte(body>>8), byte(body))
	return append(p, make([]byte, body)...)
}

// Coalesced packets (RFC 9000 §12.2) are followed by their Length fields: a 0-RTT packet behind
// the client's Initial is seen, padding and a short header end the walk, an overrunning length
// stops it without reading past the datagram.
func TestParseQUICCoalesced(t *testing.T) {
	cat := func(ps ...[]byte) []byte {
		var b []byte
		for _, p := range ps {
			b = append(b, p...)
		}
		return b
	}
	v2 := uint32(0x6b3343cf)
	for _, c := range []struct {
		name    string
		payload []byte
		want    QUICSet
	}{
		{"initial + 0-RTT + padding", cat(packet(0xc3, 1, []byte{}, 300), packet(0xd3, 1, nil, 200), make([]byte, 700)), set(QUICInitial, QUIC0RTT)},
		{"initial with a token + 0-RTT", cat(packet(0xc3, 1, []byte{1, 2, 3, 4, 5}, 300), packet(0xd3, 1, nil, 200)), set(QUICInitial, QUIC0RTT)},
		{"v2 initial + 0-RTT", cat(packet(0xd3, v2, []byte{}, 100), packet(0xe3, v2, nil, 100)), set(QUICInitial, QUIC0RTT)},
		{"initial + handshake + short", cat(packet(0xc3, 1, []byte{}, 100), packet(0xe3, 1, nil, 100), []byte{0x43, 1, 2, 3, 4, 5, 6}), set(QUICInitial, QUICHandshake)},
		{"0-RTT alone", packet(0xd3, 1, nil, 1000), set(QUIC0RTT)},
		{"length overruns", cat(packet(0xc3, 1, []byte{}, 100)[:60], packet(0xd3, 1, nil, 10)), set(QUICInitial)},
		{"token overruns", []byte{0xc3, 0, 0, 0, 1, 0, 0, 0x7f, 1}, set(QUICInitial)},
		{"connection ID overruns", []byte{0xc3, 0, 0, 0, 1, 20, 1, 2}, set(QUICInitial)},
		{"retry ends the walk", cat([]byte{0xf0, 0, 0, 0, 1, 0, 0}, packet(0xd3, 1, nil, 10)), set(QUICRetry)},
	} {
		var r Record
		Parse(udp4(c.payload), &r)
		if r.QUIC != c.want {
			t.Errorf("%s: QUIC = %b, want %b", c.name, r.QUIC, c.want)
		}
	}
	var recs []Record
	for _, p := range [][]byte{cat(packet(0xc3, 1, []byte{}, 300), packet(0xd3, 1, nil, 200)), packet(0xd3, 1, nil, 200), packet(0xc3, 1, []byte{}, 300)} {
		var r Record
		Parse(udp4(p), &r)
		r.Dir = Up
		recs = append(recs, r)
	}
	if n := QUICPackets(recs, Up, QUIC0RTT); n != 2 {
		t.Errorf("0-RTT datagrams = %d, want 2 (one coalesced behind an Initial)", n)
	}
}

// The record stays 56 bytes: the new field fits the padding.
func TestRecordSize(t *testing.T) {
	if s := unsafe.Sizeof(Record{}); s != 56 {
		t.Errorf("Record is %d bytes, want 56", s)
	}
}
