package page

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Generated corpora (docs/pages.md, "Generated corpora"): N pages whose metrics follow a profile
// of published web distributions. A corpus is (profile, seed, count); its page i (1-based) is a
// pure function of those four values, so a page is named — and rebuilt anywhere, by any process —
// from its name alone: web200:17 (a named corpus) or gen:PROFILE:SEED:COUNT:INDEX.
//
// How the metrics are drawn: every page gets a common latent factor, every type (html, css, js,
// image, font) a factor shared by its count and its bytes, and every metric its own noise (a
// Gaussian copula, weights in the profile's structure.correlation). Each typed metric's latent
// scores are ranked over the corpus and page k of the ranking gets the profile's quantile at
// (k+0.5)/N: the corpus's own distribution of each metric is the profile's, stratified, not a
// sample of it. The totals (requests, bytes) are drawn the same way from a score led by the sum of
// the typed metrics, and "other" objects make up the difference. Domains follow the requests;
// the share of pages with third parties is the profile's exactly.

// NamedCorpus is a corpus with a name: generated on demand from its profile and seed, never stored.
type NamedCorpus struct {
	Name        string `json:"name"`
	Profile     string `json:"profile"`
	Seed        int64  `json:"seed"`
	Count       int    `json:"count"`
	Description string `json:"description"`
}

var namedCorpora = []NamedCorpus{
	{"web200", "httparchive-2024-desktop", 1, 200, "200 pages like the HTTP Archive's 2024 desktop crawl: study W's top-200 home pages, as the web is now"},
	{"mobile200", "httparchive-2024-mobile", 1, 200, "200 pages like the HTTP Archive's 2024 mobile crawl, with Lighthouse's 4× mobile computation"},
}

// NamedCorpora lists the named corpora.
func NamedCorpora() []NamedCorpus { return append([]NamedCorpus(nil), namedCorpora...) }

// MaxCorpusPages bounds a generated corpus.
const MaxCorpusPages = 100000

// CorpusSpec identifies a generated corpus.
type CorpusSpec struct {
	Profile *Profile
	Seed    int64
	Count   int
	Named   string // the named corpus it is, if any
}

// LookupCorpus returns a named corpus's spec.
func LookupCorpus(name string) (CorpusSpec, error) {
	for _, c := range namedCorpora {
		if c.Name == name {
			return CorpusSpec{Profile: profiles[c.Profile], Seed: c.Seed, Count: c.Count, Named: c.Name}, nil
		}
	}
	names := make([]string, len(namedCorpora))
	for i, c := range namedCorpora {
		names[i] = c.Name
	}
	return CorpusSpec{}, &FieldError{Field: "corpus", Value: fmt.Sprintf("%q", name), Allowed: "must be a named corpus: " + strings.Join(names, ", ")}
}

// NewCorpusSpec checks a profile name, seed and count.
func NewCorpusSpec(profile string, seed int64, count int) (CorpusSpec, error) {
	p, err := LookupProfile("like", profile)
	if err != nil {
		return CorpusSpec{}, err
	}
	if seed < 0 || seed > MaxSeed {
		return CorpusSpec{}, fieldErr("seed", seed, "must be an integer in [0, 2^53-1]")
	}
	if count < 1 || count > MaxCorpusPages {
		return CorpusSpec{}, fieldErr("count", count, "must be 1–%d", MaxCorpusPages)
	}
	return CorpusSpec{Profile: p, Seed: seed, Count: count}, nil
}

// GeneratedPrefix starts the names of generated pages outside the named corpora.
const GeneratedPrefix = "gen:"

// PageName is the name of page i (1-based) of the corpus.
func (c CorpusSpec) PageName(i int) string {
	if c.Named != "" {
		return fmt.Sprintf("%s:%d", c.Named, i)
	}
	return fmt.Sprintf("%s%s:%d:%d:%d", GeneratedPrefix, c.Profile.Name, c.Seed, c.Count, i)
}

var (
	namedPageRE = regexp.MustCompile(`^([a-z][a-z0-9-]*):([0-9]+)$`)
	genPageRE   = regexp.MustCompile(`^gen:([a-z0-9.-]+):([0-9]+):([0-9]+):([0-9]+)$`)
)

