package browser

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"sort"
	"strconv"
)

// Visual metrics of a load (docs/vitals.md, "Visual metrics from Chromium"): Largest Contentful
// Paint and Cumulative Layout Shift from the browser's own timeline, and the visual progress, Speed
// Index and visually-complete time from the screenshots Chromium puts in a trace, by WebPageTest's
// histogram method.

// Trace categories of a load's visual capture: "loading" carries the LCP candidates and the layout
// shifts, the screenshot category one JPEG per frame that changed.
const (
	categoryLoading     = "loading"
	categoryScreenshots = "disabled-by-default-devtools.screenshot"
)

// Trace event names the visual metrics read.
const (
	eventScreenshot    = "Screenshot"
	eventLCPCandidate  = "largestContentfulPaint::Candidate"
	eventLCPInvalidate = "largestContentfulPaint::Invalidate"
	eventLayoutShift   = "LayoutShift"
)

// visualEvent reports whether a trace event feeds the visual metrics (the others are dropped as
// they arrive unless the load records its whole trace).
func visualEvent(name string) bool {
	switch name {
	case eventScreenshot, eventLCPCandidate, eventLCPInvalidate, eventLayoutShift:
		return true
	}
	return false
}

// Frame is one picture of the viewport during a load: a screenshot from the trace (JPEG, scaled
// by Chromium to fit 500 × 500), or the white frame the list starts with.
type Frame struct {
	TimeMS   float64 // ms from the load's start (the zero of PLT), rounded to 0.1 ms
	JPEG     []byte
	Progress int // visual progress in percent (WebPageTest's histogram method)
}

// Visual is what a load's visual capture measured. Pointers are nil when not measured.
type Visual struct {
	LCPMs     *float64 // Largest Contentful Paint
	LCPURL    string   // the LCP element's URL (images; "" for text)
	LCPSizePx float64  // its painted area in CSS pixels
	LCPType   string   // image, text, … (Chromium's candidate type)
	CLS       *float64 // Cumulative Layout Shift (largest session window)
	// From the frames (Config.Screenshots):
	SpeedIndexMs       *float64
	VisuallyCompleteMs *float64
	Frames             []Frame // the white start frame, then one per change
}

// Progress is the visual progress series: [t_ms, percent] per frame.
func (v *Visual) Progress() [][2]float64 {
	if len(v.Frames) == 0 {
		return nil
	}
	out := make([][2]float64, len(v.Frames))
	for i, f := range v.Frames {
		out[i] = [2]float64{f.TimeMS, float64(f.Progress)}
	}
	return out
}

// lcpEntry is what the PerformanceTimeline domain reported of an LCP candidate: its URL and size,
// joined to the trace's candidate by DOM node.
type lcpEntry struct {
	node int64
	url  string
	size float64
}

// visualInput is a load's raw material for its visual metrics.
type visualInput struct {
	events      []TraceEvent // visual trace events (visualEvent)
	timeline    []lcpEntry   // PerformanceTimeline's LCP entries of the main frame
	frame       string       // the main frame's id
	loader      string       // the navigation's loader id (the trace's navigationId)
	t0          float64      // CDP monotonic seconds of the load's zero
	screenshots bool         // the frames were captured
}

// computeVisual derives the visual metrics. Errors are about undecodable screenshots.
func computeVisual(in visualInput) (Visual, error) {
	var v Visual
	rel := func(tsUS float64) float64 { return tsUS/1000 - in.t0*1000 }
	sorted := append([]TraceEvent(nil), in.events...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Ts < sorted[j].Ts })

	var shifts []layoutShift
	var shots []TraceEvent
	var lcp *lcpCandidate
	for _, e := range sorted {
		switch e.Name {
		case eventLCPCandidate:
			c, ok := parseLCPCandidate(e)
			if !ok || !c.outermost || (in.frame != "" && c.frame != "" && c.frame != in.frame) ||
				(in.loader != "" && c.navigation != "" && c.navigation != in.loader) {
				continue
			}
			if lcp == nil || c.index >= lcp.index {
				c.at = rel(e.Ts)
				lcp = &c
			}
		case eventLCPInvalidate:
			var a struct {
				Frame string `json:"frame"`
			}
			_ = json.Unmarshal(e.Args, &a)
			if in.frame == "" || a.Frame == "" || a.Frame == in.frame {
				lcp = nil
			}
		case eventLayoutShift:
			if s, ok := parseLayoutShift(e); ok {
				s.at = rel(e.Ts)
				shifts = append(shifts, s)
			}
		case eventScreenshot:
			if rel(e.Ts) >= 0 {
				shots = append(shots, e)
			}
		}
	}
	if lcp != nil {
		at := round1(lcp.at)
		v.LCPMs, v.LCPSizePx, v.LCPType = &at, lcp.size, lcp.kind
		for _, t := range in.timeline {
			if t.node == lcp.node && (lcp.size == 0 || t.size == lcp.size) {
				v.LCPURL = t.url
			}
		}
	}
	cls := cumulativeLayoutShift(shifts)
	v.CLS = &cls
	if !in.screenshots {
		return v, nil
	}
	frames, err := decodeFrames(shots, rel)
	if err != nil {
		return v, err
	}
	si, vc := visualProgress(frames)
	v.SpeedIndexMs, v.VisuallyCompleteMs = &si, &vc
	for i := range frames {
		v.Frames = append(v.Frames, frames[i].Frame)
	}
	return v, nil
}

