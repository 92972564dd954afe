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
	"testing"
)

// solidJPEG is a w × h JPEG: white, with the left `painted` columns in c.
func solidJPEG(t *testing.T, w, h, painted int, c color.RGBA) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if x < painted {
				img.Set(x, y, c)
			} else {
				img.Set(x, y, color.White)
			}
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 100}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func screenshot(tsUS float64, data []byte) TraceEvent {
	args, _ := json.Marshal(map[string]string{"snapshot": base64.StdEncoding.EncodeToString(data)})
	return TraceEvent{Name: eventScreenshot, Ts: tsUS, Args: args}
}

// frameProgress is WebPageTest's calculate_frame_progress: the share of the change from the first
// histogram to the last that a histogram has made, bin by bin, floored.
func TestFrameProgressWebPageTest(t *testing.T) {
	var first, last, cur [3][256]int64
	// first: nothing (white); last: 100 pixels of (10, 20, 30); cur: 40 of them and 5 of a colour
	// the last frame does not have.
	for c, v := range []int{10, 20, 30} {
		last[c][v] = 100
		cur[c][v] = 40
		cur[c][200] = 5
	}
	if got := frameProgress(&cur, &first, &last); got != 40 {
		t.Errorf("progress %d, want 40 (min(|cur−first|, |last−first|) summed over bins ÷ Σ|last−first|)", got)
	}
	// the first frame itself is 0 %, the last 100 %, identical first and last frames 100 %
	if got := frameProgress(&first, &first, &last); got != 0 {
		t.Errorf("first frame %d%%", got)
	}
	if got := frameProgress(&last, &first, &last); got != 100 {
		t.Errorf("last frame %d%%", got)
	}
	if got := frameProgress(&first, &first, &first); got != 100 {
		t.Errorf("no change at all: %d%%, want 100", got)
	}
	// floored, not rounded: 2 of 3 is 66 %
	var a, b [3][256]int64
	b[0][1], a[0][1] = 3, 2
	if got := frameProgress(&a, &first, &b); got != 66 {
		t.Errorf("2 of 3: %d%%, want 66", got)
	}
}

// White pixels (all channels ≥ 250) are left out of the histograms; others counted per channel.
func TestHistogramLeavesWhiteOut(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 4, 1))
	img.Set(0, 0, color.NRGBA{255, 255, 255, 255})
	img.Set(1, 0, color.NRGBA{250, 250, 250, 255}) // white: every channel ≥ 250
	img.Set(2, 0, color.NRGBA{249, 255, 255, 255}) // not white
	img.Set(3, 0, color.NRGBA{0, 128, 255, 255})
	h := histogram(img)
	var n int64
	for _, v := range h[0] {
		n += v
	}
	if n != 2 || h[0][249] != 1 || h[1][128] != 1 || h[2][255] != 2 {
		t.Errorf("histogram: %d pixels; r[249]=%d g[128]=%d b[255]=%d", n, h[0][249], h[1][128], h[2][255])
	}
}

// Speed Index over frames: white at 0, half painted at 100 ms, whole at 300 ms: SI = 100·1 +
// 200·(1 − ½) = 200 ms; visually complete at 300 ms. A page that paints everything at once at
// 250 ms has SI 250 ms = its first paint.
func TestSpeedIndex(t *testing.T) {
	red := color.RGBA{200, 30, 30, 255}
	half, whole := solidJPEG(t, 64, 32, 32, red), solidJPEG(t, 64, 32, 64, red)
	t0 := 10.0 // s
	rel := func(ts float64) float64 { return ts/1000 - t0*1000 }
	frames, err := decodeFrames([]TraceEvent{screenshot(t0*1e6+100e3, half), screenshot(t0*1e6+200e3, half),
		screenshot(t0*1e6+300e3, whole)}, rel)
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != 3 { // white, half, whole: the repeated half frame is dropped
		t.Fatalf("%d frames, want 3", len(frames))
	}
	si, vc := visualProgress(frames)
	if p := frames[1].Progress; p < 48 || p > 52 {
		t.Errorf("half-painted frame at %d%%", p)
	}
	want := 100 + 200*(1-float64(frames[1].Progress)/100)
	if math.Abs(si-want) > 0.05 || vc != 300 {
		t.Errorf("speed index %.1f (want %.1f), visually complete %.1f (want 300)", si, want, vc)
	}
	frames, err = decodeFrames([]TraceEvent{screenshot(t0*1e6+250e3, whole)}, rel)
	if err != nil {
		t.Fatal(err)
	}
	if si, vc := visualProgress(frames); si != 250 || vc != 250 {
		t.Errorf("all at once at 250 ms: speed index %.1f, visually complete %.1f; want 250, 250", si, vc)
	}
	if len(frames[0].JPEG) == 0 {
		t.Error("the white start frame has no picture")
	} else if img, err := jpeg.Decode(bytes.NewReader(frames[0].JPEG)); err != nil || img.Bounds().Dx() != 64 {
		t.Errorf("white start frame: %v", err)
	}
}

