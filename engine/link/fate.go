package link

import "strconv"

// Dir is a direction of the path: the link model's, the real-time runner's and the packet log's.
type Dir uint8

const (
	Up   Dir = iota // client → server
	Down            // server → client
)

func (d Dir) String() string {
	if d == Up {
		return "up"
	}
	return "down"
}

// Fate is what the path did with a packet: the link model's verdict, which the real-time runner
// carries to the packet log unchanged. Push returns Accepted or a drop; once the link is done with
// an accepted packet, Pop hands it out with its final fate (Delivered or Marked, or a drop the
// queue discipline decided later: DroppedAQM at dequeue, DroppedOverflow when FQ-CoDel makes room).
type Fate uint8

// The zero Fate is Delivered, and the values of Delivered, DroppedQueue and DroppedLoss are those
// the packet log's records had before the fates were shared: a zero Record is a delivered packet.
const (
	// Delivered: the link released the packet at its due time.
	Delivered Fate = iota
	// DroppedQueue: a tail drop — the drop-tail queue was full when the packet arrived.
	DroppedQueue
	// DroppedLoss: the loss model dropped the packet before the queue.
	DroppedLoss
	// DroppedAQM: the discipline's active queue management dropped it (CoDel at dequeue, PIE and
	// RED at enqueue).
	DroppedAQM
	// DroppedOverflow: an AQM discipline's own limit (its hard packet or byte limit; FQ-CoDel
	// drops from the fattest flow to make room).
	DroppedOverflow
	// Marked: delivered with Congestion Experienced set by the discipline instead of a drop (ECN).
	Marked
	// Accepted: Push took the packet in; Pop will hand it out with its final fate.
	Accepted
)

// Dropped reports whether the packet was dropped (by loss or by the queue).
func (f Fate) Dropped() bool { return f >= DroppedQueue && f <= DroppedOverflow }

// Delivered reports whether the packet left the link (marked or not).
func (f Fate) Delivered() bool { return f == Delivered || f == Marked }

// QueueDrop reports whether the queue stage dropped the packet (tail, AQM or overflow).
func (f Fate) QueueDrop() bool { return f == DroppedQueue || f == DroppedAQM || f == DroppedOverflow }

func (f Fate) String() string {
	switch f {
	case Accepted:
		return "accepted"
	case DroppedLoss:
		return "dropped-loss"
	case DroppedQueue:
		return "dropped-queue"
	case DroppedAQM:
		return "dropped-aqm"
	case DroppedOverflow:
		return "dropped-overflow"
	case Delivered:
		return "delivered"
	case Marked:
		return "marked"
	}
	return "fate(" + strconv.Itoa(int(f)) + ")"
}
