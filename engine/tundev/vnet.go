package tundev

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The virtio-net header that precedes every packet on an IFF_VNET_HDR TUN device
// (include/uapi/linux/virtio_net.h).
const (
	vnetHdrLen = 10

	vnetFlagNeedsCsum = 1 // VIRTIO_NET_HDR_F_NEEDS_CSUM: the checksum is partial (CHECKSUM_PARTIAL)

	gsoNone  = 0 // VIRTIO_NET_HDR_GSO_NONE
	gsoTCPv4 = 1
	gsoUDPL4 = 5
	gsoTCPv6 = 4
)

type vnetHdr struct {
	flags      uint8
	gsoType    uint8
	hdrLen     uint16
	gsoSize    uint16
	csumStart  uint16
	csumOffset uint16
}

func (h *vnetHdr) decode(b []byte) {
	h.flags, h.gsoType = b[0], b[1]
	h.hdrLen = binary.LittleEndian.Uint16(b[2:])
	h.gsoSize = binary.LittleEndian.Uint16(b[4:])
	h.csumStart = binary.LittleEndian.Uint16(b[6:])
	h.csumOffset = binary.LittleEndian.Uint16(b[8:])
}

func (h *vnetHdr) encode(b []byte) {
	b[0], b[1] = h.flags, h.gsoType
	binary.LittleEndian.PutUint16(b[2:], h.hdrLen)
	binary.LittleEndian.PutUint16(b[4:], h.gsoSize)
	binary.LittleEndian.PutUint16(b[6:], h.csumStart)
	binary.LittleEndian.PutUint16(b[8:], h.csumOffset)
}

// Packet metadata kept in the byte just before the packet (bufs[i][offset-1]): the runner's
// buffers carry it from Read to Write.
const (
	metaPartial = 1 // the transport checksum field holds the pseudo-header sum (CHECKSUM_PARTIAL)
)

// ipInfo is what splitting and coalescing need from a packet's headers.
type ipInfo struct {
	v6      bool
	ipLen   int   // IP header length
	proto   uint8 // transport protocol
	l4Len   int   // transport header length (TCP data offset, 8 for UDP)
	payload int   // transport payload length
}

var errShort = errors.New("tundev: truncated packet")

// parse reads the IP and transport headers of pkt (IPv4 without fragments, IPv6 without extension
// headers; TCP or UDP). ok is false for anything else.
func parse(pkt []byte) (ipInfo, bool) {
	var in ipInfo
	if len(pkt) < 20 {
		return in, false
	}
	switch pkt[0] >> 4 {
	case 4:
		in.ipLen = int(pkt[0]&0x0f) * 4
		if in.ipLen < 20 || len(pkt) < in.ipLen || int(binary.BigEndian.Uint16(pkt[2:])) != len(pkt) {
			return in, false
		}
		if binary.BigEndian.Uint16(pkt[6:])&0x3fff != 0 { // MF or fragment offset
			return in, false
		}
		in.proto = pkt[9]
	case 6:
		if len(pkt) < 40 || int(binary.BigEndian.Uint16(pkt[4:]))+40 != len(pkt) {
			return in, false
		}
		in.v6, in.ipLen, in.proto = true, 40, pkt[6]
	default:
		return in, false
	}
	l4 := pkt[in.ipLen:]
	switch in.proto {
	case 6:
		if len(l4) < 20 {
			return in, false
		}
		in.l4Len = int(l4[12]>>4) * 4
		if in.l4Len < 20 || in.l4Len > len(l4) {
			return in, false
		}
	case 17:
		if len(l4) < 8 {
			return in, false
		}
		in.l4Len = 8
	default:
		return in, false
	}
	in.payload = len(l4) - in.l4Len
	return in, true
}

// csumOffset is where the transport checksum lies within the transport header.
func (in *ipInfo) csumOffset() int {
	if in.proto == 6 {
		return 16
	}
	return 6
}

// sum adds b as big-endian 16-bit words to acc (RFC 1071, unfolded).
func sum(b []byte, acc uint64) uint64 {
	for len(b) >= 32 {
		acc += uint64(binary.BigEndian.Uint32(b[0:])) + uint64(binary.BigEndian.Uint32(b[4:])) +
			uint64(binary.BigEndian.Uint32(b[8:])) + uint64(binary.BigEndian.Uint32(b[12:])) +
			uint64(binary.BigEndian.Uint32(b[16:])) + uint64(binary.BigEndian.Uint32(b[20:])) +
			uint64(binary.BigEndian.Uint32(b[24:])) + uint64(binary.BigEndian.Uint32(b[28:]))
		b = b[32:]
	}
	for len(b) >= 4 {
		acc += uint64(binary.BigEndian.Uint32(b))
		b = b[4:]
	}
	if len(b) >= 2 {
		acc += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint64(b[0]) << 8
	}
	return acc
}

func fold(acc uint64) uint16 {
	for acc > 0xffff {
		acc = (acc >> 16) + (acc & 0xffff)
	}
	return uint16(acc)
}

// pseudoSum is the folded (not complemented) pseudo-header sum of a transport segment of l4len
// bytes: what the checksum field holds while the checksum is partial.
func pseudoSum(pkt []byte, in *ipInfo, l4len int) uint16 {
	var acc uint64
	if in.v6 {
		acc = sum(pkt[8:40], 0)
	} else {
		acc = sum(pkt[12:20], 0)
	}
	acc += uint64(in.proto) + uint64(l4len)
	return fold(acc)
}