// IsGeneratedName reports whether name names a page of a generated corpus (not whether it exists).
func IsGeneratedName(name string) bool {
	if strings.HasPrefix(name, GeneratedPrefix) {
		return true
	}
	m := namedPageRE.FindStringSubmatch(name)
	if m == nil {
		return false
	}
	_, err := LookupCorpus(m[1])
	return err == nil
}

// ParseGeneratedName returns the corpus and page index a generated page's name names.
func ParseGeneratedName(name string) (CorpusSpec, int, error) {
	bad := func(why string) error {
		return &FieldError{Field: "page", Value: fmt.Sprintf("%q", name), Allowed: why}
	}
	var spec CorpusSpec
	var idx string
	if m := genPageRE.FindStringSubmatch(name); m != nil {
		seed, err1 := strconv.ParseInt(m[2], 10, 64)
		count, err2 := strconv.Atoi(m[3])
		if err1 != nil || err2 != nil {
			return spec, 0, bad("gen:PROFILE:SEED:COUNT:INDEX takes whole numbers")
		}
		s, err := NewCorpusSpec(m[1], seed, count)
		if err != nil {
			return spec, 0, bad(err.Error())
		}
		spec, idx = s, m[4]
	} else if m := namedPageRE.FindStringSubmatch(name); m != nil {
		s, err := LookupCorpus(m[1])
		if err != nil {
			return spec, 0, bad(err.Error())
		}
		spec, idx = s, m[2]
	} else {
		return spec, 0, bad("a generated page is CORPUS:INDEX (web200:17) or gen:PROFILE:SEED:COUNT:INDEX")
	}
	i, err := strconv.Atoi(idx)
	if err != nil || i < 1 || i > spec.Count {
		return spec, 0, bad(fmt.Sprintf("the index must be 1–%d", spec.Count))
	}
	return spec, i, nil
}

// pageDraw is what the corpus-level draw decides for one page.
type pageDraw struct {
	count      map[Type]int
	bytes      map[Type]int64
	domains    int
	thirdParty bool
	tpShare    float64
}

func seededRand(parts ...any) *rand.Rand {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%v\x00", p)
	}
	sum := h.Sum(nil)
	return rand.New(rand.NewPCG(binary.BigEndian.Uint64(sum[:8]), binary.BigEndian.Uint64(sum[8:16])))
}

func normals(r *rand.Rand, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = r.NormFloat64()
	}
	return out
}

// rankU returns (rank + 0.5)/n of every score (ties: the earlier index ranks lower).
func rankU(scores []float64) []float64 {
	n := len(scores)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] < scores[idx[b]] })
	u := make([]float64, n)
	for rank, i := range idx {
		u[i] = (float64(rank) + 0.5) / float64(n)
	}
	return u
}

func rankNormal(values []float64) []float64 {
	u := rankU(values)
	for i := range u {
		u[i] = normalQuantile(u[i])
	}
	return u
}

