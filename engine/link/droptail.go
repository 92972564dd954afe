package link

import (
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// DropTailQueue is a FIFO that refuses an arriving packet when holding it would exceed the
// packet limit or the byte limit (0 = no limit in that dimension; both 0 = infinite). It counts
// the packets the rate stage still holds — the one on the wire — against its limit: a queue of N
// packets holds the one being sent and N-1 waiting, so the (N+1)th packet of a burst into an idle
// link is the first one dropped (docs/network.md, "Queue").
//
// It decides nothing at dequeue, so the Direction hands each packet to the rate stage as soon as
// it is queued: departures and due times are known at Push.
type DropTailQueue struct {
	limit profile.QueueLimit
	q     ring[*Packet]
	bytes int64
}

// NewDropTailQueue returns an empty drop-tail queue with the given limits (negative limits are
// treated as 0, no limit).
func NewDropTailQueue(limit profile.QueueLimit) *DropTailQueue {
	limit.Packets, limit.Bytes = max(limit.Packets, 0), max(limit.Bytes, 0)
	return &DropTailQueue{limit: limit, q: newRing[*Packet](16)}
}

// Enqueue implements Discipline: a tail drop when p does not fit beside what is queued and on
// the wire.
func (q *DropTailQueue) Enqueue(_ time.Duration, p *Packet, wire Backlog) Fate {
	held := Backlog{Packets: q.q.len() + wire.Packets, Bytes: q.bytes + wire.Bytes}
	if overLimit(q.limit, held, len(p.Data)) {
		return DroppedQueue
	}
	q.q.push(p)
	q.bytes += int64(len(p.Data))
	return Accepted
}

// Dequeue implements Discipline: the head.
func (q *DropTailQueue) Dequeue(time.Duration) *Packet {
	if q.q.len() == 0 {
		return nil
	}
	p := q.q.pop()
	q.bytes -= int64(len(p.Data))
	return p
}

// Backlog implements Discipline.
func (q *DropTailQueue) Backlog() Backlog { return Backlog{Packets: q.q.len(), Bytes: q.bytes} }

func (q *DropTailQueue) fifo() {}
