package link

import (
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// Queue is the gateway buffer in front of the rate stage. It holds every accepted packet until
// the packet's last bit has been serialised — the packet being transmitted included — so a queue
// of N packets holds the one on the wire and N-1 waiting behind it, and the (N+1)th packet of a
// burst into an idle link is the first one dropped.
//
// The rate stage computes each packet's departure when the packet arrives (the link is FIFO and
// its service is deterministic), so the queue needs no timer: it forgets packets whose departure
// is at or before the current time whenever it is asked to admit one.
type Queue interface {
	// Admit reports whether a packet of size bytes arriving at now fits. It first forgets the
	// packets that left at or before now. A refused packet is counted as a drop.
	Admit(now time.Duration, size int) bool
	// Hold occupies the queue with an admitted packet until leave. Calls come in arrival order;
	// leave never decreases.
	Hold(size int, leave time.Duration)
	// Stats returns drops and occupancy.
	Stats() QueueStats
}

var _ Queue = (*DropTailQueue)(nil)

// QueueStats describes a queue's drops and occupancy.
type QueueStats struct {
	Packets    int    // packets held, as of the last Admit or Hold
	Bytes      int64  // bytes held, as of the last Admit or Hold
	MaxPackets int    // most packets ever held at once
	MaxBytes   int64  // most bytes ever held at once
	Drops      uint64 // packets refused
	DropBytes  uint64 // bytes refused
}

// DropTailQueue refuses an arriving packet when holding it would exceed the packet limit or the
// byte limit (0 = no limit in that dimension; both 0 = infinite).
type DropTailQueue struct {
	limitPackets int64
	limitBytes   int64
	held         ring[heldPacket]
	bytes        int64
	stats        QueueStats
}

type heldPacket struct {
	leave time.Duration
	size  int64
}

// NewDropTailQueue returns an empty drop-tail queue with the given limits (negative limits are
// treated as 0, no limit).
func NewDropTailQueue(limit profile.QueueLimit) *DropTailQueue {
	q := &DropTailQueue{limitPackets: max(limit.Packets, 0), limitBytes: max(limit.Bytes, 0)}
	capacity := 256
	if q.limitPackets > 0 {
		capacity = int(min(q.limitPackets, 1<<16))
	}
	q.held = newRing[heldPacket](capacity)
	return q
}

// Admit implements Queue.
func (q *DropTailQueue) Admit(now time.Duration, size int) bool {
	for q.held.len() > 0 && q.held.peek().leave <= now {
		q.bytes -= q.held.pop().size
	}
	n, b := int64(q.held.len()), q.bytes
	if (q.limitPackets > 0 && n+1 > q.limitPackets) || (q.limitBytes > 0 && b+int64(size) > q.limitBytes) {
		q.stats.Drops++
		q.stats.DropBytes += uint64(size)
		return false
	}
	return true
}

// Hold implements Queue.
func (q *DropTailQueue) Hold(size int, leave time.Duration) {
	q.held.push(heldPacket{leave: leave, size: int64(size)})
	q.bytes += int64(size)
	if n := q.held.len(); n > q.stats.MaxPackets {
		q.stats.MaxPackets = n
	}
	if q.bytes > q.stats.MaxBytes {
		q.stats.MaxBytes = q.bytes
	}
}

// Stats implements Queue.
func (q *DropTailQueue) Stats() QueueStats {
	s := q.stats
	s.Packets, s.Bytes = q.held.len(), q.bytes
	return s
}