// CLS: the largest session window (shifts < 1 s apart, a window ≤ 5 s), input-driven shifts left out.
func TestCumulativeLayoutShift(t *testing.T) {
	cases := []struct {
		shifts []layoutShift
		want   float64
	}{
		{nil, 0},
		{[]layoutShift{{at: 0, score: 0.1}, {at: 500, score: 0.1}, {at: 2000, score: 0.3}}, 0.3},
		{[]layoutShift{{at: 0, score: 0.1}, {at: 900, score: 0.1}, {at: 1800, score: 0.15}}, 0.35},
		// every shift 0.9 s after the previous: one window would last 5.4 s, so it is cut at 5 s
		{[]layoutShift{{at: 0, score: .1}, {at: 900, score: .1}, {at: 1800, score: .1}, {at: 2700, score: .1},
			{at: 3600, score: .1}, {at: 4500, score: .1}, {at: 5400, score: .1}}, 0.6},
		{[]layoutShift{{at: 0, score: 0.5, recentInput: true}, {at: 100, score: 0.05}}, 0.05},
	}
	for i, c := range cases {
		if got := cumulativeLayoutShift(c.shifts); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("case %d: CLS %v, want %v", i, got, c.want)
		}
	}
}

// LCP: the last candidate of the main frame's navigation, its URL from the performance timeline;
// an invalidation without a later candidate leaves none; other frames' candidates do not count.
func TestLargestContentfulPaint(t *testing.T) {
	cand := func(tsUS float64, index int, node int64, size float64, kind, frame, nav string, outermost bool) TraceEvent {
		args, _ := json.Marshal(map[string]any{"frame": frame, "data": map[string]any{"candidateIndex": index,
			"isOutermostMainFrame": outermost, "isMainFrame": outermost, "navigationId": nav, "nodeId": node,
			"size": size, "type": kind}})
		return TraceEvent{Name: eventLCPCandidate, Ts: tsUS, Args: args}
	}
	shift, _ := json.Marshal(map[string]any{"data": map[string]any{"score": 0.2, "weighted_score_delta": 0.1, "had_recent_input": false}})
	events := []TraceEvent{
		cand(5_000_300e3, 1, 7, 9000, "text", "F", "N", true),
		cand(5_000_900e3, 2, 9, 240000, "image", "F", "N", true),
		cand(5_001_000e3, 3, 11, 500000, "image", "IFRAME", "N2", false), // a subframe's
		cand(5_001_100e3, 4, 12, 900000, "image", "F", "OTHER", true),    // another navigation's
		{Name: eventLayoutShift, Ts: 5_000_400e3, Args: shift},
	}
	v, err := computeVisual(visualInput{events: events, frame: "F", loader: "N", t0: 5000,
		timeline: []lcpEntry{{node: 7, size: 9000}, {node: 9, size: 240000, url: "https://s1.wirelab.test/L/t/big.png"}}})
	if err != nil {
		t.Fatal(err)
	}
	if v.LCPMs == nil || *v.LCPMs != 900 || v.LCPType != "image" || v.LCPSizePx != 240000 || v.LCPURL != "https://s1.wirelab.test/L/t/big.png" {
		t.Errorf("LCP %v %q %v %q, want 900 ms, the image of 240000 px and its URL", fmt.Sprint(deref(v.LCPMs)), v.LCPType, v.LCPSizePx, v.LCPURL)
	}
	if v.CLS == nil || *v.CLS != 0.1 { // the weighted score counts
		t.Errorf("CLS %v, want 0.1", deref(v.CLS))
	}
	inval, _ := json.Marshal(map[string]any{"frame": "F"})
	v, _ = computeVisual(visualInput{events: append(events, TraceEvent{Name: eventLCPInvalidate, Ts: 5_001_200e3, Args: inval}),
		frame: "F", loader: "N", t0: 5000})
	if v.LCPMs != nil {
		t.Errorf("LCP %v after an invalidation without a later candidate, want none", *v.LCPMs)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
