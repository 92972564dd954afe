package link

import "encoding/binary"

// ECN codepoints of the IP header's two ECN bits (RFC 3168).
const (
	ecnNotECT = 0
	ecnECT1   = 1
	ecnECT0   = 2
	ecnCE     = 3
)

// ECNField returns the ECN codepoint of an IPv4 or IPv6 packet (0, Not-ECT, for anything else).
func ECNField(pkt []byte) uint8 {
	switch {
	case len(pkt) >= 20 && pkt[0]>>4 == 4:
		return pkt[1] & 3
	case len(pkt) >= 40 && pkt[0]>>4 == 6:
		return pkt[1] >> 4 & 3
	}
	return ecnNotECT
}

// markCE marks p Congestion Experienced, as Linux's INET_ECN_set_ce does, and reports whether it
// could: an ECN-capable packet (ECT(0) or ECT(1)) is rewritten to CE — the IPv4 header checksum
// updated incrementally (RFC 1624) — and one already CE stays so; a Not-ECT packet cannot be
// marked and the caller drops it instead.
func markCE(p *Packet) bool {
	pkt := p.Data
	switch ECNField(pkt) {
	case ecnNotECT:
		return false
	case ecnCE:
		p.ce = true
		return true
	}
	if pkt[0]>>4 == 6 {
		pkt[1] |= ecnCE << 4
	} else {
		old := binary.BigEndian.Uint16(pkt[0:2])
		pkt[1] |= ecnCE
		setChecksum16(pkt[10:12], old, binary.BigEndian.Uint16(pkt[0:2]))
	}
	p.ce = true
	return true
}

// setChecksum16 updates the Internet checksum at sum after one 16-bit word of the header changed
// from old to new: HC' = ~(~HC + ~m + m') (RFC 1624, eqn. 3).
func setChecksum16(sum []byte, old, new uint16) {
	s := uint32(^binary.BigEndian.Uint16(sum)) + uint32(^old) + uint32(new)
	s = (s & 0xffff) + (s >> 16)
	s = (s & 0xffff) + (s >> 16)
	binary.BigEndian.PutUint16(sum, ^uint16(s))
}
