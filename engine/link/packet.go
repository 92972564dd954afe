package link

import (
	"strconv"
	"time"
)

// Packet is one IP packet crossing the link. The caller owns it: the link keeps the pointer from
// Push until Pop returns it (or until Push reports a drop, in which case it never keeps it) and
// never reads or writes Data beyond its length.
type Packet struct {
	// Data is the whole IP packet; its length is what the rate stage serialises and the queue
	// counts (IP bytes, no link-layer framing — as mahimahi counts).
	Data []byte
	// Origin selects the per-origin extra delay: 0 = none, N = origin N (1-based), set by the
	// adapter from the packet's server-side address. Unknown origins get no extra delay.
	Origin int

	due time.Duration // when the packet leaves the link (set by Push)
	seq uint64        // acceptance order, to break ties between lanes deterministically
}

// Due is when the link releases the packet (valid once Push has accepted it). A real-time runner
// compares it with the time it actually wrote the packet out to measure timer lateness.
func (p *Packet) Due() time.Duration { return p.due }

// Fate is what Push did with a packet.
type Fate uint8

const (
	// Accepted: the packet is in the link and Pop will return it at p.Due().
	Accepted Fate = iota
	// DroppedLoss: the loss model dropped the packet before the queue.
	DroppedLoss
	// DroppedQueue: the drop-tail queue was full.
	DroppedQueue
)

func (f Fate) String() string {
	switch f {
	case Accepted:
		return "accepted"
	case DroppedLoss:
		return "dropped-loss"
	case DroppedQueue:
		return "dropped-queue"
	}
	return "fate(" + strconv.Itoa(int(f)) + ")"
}
