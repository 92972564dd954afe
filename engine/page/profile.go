package page

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"sort"
	"strings"
)

// Profiles of published web distributions (docs/pages.md, "Generated corpora"). Each file under
// profiles/ is one profile: the distribution of every page metric the generator draws (knots at
// percentiles, in the units the source publishes), where each number comes from (a source, or
// "ours" with a note), published means and shares, and the structure the generator gives pages
// (our choices). The files are the one owner of these figures: the generator reads them, the
// check (ProfileRows, `pages profiles`) compares a generated corpus with them, and docs/pages.md's
// tables are that command's output.
//
//go:embed profiles/*.json
var profileFS embed.FS

// Profile is one profile file.
type Profile struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Client      string            `json:"client"`
	Kilobyte    int64             `json:"kilobyte"` // bytes in the sources' KB (the HTTP Archive's: 1024)
	Sources     map[string]string `json:"sources"`
	Metrics     map[string]Metric `json:"metrics"`
	ThirdParty  ThirdPartyModel   `json:"third_party"`
	Structure   Structure         `json:"structure"`
}

// Metric is the distribution of one per-page metric.
type Metric struct {
	Unit       string             `json:"unit"` // count | KB
	Knots      map[string]float64 `json:"knots"`
	Source     string             `json:"source"` // a key of Sources, or "ours"
	Figure     string             `json:"figure,omitempty"`
	Ours       []string           `json:"ours,omitempty"` // knots that are ours although Source is published
	Mean       float64            `json:"mean,omitempty"` // a published mean (0: none)
	MeanSource string             `json:"mean_source,omitempty"`
	MeanFigure string             `json:"mean_figure,omitempty"` // when not Figure
	Note       string             `json:"note,omitempty"`

	q *quantileFunc
}

// ThirdPartyModel says which pages have third parties and how many of their requests they serve.
type ThirdPartyModel struct {
	PagesWith        float64    `json:"pages_with"` // share of pages with at least one third-party request
	PagesWithSource  string     `json:"pages_with_source"`
	PagesWithFigure  string     `json:"pages_with_figure,omitempty"`
	RequestShare     [2]float64 `json:"request_share"` // a page's third-party share of requests: uniform in this range
	RequestShareNote string     `json:"request_share_note,omitempty"`
}

// Structure is how the generator shapes a page (our choices, stated in the profile file).
type Structure struct {
	ImageTypes            map[string]float64 `json:"image_types"` // content type → share of images
	ImageTypesNote        string             `json:"image_types_note,omitempty"`
	FontType              string             `json:"font_type"`
	OtherTypes            map[string]float64 `json:"other_types"`
	CSSImageShare         float64            `json:"css_image_share"`   // images referenced by a stylesheet
	SyncScriptShare       float64            `json:"sync_script_share"` // parser-blocking scripts among those the HTML names
	ScriptInitiated       map[Type]float64   `json:"script_initiated"`  // share of each type's objects a script requests
	ThirdPartyScriptBonus float64            `json:"third_party_script_bonus"`
	Spread                map[Type]float64   `json:"spread"` // log-normal sigma of object sizes within a type
	CPUSlowdown           float64            `json:"cpu_slowdown"`
	CPUSlowdownSource     string             `json:"cpu_slowdown_source,omitempty"`
	CPUSlowdownNote       string             `json:"cpu_slowdown_note,omitempty"`
	Correlation           struct {
		Page float64 `json:"page"` // weight of the page's common factor in every metric
		Type float64 `json:"type"` // weight of the type's factor (shared by its count and bytes)
		Own  float64 `json:"own"`  // weight of the metric's own noise
	} `json:"correlation"`
	Note string `json:"note,omitempty"`
}

