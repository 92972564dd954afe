package client

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server"
)

// generatedSample is a sample of generated pages for load tests: from each named corpus the
// smallest page, the median page and the 90th-percentile page by bytes.
func generatedSample(t *testing.T) []*page.Page {
	t.Helper()
	var out []*page.Page
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
		out = append(out, pages[0], pages[len(pages)/2], pages[len(pages)*9/10])
	}
	return out
}

// TestGeneratedPagesLoad: a sample of the generated corpora loads with no error over h1, h1s,
// h2, h2c and h3, flat (every reference of the HTML and CSS) and replaying the page's graph, every
// object with its exact size; one page also sharded over an origin per domain.
func TestGeneratedPagesLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("loads generated pages")
	}
	sample := generatedSample(t)
	sharded, err := sample[1].Shard(0, page.ShardDomain)
	if err != nil {
		t.Fatal(err)
	}
	sample = append(sample, sharded)
	for _, pg := range sample {
		srv, resolver := startBuiltin(t, pg, nil)
		for _, proto := range []Protocol{H1, H1S, H2, H2C, H3} {
			for _, mode := range []Mode{ModeFlat, ModeReplay} {
				root, err := srv.RootURL(server.Protocol(proto), page.NewToken())
				if err != nil {
					t.Fatal(err)
				}
				cfg := Config{Protocol: proto, Mode: mode, Resolver: resolver, RootCAs: srv.Certs().CAPool(), Timeout: 120 * time.Second}
				if mode == ModeReplay {
					cfg.Page, cfg.ComputeScale = pg, 0
				}
				l, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				res, err := l.Load(context.Background(), root, nil)
				if err != nil || res.Err != nil {
					t.Fatalf("%s (%d origins) %s %s: %v %v", pg.Name, len(pg.Origins), proto, mode, err, res.Err)
				}
				if res.Objects != len(pg.Objects) || res.BodyBytes != pg.TotalBytes() {
					t.Errorf("%s (%d origins) %s %s: %d objects, %d bytes; want %d, %d", pg.Name, len(pg.Origins), proto, mode,
						res.Objects, res.BodyBytes, len(pg.Objects), pg.TotalBytes())
				}
			}
		}
	}
}