// setIPv4Checksum recomputes an IPv4 header checksum.
func setIPv4Checksum(pkt []byte, ipLen int) {
	pkt[10], pkt[11] = 0, 0
	binary.BigEndian.PutUint16(pkt[10:], ^fold(sum(pkt[:ipLen], 0)))
}

// setLengths writes the IP length fields (and UDP's) for a packet of n bytes.
func setLengths(pkt []byte, in *ipInfo, n int) {
	if in.v6 {
		binary.BigEndian.PutUint16(pkt[4:], uint16(n-40))
	} else {
		binary.BigEndian.PutUint16(pkt[2:], uint16(n))
		setIPv4Checksum(pkt, in.ipLen)
	}
	if in.proto == 17 {
		binary.BigEndian.PutUint16(pkt[in.ipLen+4:], uint16(n-in.ipLen))
	}
}

// completeChecksum turns a partial checksum into a full one (for packets that leave through a
// device without offloads, and for a partial checksum at an unexpected place).
func completeChecksum(pkt []byte, start, off int) error {
	if start+off+2 > len(pkt) {
		return errShort
	}
	c := ^fold(sum(pkt[start:], 0))
	if c == 0 && off == 6 { // UDP sends 0 as 0xffff
		c = 0xffff
	}
	binary.BigEndian.PutUint16(pkt[start+off:], c)
	return nil
}

// TCP flag bits.
const (
	tcpFIN = 0x01
	tcpPSH = 0x08
	tcpACK = 0x10
	tcpCWR = 0x80
)

// split cuts a GSO super-packet (headers followed by payload, as the kernel hands it over) into
// segments of at most gsoSize payload bytes, each written at bufs[i][offset:] with its own headers.
// Segments keep a partial checksum (no checksum is computed over any payload) and are marked so.
func split(pkt []byte, h *vnetHdr, bufs [][]byte, sizes []int, offset int) (int, error) {
	in, ok := parse(pkt)
	if !ok || in.ipLen != int(h.csumStart) {
		return 0, fmt.Errorf("tundev: GSO packet with unexpected headers (type %d)", h.gsoType)
	}
	hdrLen := in.ipLen + in.l4Len
	gso := int(h.gsoSize)
	if gso <= 0 {
		return 0, fmt.Errorf("tundev: GSO size 0")
	}
	payload := pkt[hdrLen:]
	n := (len(payload) + gso - 1) / gso
	if n > len(bufs) {
		return 0, fmt.Errorf("tundev: GSO packet of %d segments, room for %d", n, len(bufs))
	}
	var seq uint32
	if in.proto == 6 {
		seq = binary.BigEndian.Uint32(pkt[in.ipLen+4:])
	}
	var id uint16
	if !in.v6 {
		id = binary.BigEndian.Uint16(pkt[4:])
	}
	// Every segment but the last has the same length: its pseudo-header sum and IPv4 header sum
	// (without the ID, added per segment) are computed once.
	fullLen := hdrLen + gso
	var fullPseudo uint16
	var ipBase uint64
	for i := 0; i < n; i++ {
		chunk := payload[i*gso : min((i+1)*gso, len(payload))]
		size := hdrLen + len(chunk)
		if offset+size > len(bufs[i]) {
			return i, fmt.Errorf("tundev: segment of %d bytes does not fit a %d-byte buffer", size, len(bufs[i])-offset)
		}
		out := bufs[i][offset : offset+size]
		copy(out, pkt[:hdrLen])
		copy(out[hdrLen:], chunk)
		if in.v6 {
			binary.BigEndian.PutUint16(out[4:], uint16(size-40))
		} else {
			binary.BigEndian.PutUint16(out[2:], uint16(size))
			binary.BigEndian.PutUint16(out[4:], 0)
			out[10], out[11] = 0, 0
			var hs uint64
			if size == fullLen && i > 0 {
				hs = ipBase
			} else {
				hs = sum(out[:in.ipLen], 0)
				if size == fullLen {
					ipBase = hs
				}
			}
			segID := id + uint16(i)
			binary.BigEndian.PutUint16(out[4:], segID)
			binary.BigEndian.PutUint16(out[10:], ^fold(hs+uint64(segID)))
		}
		if in.proto == 17 {
			binary.BigEndian.PutUint16(out[in.ipLen+4:], uint16(size-in.ipLen))
		}
		if in.proto == 6 {
			th := out[in.ipLen:]
			binary.BigEndian.PutUint32(th[4:], seq+uint32(i*gso))
			if i < n-1 {
				th[13] &^= tcpFIN | tcpPSH
			}
			if i > 0 {
				th[13] &^= tcpCWR
			}
		}
		var ps uint16
		if size == fullLen && fullPseudo != 0 {
			ps = fullPseudo
		} else {
			ps = pseudoSum(out, &in, size-in.ipLen)
			if size == fullLen {
				fullPseudo = ps
			}
		}
		binary.BigEndian.PutUint16(out[in.ipLen+in.csumOffset():], ps)
		bufs[i][offset-1] = metaPartial
		sizes[i] = size
	}
	return n, nil
}
