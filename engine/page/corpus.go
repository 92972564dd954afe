package page

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// The built-in corpus. Object counts and means come from the studies (docs/studies.md; docs/pages.md
// gives the details); structure, domains and size spreads are our documented choices. Sizes are
// drawn from seeded log-normal distributions and then fitted so the stated total (count × mean,
// rounded to bytes) holds exactly.

type corpusEntry struct {
	description string
	source      string
	build       func(b *builder) error
}

var corpus = map[string]corpusEntry{
	"twitter": {
		description: "Twitter home page as mirrored by study E: 7 resources, mean 46.4 kB",
		source:      "E (Elkhatib et al. 2014): 7 resources, average 46.4 kB; structure and domains ours",
		build: func(b *builder) error {
			b.root("twitter.com", "twitter.com")
			b.add(2, TypeCSS, "text/css", "abs.twimg.com", "twimg.com", "")
			b.add(2, TypeJS, "text/javascript", "abs.twimg.com", "twimg.com", "")
			b.add(1, TypeImage, "image/png", "abs.twimg.com", "twimg.com", "css:0")
			b.add(1, TypeImage, "image/jpeg", "pbs.twimg.com", "twimg.com", "")
			return b.fitAll(7 * 46400)
		},
	},
	"youtube": {
		description: "YouTube home page as mirrored by study E: 50 resources, mean 10.63 kB",
		source:      "E (Elkhatib et al. 2014): 50 resources, average 10.63 kB; structure and domains ours",
		build: func(b *builder) error {
			b.root("www.youtube.com", "youtube.com")
			b.add(2, TypeCSS, "text/css", "s.ytimg.com", "ytimg.com", "")
			b.add(5, TypeJS, "text/javascript", "s.ytimg.com", "ytimg.com", "")
			b.add(2, TypeImage, "image/png", "s.ytimg.com", "ytimg.com", "css:*")
			b.add(32, TypeImage, "image/jpeg", "i1.ytimg.com", "ytimg.com", "")
			b.add(8, TypeImage, "image/jpeg", "yt3.ggpht.com", "ggpht.com", "")
			return b.fitAll(50 * 10630)
		},
	},
	"imgur": {
		description: "imgur home page as mirrored by study E: 133 resources, mean 11.78 kB",
		source:      "E (Elkhatib et al. 2014): 133 resources, average 11.78 kB; structure and domains ours",
		build: func(b *builder) error {
			b.root("imgur.com", "imgur.com")
			b.add(3, TypeCSS, "text/css", "s.imgur.com", "imgur.com", "")
			b.add(1, TypeJS, "text/javascript", "ajax.googleapis.com", "googleapis.com", "")
			b.add(5, TypeJS, "text/javascript", "s.imgur.com", "imgur.com", "")
			b.add(1, TypeJS, "text/javascript", "www.google-analytics.com", "google-analytics.com", "")
			b.add(4, TypeImage, "image/png", "s.imgur.com", "imgur.com", "css:*")
			b.add(118, TypeImage, "image/jpeg", "i.imgur.com", "imgur.com", "")
			return b.fitAll(133 * 11780)
		},
	},
	"nytimes": {
		description: "New York Times home page: 148 resources (study E); mean 12 kB chosen by us",
		source:      "E (Elkhatib et al. 2014) names the page class with 148 resources and gives no size; the mean of 12 kB (1.776 MB in total) is our choice, see docs/pages.md",
		build: func(b *builder) error {
			b.root("www.nytimes.com", "nytimes.com")
			b.add(6, TypeCSS, "text/css", "css.nyt.com", "nyt.com", "")
			b.add(14, TypeJS, "text/javascript", "js.nyt.com", "nyt.com", "")
			b.add(3, TypeJS, "text/javascript", "ad.doubleclick.net", "doubleclick.net", "")
			b.add(1, TypeJS, "text/javascript", "www.google-analytics.com", "google-analytics.com", "")
			b.add(4, TypeFont, "font/woff2", "typeface.nyt.com", "nyt.com", "css:0")
			b.add(10, TypeImage, "image/png", "css.nyt.com", "nyt.com", "css:*")
			b.add(99, TypeImage, "image/jpeg", "graphics8.nytimes.com", "nytimes.com", "")
			b.add(8, TypeImage, "image/png", "ad.doubleclick.net", "doubleclick.net", "")
			b.add(2, TypeOther, "application/json", "www.nytimes.com", "nytimes.com", "")
			return b.fitAll(148 * 12000)
		},
	},
	"flags": {
		description: "mod_spdy demo page: one HTML document and 50 small flag images",
		source:      "the mod_spdy demo (HTML + 50 flag images); sizes ours: HTML 6000 B, flags mean 1000 B",
		build: func(b *builder) error {
			b.root("www.wirelab.test", "wirelab.test")
			b.add(50, TypeImage, "image/png", "www.wirelab.test", "wirelab.test", "")
			b.spread(TypeImage, 0.3)
			b.fixRoot(6000)
			return b.fitImages(50 * 1000)
		},
	},
	"neoload50": {
		description: "Study N's page: HTML of 9.5 kB and 50 PNG icons (32×32)",
		source:      "N (SPDY server load test): HTML 9.5 kB + 50 PNG icons 32×32; icon mean 2000 B ours",
		build: func(b *builder) error {
			b.root("www.wirelab.test", "wirelab.test")
			b.add(50, TypeImage, "image/png", "www.wirelab.test", "wirelab.test", "")
			b.spread(TypeImage, 0.3)
			b.fixRoot(9500)
			return b.fitImages(50 * 2000)
		},
	},
	"unh100": {
		description: "Study U's page: 100 image files of about 3.4 MB in total",
		source:      "U (student poster): 100 small images, ~3.4 MB total; images exactly 3,400,000 B, HTML 12000 B ours",
		build: func(b *builder) error {
			b.root("www.wirelab.test", "wirelab.test")
			b.add(100, TypeImage, "image/jpeg", "www.wirelab.test", "wirelab.test", "")
			b.spread(TypeImage, 0.5)
			b.fixRoot(12000)
			return b.fitImages(3_400_000)
		},
	},
}

