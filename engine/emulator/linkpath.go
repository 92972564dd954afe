package emulator

import (
	"time"

	"github.com/wirelab/wirelab/engine/link"
	"github.com/wirelab/wirelab/engine/realtime"
)

// linkPath adapts a *link.Direction to the runner's realtime.Link: it wraps each packet's bytes in a
// recycled *link.Packet carrying the runner's handle, so the runner stays free of the model's packet
// type and the adapter allocates nothing in the steady state.
type linkPath struct {
	d    *link.Direction
	free []*link.Packet
}

var (
	_ realtime.Link = (*linkPath)(nil)
	_ ModelReporter = (*linkPath)(nil)
)

// NewLinkPath wraps one direction of the link model for the runner.
func NewLinkPath(d *link.Direction) realtime.Link { return &linkPath{d: d} }

func (l *linkPath) Push(now time.Duration, pkt []byte, origin int, h realtime.Handle) link.Fate {
	var p *link.Packet
	if n := len(l.free); n > 0 {
		p = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		p = new(link.Packet)
	}
	*p = link.Packet{Data: pkt, Origin: origin, Handle: uint64(h)}
	f := l.d.Push(now, p)
	if f != link.Accepted {
		l.recycle(p)
	}
	return f
}

func (l *linkPath) Pop(now time.Duration) (realtime.Out, bool) {
	p, ok := l.d.Pop(now)
	if !ok {
		return realtime.Out{}, false
	}
	out := realtime.Out{Handle: realtime.Handle(p.Handle), Fate: p.Fate(), At: p.Due(), Sojourn: p.Sojourn()}
	l.recycle(p)
	return out, true
}

// recycle keeps p for the next Push, which overwrites all of it. It leaves p as it is: the writer
// recycles what it popped, the reader refills it, and a record the writer zeroed was a line the
// reader then had to fetch from the writer's CPU (a line the writer only read it can share: 6 % of
// the capacity run's CPU was that write in Push; docs/network.md, "The per-packet path, session
// 41"). What its Data still points to is the runner's buffer, which the runner keeps anyway.
func (l *linkPath) recycle(p *link.Packet) {
	l.free = append(l.free, p)
}

func (l *linkPath) NextDeadline() (time.Duration, bool) { return l.d.NextDeadline() }

// Stats are the model's own counters.
func (l *linkPath) Stats() link.Stats { return l.d.Stats() }

// Gateway is what the model's queue discipline did.
func (l *linkPath) Gateway() link.GatewayStats { return l.d.Gateway() }
