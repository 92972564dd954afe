package page

import (
	"fmt"
	"math"
	"sort"
)

// Characteristics are a page's figures as a corpus listing shows them (`pages ls --corpus`): W's
// characteristics of real pages (object count, page size, object-size spread) and the profile's
// metrics.
type Characteristics struct {
	Name            string         `json:"name"`
	Objects         int            `json:"objects"`
	TotalBytes      int64          `json:"total_bytes"`
	ObjectBytesP10  float64        `json:"object_bytes_p10"`
	ObjectBytesP50  float64        `json:"object_bytes_p50"`
	ObjectBytesP90  float64        `json:"object_bytes_p90"`
	Domains         int            `json:"domains"`
	Groups          int            `json:"groups"`
	ThirdPartyShare float64        `json:"third_party_share"` // share of requests from another group than the root's
	Depth           int            `json:"depth"`             // the deepest object in the dependency graph (Depths)
	ComputeMs       float64        `json:"compute_ms"`        // the graph's computation, summed
	Count           map[Type]int   `json:"count"`
	Bytes           map[Type]int64 `json:"bytes"`
}

// Characterize computes p's characteristics.
func (p *Page) Characterize() Characteristics {
	c := Characteristics{Name: p.Name, Objects: len(p.Objects), TotalBytes: p.TotalBytes(),
		Count: map[Type]int{}, Bytes: map[Type]int64{}}
	sizes := make([]float64, len(p.Objects))
	domains, groups := map[string]bool{}, map[string]bool{}
	third := 0
	for i, o := range p.Objects {
		sizes[i] = float64(o.Size)
		c.Count[o.Type]++
		c.Bytes[o.Type] += o.Size
		domains[o.Domain] = true
		groups[o.Group] = true
		if o.Group != p.Objects[0].Group {
			third++
		}
	}
	sort.Float64s(sizes)
	c.ObjectBytesP10, c.ObjectBytesP50, c.ObjectBytesP90 = Percentile(sizes, 10), Percentile(sizes, 50), Percentile(sizes, 90)
	c.Domains, c.Groups = len(domains), len(groups)
	c.ThirdPartyShare = float64(third) / float64(len(p.Objects))
	for _, d := range p.Depths() {
		c.Depth = max(c.Depth, d)
	}
	for _, a := range p.Activities {
		c.ComputeMs += a.DurationMs
	}
	c.ComputeMs = roundMs(c.ComputeMs)
	return c
}

// Metric returns the characteristic a profile metric names, in the profile's unit (KB = kilobyte
// bytes).
func (c Characteristics) Metric(name string, kilobyte int64) float64 {
	kb := float64(kilobyte)
	switch name {
	case "requests":
		return float64(c.Objects)
	case "bytes":
		return float64(c.TotalBytes) / kb
	case "domains":
		return float64(c.Domains)
	}
	for _, t := range typedMetrics {
		switch name {
		case string(t) + "_requests":
			return float64(c.Count[t])
		case string(t) + "_bytes":
			return float64(c.Bytes[t]) / kb
		}
	}
	panic("page: no metric " + name)
}

// Percentile is the p-th percentile of sorted values, linearly interpolated between closest ranks
// (numpy's default).
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	x := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(x))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (sorted[hi]-sorted[lo])*(x-float64(lo))
}

// ProfileRow is one published figure of a profile beside the same figure of a generated corpus.
type ProfileRow struct {
	Metric    string  `json:"metric"`
	Stat      string  `json:"stat"` // p50, p90, p75, mean, share
	Unit      string  `json:"unit"`
	Published float64 `json:"published"`
	Source    string  `json:"source"` // the key of the profile's sources
	Figure    string  `json:"figure,omitempty"`
	Generated float64 `json:"generated"`
	Deviation float64 `json:"deviation"` // (generated − published) / published
}

// Tolerance is how far a generated corpus's figure may be from the published one (relative).
const Tolerance = 0.10

// ProfileRows compares pages (a corpus generated like prof) with prof's published figures: every
// published median and 90th percentile, the other published knots a metric has no median or p90
// for, every published mean and the share of pages with third parties.
func ProfileRows(prof *Profile, pages []*Page) []ProfileRow {
	chars := make([]Characteristics, len(pages))
	for i, p := range pages {
		chars[i] = p.Characterize()
	}
	var rows []ProfileRow
	for _, name := range ProfileMetrics {
		m := prof.Metrics[name]
		values := make([]float64, len(chars))
		for i, c := range chars {
			values[i] = c.Metric(name, prof.Kilobyte)
		}
		sort.Float64s(values)
		row := func(stat string, published, generated float64, source, figure string) {
			dev := 0.0
			if published != 0 {
				dev = (generated - published) / published
			} else if generated != 0 {
				dev = math.Inf(1)
			}
			rows = append(rows, ProfileRow{Metric: name, Stat: stat, Unit: m.Unit, Published: published, Source: source,
				Figure: figure, Generated: generated, Deviation: dev})
		}
		if m.Source != "ours" {
			ours := map[string]bool{}
			for _, k := range m.Ours {
				ours[k] = true
			}
			stats := []string{"p50", "p90"}
			if ours["p50"] && ours["p90"] {
				stats = []string{"p10", "p25", "p75"}
			}
			for _, stat := range stats {
				v, ok := m.Knots[stat]
				if !ok || ours[stat] {
					continue
				}
				var pct float64
				fmt.Sscanf(stat, "p%g", &pct)
				row(stat, v, Percentile(values, pct), m.Source, m.Figure)
			}
		}
		if m.Mean != 0 {
			sum := 0.0
			for _, v := range values {
				sum += v
			}
			figure := m.Figure
			if m.MeanFigure != "" {
				figure = m.MeanFigure
			}
			row("mean", m.Mean, sum/float64(len(values)), m.MeanSource, figure)
		}
	}
	if prof.ThirdParty.PagesWithSource != "ours" {
		with := 0
		for _, c := range chars {
			if c.ThirdPartyShare > 0 {
				with++
			}
		}
		rows = append(rows, ProfileRow{Metric: "pages_with_third_party", Stat: "share", Unit: "share",
			Published: prof.ThirdParty.PagesWith, Source: prof.ThirdParty.PagesWithSource, Figure: prof.ThirdParty.PagesWithFigure,
			Generated: float64(with) / float64(len(chars)),
			Deviation: (float64(with)/float64(len(chars)) - prof.ThirdParty.PagesWith) / prof.ThirdParty.PagesWith})
	}
	return rows
}
