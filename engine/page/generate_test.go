package page

import (
	"bytes"
	"errors"
	"math"
	"sort"
	"strings"
	"testing"
)

// checkedCorpora are the corpora whose figures the profile check covers: the named corpora, and
// every profile at seed 1 and 2 with 200 pages.
func checkedCorpora(t *testing.T) []CorpusSpec {
	t.Helper()
	var specs []CorpusSpec
	for _, c := range NamedCorpora() {
		spec, err := LookupCorpus(c.Name)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, spec)
	}
	for _, name := range ProfileNames() {
		for _, seed := range []int64{1, 2} {
			spec, err := NewCorpusSpec(name, seed, 200)
			if err != nil {
				t.Fatal(err)
			}
			specs = append(specs, spec)
		}
	}
	return specs
}

// The generated corpora's medians, 90th percentiles, means and shares are within 10 % of every
// figure each profile publishes (ProfileRows: the rows of docs/pages.md's tables).
func TestGeneratedMatchesProfile(t *testing.T) {
	for _, spec := range checkedCorpora(t) {
		pages, err := spec.GenerateAll()
		if err != nil {
			t.Fatal(err)
		}
		rows := ProfileRows(spec.Profile, pages)
		if len(rows) < 8 {
			t.Errorf("%s seed %d: only %d published figures to check", spec.Profile.Name, spec.Seed, len(rows))
		}
		for _, r := range rows {
			if math.IsNaN(r.Deviation) || math.Abs(r.Deviation) > Tolerance {
				t.Errorf("%s seed %d: %s %s generated %.2f, published %.2f (%s): %+.1f %%", spec.Profile.Name, spec.Seed,
					r.Metric, r.Stat, r.Generated, r.Published, r.Source, 100*r.Deviation)
			}
		}
	}
}

// The same corpus, seed and index give the same page: objects, sizes, graph and every body byte;
// a page built alone (Load, by name) is the page built with its whole corpus.
func TestGeneratedDeterministic(t *testing.T) {
	spec, err := LookupCorpus("web200")
	if err != nil {
		t.Fatal(err)
	}
	a, err := spec.GenerateAll()
	if err != nil {
		t.Fatal(err)
	}
	b, err := spec.GenerateAll()
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if !bytes.Equal(a[i].JSON(), b[i].JSON()) {
			t.Fatalf("page %d differs between two generations", i+1)
		}
	}
	for _, i := range []int{1, 17, 200} {
		alone, err := Load(spec.PageName(i), 99) // the trial's seed does not change a generated page
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(alone.JSON(), a[i-1].JSON()) {
			t.Errorf("%s built alone differs from the corpus's page", spec.PageName(i))
		}
		base := Base{Scheme: "https", Token: "tok"}
		for j := range alone.Objects {
			x, err1 := alone.Body(j, base)
			y, err2 := a[i-1].Body(j, base)
			if err1 != nil || err2 != nil || !bytes.Equal(x.Bytes(), y.Bytes()) {
				t.Fatalf("%s object %d: bodies differ (%v, %v)", alone.Name, j, err1, err2)
			}
		}
	}
	other, err := NewCorpusSpec("httparchive-2024-desktop", 2, 200)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := other.Generate(17)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(p2.JSON(), a[16].JSON()) {
		t.Error("seed 2's page 17 is seed 1's")
	}
}