// draws decides every page's metrics (see the package comment above).
func (c CorpusSpec) draws() []pageDraw {
	p, n := c.Profile, c.Count
	r := seededRand("wirelab corpus v1", p.Name, c.Seed, n)
	cor := p.Structure.Correlation
	common := normals(r, n)
	typeFactor := map[Type][]float64{}
	for _, t := range typedMetrics {
		typeFactor[t] = normals(r, n)
	}
	noise := map[string][]float64{}
	for _, m := range append(append([]string(nil), ProfileMetrics...), "third_party", "third_party_share") {
		noise[m] = normals(r, n)
	}
	out := make([]pageDraw, n)
	for i := range out {
		out[i] = pageDraw{count: map[Type]int{}, bytes: map[Type]int64{}}
	}
	kb := float64(p.Kilobyte)
	sumCount, sumBytes := make([]float64, n), make([]float64, n)
	for _, t := range typedMetrics {
		for _, kind := range []string{"requests", "bytes"} {
			name := string(t) + "_" + kind
			m := p.Metrics[name]
			score := make([]float64, n)
			for i := range score {
				score[i] = cor.Page*common[i] + cor.Type*typeFactor[t][i] + cor.Own*noise[name][i]
			}
			for i, u := range rankU(score) {
				v := m.Quantile(u)
				if kind == "requests" {
					k := int(math.Round(v))
					if t == TypeHTML {
						k = max(k, 1) // the root
					}
					out[i].count[t] = k
					sumCount[i] += float64(k)
				} else {
					out[i].bytes[t] = int64(math.Round(v * kb))
				}
			}
		}
	}
	for i := range out {
		for _, t := range typedMetrics {
			if out[i].count[t] == 0 {
				out[i].bytes[t] = 0
			}
			sumBytes[i] += float64(out[i].bytes[t])
		}
	}
	// Totals: led by the typed metrics' sums; other objects make up the difference.
	total := func(name string, sums []float64) []float64 {
		lead := rankNormal(sums)
		score := make([]float64, n)
		for i := range score {
			score[i] = lead[i] + totalNoise*noise[name][i]
		}
		v := make([]float64, n)
		for i, u := range rankU(score) {
			v[i] = p.Metrics[name].Quantile(u)
		}
		return v
	}
	requests, weight := total("requests", sumCount), total("bytes", sumBytes)
	for i := range out {
		other := max(0, int(math.Round(requests[i]))-int(sumCount[i]))
		otherBytes := max(0, int64(math.Round(weight[i]*kb))-int64(sumBytes[i]))
		if other == 0 && otherBytes >= 1024 {
			other = 1
		}
		if other > 0 {
			otherBytes = max(otherBytes, int64(other)*minOtherBytes)
		} else {
			otherBytes = 0
		}
		out[i].count[TypeOther], out[i].bytes[TypeOther] = other, otherBytes
	}
	// Domains follow the page's requests; the pages with the fewest domains are those without a
	// third party, as many as the profile's share leaves.
	reqLead := make([]float64, n)
	for i := range out {
		for _, k := range out[i].count {
			reqLead[i] += float64(k)
		}
	}
	lead := rankNormal(reqLead)
	score := make([]float64, n)
	for i := range score {
		score[i] = 0.8*lead[i] + 0.6*noise["domains"][i]
	}
	for i, u := range rankU(score) {
		out[i].domains = min(max(1, int(math.Round(p.Metrics["domains"].Quantile(u)))), MaxOrigins, int(reqLead[i]))
	}
	domains := make([]float64, n)
	for i := range out {
		domains[i] = float64(out[i].domains)
	}
	lead = rankNormal(domains)
	for i := range score {
		score[i] = 0.8*lead[i] + 0.6*noise["third_party"][i]
	}
	without := int(math.Round((1 - p.ThirdParty.PagesWith) * float64(n)))
	lo, hi := p.ThirdParty.RequestShare[0], p.ThirdParty.RequestShare[1]
	for i, u := range rankU(score) {
		out[i].thirdParty = u*float64(n) >= float64(without) && reqLead[i] >= 2
		if out[i].thirdParty && out[i].domains < 2 {
			out[i].domains = 2
		}
		out[i].tpShare = lo + (hi-lo)*0.5*math.Erfc(-noise["third_party_share"][i]/math.Sqrt2)
	}
	return out
}

const minOtherBytes = 16

// totalNoise is how loosely a page's totals follow the sums of its typed metrics (ours): enough for
// pages with the same typed metrics to differ in their other objects, little enough that a total is
// rarely below its typed sum.
const totalNoise = 0.15

// Generate builds page i (1-based) of the corpus.
func (c CorpusSpec) Generate(i int) (*Page, error) {
	if i < 1 || i > c.Count {
		return nil, fieldErr("index", i, "must be 1–%d", c.Count)
	}
	return c.build(i, c.draws()[i-1])
}

// GenerateAll builds every page of the corpus (the metrics are drawn once).
func (c CorpusSpec) GenerateAll() ([]*Page, error) {
	draws := c.draws()
	pages := make([]*Page, c.Count)
	for i := range pages {
		pg, err := c.build(i+1, draws[i])
		if err != nil {
			return nil, err
		}
		pages[i] = pg
	}
	return pages, nil
}

