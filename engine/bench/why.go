package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/trial"
	"github.com/wirelab/wirelab/engine/why"
)

// WhyOptions configure the decomposition benchmark (`wirelab-engine bench why`).
type WhyOptions struct {
	Quick    bool      // three small pages instead of the whole corpus
	Progress io.Writer // one line per trial; nil for none
	// Dump, when set, keeps every load's decomposition input there (trial.WhyDumpEnv), for
	// `wirelab-engine why FILE`.
	Dump   string
	Engine string
	Env    []string
}

// WhyProfiles are the benchmark's network profiles: a clean path, the same with 1 % loss, and a
// 256 kbit/s one.
var WhyProfiles = []struct{ Name, Network string }{
	{"clean", "rtt=100ms,bw=10mbit"},
	{"loss-1%", "rtt=100ms,bw=10mbit,loss=1%"},
	{"256kbit", "rtt=100ms,bw=256kbit"},
}

// WhyProtocols are the protocols it loads every page over.
var WhyProtocols = []string{"h1s", "h2", "h3"}

// WhyResult is what the decomposition benchmark prints.
type WhyResult struct {
	Rows []WhyRow `json:"rows"` // per profile and protocol, then "all"
	// Overhead is the decompositions' time over the trials' wall time (every profile).
	DecomposeMs  float64 `json:"decompose_ms"`
	TrialsWallMs float64 `json:"trials_wall_ms"`
	OverheadPct  float64 `json:"overhead_pct"`
	// DecomposeMsMax is the slowest single load's decomposition.
	DecomposeMsMax float64 `json:"decompose_ms_max"`
	// MostUnattributed is the load with the largest unattributed share.
	MostUnattributed string  `json:"most_unattributed"`
	Machine          Machine `json:"machine"`
	DurationS        float64 `json:"duration_s"`
}

// WhyRow is one profile and protocol over every page.
type WhyRow struct {
	Profile  string `json:"profile"`
	Protocol string `json:"protocol"`
	Loads    int    `json:"loads"`
	Errors   int    `json:"errors"`
	// MaxSumErrorMs is the largest |Σ why − tow_first_packet_ms| (the records' µs rounding).
	MaxSumErrorMs float64 `json:"max_sum_error_ms"`
	// Unattributed is unattributed_ms ÷ tow_first_packet_ms: median, 95th percentile, maximum.
	UnattributedMedianPct float64 `json:"unattributed_median_pct"`
	UnattributedP95Pct    float64 `json:"unattributed_p95_pct"`
	UnattributedMaxPct    float64 `json:"unattributed_max_pct"`
	// Parts is each part's share of the loads' summed time on the wire (%).
	Parts map[string]float64 `json:"parts_pct"`
}

// Why runs every corpus page (Quick: three) over h1s, h2 and h3 at each of WhyProfiles, one load
// each, and checks the decomposition of every load.
func Why(ctx context.Context, opt WhyOptions) (*WhyResult, error) {
	res := &WhyResult{Machine: machine()}
	start := time.Now()
	pages := page.CorpusNames()
	if opt.Quick {
		pages = []string{"twitter", "flags", "youtube"}
	}
	tmp, err := os.MkdirTemp("", "wirelab-bench-why-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var decompose []float64
	type key struct{ profile, proto string }
	loads := map[key][]trial.Record{}
	errs := map[key]int{}
	worst := -1.0
	for _, prof := range WhyProfiles {
		for _, pg := range pages {
			spec := fmt.Sprintf(`{"trial_id":"bench-why","page":%q,"protocols":["h1s","h2","h3"],"repetitions":1,"network":%q,"capture":{"har":false},"client":{"timeout_s":600}}`, pg, prof.Network)
			dir := filepath.Join(tmp, prof.Name+"-"+pg)
			if opt.Dump != "" { // the trial runs in this process and reads it from here
				if err := os.Setenv(trial.WhyDumpEnv, filepath.Join(opt.Dump, prof.Name+"-"+pg)); err != nil {
					return nil, err
				}
			}
			t0 := time.Now()
			_, recs, err := runTrial(ctx, spec, dir, trial.Options{Engine: opt.Engine, Env: opt.Env,
				Decomposed: func(d time.Duration) { decompose = append(decompose, float64(d)/float64(time.Millisecond)) }})
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", prof.Name, pg, err)
			}
			wall := time.Since(t0)
			res.TrialsWallMs += float64(wall) / float64(time.Millisecond)
			for _, r := range recs {
				k := key{prof.Name, r.Protocol}
				if r.Error != nil || r.Why == nil {
					errs[k]++
					continue
				}
				loads[k] = append(loads[k], r)
				if share := 100 * r.Why[why.Unattributed] / r.TowFirstPacketMs; share > worst {
					worst = share
					res.MostUnattributed = fmt.Sprintf("%s %s %s: %.2f %% of %.1f ms", prof.Name, pg, r.Protocol, share, r.TowFirstPacketMs)
				}
			}
			if opt.Progress != nil {
				fmt.Fprintf(opt.Progress, "bench why: %s %s: %d loads in %.1f s\n", prof.Name, pg, len(recs), wall.Seconds())
			}
			os.RemoveAll(dir)
		}
	}
	row := func(profile, proto string, recs []trial.Record, nerr int) WhyRow {
		w := WhyRow{Profile: profile, Protocol: proto, Loads: len(recs) + nerr, Errors: nerr, Parts: map[string]float64{}}
		var shares []float64
		var total float64
		var parts why.Parts
		for _, r := range recs {
			w.MaxSumErrorMs = max(w.MaxSumErrorMs, math.Abs(r.Why.Sum()-r.TowFirstPacketMs))
			shares = append(shares, 100*r.Why[why.Unattributed]/r.TowFirstPacketMs)
			total += r.TowFirstPacketMs
			for i, v := range r.Why {
				parts[i] += v
			}
		}
		slices.Sort(shares)
		if len(shares) > 0 {
			w.UnattributedMedianPct = round(median(shares), 2)
			w.UnattributedP95Pct = round(percentile(shares, 0.95), 2)
			w.UnattributedMaxPct = round(shares[len(shares)-1], 2)
		}
		for i, v := range parts {
			if total > 0 {
				w.Parts[why.Defs[i].Key] = round(100*v/total, 1)
			}
		}
		w.MaxSumErrorMs = round(w.MaxSumErrorMs, 4)
		return w
	}
	var all []trial.Record
	nerr := 0
	for _, prof := range WhyProfiles {
		for _, proto := range WhyProtocols {
			k := key{prof.Name, proto}
			res.Rows = append(res.Rows, row(prof.Name, proto, loads[k], errs[k]))
			all = append(all, loads[k]...)
			nerr += errs[k]
		}
	}
	res.Rows = append(res.Rows, row("all", "all", all, nerr))
	for _, d := range decompose {
		res.DecomposeMs += d
		res.DecomposeMsMax = max(res.DecomposeMsMax, d)
	}
	res.DecomposeMs, res.DecomposeMsMax = round(res.DecomposeMs, 1), round(res.DecomposeMsMax, 2)
	if res.TrialsWallMs > 0 {
		res.OverheadPct = round(100*res.DecomposeMs/res.TrialsWallMs, 3)
	}
	res.TrialsWallMs = round(res.TrialsWallMs, 0)
	res.Machine.LoadAfter = loadavg()
	res.DurationS = round(time.Since(start).Seconds(), 1)
	return res, nil
}
