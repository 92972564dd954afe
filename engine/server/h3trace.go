package server

import (
	"context"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"

	"github.com/wirelab/wirelab/engine/internal/quicloss"
)

// The h3 send log comes from quic-go's qlog events: every packet the server sends is reported
// (transport:packet_sent) with its frames, so STREAM frames are seen in the order they were packed,
// which is the order quic-go's stream scheduler (RFC 9218 urgency and incremental, set by its
// HTTP/3 server from the request's priority header and PRIORITY_UPDATE frames) chose them.

type sendLogKey struct{}

func withSendLog(ctx context.Context, l *sendLog) context.Context {
	return context.WithValue(ctx, sendLogKey{}, l)
}

// sendLogOf returns the connection's send log (nil if it has none).
func sendLogOf(ctx context.Context) *sendLog {
	l, _ := ctx.Value(sendLogKey{}).(*sendLog)
	return l
}

// sendTracer is the quic.Config.Tracer of the h3 listeners: a trace that records the STREAM frames
// of sent packets into the connection's send log, and the connection's loss recovery by kind
// (its quicloss.Recorder, also in the context).
func sendTracer(ctx context.Context, isClient bool, _ quic.ConnectionID) qlogwriter.Trace {
	if isClient {
		return nil
	}
	var send, loss qlogwriter.Trace
	if l := sendLogOf(ctx); l != nil {
		send = sendTrace{l}
	}
	if r := lossOf(ctx); r != nil {
		loss = r
	}
	if send == nil && loss == nil {
		return nil
	}
	return quicloss.Multi(send, loss)
}

type lossKey struct{}

func withLoss(ctx context.Context, r *quicloss.Recorder) context.Context {
	return context.WithValue(ctx, lossKey{}, r)
}

// lossOf returns the connection's loss recorder (nil if it has none).
func lossOf(ctx context.Context) *quicloss.Recorder {
	r, _ := ctx.Value(lossKey{}).(*quicloss.Recorder)
	return r
}

type sendTrace struct{ log *sendLog }

func (t sendTrace) AddProducer() qlogwriter.Recorder { return sendRecorder(t) }

type sendRecorder struct{ log *sendLog }

// RecordEvent implements qlogwriter.Recorder: quic-go calls it as it sends each packet.
func (r sendRecorder) RecordEvent(ev qlogwriter.Event) {
	p, ok := ev.(qlog.PacketSent)
	if !ok {
		return
	}
	now := time.Now()
	for _, f := range p.Frames {
		if sf, ok := f.Frame.(*qlog.StreamFrame); ok {
			r.log.streamFrame(uint64(sf.StreamID), sf.Offset, sf.Length, now)
		}
	}
}

func (sendRecorder) Close() error { return nil }