var firstPartyHosts = []string{"www", "static", "cdn", "img", "assets", "media", "api", "fonts", "js", "css"}

// thirdPartyPool is how many third-party sites the corpus's pages draw from (a few popular, many rare).
const thirdPartyPool = 400

func (c CorpusSpec) build(index int, d pageDraw) (*Page, error) {
	prof, st := c.Profile, c.Profile.Structure
	r := seededRand("wirelab corpus page v1", prof.Name, c.Seed, c.Count, index)
	name := c.PageName(index)
	contentSeed := int64(binary.BigEndian.Uint64(sha256Sum(name, c.Seed)) & MaxSeed)
	p := &Page{Name: name, Seed: contentSeed, Origins: []Origin{{Host: OriginHost(0)}},
		Description: fmt.Sprintf("page %d of %d generated like %s (seed %d)", index, c.Count, prof.Name, c.Seed),
		Source:      "generated by wirelab-engine from the profile " + prof.Name + " (" + prof.Description + "); structure ours; docs/pages.md"}
	add := func(t Type, ctype string) int {
		id := fmt.Sprintf("o%d", len(p.Objects))
		path := "/index.html"
		if len(p.Objects) > 0 {
			path = fmt.Sprintf("/%s/%s.%s", dirOf[t], id, extFor(ctype))
		}
		p.Objects = append(p.Objects, Object{ID: id, Path: path, Type: t, ContentType: ctype})
		return len(p.Objects) - 1
	}
	add(TypeHTML, "text/html; charset=utf-8")
	for range d.count[TypeCSS] {
		add(TypeCSS, "text/css")
	}
	for range d.count[TypeJS] {
		add(TypeJS, "text/javascript")
	}
	for range d.count[TypeFont] {
		add(TypeFont, st.FontType)
	}
	for range d.count[TypeImage] {
		add(TypeImage, pick(r, st.ImageTypes))
	}
	for range d.count[TypeHTML] - 1 {
		add(TypeHTML, "text/html; charset=utf-8")
	}
	for range d.count[TypeOther] {
		add(TypeOther, pick(r, st.OtherTypes))
	}
	n := len(p.Objects)
	if n > MaxObjects {
		return nil, fmt.Errorf("page %s: %d objects; at most %d", name, n, MaxObjects)
	}

	// Hosts: first-party subdomains of the page's site, one host per third-party site.
	domains := min(d.domains, n)
	firstParty := domains
	if d.thirdParty && domains >= 2 {
		firstParty = min(domains-1, 1+b2i(domains >= 6)+b2i(domains >= 12))
	}
	site := fmt.Sprintf("site%d.%s", index, strings.ReplaceAll(prof.Name, ".", "-")+".example")
	var hosts, groups []string
	for k := range firstParty {
		label := fmt.Sprintf("s%d", k)
		if k < len(firstPartyHosts) {
			label = firstPartyHosts[k]
		}
		hosts, groups = append(hosts, label+"."+site), append(groups, site)
	}
	thirdStart := len(hosts)
	for _, tp := range zipfDistinct(r, thirdPartyPool, domains-firstParty) {
		g := fmt.Sprintf("thirdparty%d.example", tp)
		hosts, groups = append(hosts, "cdn."+g), append(groups, g)
	}
	hostOf := make([]int, n)
	order := r.Perm(n - 1)
	for k, j := range order {
		o := j + 1
		switch {
		case k < len(hosts)-1:
			hostOf[o] = k + 1 // every host serves at least one object
		case len(hosts) > thirdStart && r.Float64() < d.tpShare:
			hostOf[o] = thirdStart + zipfIndex(r, len(hosts)-thirdStart)
		default:
			hostOf[o] = r.IntN(thirdStart)
		}
	}
	for i := range p.Objects {
		p.Objects[i].Domain, p.Objects[i].Group = hosts[hostOf[i]], groups[hostOf[i]]
	}

	// Structure: stylesheets own fonts and some images; scripts request some objects.
	var cssIdx, jsIdx []int
	initiator := make([]int, n) // the script that requests the object (-1: none)
	sync := make([]bool, n)
	for i := range p.Objects {
		initiator[i] = -1
		o := &p.Objects[i]
		switch {
		case i == 0:
			continue
		case o.Type == TypeCSS:
			cssIdx = append(cssIdx, i)
			continue
		case (o.Type == TypeFont || (o.Type == TypeImage && r.Float64() < st.CSSImageShare)) && len(cssIdx) > 0:
			o.Parent = p.Objects[cssIdx[r.IntN(len(cssIdx))]].ID
			continue
		}
		share := st.ScriptInitiated[o.Type]
		if hostOf[i] >= thirdStart {
			share += st.ThirdPartyScriptBonus
		}
		if len(jsIdx) > 0 && r.Float64() < share {
			initiator[i] = jsIdx[r.IntN(len(jsIdx))]
		} else if o.Type == TypeJS {
			sync[i] = r.Float64() < st.SyncScriptShare
		}
		if o.Type == TypeJS {
			jsIdx = append(jsIdx, i)
		}
	}

	// Sizes: each type's bytes split over its objects by log-normal weights, each at least its
	// minimum (the root's markup, a stylesheet's rules, a valid image file).
	for _, t := range types {
		var idx []int
		for i, o := range p.Objects {
			if o.Type == t {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			continue
		}
		weights, mins := make([]float64, len(idx)), make([]int64, len(idx))
		var minSum int64
		for k, i := range idx {
			weights[k] = math.Exp(st.Spread[t] * r.NormFloat64())
			if i == 0 {
				weights[k] *= 4 // the root is most of a page's HTML
			}
			mins[k] = generatedMin(p, i)
			minSum += mins[k]
		}
		sizes, err := fitTotal(weights, mins, max(d.bytes[t], minSum))
		if err != nil {
			return nil, fmt.Errorf("page %s: %w", name, err)
		}
		for k, i := range idx {
			p.Objects[i].Size = sizes[k]
		}
	}
	p.Activities = generatedGraph(p, initiator, sync, st.CPUSlowdown)
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("page %s: generated an invalid page: %w", name, err)
	}
	return p, nil
}

