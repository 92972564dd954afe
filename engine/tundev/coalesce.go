package tundev

import (
	"bytes"
	"encoding/binary"
)

// A group is a run of segments of one flow written as one GSO super-packet: the first segment
// (headers and payload) followed by the payloads of the others.
type group struct {
	first  int    // index in bufs of the head segment
	last   int    // index of the last segment (next[] links head → … → last)
	count  int    // segments
	in     ipInfo // the head's headers
	gso    int    // payload size of the head: every segment but the last has it
	total  int    // bytes of the coalesced packet
	next   uint32 // TCP: sequence number that extends the group
	closed bool   // a short or PSH segment ended it
}

// maxOpen bounds the groups a write batch keeps open at once (flows interleaved in the batch).
const maxOpen = 8

// maxSegments bounds a super-packet (the kernel's GSO limit is 64 KB anyway).
const maxSegments = 64

// candidate reports whether pkt may join a super-packet: TCP with payload and only ACK (and PSH)
// set, or UDP with payload (when the device takes UDP segmentation offload).
func candidate(pkt []byte, udp bool) (ipInfo, bool) {
	in, ok := parse(pkt)
	if !ok || in.payload == 0 {
		return in, false
	}
	switch in.proto {
	case 6:
		f := pkt[in.ipLen+13]
		return in, f == tcpACK || f == tcpACK|tcpPSH
	case 17:
		return in, udp
	}
	return in, false
}

// sameFlow: same addresses, ports and protocol, and headers that the kernel would merge (IPv4:
// TOS, DF, TTL; IPv6: traffic class, flow label, hop limit; TCP: window, ACK number, options).
func sameFlow(a, b []byte, ai, bi *ipInfo) bool {
	if ai.v6 != bi.v6 || ai.proto != bi.proto || ai.ipLen != bi.ipLen || ai.l4Len != bi.l4Len {
		return false
	}
	if ai.v6 {
		if !bytes.Equal(a[0:4], b[0:4]) || a[7] != b[7] || !bytes.Equal(a[8:40], b[8:40]) {
			return false
		}
	} else {
		if a[1] != b[1] || a[6]&0x40 != b[6]&0x40 || a[8] != b[8] || !bytes.Equal(a[12:20], b[12:20]) {
			return false
		}
	}
	at, bt := a[ai.ipLen:], b[bi.ipLen:]
	if !bytes.Equal(at[0:4], bt[0:4]) { // ports
		return false
	}
	if ai.proto == 6 {
		// ACK number, data offset, window, urgent pointer and options; flags are checked apart.
		return bytes.Equal(at[8:13], bt[8:13]) && bytes.Equal(at[14:16], bt[14:16]) &&
			bytes.Equal(at[18:ai.l4Len], bt[18:bi.l4Len])
	}
	return true
}

// extends reports whether segment pkt continues group g.
func (g *group) extends(pkt []byte, in *ipInfo, head []byte) bool {
	if g.closed || g.count >= maxSegments || in.payload > g.gso || g.total+in.payload > 65535 {
		return false
	}
	if !sameFlow(head, pkt, &g.in, in) {
		return false
	}
	if in.proto == 6 {
		return binary.BigEndian.Uint32(pkt[in.ipLen+4:]) == g.next
	}
	return true
}

func (g *group) add(pkt []byte, in *ipInfo) {
	g.count++
	g.total += in.payload
	if in.proto == 6 {
		g.next = binary.BigEndian.Uint32(pkt[in.ipLen+4:]) + uint32(in.payload)
		if pkt[in.ipLen+13]&tcpPSH != 0 {
			g.closed = true
		}
	}
	if in.payload < g.gso {
		g.closed = true
	}
}

// plan groups the packets of a write batch. Groups are returned in the order of their first
// packet; next[i] is the index of the segment after i in its group (-1 for the last), so a group's
// segments keep their order.
func plan(bufs [][]byte, offset int, udp bool, groups []group, next []int) ([]group, []int) {
	groups = groups[:0]
	next = next[:0]
	var open [maxOpen]int // indices into groups of the open groups, one per flow
	nOpen := 0
	for i := range bufs {
		next = append(next, -1)
		pkt := bufs[i][offset:]
		in, ok := candidate(pkt, udp)
		if ok {
			joined := false
			for k := 0; k < nOpen; k++ {
				g := &groups[open[k]]
				if g.extends(pkt, &in, bufs[g.first][offset:]) {
					next[g.last] = i
					g.last = i
					g.add(pkt, &in)
					joined = true
					break
				}
			}
			if joined {
				continue
			}
		}
		groups = append(groups, group{first: i, last: i, count: 1, in: in, total: len(pkt)})
		g := &groups[len(groups)-1]
		if !ok {
			g.closed = true
			continue
		}
		g.gso = in.payload
		if in.proto == 6 {
			g.next = binary.BigEndian.Uint32(pkt[in.ipLen+4:]) + uint32(in.payload)
			g.closed = pkt[in.ipLen+13]&tcpPSH != 0
		}
		// The flow's open group is replaced; a new flow takes a free slot or evicts the oldest.
		slot := -1
		for k := 0; k < nOpen; k++ {
			o := &groups[open[k]]
			if sameFlow(bufs[o.first][offset:], pkt, &o.in, &in) {
				slot = k
				break
			}
		}
		if slot < 0 {
			if nOpen < maxOpen {
				slot = nOpen
				nOpen++
			} else {
				copy(open[:], open[1:])
				slot = maxOpen - 1
			}
		}
		open[slot] = len(groups) - 1
	}
	return groups, next
}
