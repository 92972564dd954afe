package browser

import (
	"strings"
	"testing"
	"time"
)

// A NetLog as Chromium writes it (one event per line; cut short, as when the browser is killed):
// TLS connections over TCP with is_resumed, QUIC sessions with a verified certificate and their
// 0-RTT state; events before the recorded view's start are left out, and so is a failed handshake.
func TestReadNetLog(t *testing.T) {
	const log = `{"constants":{"logEventTypes":{"SSL_CONNECT":10,"QUIC_SESSION_ZERO_RTT_STATE":20,"QUIC_SESSION_CERTIFICATE_VERIFIED":30,"OTHER":40},"logEventPhase":{"PHASE_BEGIN":1,"PHASE_END":2,"PHASE_NONE":0},"timeTickOffset":"1000000"},
"events": [
{"params":{"is_resumed":false,"version":"TLS 1.3"},"phase":2,"source":{"id":1,"type":1},"time":"100","type":10},
{"params":{"state":"NotAttempted"},"phase":0,"source":{"id":2,"type":1},"time":"150","type":20},
{"params":{"subjects":["*.wirelab.test"]},"phase":0,"source":{"id":2,"type":1},"time":"150","type":30},
{"phase":1,"source":{"id":3,"type":1},"time":"2000","type":10},
{"params":{"is_resumed":true,"version":"TLS 1.3"},"phase":2,"source":{"id":3,"type":1},"time":"2010","type":10},
{"params":{"net_error":-202},"phase":2,"source":{"id":4,"type":1},"time":"2011","type":10},
{"params":{"is_resumed":false},"phase":2,"source":{"id":5,"type":1},"time":"2012","type":10},
{"params":{"subjects":["*.wirelab.test"]},"phase":0,"source":{"id":6,"type":1},"time":"2020","type":30},
{"params":{"state":"AttemptedAndSucceeded"},"phase":0,"source":{"id":6,"type":1},"time":"2021","type":20},
{"params":{"subjects":["*.wirelab.test"]},"phase":0,"source":{"id":7,"type":1},"time":"2030","type":30},
{"params":{"state":"AttemptedAndRejected"},"phase":0,"source":{"id":7,"type":1},"time":"2031","type":20},
{"params":{"is_resumed":tr`
	since := time.UnixMilli(1000000 + 1000)
	h, err := readNetLog(strings.NewReader(log), since)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Handshakes{TCP: 2, TCPResumed: 1, QUIC: 2, QUIC0RTT: 1}); h != want {
		t.Errorf("%+v, want %+v", h, want)
	}
	h, _ = readNetLog(strings.NewReader(log), time.UnixMilli(0))
	if want := (Handshakes{TCP: 3, TCPResumed: 1, QUIC: 3, QUIC0RTT: 1}); h != want {
		t.Errorf("the whole log: %+v, want %+v", h, want)
	}
	if _, err := readNetLog(strings.NewReader(`{"constants":{"logEventTypes":{}},`), since); err == nil {
		t.Error("a NetLog without the event types was read")
	}
	r := &Result{}
	r.readHandshakes("/nonexistent/netlog.json", since)
	if r.NetLogErr == "" || r.TLSResumed != 0 {
		t.Errorf("missing NetLog: %+v", r)
	}
}
