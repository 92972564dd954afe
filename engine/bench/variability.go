package bench

import (
	"fmt"
	"io"
	"math"
	"time"
)

// Variability is study W's validation of Epload: the same page loaded Runs times by Chromium and
// by the replay of its dependency graph under a fixed profile (wang-epload: 20 ms RTT, 10 Mbit/s,
// no loss), and the spread of the page load times between runs: for each load |PLT − median| /
// median, summarised by its median and 80th percentile. The replay loads run first, in a block,
// then the Chromium loads: interleaved, a replay right after a Chromium load was 10–40 ms slower
// in a third of the runs on a 2-core machine (Chromium's teardown competes with it), which is the
// machine's noise, not the replay's. docs/browser.md has the figures.
type VariabilityOptions struct {
	Runs         int     // loads per loader (default 20)
	Page         string  // page (default twitter); its graph is replayed
	Profile      string  // network profile (default wang-epload)
	Protocol     string  // h1s, h2 or h3 (default h2)
	ComputeScale float64 // replay's compute scale (default 1)
	Engine       string  // wirelab-engine binary
	Env          []string
	Progress     io.Writer
}

// Spread summarises one loader's PLTs.
type Spread struct {
	Loader     string    `json:"loader"`
	Loads      int       `json:"loads"`
	Errors     int       `json:"errors"`
	MedianMs   float64   `json:"plt_median_ms"`
	SpreadP50  float64   `json:"spread_p50"` // median of |PLT − median| / median
	SpreadP80  float64   `json:"spread_p80"` // 80th percentile of the same
	SpreadMax  float64   `json:"spread_max"`
	PLTs       []float64 `json:"plt_ms"`
	FirstError string    `json:"first_error,omitempty"`
}

// VariabilityResult is the benchmark's output.
type VariabilityResult struct {
	Page         string  `json:"page"`
	Profile      string  `json:"profile"`
	Protocol     string  `json:"protocol"`
	ComputeScale float64 `json:"compute_scale"`
	Chromium     Spread  `json:"chromium"`
	Replay       Spread  `json:"replay"`
	Machine      Machine `json:"machine"`
	Seconds      float64 `json:"seconds"`
}

// Variability runs the benchmark.
func Variability(o VariabilityOptions) (*VariabilityResult, error) {
	if o.Runs == 0 {
		o.Runs = 20
	}
	if o.Page == "" {
		o.Page = "twitter"
	}
	if o.Profile == "" {
		o.Profile = "wang-epload"
	}
	if o.Protocol == "" {
		o.Protocol = "h2"
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	started := time.Now()
	res := &VariabilityResult{Page: o.Page, Profile: o.Profile, Protocol: o.Protocol, ComputeScale: o.ComputeScale,
		Machine: machine()}
	lab, err := StartLab(LabConfig{Profile: o.Profile, Page: o.Page, Engine: o.Engine, Env: o.Env, Protocols: o.Protocol})
	if err != nil {
		return nil, err
	}
	defer lab.Close()
	var chromium, replay []float64
	var cErr, rErr []string
	scale := fmt.Sprint(o.ComputeScale)
	for i := 0; i < o.Runs; i++ {
		m, _, err := Fetch(lab, o.Protocol, "--mode", "replay", "--page", o.Page, "--compute-scale", scale)
		if v, ok := pltOf(m, err); ok {
			replay = append(replay, v)
		} else {
			rErr = append(rErr, errText(m, err))
		}
		fmt.Fprintf(o.Progress, "replay %d/%d: %s ms\n", i+1, o.Runs, last(replay, len(rErr)))
	}
	for i := 0; i < o.Runs; i++ {
		m, _, err := Browse(lab, o.Protocol)
		if v, ok := pltOf(m, err); ok {
			chromium = append(chromium, v)
		} else {
			cErr = append(cErr, errText(m, err))
		}
		fmt.Fprintf(o.Progress, "chromium %d/%d: %s ms\n", i+1, o.Runs, last(chromium, len(cErr)))
	}
	res.Chromium = spreadOf("chromium", chromium, cErr)
	res.Replay = spreadOf("replay", replay, rErr)
	res.Machine.LoadAfter = loadavg()
	res.Seconds = time.Since(started).Seconds()
	return res, nil
}

func last(v []float64, errs int) string {
	if len(v) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f (%d errors)", v[len(v)-1], errs)
}

func pltOf(m map[string]any, err error) (float64, bool) {
	if err != nil || m == nil || m["error"] != nil {
		return 0, false
	}
	v, ok := m["plt_ms"].(float64)
	return v, ok && v > 0
}

func errText(m map[string]any, err error) string {
	if m != nil && m["error"] != nil {
		return fmt.Sprint(m["error"])
	}
	if err != nil {
		return err.Error()
	}
	return "no plt_ms"
}

func spreadOf(name string, v []float64, errs []string) Spread {
	s := Spread{Loader: name, Loads: len(v) + len(errs), Errors: len(errs), PLTs: v}
	if len(errs) > 0 {
		s.FirstError = errs[0]
	}
	if len(v) == 0 {
		return s
	}
	s.MedianMs = percentile(v, 0.5)
	dev := make([]float64, len(v))
	for i, x := range v {
		dev[i] = math.Abs(x-s.MedianMs) / s.MedianMs
	}
	s.SpreadP50, s.SpreadP80, s.SpreadMax = percentile(dev, 0.5), percentile(dev, 0.8), percentile(dev, 1)
	return s
}
