package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/trial"
)

// LoaderOptions configure the loader benchmark (`wirelab-engine bench loader`).
type LoaderOptions struct {
	Quick    bool      // fewer loads (make bench)
	Progress io.Writer // one line per trial; nil for none
	Engine   string    // the wirelab-engine binary the trials run as serve and fetch ("" = this one)
	Env      []string  // its environment (nil = this process's)
}

// LoaderResult is what the loader benchmark prints.
type LoaderResult struct {
	// Overhead: the imgur page over an unimpaired path (profile native: no delay, no rate limit)
	// through the whole trial machinery — topology, emulator, serve, one fetch process per load.
	Overhead []LoaderOverhead `json:"overhead"`
	// WireEfficiency: study E's pages at 1 Mbit/s (150 ms RTT, study E's default testbed):
	// bytes on the wire ÷ rate ÷ ToW — how busy the bottleneck was while the page loaded.
	WireEfficiency []WireEfficiency `json:"wire_efficiency"`
	Machine        Machine          `json:"machine"`
	DurationS      float64          `json:"duration_s"`
}

// LoaderOverhead is one protocol's loads on the unimpaired path.
type LoaderOverhead struct {
	Page        string  `json:"page"`
	Protocol    string  `json:"protocol"`
	Network     string  `json:"network"`
	Loads       int     `json:"loads"`
	Errors      int     `json:"errors"`
	PLTMsMedian float64 `json:"plt_ms_median"`
	PLTMsMin    float64 `json:"plt_ms_min"`
	PLTMsMax    float64 `json:"plt_ms_max"`
	// CPUMsMedian is the loader process's user + system CPU per load (fetch: Go start-up, TLS,
	// the load itself), CPUMsMean its mean.
	CPUMsMedian float64 `json:"cpu_ms_median"`
	CPUMsMean   float64 `json:"cpu_ms_mean"`
	// LatenessP99US is the emulator's timer lateness p99 over the trial.
	LatenessP99US float64 `json:"lateness_p99_us"`
}

// WireEfficiency is one page and protocol at 1 Mbit/s.
type WireEfficiency struct {
	Page     string  `json:"page"`
	Protocol string  `json:"protocol"`
	Network  string  `json:"network"`
	Loads    int     `json:"loads"`
	Errors   int     `json:"errors"`
	RateBPS  int64   `json:"rate_bps"`
	ToWMs    float64 `json:"tow_ms_median"`
	// Efficiency is bytes_down × 8 ÷ rate ÷ ToW (median over loads): 1 = the downlink carried
	// packets back to back from the first request to the last response.
	Efficiency float64 `json:"efficiency_median"`
	// BodyEfficiency is the same with the page's body bytes instead of the bytes on the wire: what
	// headers, handshakes and idle round trips cost together.
	BodyEfficiency float64 `json:"body_efficiency_median"`
	BytesDown      int64   `json:"bytes_down_median"`
	BodyBytes      int64   `json:"body_bytes"`
	LatenessP99US  float64 `json:"lateness_p99_us"`
}

// Loader runs the loader benchmark: real trials, each in its own topology.
func Loader(ctx context.Context, opt LoaderOptions) (*LoaderResult, error) {
	res := &LoaderResult{Machine: machine()}
	start := time.Now()
	busy0, self0 := cpuBusy(), treeCPU()
	reps, effReps := 20, 3
	if opt.Quick {
		reps, effReps = 10, 1
	}
	tmp, err := os.MkdirTemp("", "wirelab-bench-loader-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	run := func(name, spec string) (*trial.Result, []trial.Record, error) {
		dir := filepath.Join(tmp, name)
		t0 := time.Now()
		r, recs, err := runTrial(ctx, spec, dir, trial.Options{Engine: opt.Engine, Env: opt.Env})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		if opt.Progress != nil {
			fmt.Fprintf(opt.Progress, "bench loader: %s: %d loads in %.1f s\n", name, r.Loads, time.Since(t0).Seconds())
		}
		os.RemoveAll(dir)
		return r, recs, err
	}

	const overheadPage, overheadNet = "imgur", "native"
	r, recs, err := run("overhead", fmt.Sprintf(`{"trial_id":"bench-loader","page":%q,"protocols":["h2","h1s"],"repetitions":%d,"network":%q,"capture":{"har":false}}`, overheadPage, reps, overheadNet))
	if err != nil {
		return nil, err
	}
	for _, proto := range []string{"h2", "h1s"} {
		o := LoaderOverhead{Page: overheadPage, Protocol: proto, Network: overheadNet, LatenessP99US: r.Emulator.LatenessUS.P99}
		var plt, cpu []float64
		for _, l := range recs {
			if l.Protocol != proto {
				continue
			}
			o.Loads++
			if l.Error != nil {
				o.Errors++
				continue
			}
			plt = append(plt, l.PltMs)
			if c, ok := l.Client["loader_cpu_ms"].(float64); ok {
				cpu = append(cpu, c)
			}
		}
		lo, hi := minMax(plt)
		o.PLTMsMedian, o.PLTMsMin, o.PLTMsMax = round(median(plt), 1), round(lo, 1), round(hi, 1)
		o.CPUMsMedian, o.CPUMsMean = round(median(cpu), 1), round(mean(cpu), 1)
		res.Overhead = append(res.Overhead, o)
	}

	const effNet = "elkhatib-default" // 1 Mbit/s both ways, 150 ms RTT, 256-packet queue
	for _, pg := range []string{"twitter", "youtube", "imgur"} {
		r, recs, err := run("wire-"+pg, fmt.Sprintf(`{"trial_id":"bench-wire-%s","page":%q,"protocols":["h1s","h2"],"repetitions":%d,"network":%q,"capture":{"har":false}}`, pg, pg, effReps, effNet))
		if err != nil {
			return nil, err
		}
		rate := r.Spec.NetworkRes.Down.RateBPS
		for _, proto := range []string{"h1s", "h2"} {
			w := WireEfficiency{Page: pg, Protocol: proto, Network: effNet, RateBPS: rate, LatenessP99US: r.Emulator.LatenessUS.P99}
			var tow, eff, body []float64
			var down []float64
			for _, l := range recs {
				if l.Protocol != proto {
					continue
				}
				w.Loads++
				if l.Error != nil || l.TowMs <= 0 {
					w.Errors++
					continue
				}
				w.BodyBytes = l.BodyBytes
				tow = append(tow, l.TowMs)
				down = append(down, float64(l.BytesDown))
				eff = append(eff, float64(l.BytesDown)*8/float64(rate)/(l.TowMs/1000))
				body = append(body, float64(l.BodyBytes)*8/float64(rate)/(l.TowMs/1000))
			}
			w.ToWMs, w.Efficiency, w.BodyEfficiency = round(median(tow), 1), round(median(eff), 4), round(median(body), 4)
			w.BytesDown = int64(median(down))
			res.WireEfficiency = append(res.WireEfficiency, w)
		}
	}

	res.Machine.LoadAfter = loadavg()
	if busy1 := cpuBusy(); busy1.total > busy0.total {
		other := (busy1.busy - busy0.busy) - (treeCPU()-self0).Seconds()*float64(clockTicks())
		res.Machine.OtherBusyPct = math.Max(0, 100*other/float64(busy1.total-busy0.total))
	}
	res.DurationS = round(time.Since(start).Seconds(), 1)
	return res, nil
}

func readRecords(path string) ([]trial.Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []trial.Record
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r trial.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func minMax(v []float64) (lo, hi float64) {
	if len(v) == 0 {
		return 0, 0
	}
	return slices.Min(v), slices.Max(v)
}