func isCorpus(name string) bool { _, ok := corpus[name]; return ok }

// CorpusNames lists the built-in pages.
func CorpusNames() []string {
	names := make([]string, 0, len(corpus))
	for n := range corpus {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Corpus builds a corpus page with sizes drawn from seed.
func Corpus(name string, seed int64) (*Page, error) {
	e, ok := corpus[name]
	if !ok {
		return nil, fieldErr("page", name, "is not a corpus page; corpus: %v", CorpusNames())
	}
	if seed < 0 || seed > MaxSeed {
		return nil, fieldErr("seed", seed, "must be an integer in [0, 2^53-1]")
	}
	b := newBuilder(name, seed)
	if err := e.build(b); err != nil {
		return nil, fmt.Errorf("page %s: %w", name, err)
	}
	p := b.page
	p.Description, p.Source = e.description, e.source
	p.Activities = BuildGraph(p)
	if acts, prov, err := recordedGraph(p); err != nil {
		return nil, err
	} else if acts != nil {
		p.Activities = acts
		p.Source += "; " + prov
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("page %s: built an invalid page: %w", name, err)
	}
	return p, nil
}

// Size distributions: log-normal with these medians (bytes) and sigmas, before fitting.
var typeDist = map[Type]struct{ median, sigma float64 }{
	TypeHTML:  {40000, 0.5},
	TypeCSS:   {20000, 1.0},
	TypeJS:    {30000, 1.2},
	TypeImage: {6000, 1.3},
	TypeFont:  {25000, 0.4},
	TypeOther: {2000, 1.0},
}

var extOf = map[string]string{
	"text/css": "css", "text/javascript": "js", "image/png": "png", "image/jpeg": "jpg",
	"image/gif": "gif", "font/woff2": "woff2", "application/json": "json",
}

var dirOf = map[Type]string{TypeCSS: "css", TypeJS: "js", TypeImage: "img", TypeFont: "font", TypeOther: "data", TypeHTML: "doc"}

// builder assembles a corpus or synthetic page.
type builder struct {
	page    *Page
	rng     *rand.Rand
	weights []float64
	sigma   map[Type]float64
	fixed   int64 // root size when fixed (0: fitted with the rest)
	cssIDs  []string
	cssNext int
}

func newBuilder(name string, seed int64) *builder {
	h := sha256.Sum256(fmt.Appendf(nil, "wirelab sizes v1\x00%s\x00%d", name, seed))
	rng := rand.New(rand.NewPCG(binary.BigEndian.Uint64(h[:8]), binary.BigEndian.Uint64(h[8:16])))
	return &builder{
		page:  &Page{Name: name, Seed: seed, Origins: []Origin{{Host: OriginHost(0)}}},
		rng:   rng,
		sigma: map[Type]float64{},
	}
}

func (b *builder) root(domain, group string) {
	b.page.Objects = append(b.page.Objects, Object{ID: "o0", Path: "/index.html", Type: TypeHTML,
		ContentType: "text/html; charset=utf-8", Domain: domain, Group: group})
}

// add appends n objects. parent: "" (the root), "css:K" (the K-th CSS) or "css:*" (CSSs in turn).
func (b *builder) add(n int, t Type, ctype, domain, group, parent string) {
	for range n {
		id := fmt.Sprintf("o%d", len(b.page.Objects))
		o := Object{ID: id, Path: fmt.Sprintf("/%s/%s.%s", dirOf[t], id, extOf[ctype]), Type: t,
			ContentType: ctype, Domain: domain, Group: group}
		switch {
		case parent == "css:*":
			o.Parent = b.cssIDs[b.cssNext%len(b.cssIDs)]
			b.cssNext++
		case len(parent) > 4 && parent[:4] == "css:":
			var k int
			fmt.Sscanf(parent[4:], "%d", &k)
			o.Parent = b.cssIDs[k]
		}
		if t == TypeCSS {
			b.cssIDs = append(b.cssIDs, id)
		}
		b.page.Objects = append(b.page.Objects, o)
	}
}

// spread overrides the sigma of a type.
func (b *builder) spread(t Type, sigma float64) { b.sigma[t] = sigma }

func (b *builder) fixRoot(size int64) { b.fixed = size }

// draw draws a log-normal weight for every object (in object order, so the draws are stable).
func (b *builder) draw() []float64 {
	w := make([]float64, len(b.page.Objects))
	for i, o := range b.page.Objects {
		d := typeDist[o.Type]
		sigma := d.sigma
		if s, ok := b.sigma[o.Type]; ok {
			sigma = s
		}
		w[i] = d.median * math.Exp(sigma*b.rng.NormFloat64())
	}
	return w
}

// minFor is the smallest size the builder gives object i: its structural minimum, and for
// images the smallest valid file of their format.
func (b *builder) minFor(i int) int64 {
	p := b.page
	m := MinSize(p, i)
	o := p.Objects[i]
	switch {
	case o.Type == TypeImage && isPNG(o.ContentType):
		m = max(m, MinPNGSize)
	case o.Type == TypeImage && isJPEG(o.ContentType):
		m = max(m, MinJPEGSize)
	}
	return max(m, 16)
}

// fitAll fits every object, the root included, to total bytes.
func (b *builder) fitAll(total int64) error {
	w := b.draw()
	mins := make([]int64, len(w))
	for i := range w {
		mins[i] = b.minFor(i)
	}
	sizes, err := fitTotal(w, mins, total)
	if err != nil {
		return err
	}
	for i := range sizes {
		b.page.Objects[i].Size = sizes[i]
	}
	return nil
}

// fitImages gives the root its fixed size and fits every other object to total bytes.
func (b *builder) fitImages(total int64) error {
	w := b.draw()[1:]
	mins := make([]int64, len(w))
	for i := range w {
		mins[i] = b.minFor(i + 1)
	}
	sizes, err := fitTotal(w, mins, total)
	if err != nil {
		return err
	}
	b.page.Objects[0].Size = b.fixed
	for i := range sizes {
		b.page.Objects[i+1].Size = sizes[i]
	}
	return nil
}