// The metrics a profile describes, in table order. requests and bytes are the page totals; "other"
// objects make up the difference between the totals and the typed metrics.
var ProfileMetrics = []string{
	"requests", "bytes",
	"html_requests", "html_bytes", "css_requests", "css_bytes", "js_requests", "js_bytes",
	"image_requests", "image_bytes", "font_requests", "font_bytes", "domains",
}

// typedMetrics are the types whose count and bytes the generator draws (other is the remainder).
var typedMetrics = []Type{TypeHTML, TypeCSS, TypeJS, TypeImage, TypeFont}

var knotZ = map[string]float64{"p10": -1.2815515655446004, "p25": -0.6744897501960817, "p50": 0,
	"p75": 0.6744897501960817, "p90": 1.2815515655446004}

var profiles = map[string]*Profile{}

func init() {
	entries, err := profileFS.ReadDir("profiles")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		data, err := profileFS.ReadFile(path.Join("profiles", e.Name()))
		if err != nil {
			panic(err)
		}
		p, err := parseProfile(data)
		if err != nil {
			panic(fmt.Sprintf("page: profiles/%s: %v", e.Name(), err))
		}
		if p.Name+".json" != e.Name() {
			panic(fmt.Sprintf("page: profiles/%s names itself %q", e.Name(), p.Name))
		}
		profiles[p.Name] = p
	}
}

func parseProfile(data []byte) (*Profile, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p Profile
	if err := dec.Decode(&p); err != nil {
		return nil, err
	}
	if p.Kilobyte <= 0 {
		return nil, fmt.Errorf("kilobyte: must be > 0")
	}
	known := func(src string) bool { _, ok := p.Sources[src]; return ok || src == "ours" }
	for _, name := range ProfileMetrics {
		m, ok := p.Metrics[name]
		if !ok {
			return nil, fmt.Errorf("metrics.%s: missing", name)
		}
		if m.Unit != "count" && m.Unit != "KB" {
			return nil, fmt.Errorf("metrics.%s.unit: %q; want count or KB", name, m.Unit)
		}
		if !known(m.Source) || (m.Mean != 0 && !known(m.MeanSource)) {
			return nil, fmt.Errorf("metrics.%s: source %q or mean_source %q is not in sources", name, m.Source, m.MeanSource)
		}
		for _, k := range m.Ours {
			if _, ok := m.Knots[k]; !ok {
				return nil, fmt.Errorf("metrics.%s.ours: %q is not a knot", name, k)
			}
		}
		q, err := newQuantileFunc(m.Knots)
		if err != nil {
			return nil, fmt.Errorf("metrics.%s.knots: %w", name, err)
		}
		m.q = q
		p.Metrics[name] = m
	}
	if len(p.Metrics) != len(ProfileMetrics) {
		return nil, fmt.Errorf("metrics: %d metrics; want exactly %v", len(p.Metrics), ProfileMetrics)
	}
	if !known(p.ThirdParty.PagesWithSource) || p.ThirdParty.PagesWith < 0 || p.ThirdParty.PagesWith > 1 {
		return nil, fmt.Errorf("third_party.pages_with: a share with a known source")
	}
	s := p.Structure
	if p.Structure.CPUSlowdown <= 0 || (s.CPUSlowdownSource != "" && !known(s.CPUSlowdownSource)) {
		return nil, fmt.Errorf("structure.cpu_slowdown: must be > 0, with a known source")
	}
	for _, shares := range []map[string]float64{s.ImageTypes, s.OtherTypes} {
		sum := 0.0
		for ct, v := range shares {
			if !ValidContentType(ct) || v < 0 {
				return nil, fmt.Errorf("structure: content type %q or share %v", ct, v)
			}
			sum += v
		}
		if math.Abs(sum-1) > 1e-9 {
			return nil, fmt.Errorf("structure: content type shares sum to %v, not 1", sum)
		}
	}
	return &p, nil
}

