package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/page/cachetest"
	"github.com/wirelab/wirelab/engine/server/impl"
	"github.com/wirelab/wirelab/engine/trial"
)

// A Chromium repeat view of a corpus page reads its subresources from the HTTP cache, because
// every server under test sends the page's cache policy (page.Object.CachePolicy): over h1s, h2
// and h3 (where the server serves it) the repeat view moves far fewer bytes down than the first
// view of the same configuration: the subresources come from the cache, the no-cache document is
// revalidated (304 against the validator every server sends).
func TestRepeatViewReadsTheCache(t *testing.T) {
	t.Parallel() // no timing bound: runs beside the package's other such tests (parallel_test.go)
	roottest.RequireTUN(t)
	requireChromium(t)
	for _, srv := range []string{"builtin", "nginx", "apache", "caddy", "h2o"} {
		t.Run(srv, func(t *testing.T) {
			var protocols []string
			for _, s := range impl.All {
				if s.Name() == srv {
					for _, p := range []string{"h1s", "h2", "h3"} {
						if slices.Contains(s.Support().Protocols, p) {
							protocols = append(protocols, p)
						}
					}
				}
			}
			down := map[string]map[string]int64{}
			for _, view := range []string{"first", "repeat"} {
				spec := fmt.Sprintf(`{"page":"twitter","protocols":%s,"repetitions":1,"network":"rtt=4ms",`+
					`"server":{"impl":%q,"session_resumption":true},"client":{"impl":"chromium","view":%q},"capture":{"screenshots":false}}`,
					protocolList(protocols), srv, view)
				td := readTrial(t, runTrialOK(t, spec, 3*time.Minute))
				down[view] = map[string]int64{}
				for _, l := range td.loads {
					if l.Error != nil {
						t.Fatalf("%s %s: %s", view, l.Protocol, *l.Error)
					}
					down[view][l.Protocol] = l.BytesDown
				}
			}
			for _, p := range protocols {
				first, repeat := down["first"][p], down["repeat"][p]
				t.Logf("%s %s: bytes down first %d, repeat %d (%.0f %%)", srv, p, first, repeat, 100*float64(repeat)/float64(max(first, 1)))
				if first == 0 || repeat*20 > first {
					t.Errorf("%s: repeat view %d bytes down, first view %d: the cache was not read", p, repeat, first)
				}
			}
		})
	}
}