// Every generated page is valid, has a graph with one download per object, computation, origins
// (domains and groups) for sharding, and shards by domain and by top-level domain.
func TestGeneratedStructure(t *testing.T) {
	for _, name := range []string{"web200", "mobile200"} {
		spec, _ := LookupCorpus(name)
		pages, err := spec.GenerateAll()
		if err != nil {
			t.Fatal(err)
		}
		deep := 0
		for _, p := range pages {
			c := p.Characterize()
			if c.ComputeMs <= 0 || c.Depth < 1 {
				t.Errorf("%s: compute %.1f ms, depth %d", p.Name, c.ComputeMs, c.Depth)
			}
			if c.Depth >= 3 {
				deep++
			}
			for _, mode := range []ShardMode{ShardDomain, ShardTLD} {
				s, err := p.Shard(0, mode)
				if err != nil {
					t.Fatalf("%s shards 0 %s: %v", p.Name, mode, err)
				}
				if mode == ShardDomain && len(s.Origins) != c.Domains {
					t.Errorf("%s: %d origins by domain, %d domains", p.Name, len(s.Origins), c.Domains)
				}
			}
		}
		if deep < len(pages)/4 {
			t.Errorf("%s: only %d pages with objects at depth ≥ 3 (scripts that request scripts)", name, deep)
		}
	}
	// Computation: the structural graph's times, × 4 on mobile (Lighthouse's CPU slowdown).
	for name, cpu := range map[string]float64{"web200:5": 1, "mobile200:5": 4} {
		p, err := Load(name, 1)
		if err != nil {
			t.Fatal(err)
		}
		size := map[string]int64{}
		for _, o := range p.Objects {
			size[o.ID] = o.Size
		}
		evaluated := 0
		for _, a := range p.Activities {
			if a.Kind == KindEvaluate && strings.HasSuffix(p.Objects[indexOf(p, a.Object)].Path, ".js") {
				want := roundMs(cpu * (evalJSBaseMs + evalJSPerKBMs*float64(size[a.Object])/1000))
				if a.DurationMs != want {
					t.Errorf("%s %s: %.1f ms, want %.1f", name, a.ID, a.DurationMs, want)
				}
				evaluated++
			}
		}
		if evaluated == 0 {
			t.Errorf("%s: no script evaluated", name)
		}
	}
}

func indexOf(p *Page, id string) int {
	for i, o := range p.Objects {
		if o.ID == id {
			return i
		}
	}
	return -1
}

func TestGeneratedNames(t *testing.T) {
	for _, good := range []string{"web200:1", "web200:200", "mobile200:7", "gen:httparchive-2014:7:50:50"} {
		p, err := Load(good, 1)
		if err != nil {
			t.Errorf("%s: %v", good, err)
			continue
		}
		if p.Name != good {
			t.Errorf("%s: named %s", good, p.Name)
		}
	}
	for bad, want := range map[string]string{
		"web200:0":                        "1–200",
		"web200:201":                      "1–200",
		"gen:httparchive-2099:1:10:1":     "must be a profile",
		"gen:httparchive-2014:1:0:1":      "count",
		"gen:httparchive-2014:1:10:11":    "1–10",
		"gen:httparchive-2014:x:10:1":     "gen:PROFILE:SEED:COUNT:INDEX",
		"gen:httparchive-2014:1:200000:1": "count",
		"web300:1":                        "must be a corpus page",
	} {
		_, err := Load(bad, 1)
		var fe *FieldError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want a field error with %q", bad, err, want)
		}
	}
}

// The profile files are well formed: every knot named, every source known (the init panics
// otherwise), and a quantile function that goes through its knots.
func TestProfileQuantiles(t *testing.T) {
	for _, name := range ProfileNames() {
		p, _ := LookupProfile("like", name)
		for _, m := range ProfileMetrics {
			metric := p.Metrics[m]
			for k, v := range metric.Knots {
				var pct float64
				switch k {
				case "p10":
					pct = 0.10
				case "p25":
					pct = 0.25
				case "p50":
					pct = 0.5
				case "p75":
					pct = 0.75
				case "p90":
					pct = 0.9
				}
				if got := metric.Quantile(pct); math.Abs(got-v) > 1e-6*(1+v) {
					t.Errorf("%s %s: Q(%g) = %g, knot %g", name, m, pct, got, v)
				}
			}
		}
	}
	if z := normalQuantile(0.975); math.Abs(z-1.959963984540054) > 1e-12 {
		t.Errorf("normalQuantile(0.975) = %.15f", z)
	}
}

func BenchmarkGenerateWeb200(b *testing.B) {
	spec, _ := LookupCorpus("web200")
	for range b.N {
		if _, err := spec.GenerateAll(); err != nil {
			b.Fatal(err)
		}
	}
}

// The browser's loopback test (engine/browser, TestChromiumLoopback) loads each named corpus's
// median page by bytes by name: these.
func TestNamedCorporaMedianPages(t *testing.T) {
	for name, want := range map[string]string{"web200": "web200:164", "mobile200": "mobile200:87"} {
		spec, _ := LookupCorpus(name)
		pages, err := spec.GenerateAll()
		if err != nil {
			t.Fatal(err)
		}
		sort.Slice(pages, func(a, b int) bool { return pages[a].TotalBytes() < pages[b].TotalBytes() })
		if got := pages[len(pages)/2].Name; got != want {
			t.Errorf("%s's median page is %s; TestChromiumLoopback loads %s", name, got, want)
		}
	}
}