func generatedMin(p *Page, i int) int64 {
	o := p.Objects[i]
	m := MinSize(p, i)
	switch {
	case o.Type == TypeImage && isPNG(o.ContentType):
		m = max(m, MinPNGSize)
	case o.Type == TypeImage && isJPEG(o.ContentType):
		m = max(m, MinJPEGSize)
	case o.Type == TypeOther:
		m = max(m, minOtherBytes)
	}
	return max(m, 16)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func sha256Sum(parts ...any) []byte {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%v\x00", p)
	}
	return h.Sum(nil)
}

// pick draws a key of shares (in key order, so the draw is stable).
func pick(r *rand.Rand, shares map[string]float64) string {
	keys := make([]string, 0, len(shares))
	for k := range shares {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	x := r.Float64()
	for _, k := range keys {
		if x -= shares[k]; x < 0 {
			return k
		}
	}
	return keys[len(keys)-1]
}

// zipfIndex draws 0…n-1 with weights 1/(k+1).
func zipfIndex(r *rand.Rand, n int) int {
	total := 0.0
	for k := range n {
		total += 1 / float64(k+1)
	}
	x := r.Float64() * total
	for k := range n {
		if x -= 1 / float64(k+1); x < 0 {
			return k
		}
	}
	return n - 1
}

// zipfDistinct draws k distinct values of 1…pool, popular ones (low numbers) more often.
func zipfDistinct(r *rand.Rand, pool, k int) []int {
	seen := map[int]bool{}
	var out []int
	for len(out) < k {
		v := zipfIndex(r, pool) + 1
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

var extByType = map[string]string{
	"text/css": "css", "text/javascript": "js", "image/png": "png", "image/jpeg": "jpg", "image/gif": "gif",
	"image/webp": "webp", "image/svg+xml": "svg", "font/woff2": "woff2", "font/woff": "woff", "application/font-woff": "woff",
	"application/json": "json", "text/plain": "txt", "video/mp4": "mp4", "application/x-shockwave-flash": "swf",
	"text/html; charset=utf-8": "html",
}

func extFor(ctype string) string {
	if e, ok := extByType[ctype]; ok {
		return e
	}
	return "bin"
}

// generatedGraph is a generated page's dependency graph (the structural graph's shape, BuildGraph,
// with scripts that request objects and scripts that do not block the parser):
//
//	download root ─(first chunk)→ parse <head> → download stylesheets, scripts the HTML names, fonts and
//	  other objects without a stylesheet or script behind them
//	download css → evaluate css → download the objects it owns
//	download script → evaluate script (a parser-blocking one also waits for the stylesheets before it)
//	  → download the objects it requests
//	download root (complete) + parse <head> + evaluate the parser-blocking scripts → parse <body>
//	  → download images and iframes
//
// Computation times are the structural graph's (docs/pages.md) times cpu.
func generatedGraph(p *Page, initiator []int, sync []bool, cpu float64) []Activity {
	var acts []Activity
	add := func(kind Kind, obj string, dur float64, deps ...Dep) string {
		id := fmt.Sprintf("a%d", len(acts))
		acts = append(acts, Activity{ID: id, Kind: kind, Object: obj, DurationMs: roundMs(dur * cpu), Deps: deps})
		return id
	}
	dep := func(on string) Dep { return Dep{On: on} }
	root := p.Objects[0]
	parseMs := parseHTMLBaseMs + parseHTMLPerKBMs*float64(root.Size)/1000
	dlRoot := add(KindDownload, root.ID, 0)
	parseHead := add(KindParse, root.ID, parseMs*parseHeadShare, Dep{On: dlRoot, When: WhenFirstChunk})
	eval := map[int]string{}
	byID := map[string]int{}
	for i, o := range p.Objects {
		byID[o.ID] = i
	}
	var cssEvals, blocking []string
	trigger := func(i int, fallback string) Dep {
		switch {
		case initiator[i] >= 0:
			return dep(eval[initiator[i]])
		case p.Objects[i].Parent != "" && p.Objects[i].Parent != root.ID:
			return dep(eval[byID[p.Objects[i].Parent]])
		}
		return dep(fallback)
	}
	parseBody := ""
	for i, o := range p.Objects[1:] {
		i++
		switch o.Type {
		case TypeCSS:
			dl := add(KindDownload, o.ID, 0, dep(parseHead))
			eval[i] = add(KindEvaluate, o.ID, evalCSSBaseMs+evalCSSPerKBMs*float64(o.Size)/1000, dep(dl))
			cssEvals = append(cssEvals, eval[i])
			continue
		case TypeJS:
			dl := add(KindDownload, o.ID, 0, trigger(i, parseHead))
			deps := []Dep{dep(dl)}
			if sync[i] {
				for _, c := range cssEvals {
					deps = append(deps, dep(c))
				}
			}
			eval[i] = add(KindEvaluate, o.ID, evalJSBaseMs+evalJSPerKBMs*float64(o.Size)/1000, deps...)
			if sync[i] {
				blocking = append(blocking, eval[i])
			}
			continue
		case TypeFont, TypeOther:
			add(KindDownload, o.ID, 0, trigger(i, parseHead))
			continue
		}
		if parseBody == "" { // images and iframes come after every stylesheet and script
			deps := []Dep{dep(dlRoot), dep(parseHead)}
			for _, b := range blocking {
				deps = append(deps, dep(b))
			}
			parseBody = add(KindParse, root.ID, parseMs*(1-parseHeadShare), deps...)
		}
		add(KindDownload, o.ID, 0, trigger(i, parseBody))
	}
	if parseBody == "" {
		deps := []Dep{dep(dlRoot), dep(parseHead)}
		for _, b := range blocking {
			deps = append(deps, dep(b))
		}
		add(KindParse, root.ID, parseMs*(1-parseHeadShare), deps...)
	}
	return acts
}
