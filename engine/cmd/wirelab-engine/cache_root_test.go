package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/server/impl"
)

// A Chromium repeat view of a corpus page reads its subresources from the HTTP cache, because
// every server under test sends the page's cache policy (page.Object.CachePolicy): over h1s, h2
// and h3 (where the server serves it) the repeat view moves far fewer bytes down than the first
// view of the same configuration: the subresources come from the cache, the no-cache document is
// revalidated (304 against the validator every server sends).
// h2o cannot set a header per path without mruby and still sends no-store (docs/server.md): it
// is left out here.
func TestRepeatViewReadsTheCache(t *testing.T) {
	t.Parallel() // no timing bound: runs beside the package's other such tests (parallel_test.go)
	roottest.RequireTUN(t)
	requireChromium(t)
	for _, srv := range []string{"builtin", "nginx", "apache", "caddy"} {
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
