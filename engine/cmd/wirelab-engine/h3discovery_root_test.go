package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/server/impl"
	"github.com/wirelab/wirelab/engine/trial"
)

// HTTP/3 as browsers find it (client.h3, docs/vitals.md), for both loaders against both servers
// that serve h3 here (the built-in server announces h3 when the trial asks; Caddy always does):
//   - alt-svc, first view: the root document goes over h2 (no QUIC before an announcement); the
//     engine's loader sends every later request over h3, Chromium once its QUIC job wins;
//   - alt-svc, repeat view: h3 from the start (Alt-Svc cache warm), the handshake resumed, and its
//     first requests sent as 0-RTT data (server.session_resumption on);
//   - https-rr: the lab DNS's HTTPS record (alpn h3,h2) starts the engine's requests on h3;
//     Chromium races TCP beside QUIC and carries most of them over h3.
func TestH3Discovery(t *testing.T) {
	roottest.RequireTUN(t)
	for _, loader := range []string{"engine", "chromium"} {
		for _, srv := range []string{"builtin", "caddy"} {
			t.Run(loader+"/"+srv, func(t *testing.T) {
				if loader == "chromium" {
					requireChromium(t)
				}
				for _, c := range []struct{ h3, view string }{{"alt-svc", "first"}, {"alt-svc", "repeat"}, {"https-rr", "first"}} {
					spec := fmt.Sprintf(`{"page":"synthetic:3x10kB","protocols":["h3"],"repetitions":1,"network":"rtt=10ms",`+
						`"server":{"impl":%q,"session_resumption":true},"client":{"impl":%q,"h3":%q,"view":%q},"capture":{"screenshots":false}}`,
						srv, loader, c.h3, c.view)
					td := readTrial(t, runTrialOK(t, spec, 3*time.Minute))
					l := td.loads[0]
					if l.Error != nil {
						t.Fatalf("%s %s: %s", c.h3, c.view, *l.Error)
					}
					checkH3Discovery(t, loader, srv, c.h3, c.view, l)
				}
			})
		}
	}
}

func checkH3Discovery(t *testing.T, loader, srv, mode, view string, l trial.Record) {
	t.Helper()
	count := func(key string) float64 {
		v, _ := l.Client[key].(float64)
		return v
	}
	protos, _ := l.Client["protocols"].(map[string]any)
	h2, _ := protos["h2"].(float64)
	h3, _ := protos["h3"].(float64)
	t.Logf("%s %s %s %s: requests h2 %v h3 %v, h3_discovery %v, connections %d, full handshakes %d, resumed %d, 0-RTT %v (%d datagrams)",
		loader, srv, mode, view, h2, h3, l.Client["h3_discovery"], l.Connections, l.TLSHandshakes, l.TLSResumed, l.Client["zero_rtt_connections"], l.QUIC0RTTPackets)
	// Chromium's first view may carry everything over the h2 session it already has: its QUIC job
	// for a later request races that session (and need not win on a small page).
	if got := l.Client["h3_discovery"]; got != mode && !(loader == "chromium" && mode == "alt-svc" && view == "first" && got == "none") {
		t.Errorf("%s %s: h3_discovery %v, want %s", mode, view, got, mode)
	}
	switch {
	case mode == "alt-svc" && view == "first":
		if h2 < 1 {
			t.Errorf("alt-svc first view: no request over h2 (%v): the root document went over QUIC before any announcement", protos)
		}
		if loader == "engine" && h3 < 1 {
			t.Errorf("alt-svc first view: nothing over h3 after the root document's Alt-Svc (%v)", protos)
		}
	case mode == "alt-svc" && view == "repeat":
		// h3 from the start: the engine sends everything over h3; Chromium, whose repeat view
		// sends only the document's revalidation (reported with the cached response's protocol),
		// opens no TCP connection at all — no full handshake, its QUIC session resumed with 0-RTT.
		if loader == "engine" && (h3 < 1 || h2 > 0) {
			t.Errorf("alt-svc repeat view: %v, want h3 from the start", protos)
		}
		if l.TLSHandshakes != 0 {
			t.Errorf("alt-svc repeat view: %d full handshakes, want none (a TCP connection before QUIC?)", l.TLSHandshakes)
		}
		if l.TLSResumed < 1 || count("zero_rtt_connections") < 1 || l.QUIC0RTTPackets < 1 {
			t.Errorf("alt-svc repeat view: resumed %d, 0-RTT %v, 0-RTT datagrams %d: want a resumed handshake with 0-RTT, seen on the wire",
				l.TLSResumed, l.Client["zero_rtt_connections"], l.QUIC0RTTPackets)
		}
	case mode == "https-rr":
		// Chromium races a TCP connection beside the QUIC one the record asks for, and may carry
		// the first request over it; the engine's loader starts on QUIC.
		if h3 < 1 || (loader == "engine" && h2 > 0) {
			t.Errorf("https-rr: %v, want the requests over h3", protos)
		}
	}
}

// The engine loader's repeat view against every server under test with session resumption on:
// every handshake of the repeat view resumes (no full handshake: tls_resumed = connections), and
// h3 connections send their first requests as 0-RTT data the server accepts. With resumption off
// the repeat view's handshakes are all full.
func TestEngineRepeatViewResumes(t *testing.T) {
	roottest.RequireTUN(t)
	for _, s := range impl.All {
		srv := s.Name()
		var protocols []string
		for _, p := range []string{"h1s", "h2", "h3"} {
			if slices.Contains(s.Support().Protocols, p) {
				protocols = append(protocols, p)
			}
		}
		t.Run(srv, func(t *testing.T) {
			for _, resume := range []bool{true, false} {
				spec := fmt.Sprintf(`{"page":"twitter","protocols":%s,"repetitions":1,"network":"rtt=10ms",`+
					`"server":{"impl":%q,"session_resumption":%v},"client":{"view":"repeat"}}`, protocolList(protocols), srv, resume)
				td := readTrial(t, runTrialOK(t, spec, 3*time.Minute))
				for _, l := range td.loads {
					if l.Error != nil {
						t.Fatalf("%s: %s", l.Protocol, *l.Error)
					}
					zero, _ := l.Client["zero_rtt_connections"].(float64)
					t.Logf("%s %s resumption %v: connections %d, full handshakes %d, resumed %d, 0-RTT %v (%d datagrams)",
						srv, l.Protocol, resume, l.Connections, l.TLSHandshakes, l.TLSResumed, zero, l.QUIC0RTTPackets)
					switch {
					case l.View != "repeat":
						t.Errorf("%s: view %q", l.Protocol, l.View)
					case resume && (l.TLSHandshakes != 0 || l.TLSResumed != l.Connections):
						t.Errorf("%s: %d full handshakes, %d resumed of %d connections: want every one resumed", l.Protocol, l.TLSHandshakes, l.TLSResumed, l.Connections)
					case resume && l.Protocol == "h3" && zero < 1:
						t.Errorf("h3: no 0-RTT connection")
					case !resume && (l.TLSResumed != 0 || zero != 0):
						t.Errorf("%s without resumption: %d resumed, %v 0-RTT", l.Protocol, l.TLSResumed, zero)
					}
					// 0-RTT seen on the wire: the client's datagrams carrying a 0-RTT packet
					// (coalesced behind its Initial or on their own) — some with resumption, none without.
					if resume && l.Protocol == "h3" && l.QUIC0RTTPackets < 1 || !resume && l.QUIC0RTTPackets != 0 {
						t.Errorf("%s resumption %v: %d 0-RTT datagrams from the client", l.Protocol, resume, l.QUIC0RTTPackets)
					}
				}
			}
		})
	}
}
