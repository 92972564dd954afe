package server

import (
	"context"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"
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
// of sent packets into the connection's send log.
func sendTracer(ctx context.Context, isClient bool, _ quic.ConnectionID) qlogwriter.Trace {
	l := sendLogOf(ctx)
	if l == nil || isClient {
		return nil
	}
	return sendTrace{l}
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