type lcpCandidate struct {
	index      int
	node       int64
	size       float64
	kind       string
	frame      string
	navigation string
	outermost  bool
	at         float64
}

func parseLCPCandidate(e TraceEvent) (lcpCandidate, bool) {
	var a struct {
		Frame string `json:"frame"`
		Data  struct {
			CandidateIndex       int     `json:"candidateIndex"`
			IsMainFrame          *bool   `json:"isMainFrame"`
			IsOutermostMainFrame *bool   `json:"isOutermostMainFrame"`
			NavigationID         string  `json:"navigationId"`
			NodeID               int64   `json:"nodeId"`
			Size                 float64 `json:"size"`
			Type                 string  `json:"type"`
		} `json:"data"`
	}
	if err := json.Unmarshal(e.Args, &a); err != nil {
		return lcpCandidate{}, false
	}
	outermost := a.Data.IsOutermostMainFrame
	if outermost == nil {
		outermost = a.Data.IsMainFrame
	}
	return lcpCandidate{index: a.Data.CandidateIndex, node: a.Data.NodeID, size: a.Data.Size, kind: a.Data.Type,
		frame: a.Frame, navigation: a.Data.NavigationID, outermost: outermost == nil || *outermost}, true
}

// layoutShift is one LayoutShift trace event: its score weighted by the frame's share of the
// viewport (weighted_score_delta; the main frame's weight is 1), and whether input preceded it.
type layoutShift struct {
	at          float64
	score       float64
	recentInput bool
}

func parseLayoutShift(e TraceEvent) (layoutShift, bool) {
	var a struct {
		Data struct {
			Score         *float64 `json:"score"`
			Weighted      *float64 `json:"weighted_score_delta"`
			HadRecentInpt bool     `json:"had_recent_input"`
		} `json:"data"`
	}
	if err := json.Unmarshal(e.Args, &a); err != nil {
		return layoutShift{}, false
	}
	s := layoutShift{recentInput: a.Data.HadRecentInpt}
	switch {
	case a.Data.Weighted != nil:
		s.score = *a.Data.Weighted
	case a.Data.Score != nil:
		s.score = *a.Data.Score
	default:
		return layoutShift{}, false
	}
	return s, true
}

// Session windows of Cumulative Layout Shift (web.dev/articles/cls, "What is CLS?"): a window
// gathers shifts less than a second apart and lasts at most five seconds; CLS is the largest
// window's sum. Shifts right after input do not count.
const (
	clsGapMS    = 1000
	clsWindowMS = 5000
)

// cumulativeLayoutShift is CLS over shifts in time order.
func cumulativeLayoutShift(shifts []layoutShift) float64 {
	var best, sum, first, last float64
	open := false
	for _, s := range shifts {
		if s.recentInput {
			continue
		}
		if !open || s.at-last >= clsGapMS || s.at-first >= clsWindowMS {
			sum, first, open = 0, s.at, true
		}
		sum += s.score
		last = s.at
		best = math.Max(best, sum)
	}
	return math.Round(best*1e6) / 1e6
}

// histFrame is a frame with its histograms.
type histFrame struct {
	Frame
	hist *[3][256]int64
}

