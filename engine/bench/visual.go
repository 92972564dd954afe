package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/lab"
)

// VisualOptions is `bench visual`: the cost of Chromium's visual capture (the screenshots in the
// trace, from which Speed Index, visually complete and the visual progress come; docs/vitals.md,
// "Overhead") and, with Speedline, wirelab's Speed Index against Lighthouse's implementation on
// the same traces ("How the two compare").
//
// For each page × network profile one lab (the built-in server, the emulated path) serves the
// page; for each protocol Runs pairs of Chromium loads run, one without screenshots and one with,
// their order alternating from pair to pair so that neither side always follows the other. Each
// load is a whole `browse` process (Chromium's start and exit included), as a trial's load is.
// With TraceDir, one more load per page × profile × protocol writes its visual trace there
// (browse --visual-trace), and with Speedline its Speed Index is recomputed by speedline-core.
type VisualOptions struct {
	Pages     []string // default twitter, youtube and PaintPages
	WorkDir   string   // where paint pages are built (default a temporary directory, removed)
	Profiles  []string // default cable, lte
	Protocols []string // default h1s, h2, h3
	Runs      int      // pairs per page × profile × protocol (default 5)
	TraceDir  string   // where the traced loads go ("" none)
	Speedline string   // the directory of scripts/speedline (node_modules installed); needs TraceDir
	Node      string   // the node binary (default node on PATH)
	Engine    string
	Env       []string
	Progress  io.Writer
}

// VisualCase is one page × profile × protocol's pairs.
type VisualCase struct {
	Page     string `json:"page"`
	Profile  string `json:"profile"`
	Protocol string `json:"protocol"`
	Pairs    int    `json:"pairs"` // pairs where both loads completed
	Errors   int    `json:"errors"`
	// Medians of the loads' wall time (the browse process) and PLT, without and with screenshots.
	WallOffMs float64 `json:"wall_off_median_ms"`
	WallOnMs  float64 `json:"wall_on_median_ms"`
	PLTOffMs  float64 `json:"plt_off_median_ms"`
	PLTOnMs   float64 `json:"plt_on_median_ms"`
	// WallRatio and PLTRatio are the medians of the pairs' on ÷ off.
	WallRatio  float64 `json:"wall_ratio"`
	PLTRatio   float64 `json:"plt_ratio"`
	FirstError string  `json:"first_error,omitempty"`
	// WallOnOff are the pairs' wall times, [off, on] in ms.
	WallOnOff [][2]float64 `json:"wall_ms"`
	pltPairs  [][2]float64
}

// SpeedIndexCheck is one traced load: wirelab's figures and speedline's on the same trace.
type SpeedIndexCheck struct {
	Page     string `json:"page"`
	Profile  string `json:"profile"`
	Protocol string `json:"protocol"`
	Trace    string `json:"trace"`
	// wirelab's (WebPageTest's histogram method, engine/browser)
	SpeedIndexMs       float64 `json:"speed_index_ms"`
	VisuallyCompleteMs float64 `json:"visually_complete_ms"`
	FCPMs              float64 `json:"first_contentful_paint_ms"`
	// speedline-core with Lighthouse's options (fastMode) and exact
	LighthouseSIMs float64 `json:"lighthouse_speed_index_ms"`
	LighthouseVCMs float64 `json:"lighthouse_visually_complete_ms"`
	ExactSIMs      float64 `json:"speedline_exact_speed_index_ms"`
	Error          string  `json:"error,omitempty"`
}

// VisualResult is the benchmark's output.
type VisualResult struct {
	Cases []VisualCase `json:"cases"`
	// WallRatio and PLTRatio are the medians of every pair's on ÷ off over all cases; Overhead is
	// WallRatio − 1, the figure the target (≤ 15 %) is about.
	WallRatio   float64           `json:"wall_ratio"`
	PLTRatio    float64           `json:"plt_ratio"`
	OverheadPct float64           `json:"overhead_pct"`
	TargetPct   float64           `json:"target_pct"`
	Checks      []SpeedIndexCheck `json:"speed_index_checks,omitempty"`
	// Summary of the checks: median and largest |error| against Lighthouse's Speed Index of
	// wirelab's Speed Index, and of the baseline (FCP taken as the Speed Index).
	Compared            int     `json:"compared"` // checks with both figures
	SIErrMedianMs       float64 `json:"si_abs_error_median_ms"`
	SIErrMaxMs          float64 `json:"si_abs_error_max_ms"`
	SIErrMedianPct      float64 `json:"si_abs_error_median_pct"`
	BaselineErrMedianMs float64 `json:"fcp_baseline_abs_error_median_ms"`
	BaselineErrMaxMs    float64 `json:"fcp_baseline_abs_error_max_ms"`
	BaselineErrMedPct   float64 `json:"fcp_baseline_abs_error_median_pct"`
	Machine             Machine `json:"machine"`
	Seconds             float64 `json:"seconds"`
}