// ProfileNames lists the profiles.
func ProfileNames() []string {
	names := make([]string, 0, len(profiles))
	for n := range profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LookupProfile returns a profile by name (a *FieldError naming field when there is none).
func LookupProfile(field, name string) (*Profile, error) {
	p, ok := profiles[name]
	if !ok {
		return nil, &FieldError{Field: field, Value: fmt.Sprintf("%q", name),
			Allowed: "must be a profile: " + strings.Join(ProfileNames(), ", ")}
	}
	return p, nil
}

// Quantile is the metric's value at probability u (0 < u < 1), in the metric's unit.
func (m Metric) Quantile(u float64) float64 { return m.q.at(u) }

// quantileFunc interpolates knots linearly in (normal score, log(1 + value)) and extrapolates
// beyond the end knots along the end segments: a log-normal between and beyond the knots.
type quantileFunc struct{ z, g []float64 }

func newQuantileFunc(knots map[string]float64) (*quantileFunc, error) {
	type kv struct{ z, v float64 }
	var ks []kv
	for name, v := range knots {
		z, ok := knotZ[name]
		if !ok {
			return nil, fmt.Errorf("%q: knots are p10, p25, p50, p75, p90", name)
		}
		if v < 0 || math.IsNaN(v) {
			return nil, fmt.Errorf("%s: %v; must be ≥ 0", name, v)
		}
		ks = append(ks, kv{z, v})
	}
	if len(ks) < 2 {
		return nil, fmt.Errorf("need at least two knots")
	}
	sort.Slice(ks, func(a, b int) bool { return ks[a].z < ks[b].z })
	q := &quantileFunc{}
	for i, k := range ks {
		if i > 0 && k.v < ks[i-1].v {
			return nil, fmt.Errorf("knots must not decrease")
		}
		q.z = append(q.z, k.z)
		q.g = append(q.g, math.Log1p(k.v))
	}
	return q, nil
}

func (q *quantileFunc) at(u float64) float64 {
	z := normalQuantile(u)
	n := len(q.z)
	i := sort.SearchFloat64s(q.z, z) // first knot ≥ z
	switch {
	case i == 0:
		i = 1
	case i >= n:
		i = n - 1
	}
	z0, z1, g0, g1 := q.z[i-1], q.z[i], q.g[i-1], q.g[i]
	g := g0 + (g1-g0)*(z-z0)/(z1-z0)
	return math.Max(0, math.Expm1(g))
}

// normalQuantile is the standard normal's inverse CDF (Acklam's algorithm refined by one Halley
// step: relative error below 1e-12).
func normalQuantile(p float64) float64 {
	if p <= 0 {
		return math.Inf(-1)
	}
	if p >= 1 {
		return math.Inf(1)
	}
	a := [...]float64{-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00}
	b := [...]float64{-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01, -1.328068155288572e+01}
	c := [...]float64{-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00}
	d := [...]float64{7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00}
	const low = 0.02425
	var x float64
	switch {
	case p < low:
		q := math.Sqrt(-2 * math.Log(p))
		x = (((((c[0]*q+c[1])*q+c[2])*q+c[3])*q+c[4])*q + c[5]) / ((((d[0]*q+d[1])*q+d[2])*q+d[3])*q + 1)
	case p <= 1-low:
		q := p - 0.5
		r := q * q
		x = (((((a[0]*r+a[1])*r+a[2])*r+a[3])*r+a[4])*r + a[5]) * q / (((((b[0]*r+b[1])*r+b[2])*r+b[3])*r+b[4])*r + 1)
	default:
		q := math.Sqrt(-2 * math.Log(1-p))
		x = -(((((c[0]*q+c[1])*q+c[2])*q+c[3])*q+c[4])*q + c[5]) / ((((d[0]*q+d[1])*q+d[2])*q+d[3])*q + 1)
	}
	e := 0.5*math.Erfc(-x/math.Sqrt2) - p
	u := e * math.Sqrt(2*math.Pi) * math.Exp(x*x/2)
	return x - u/(1+x*u/2)
}