// decodeFrames turns the screenshots (from the load's start on) into frames: a white frame at 0,
// then each screenshot that differs from the one before it.
func decodeFrames(shots []TraceEvent, rel func(float64) float64) ([]histFrame, error) {
	frames := []histFrame{{Frame: Frame{TimeMS: 0}, hist: &[3][256]int64{}}}
	var last string
	var bounds image.Rectangle
	for _, e := range shots {
		var a struct {
			Snapshot string `json:"snapshot"`
		}
		if err := json.Unmarshal(e.Args, &a); err != nil || a.Snapshot == "" || a.Snapshot == last {
			continue
		}
		last = a.Snapshot
		data, err := base64.StdEncoding.DecodeString(a.Snapshot)
		if err != nil {
			return nil, fmt.Errorf("screenshot at %.1f ms: %w", rel(e.Ts), err)
		}
		img, err := jpeg.Decode(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("screenshot at %.1f ms: %w", rel(e.Ts), err)
		}
		if bounds.Empty() {
			bounds = img.Bounds()
		}
		frames = append(frames, histFrame{Frame: Frame{TimeMS: round1(rel(e.Ts)), JPEG: data}, hist: histogram(img)})
	}
	if !bounds.Empty() {
		white, err := whiteJPEG(bounds.Dx(), bounds.Dy())
		if err != nil {
			return nil, err
		}
		frames[0].JPEG = white
	}
	return frames, nil
}

// whiteLevel: a pixel whose three channels are all at least this is white and left out of the
// histograms (WebPageTest's visualmetrics.py: "Don't include White pixels (with a tiny bit of slop
// for compression artifacts)").
const whiteLevel = 250

// histogram counts the non-white pixels of img per channel and value.
func histogram(img image.Image) *[3][256]int64 {
	var h [3][256]int64
	b := img.Bounds()
	add := func(r, g, bl uint8) {
		if r >= whiteLevel && g >= whiteLevel && bl >= whiteLevel {
			return
		}
		h[0][r]++
		h[1][g]++
		h[2][bl]++
	}
	switch m := img.(type) {
	case *image.YCbCr:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				yi, ci := m.YOffset(x, y), m.COffset(x, y)
				add(color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci]))
			}
		}
	case *image.Gray:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				v := m.Pix[m.PixOffset(x, y)]
				add(v, v, v)
			}
		}
	default:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				c := color.NRGBAModel.Convert(m.At(x, y)).(color.NRGBA)
				add(c.R, c.G, c.B)
			}
		}
	}
	return &h
}

// frameProgress is WebPageTest's calculate_frame_progress: how much of the change from the first
// frame to the last one a frame has made, per channel and histogram bin, floored to a percent.
func frameProgress(cur, first, last *[3][256]int64) int {
	var total, matched int64
	for c := 0; c < 3; c++ {
		for i := 0; i < 256; i++ {
			curDiff := abs64(cur[c][i] - first[c][i])
			target := abs64(last[c][i] - first[c][i])
			matched += min(curDiff, target)
			total += target
		}
	}
	if total == 0 {
		return 100
	}
	return int(math.Floor(float64(matched) / float64(total) * 100))
}

// visualProgress sets each frame's progress and returns the Speed Index (WebPageTest's
// calculate_speed_index: Σ (1 − progress) × time on screen) and the visually complete time (the
// first frame at 100 %).
func visualProgress(frames []histFrame) (speedIndex, visuallyComplete float64) {
	first, last := frames[0].hist, frames[len(frames)-1].hist
	for i := range frames {
		frames[i].Progress = frameProgress(frames[i].hist, first, last)
	}
	complete := -1.0
	for i, f := range frames {
		if i > 0 {
			prev := frames[i-1]
			speedIndex += (f.TimeMS - prev.TimeMS) * (1 - float64(prev.Progress)/100)
		}
		if complete < 0 && f.Progress == 100 {
			complete = f.TimeMS
		}
	}
	if complete < 0 {
		complete = frames[len(frames)-1].TimeMS
	}
	return round1(speedIndex), complete
}

// whiteJPEG is a white frame of the screenshots' size.
func whiteJPEG(w, h int) ([]byte, error) {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 80}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// FrameFile is the file name of frame i of a load in its frames directory: the files and the
// record's visual_progress pairs are in the same order.
func FrameFile(i int) string { return fmt.Sprintf("%03d.jpg", i) }

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func round1(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 1, 64), 64)
	return v
}
