// Package pkttest builds IPv4 packets with valid checksums for tests.
package pkttest

import (
	"encoding/binary"
	"net/netip"
)

// TCP flag bits.
const (
	FIN = 0x01
	SYN = 0x02
	RST = 0x04
	PSH = 0x08
	ACK = 0x10
)

// TCP builds an IPv4/TCP packet (20-byte IP header, 20-byte TCP header, no options).
func TCP(src, dst netip.AddrPort, seq, ack uint32, flags uint8, payload []byte) []byte {
	p := make([]byte, 40+len(payload))
	ipHeader(p, src.Addr(), dst.Addr(), 6)
	t := p[20:]
	binary.BigEndian.PutUint16(t[0:], src.Port())
	binary.BigEndian.PutUint16(t[2:], dst.Port())
	binary.BigEndian.PutUint32(t[4:], seq)
	binary.BigEndian.PutUint32(t[8:], ack)
	t[12] = 5 << 4
	t[13] = flags
	binary.BigEndian.PutUint16(t[14:], 65535)
	copy(t[20:], payload)
	binary.BigEndian.PutUint16(t[16:], transportChecksum(p, 6))
	return p
}

// UDP builds an IPv4/UDP packet.
func UDP(src, dst netip.AddrPort, payload []byte) []byte {
	p := make([]byte, 28+len(payload))
	ipHeader(p, src.Addr(), dst.Addr(), 17)
	u := p[20:]
	binary.BigEndian.PutUint16(u[0:], src.Port())
	binary.BigEndian.PutUint16(u[2:], dst.Port())
	binary.BigEndian.PutUint16(u[4:], uint16(8+len(payload)))
	copy(u[8:], payload)
	binary.BigEndian.PutUint16(u[6:], transportChecksum(p, 17))
	return p
}

func ipHeader(p []byte, src, dst netip.Addr, proto byte) {
	p[0] = 0x45
	binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
	p[6] = 0x40 // DF
	p[8] = 64
	p[9] = proto
	s, d := src.As4(), dst.As4()
	copy(p[12:16], s[:])
	copy(p[16:20], d[:])
	binary.BigEndian.PutUint16(p[10:], ^fold(sum(p[:20], 0)))
}

func transportChecksum(p []byte, proto byte) uint16 {
	var pseudo [12]byte
	copy(pseudo[0:8], p[12:20])
	pseudo[9] = proto
	binary.BigEndian.PutUint16(pseudo[10:], uint16(len(p)-20))
	c := ^fold(sum(p[20:], sum(pseudo[:], 0)))
	if c == 0 && proto == 17 {
		c = 0xffff
	}
	return c
}

func sum(b []byte, acc uint32) uint32 {
	for i := 0; i+1 < len(b); i += 2 {
		acc += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		acc += uint32(b[len(b)-1]) << 8
	}
	return acc
}

func fold(acc uint32) uint16 {
	for acc > 0xffff {
		acc = acc>>16 + acc&0xffff
	}
	return uint16(acc)
}
