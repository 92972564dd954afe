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
		if r.QUIC != c.want {
			t.Errorf("%s: QUIC = %d, want %d", c.name, r.QUIC, c.want)
		}
	}
	// A TCP segment whose payload looks like a 0-RTT packet is not QUIC.
	pkt := udp4(long(0xd1, 1))
	pkt[9] = ProtoTCP
	var r Record
	Parse(pkt, &r)
	if r.QUIC != QUICNone {
		t.Errorf("TCP: QUIC = %d, want none", r.QUIC)
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

// The record stays 56 bytes: the new field fits the padding.
func TestRecordSize(t *testing.T) {
	if s := unsafe.Sizeof(Record{}); s != 56 {
		t.Errorf("Record is %d bytes, want 56", s)
	}
}