// The engine loader's repeat view (client.view repeat) against the built-in server with session
// resumption on, over h1s, h2 and h3, for three corpus pages (7, 51 and 133 objects): the profile's HTTP cache (docs/vitals.md, "Views") answers
// the max-age subresources itself and revalidates the no-cache document (304), so the repeat view
// moves fewer bytes down than the first view of the same configuration; no handshake is full;
// an h3 repeat view's early data is seen on the wire (quic_0rtt_packets ≥ 1, agreeing with the
// loader's zero_rtt_connections) and a first view sends none.
func TestEngineRepeatViewCache(t *testing.T) {
	t.Parallel() // no timing bound: runs beside the package's other such tests (parallel_test.go)
	roottest.RequireTUN(t)
	for _, pg := range []string{"twitter", "flags", "imgur"} {
		t.Run(pg, func(t *testing.T) {
			loads := map[string]map[string]trial.Record{}
			for _, view := range []string{"first", "repeat"} {
				spec := fmt.Sprintf(`{"page":%q,"protocols":["h1s","h2","h3"],"repetitions":1,"network":"rtt=10ms",`+
					`"server":{"impl":"builtin","session_resumption":true},"client":{"view":%q}}`, pg, view)
				td := readTrial(t, runTrialOK(t, spec, 3*time.Minute))
				loads[view] = map[string]trial.Record{}
				for _, l := range td.loads {
					if l.Error != nil {
						t.Fatalf("%s %s: %s", view, l.Protocol, *l.Error)
					}
					loads[view][l.Protocol] = l
				}
			}
			for _, p := range []string{"h1s", "h2", "h3"} {
				first, repeat := loads["first"][p], loads["repeat"][p]
				count := func(l trial.Record, key string) float64 { v, _ := l.Client[key].(float64); return v }
				t.Logf("%s %s: bytes down first %d, repeat %d; body bytes %d, %d; cache hits %v, revalidated %v; "+
					"connections %d, full %d, resumed %d; 0-RTT connections %v, datagrams first %d, repeat %d",
					pg, p, first.BytesDown, repeat.BytesDown, first.BodyBytes, repeat.BodyBytes, count(repeat, "cache_hits"),
					count(repeat, "cache_revalidated"), repeat.Connections, repeat.TLSHandshakes, repeat.TLSResumed,
					count(repeat, "zero_rtt_connections"), first.QUIC0RTTPackets, repeat.QUIC0RTTPackets)
				if repeat.BytesDown >= first.BytesDown || repeat.BodyBytes >= first.BodyBytes {
					t.Errorf("%s: repeat view %d bytes down (%d body), first view %d (%d): the cache was not used", p, repeat.BytesDown, repeat.BodyBytes, first.BytesDown, first.BodyBytes)
				}
				if count(repeat, "cache_hits") < 1 || count(repeat, "cache_revalidated") < 1 || repeat.Objects != first.Objects {
					t.Errorf("%s: %v hits, %v revalidated, %d objects of %d", p, repeat.Client["cache_hits"], repeat.Client["cache_revalidated"], repeat.Objects, first.Objects)
				}
				if repeat.TLSHandshakes != 0 || repeat.TLSResumed != repeat.Connections {
					t.Errorf("%s: %d full handshakes, %d resumed of %d connections", p, repeat.TLSHandshakes, repeat.TLSResumed, repeat.Connections)
				}
				if first.QUIC0RTTPackets != 0 {
					t.Errorf("%s first view: %d 0-RTT datagrams", p, first.QUIC0RTTPackets)
				}
				switch {
				case p == "h3" && (repeat.QUIC0RTTPackets < 1 || count(repeat, "zero_rtt_connections") < 1):
					t.Errorf("h3 repeat view: %d 0-RTT datagrams, %v 0-RTT connections; want both", repeat.QUIC0RTTPackets, repeat.Client["zero_rtt_connections"])
				case p != "h3" && repeat.QUIC0RTTPackets != 0:
					t.Errorf("%s: %d 0-RTT datagrams over TCP", p, repeat.QUIC0RTTPackets)
				}
			}
		})
	}
}

// Every server under test sends the page model's cache policy — the default by type and each
// object's own cache_control — with a validator, and answers a revalidation with 304: the engine
// loader's repeat view of a page whose objects override the default (page/cachetest: no-store,
// max-age=0, no-cache, "public, max-age=600") gets from every server exactly the hits, 304s and whole fetches the
// policy says.
func TestServersServeTheCachePolicy(t *testing.T) {
	t.Parallel() // no timing bound: runs beside the package's other such tests (parallel_test.go)
	roottest.RequireTUN(t)
	cp, err := cachetest.Load()
	if err != nil {
		t.Fatal(err)
	}
	pg, hits, revalidated, noStore := cp.Page, cp.Hits(), cp.Revalidated(), cp.NoStoreBytes
	b, err := json.Marshal(pg)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "cache-policy.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, s := range impl.All {
		srv := s.Name()
		t.Run(srv, func(t *testing.T) {
			spec := fmt.Sprintf(`{"page":%q,"protocols":["h2"],"repetitions":1,"network":"rtt=4ms",`+
				`"server":{"impl":%q},"client":{"view":"repeat"}}`, file, srv)
			td := readTrial(t, runTrialOK(t, spec, 3*time.Minute))
			l := td.loads[0]
			if l.Error != nil {
				t.Fatal(*l.Error)
			}
			gotHits, _ := l.Client["cache_hits"].(float64)
			gotRevalidated, _ := l.Client["cache_revalidated"].(float64)
			t.Logf("%s: %v hits, %v revalidated, %d body bytes (want %d, %d, %d)", srv, gotHits, gotRevalidated, l.BodyBytes, hits, revalidated, noStore)
			if int(gotHits) != hits || int(gotRevalidated) != revalidated || l.BodyBytes != noStore || int(l.Objects) != len(pg.Objects) {
				t.Errorf("%s: %v hits, %v revalidated, %d body bytes, %d objects; the policy says %d, %d, %d, %d",
					srv, gotHits, gotRevalidated, l.BodyBytes, l.Objects, hits, revalidated, noStore, len(pg.Objects))
			}
		})
	}
}
