package browser

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// Chromium's DevTools protocol does not say whether a TLS handshake resumed a session
// (Network.Response.securityDetails names the protocol, cipher and certificate only), nor whether
// QUIC sent 0-RTT data. Its NetLog does: an https load runs Chromium with --log-net-log (default
// capture mode: no bytes, no cookies), and after the browser has closed — the log is complete
// then — the recorded view's handshakes are read from it:
//
//   - SSL_CONNECT, end phase: params.is_resumed, one per TLS connection over TCP (h1s, h2);
//   - QUIC_SESSION_ZERO_RTT_STATE: params.state AttemptedAndSucceeded, one per QUIC session that
//     resumed and had its 0-RTT data accepted. Chromium attempts 0-RTT whenever it resumes a QUIC
//     session, so a resumed QUIC handshake whose early data was rejected (AttemptedAndRejected) is
//     counted as neither: the NetLog does not say whether its PSK was still accepted.
//
// Only events at or after the recorded view's start count (a repeat view's first view is left
// out). docs/browser.md, "TLS resumption and 0-RTT".

// netLogFile is the NetLog's name in the load's profile directory.
const netLogFile = "netlog.json"

// Handshakes are the TLS handshakes a NetLog shows from a moment on.
type Handshakes struct {
	TCP, TCPResumed int // TLS over TCP: completed, and among them resumed
	QUIC, QUIC0RTT  int // QUIC sessions: with a completed handshake (certificate verified), and with 0-RTT accepted
}

// readNetLog reads the handshakes of a NetLog (Chromium's --log-net-log JSON: a constants object,
// then one event per line) that began at or after since. A log cut short (a browser killed before
// it closed the file) is read as far as it goes.
func readNetLog(r io.Reader, since time.Time) (Handshakes, error) {
	var h Handshakes
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	if !sc.Scan() {
		return h, fmt.Errorf("netlog: empty")
	}
	// The first line is {"constants":{…},  — the event type names and the clock's offset.
	first := bytes.TrimSuffix(bytes.TrimSpace(sc.Bytes()), []byte(","))
	first = bytes.TrimPrefix(first, []byte(`{"constants":`))
	var consts struct {
		LogEventTypes  map[string]int `json:"logEventTypes"`
		LogEventPhase  map[string]int `json:"logEventPhase"`
		TimeTickOffset json.Number    `json:"timeTickOffset"`
	}
	if err := json.Unmarshal(first, &consts); err != nil {
		return h, fmt.Errorf("netlog constants: %w", err)
	}
	offset, err := strconv.ParseFloat(consts.TimeTickOffset.String(), 64)
	if err != nil {
		return h, fmt.Errorf("netlog timeTickOffset %q: %w", consts.TimeTickOffset, err)
	}
	sslConnect, ok1 := consts.LogEventTypes["SSL_CONNECT"]
	zeroRTT, ok2 := consts.LogEventTypes["QUIC_SESSION_ZERO_RTT_STATE"]
	verified, ok3 := consts.LogEventTypes["QUIC_SESSION_CERTIFICATE_VERIFIED"]
	if !ok1 || !ok2 || !ok3 {
		return h, fmt.Errorf("netlog: this Chromium names none of SSL_CONNECT, QUIC_SESSION_ZERO_RTT_STATE, QUIC_SESSION_CERTIFICATE_VERIFIED")
	}
	end := consts.LogEventPhase["PHASE_END"]
	sinceMS := float64(since.UnixNano()) / 1e6
	for sc.Scan() {
		line := bytes.TrimSuffix(bytes.TrimSpace(sc.Bytes()), []byte(","))
		if len(line) == 0 || line[0] != '{' {
			continue // "events": [  and the closing lines
		}
		var ev struct {
			Type   int             `json:"type"`
			Phase  int             `json:"phase"`
			Time   json.Number     `json:"time"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(line, &ev) != nil {
			continue // a line cut short
		}
		if ev.Type != sslConnect && ev.Type != zeroRTT && ev.Type != verified {
			continue
		}
		t, err := strconv.ParseFloat(ev.Time.String(), 64)
		if err != nil || t+offset < sinceMS {
			continue
		}
		var p struct {
			IsResumed *bool  `json:"is_resumed"`
			State     string `json:"state"`
		}
		_ = json.Unmarshal(ev.Params, &p)
		switch {
		case ev.Type == sslConnect && ev.Phase == end && p.IsResumed != nil: // a failed handshake has no is_resumed
			h.TCP++
			if *p.IsResumed {
				h.TCPResumed++
			}
		case ev.Type == verified:
			h.QUIC++
		case ev.Type == zeroRTT && p.State == "AttemptedAndSucceeded":
			h.QUIC0RTT++
		}
	}
	return h, sc.Err()
}

// readHandshakes fills the TLS fields of r from the NetLog at path (events since since): with it,
// TLSHandshakes counts the full handshakes only, TLSResumed the resumed ones, ZeroRTT the QUIC
// sessions whose 0-RTT data was accepted. Without a readable log they stay as CDP gave them
// (TLSResumed 0) and NetLogErr says why.
func (r *Result) readHandshakes(path string, since time.Time) {
	f, err := os.Open(path)
	if err != nil {
		r.NetLogErr = err.Error()
		return
	}
	defer f.Close()
	h, err := readNetLog(f, since)
	if err != nil {
		r.NetLogErr = err.Error()
		return
	}
	r.TLSResumed = h.TCPResumed + h.QUIC0RTT
	r.ZeroRTT = h.QUIC0RTT
	r.TLSHandshakes = h.TCP + h.QUIC - r.TLSResumed
}
