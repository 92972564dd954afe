// Package quicloss counts what a QUIC connection's loss recovery did, from quic-go's own qlog
// events, in the kinds of engine/why (docs/why.md, "Retransmissions by kind"): QUIC encrypts its
// packet numbers, so its stacks are the only witnesses. A packet declared lost by the reordering
// or time threshold is fast; one later found to have arrived (recovery:spurious_loss) is spurious
// instead; a probe timeout that fires is a tail loss probe when it is the first of a run and a
// timeout when it is a backed-off one. The engine's loader and the built-in server attach a
// Recorder to every h3 connection (quic.Config.Tracer).
package quicloss

import (
	"sync"

	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"

	"github.com/wirelab/wirelab/engine/internal/seam"
)

// Recorder is one connection's trace: counts, and optionally every STREAM frame it received.
type Recorder struct {
	mu       sync.Mutex
	counts   seam.Retx
	onStream func(stream, offset, length int64)
	// closed is closed when the connection closes its trace: the last event of its loop is in.
	closed    chan struct{}
	closeOnce sync.Once
}

var (
	_ qlogwriter.Trace    = (*Recorder)(nil)
	_ qlogwriter.Recorder = (*Recorder)(nil)
)

// New returns a Recorder. onStream, when set, is called for every STREAM frame of every packet the
// connection receives (from quic-go's goroutine, as it processes the packet).
func New(onStream func(stream, offset, length int64)) *Recorder {
	return &Recorder{onStream: onStream, closed: make(chan struct{})}
}

// AddProducer implements qlogwriter.Trace.
func (r *Recorder) AddProducer() qlogwriter.Recorder { return r }

// RecordEvent implements qlogwriter.Recorder.
func (r *Recorder) RecordEvent(ev qlogwriter.Event) {
	switch e := ev.(type) {
	case qlog.PacketLost:
		r.mu.Lock()
		r.counts.Fast++
		r.mu.Unlock()
	case qlog.SpuriousLoss:
		r.mu.Lock()
		r.counts.Fast--
		r.counts.Spurious++
		r.mu.Unlock()
	case qlog.PTOCountUpdated:
		if e.PTOCount == 0 {
			return
		}
		r.mu.Lock()
		if e.PTOCount == 1 {
			r.counts.TLP++
		} else {
			r.counts.Timeout++
		}
		r.mu.Unlock()
	case qlog.PacketReceived:
		if r.onStream == nil {
			return
		}
		for _, f := range e.Frames {
			if sf, ok := f.Frame.(*qlog.StreamFrame); ok && sf.Length > 0 {
				r.onStream(int64(sf.StreamID), sf.Offset, sf.Length)
			}
		}
	}
}

// Close implements qlogwriter.Recorder: quic-go calls it at the end of the connection's loop,
// after its last event (and before the connection's context ends, unless a parent context ended
// it first).
func (r *Recorder) Close() error {
	r.closeOnce.Do(func() { close(r.closed) })
	return nil
}

// Closed is closed once the connection has closed its trace: the counts are final then.
func (r *Recorder) Closed() <-chan struct{} { return r.closed }

// Counts returns what was counted so far.
func (r *Recorder) Counts() seam.Retx {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts
}

// Multi is a trace that hands every event to each of traces (nil ones skipped).
func Multi(traces ...qlogwriter.Trace) qlogwriter.Trace {
	var ts []qlogwriter.Trace
	for _, t := range traces {
		if t != nil {
			ts = append(ts, t)
		}
	}
	if len(ts) == 1 {
		return ts[0]
	}
	return multi(ts)
}

type multi []qlogwriter.Trace

func (m multi) AddProducer() qlogwriter.Recorder {
	rs := make(multiRecorder, len(m))
	for i, t := range m {
		rs[i] = t.AddProducer()
	}
	return rs
}

type multiRecorder []qlogwriter.Recorder

func (m multiRecorder) RecordEvent(ev qlogwriter.Event) {
	for _, r := range m {
		r.RecordEvent(ev)
	}
}

func (m multiRecorder) Close() error {
	for _, r := range m {
		_ = r.Close()
	}
	return nil
}
