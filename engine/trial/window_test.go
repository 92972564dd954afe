package trial

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/realtime"
)

// busyLink has had a packet through it every time it is looked at.
type busyLink struct{ n atomic.Int64 }

func (b *busyLink) Stats() realtime.Stats {
	n := b.n.Add(1)
	return realtime.Stats{Up: realtime.DirStats{Packets: n, Delivered: n}}
}

// fakeLink reports counters that a test moves.
type fakeLink struct{ entered, left atomic.Int64 }

func (f *fakeLink) Stats() realtime.Stats {
	return realtime.Stats{Up: realtime.DirStats{Packets: f.entered.Load(), Delivered: f.left.Load()}}
}

func TestSettle(t *testing.T) {
	ctx := context.Background()
	var l fakeLink
	l.entered.Store(10)
	l.left.Store(9) // one packet inside the link
	start := time.Now()
	go func() {
		time.Sleep(30 * time.Millisecond)
		l.left.Store(10)
	}()
	if !settle(ctx, &l, 20*time.Millisecond, 5*time.Second) {
		t.Fatal("did not settle")
	}
	if d := time.Since(start); d < 50*time.Millisecond-settlePoll {
		t.Errorf("settled after %v: before the packet left and the quiet period passed", d)
	}

	// A link that never goes quiet (traffic at every look): settle gives up at the limit.
	var busy busyLink
	if settle(ctx, &busy, 20*time.Millisecond, 100*time.Millisecond) {
		t.Error("settled on a busy link")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if settle(cctx, &l, 20*time.Millisecond, 5*time.Second) {
		t.Error("settled after the context ended")
	}
}
