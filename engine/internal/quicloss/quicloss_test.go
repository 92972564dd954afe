package quicloss

import (
	"testing"

	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"

	"github.com/wirelab/wirelab/engine/internal/seam"
)

// TestCounts: losses by threshold are fast until found spurious; the first probe timeout of a run
// is a tail loss probe, backed-off ones are timeouts; STREAM frames of received packets reach
// onStream; Multi hands events to every trace.
func TestCounts(t *testing.T) {
	var frames [][3]int64
	r := New(func(s, o, n int64) { frames = append(frames, [3]int64{s, o, n}) })
	other := New(nil)
	rec := Multi(r, nil, other).AddProducer()
	for _, ev := range []qlogwriter.Event{
		qlog.PacketLost{Trigger: qlog.PacketLossReorderingThreshold},
		qlog.PacketLost{Trigger: qlog.PacketLossTimeThreshold},
		qlog.SpuriousLoss{PacketNumber: 7},
		qlog.PTOCountUpdated{PTOCount: 1},
		qlog.PTOCountUpdated{PTOCount: 2},
		qlog.PTOCountUpdated{PTOCount: 3},
		qlog.PTOCountUpdated{PTOCount: 0},
		qlog.PTOCountUpdated{PTOCount: 1},
		qlog.PacketReceived{Frames: []qlog.Frame{{Frame: &qlog.StreamFrame{StreamID: 0, Offset: 0, Length: 1200}},
			{Frame: &qlog.AckFrame{}}, {Frame: &qlog.StreamFrame{StreamID: 4, Offset: 100, Length: 0}}}},
	} {
		rec.RecordEvent(ev)
	}
	_ = rec.Close()
	want := seam.Retx{Fast: 1, Spurious: 1, TLP: 2, Timeout: 2}
	if got := r.Counts(); got != want {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
	if got := other.Counts(); got != want {
		t.Fatalf("the other trace counted %+v", got)
	}
	if len(frames) != 1 || frames[0] != [3]int64{0, 0, 1200} {
		t.Fatalf("stream frames %v", frames)
	}
}

// Closed is closed by the connection's Close of its trace (once, whatever the number of calls).
func TestRecorderClosed(t *testing.T) {
	r := New(nil)
	select {
	case <-r.Closed():
		t.Fatal("closed before Close")
	default:
	}
	tr := Multi(r, New(nil))
	_ = tr.AddProducer().Close()
	_ = r.Close()
	select {
	case <-r.Closed():
	default:
		t.Fatal("not closed after Close")
	}
}