// VisualTargetPct is the target for the visual capture's cost (issue 31, Performance).
const VisualTargetPct = 15

// Visual runs the benchmark.
func Visual(o VisualOptions) (*VisualResult, error) {
	if len(o.Pages) == 0 {
		o.Pages = append([]string{"twitter", "youtube"}, PaintPages...)
	}
	if len(o.Profiles) == 0 {
		o.Profiles = []string{"cable", "lte"}
	}
	if len(o.Protocols) == 0 {
		o.Protocols = []string{"h1s", "h2", "h3"}
	}
	if o.Runs == 0 {
		o.Runs = 5
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Speedline != "" && o.TraceDir == "" {
		return nil, errors.New("the Speed Index comparison needs a trace directory")
	}
	if o.TraceDir != "" {
		if err := os.MkdirAll(o.TraceDir, 0o755); err != nil {
			return nil, err
		}
	}
	started := time.Now()
	res := &VisualResult{Machine: machine(), TargetPct: VisualTargetPct}
	pageFiles := map[string]string{}
	for _, pg := range o.Pages {
		if !IsPaintPage(pg) {
			continue
		}
		if o.WorkDir == "" {
			d, err := os.MkdirTemp("", "wirelab-bench-visual-")
			if err != nil {
				return nil, err
			}
			defer os.RemoveAll(d)
			o.WorkDir = d
		}
		f, err := BuildPaintPage(o.Engine, o.WorkDir, pg, 1)
		if err != nil {
			return nil, err
		}
		pageFiles[pg] = f
	}
	var walls, plts []float64
	for _, pg := range o.Pages {
		for _, prof := range o.Profiles {
			served := pg
			if f, ok := pageFiles[pg]; ok {
				served = f
			}
			lab, err := StartLab(LabConfig{Profile: prof, Page: served, Engine: o.Engine, Env: o.Env, Protocols: strings.Join(o.Protocols, ",")})
			if err != nil {
				return nil, fmt.Errorf("%s over %s: %w", pg, prof, err)
			}
			for _, proto := range o.Protocols {
				c := VisualCase{Page: pg, Profile: prof, Protocol: proto}
				for i := 0; i < o.Runs; i++ {
					var wall, plt [2]float64 // off, on
					ok := true
					for k := 0; k < 2; k++ {
						on := (i+k)%2 == 1 // pair i: off then on when i is even, on then off when odd
						var extra []string
						if on {
							extra = []string{"--screenshots"}
						}
						t := time.Now()
						m, _, err := Browse(lab, proto, extra...)
						ms := float64(time.Since(t).Microseconds()) / 1000
						v, good := pltOf(m, err)
						if !good {
							ok = false
							c.Errors++
							if c.FirstError == "" {
								c.FirstError = errText(m, err)
							}
							continue
						}
						idx := 0
						if on {
							idx = 1
						}
						wall[idx], plt[idx] = ms, v
					}
					if ok {
						c.WallOnOff = append(c.WallOnOff, wall)
						c.pltPairs = append(c.pltPairs, plt)
						walls = append(walls, wall[1]/wall[0])
						plts = append(plts, plt[1]/plt[0])
					}
					fmt.Fprintf(o.Progress, "%s %s %s pair %d/%d: wall %.0f → %.0f ms, PLT %.1f → %.1f ms\n",
						pg, prof, proto, i+1, o.Runs, wall[0], wall[1], plt[0], plt[1])
				}
				summarizeCase(&c)
				res.Cases = append(res.Cases, c)
				if o.TraceDir != "" {
					res.Checks = append(res.Checks, tracedLoad(lab, o.TraceDir, strings.ReplaceAll(pg, ":", "-"), prof, proto))
				}
			}
			lab.Close()
		}
	}
	if len(walls) > 0 {
		res.WallRatio, res.PLTRatio = median(walls), median(plts)
		res.OverheadPct = 100 * (res.WallRatio - 1)
	}
	if o.Speedline != "" {
		if err := speedlineChecks(o, res.Checks); err != nil {
			return nil, err
		}
		summarizeChecks(res)
	}
	res.Machine.LoadAfter = loadavg()
	res.Seconds = time.Since(started).Seconds()
	return res, nil
}

func summarizeCase(c *VisualCase) {
	c.Pairs = len(c.WallOnOff)
	if c.Pairs == 0 {
		return
	}
	var woff, won, poff, pon, wr, pr []float64
	for i, w := range c.WallOnOff {
		p := c.pltPairs[i]
		woff, won, poff, pon = append(woff, w[0]), append(won, w[1]), append(poff, p[0]), append(pon, p[1])
		wr, pr = append(wr, w[1]/w[0]), append(pr, p[1]/p[0])
	}
	c.WallOffMs, c.WallOnMs, c.PLTOffMs, c.PLTOnMs = median(woff), median(won), median(poff), median(pon)
	c.WallRatio, c.PLTRatio = median(wr), median(pr)
}

// tracedLoad loads the page once more with its visual trace written to dir and keeps wirelab's
// figures of that load.
func tracedLoad(l *lab.Lab, dir, pg, prof, proto string) SpeedIndexCheck {
	c := SpeedIndexCheck{Page: pg, Profile: prof, Protocol: proto}
	c.Trace = filepath.Join(dir, fmt.Sprintf("%s-%s-%s.json", pg, prof, proto))
	abs, err := filepath.Abs(c.Trace)
	if err == nil {
		c.Trace = abs
	}
	m, _, err := Browse(l, proto, "--visual-trace", c.Trace)
	if _, good := pltOf(m, err); !good {
		c.Error = errText(m, err)
		return c
	}
	num := func(v any) float64 {
		f, ok := v.(float64)
		if !ok {
			return math.NaN()
		}
		return f
	}
	c.SpeedIndexMs, c.VisuallyCompleteMs = num(m["speed_index_ms"]), num(m["visually_complete_ms"])
	if cl, ok := m["client"].(map[string]any); ok {
		c.FCPMs = num(cl["first_contentful_paint_ms"])
	}
	return c
}

// speedlineChecks runs scripts/speedline on the traces and fills in its figures.
func speedlineChecks(o VisualOptions, checks []SpeedIndexCheck) error {
	node := o.Node
	if node == "" {
		node = "node"
	}
	var traces []string
	for _, c := range checks {
		if c.Error == "" {
			traces = append(traces, c.Trace)
		}
	}
	if len(traces) == 0 {
		return nil
	}
	dir, err := filepath.Abs(o.Speedline)
	if err != nil {
		return err
	}
	cmd := exec.Command(node, append([]string{filepath.Join(dir, "speedline.js")}, traces...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return fmt.Errorf("speedline: %w", err)
	}
	type fig struct {
		SI float64 `json:"speed_index_ms"`
		VC float64 `json:"visually_complete_ms"`
	}
	type result struct {
		Trace      string `json:"trace"`
		Lighthouse *fig   `json:"lighthouse"`
		Exact      *fig   `json:"exact"`
		Error      string `json:"error"`
	}
	got := map[string]result{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var line result
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return fmt.Errorf("speedline: %q is not a result line (%s)", sc.Text(), strings.TrimSpace(stderr.String()))
		}
		got[line.Trace] = line
	}
	for i := range checks {
		c := &checks[i]
		if c.Error != "" {
			continue
		}
		g, ok := got[c.Trace]
		switch {
		case !ok:
			c.Error = "speedline gave no result: " + strings.TrimSpace(stderr.String())
		case g.Error != "":
			c.Error = "speedline: " + g.Error
		case g.Lighthouse == nil || g.Exact == nil:
			c.Error = "speedline: incomplete result"
		default:
			c.LighthouseSIMs, c.LighthouseVCMs, c.ExactSIMs = g.Lighthouse.SI, g.Lighthouse.VC, g.Exact.SI
		}
	}
	return nil
}

func summarizeChecks(r *VisualResult) {
	var errMs, errPct, baseMs, basePct []float64
	for _, c := range r.Checks {
		if c.Error != "" || c.LighthouseSIMs <= 0 || math.IsNaN(c.SpeedIndexMs) {
			continue
		}
		e := math.Abs(c.SpeedIndexMs - c.LighthouseSIMs)
		errMs, errPct = append(errMs, e), append(errPct, 100*e/c.LighthouseSIMs)
		if !math.IsNaN(c.FCPMs) {
			b := math.Abs(c.FCPMs - c.LighthouseSIMs)
			baseMs, basePct = append(baseMs, b), append(basePct, 100*b/c.LighthouseSIMs)
		}
	}
	r.Compared = len(errMs)
	if len(errMs) > 0 {
		r.SIErrMedianMs, r.SIErrMaxMs, r.SIErrMedianPct = median(errMs), slices.Max(errMs), median(errPct)
	}
	if len(baseMs) > 0 {
		r.BaselineErrMedianMs, r.BaselineErrMaxMs, r.BaselineErrMedPct = median(baseMs), slices.Max(baseMs), median(basePct)
	}
}
