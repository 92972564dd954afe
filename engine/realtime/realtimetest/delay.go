// Package realtimetest holds test doubles of the real-time runner's dependencies.
package realtimetest

import (
	"time"

	"github.com/wirelab/wirelab/engine/link"
	"github.com/wirelab/wirelab/engine/realtime"
)

// DelayLink is a realtime.Link that only delays: every packet is delivered Delay after it was
// pushed, in push order. No rate, no queue, no loss.
type DelayLink struct {
	Delay time.Duration
	q     []delayed
}

type delayed struct {
	due time.Duration
	h   realtime.Handle
}

var _ realtime.Link = (*DelayLink)(nil)

// Push implements realtime.Link.
func (l *DelayLink) Push(now time.Duration, _ []byte, _ int, h realtime.Handle) link.Fate {
	l.q = append(l.q, delayed{now + l.Delay, h})
	return link.Accepted
}

// Pop implements realtime.Link.
func (l *DelayLink) Pop(now time.Duration) (realtime.Out, bool) {
	if len(l.q) == 0 || l.q[0].due > now {
		return realtime.Out{}, false
	}
	d := l.q[0]
	l.q = l.q[1:]
	return realtime.Out{Handle: d.h, Fate: link.Delivered, At: d.due}, true
}

// NextDeadline implements realtime.Link.
func (l *DelayLink) NextDeadline() (time.Duration, bool) {
	if len(l.q) == 0 {
		return 0, false
	}
	return l.q[0].due, true
}
