package emulator

import (
	"time"

	"github.com/wirelab/wirelab/engine/link"
	"github.com/wirelab/wirelab/engine/realtime"
)

// linkPath adapts a *link.Direction to the runner's realtime.Link: it wraps each packet's bytes in a
// recycled *link.Packet, so the runner stays free of the model's packet type and the adapter
// allocates nothing in the steady state.
type linkPath struct {
	d    *link.Direction
	free []*link.Packet
}

var (
	_ realtime.Link = (*linkPath)(nil)
	_ QueueReporter = (*linkPath)(nil)
)

// NewLinkPath wraps one direction of the link model for the runner.
func NewLinkPath(d *link.Direction) realtime.Link { return &linkPath{d: d} }

func (l *linkPath) Push(now time.Duration, pkt []byte, origin int) realtime.Fate {
	var p *link.Packet
	if n := len(l.free); n > 0 {
		p = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		p = new(link.Packet)
	}
	*p = link.Packet{Data: pkt, Origin: origin}
	switch l.d.Push(now, p) {
	case link.Accepted:
		return realtime.Queued
	case link.DroppedLoss:
		l.recycle(p)
		return realtime.DroppedLoss
	default:
		l.recycle(p)
		return realtime.DroppedQueue
	}
}

func (l *linkPath) Pop(now time.Duration) ([]byte, int, bool) {
	p, ok := l.d.Pop(now)
	if !ok {
		return nil, 0, false
	}
	pkt, origin := p.Data, p.Origin
	l.recycle(p)
	return pkt, origin, true
}

func (l *linkPath) recycle(p *link.Packet) {
	*p = link.Packet{}
	l.free = append(l.free, p)
}

func (l *linkPath) NextDeadline() (time.Duration, bool) { return l.d.NextDeadline() }

// MaxQueuePackets is the queue's peak occupancy.
func (l *linkPath) MaxQueuePackets() int64 { return int64(l.d.Stats().MaxQueuePackets) }

// Stats are the model's own counters.
func (l *linkPath) Stats() link.Stats { return l.d.Stats() }
