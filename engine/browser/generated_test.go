package browser

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server"
)

// TestChromiumGeneratedPages: the median page (by bytes) of each named generated corpus loads in
// Chromium over every protocol it speaks with no error, every object once with its exact size.
func TestChromiumGeneratedPages(t *testing.T) {
	requireChromium(t)
	for _, c := range page.NamedCorpora() {
		spec, err := page.LookupCorpus(c.Name)
		if err != nil {
			t.Fatal(err)
		}
		pages, err := spec.GenerateAll()
		if err != nil {
			t.Fatal(err)
		}
		sort.Slice(pages, func(a, b int) bool { return pages[a].TotalBytes() < pages[b].TotalBytes() })
		pg := pages[len(pages)/2]
		srv, cfg := serve(t, pg)
		for _, proto := range Protocols {
			t.Run(pg.Name+"/"+string(proto), func(t *testing.T) {
				cfg := cfg
				cfg.Protocol = proto
				root, err := srv.RootURL(server.Protocol(proto), page.NewToken())
				if err != nil {
					t.Fatal(err)
				}
				res, err := Load(context.Background(), cfg, root)
				if err != nil {
					t.Fatal(err)
				}
				if res.Err != nil {
					t.Fatal(res.Err)
				}
				if res.Objects != len(pg.Objects) || res.BodyBytes != pg.TotalBytes() || len(res.Entries) != len(pg.Objects) {
					t.Errorf("%d objects (%d entries), %d bytes; want %d, %d", res.Objects, len(res.Entries), res.BodyBytes, len(pg.Objects), pg.TotalBytes())
					idx := pg.ObjectIndex()
					for _, e := range res.Entries {
						_, path, _ := strings.Cut(strings.SplitN(e.URL, "/L/", 2)[1], "/")
						if i, ok := idx["/"+path]; ok && pg.Objects[i].Size != e.BodyBytes {
							t.Logf("%s (%s): %d bytes of %d, transfer %d, error %q", e.URL, pg.Objects[i].ContentType, e.BodyBytes, pg.Objects[i].Size, e.TransferSize, e.Error)
						}
					}
				}
				for _, e := range res.Entries {
					if e.Protocol != proto.WireName() {
						t.Errorf("%s over %q, want %s", e.URL, e.Protocol, proto.WireName())
					}
				}
				assertClean(t, cfg.ProfileParent)
			})
		}
	}
}
