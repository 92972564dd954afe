package link

import (
	"time"
)

// Packet is one IP packet crossing the link. The caller owns it: the link keeps the pointer from
// Push until Pop returns it (or until Push reports a drop, in which case it never keeps it).
// The link reads the headers of Data where its queue discipline needs them (FQ-CoDel's flow hash,
// ECN) and writes only the IP header's ECN field and checksum, when a discipline marks the
// packet Congestion Experienced.
type Packet struct {
	// Data is the whole IP packet; its length is what the rate stage serialises and the queue
	// counts (IP bytes, no link-layer framing — as mahimahi counts).
	Data []byte
	// Origin selects the per-origin extra delay: 0 = none, N = origin N (1-based), set by the
	// adapter from the packet's server-side address. Unknown origins get no extra delay.
	Origin int
	// Handle is the caller's own reference to the packet (the real-time runner's buffer id);
	// the link never reads or changes it.
	Handle uint64

	arrival time.Duration // when the queue stage got it
	sojourn time.Duration // how long it waited in the queue stage (set when the rate stage took it)
	due     time.Duration // delivered: when the link releases it; dropped: when it was dropped
	seq     uint64        // order of entry into the delay line, to break ties between lanes
	fate    Fate          // Accepted until the link is done with it
	flow    uint32        // the FQ-CoDel flow queue it sits in
	ce      bool          // a discipline marked it Congestion Experienced
}

// Due is when the link releases the packet — the instant Pop may hand it out, and the deadline
// a real-time runner measures its lateness against — or, for a packet Pop hands out dropped,
// when the queue discipline dropped it. Valid once Pop has returned the packet: a discipline
// that decides at dequeue (CoDel) fixes it only when the packet leaves the queue.
func (p *Packet) Due() time.Duration { return p.due }

// Fate is what the link did with the packet: Accepted while it is inside, then Delivered, Marked
// or the drop Pop reports.
func (p *Packet) Fate() Fate { return p.fate }

// Sojourn is how long the packet waited in the queue stage before the rate stage began sending
// it: CoDel's sojourn time. Valid once Pop has returned the packet; 0 on an unlimited link.
func (p *Packet) Sojourn() time.Duration { return p.sojourn }
