package browser

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"math"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// oneFrameMS is one frame at 60 Hz: the resolution of screenshots and paint events.
const oneFrameMS = 1000.0 / 60

// visualPages serves the pages of the visual checks on loopback over HTTP/1.1:
//   - /lcp: a heading, a small image at once, then a large image that arrives last (its response
//     waits 600 ms): the large image is the largest contentful paint;
//   - /shift: the same page, and 200 ms after it parsed a block is inserted above everything (a
//     layout shift);
//   - /once: one line of text on the white page and nothing else, painted in one frame.
func visualPages(t *testing.T) (base string, resolve map[string]netip.Addr) {
	t.Helper()
	noise := func(w, h int, seed byte) []byte {
		img := image.NewNRGBA(image.Rect(0, 0, w, h))
		x := uint32(seed) + 1
		for i := 0; i < len(img.Pix); i += 4 {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = byte(x), byte(x>>8), byte(x>>16), 255
		}
		var b bytes.Buffer
		png.Encode(&b, img)
		return b.Bytes()
	}
	small, large := noise(120, 60, 1), noise(600, 400, 2)
	page := func(shift bool) string {
		s := `<!DOCTYPE html><html><head><meta charset="utf-8"><title>visual</title></head><body style="margin:0;font:16px sans-serif">
<div id="top"></div><h1 style="background:#eee">wirelab visual check</h1>
<img src="/small.png" width="120" height="60" alt=""><br><img src="/large.png" width="600" height="400" alt="">`
		if shift {
			s += `<script>setTimeout(() => { document.getElementById("top").innerHTML = '<div style="height:200px;background:#c33"></div>'; }, 200)</script>`
		}
		return s + "</body></html>"
	}
	mux := http.NewServeMux()
	html := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, body)
		}
	}
	mux.HandleFunc("/lcp", html(page(false)))
	mux.HandleFunc("/shift", html(page(true)))
	mux.HandleFunc("/once", html(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>once</title></head>
<body style="margin:0"><p style="font:bold 64px sans-serif;color:#123">painted at once</p></body></html>`))
	mux.HandleFunc("/small.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(small)
	})
	mux.HandleFunc("/large.png", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(600 * time.Millisecond)
		w.Header().Set("Content-Type", "image/png")
		w.Write(large)
	})
	mux.HandleFunc("/favicon.ico", http.NotFound)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	host := "s1.wirelab.test"
	return fmt.Sprintf("http://%s:%d", host, ln.Addr().(*net.TCPAddr).Port), map[string]netip.Addr{host: netip.MustParseAddr("127.0.0.1")}
}

// TestChromiumVisualMetrics: the checks of docs/vitals.md on purpose-made pages — the largest
// image arriving last is the LCP, at its paint within one frame; a page that shifts has CLS > 0,
// one that does not has 0; Speed Index of a page painted at once equals its first paint.
func TestChromiumVisualMetrics(t *testing.T) {
	requireChromium(t)
	base, resolve := visualPages(t)
	cfg := Config{Protocol: H1, Resolve: resolve, Timeout: 60 * time.Second, ProfileParent: t.TempDir(), Screenshots: true}
	load := func(path string) *Result {
		t.Helper()
		res, err := Load(context.Background(), cfg, base+path)
		if err != nil {
			t.Fatal(err)
		}
		if res.Err != nil {
			t.Fatalf("%s: %v", path, res.Err)
		}
		v := res.Visual
		t.Logf("%s: plt %v, fcp %.1f ms, lcp %v (%s %s), cls %v, speed index %v, visually complete %v, %d frames",
			path, res.PLT, res.FirstContentfulPaintMS, deref(v.LCPMs), v.LCPType, v.LCPURL, deref(v.CLS),
			deref(v.SpeedIndexMs), deref(v.VisuallyCompleteMs), len(v.Frames))
		return res
	}

	// Timing-bound: each check that compares two clocks of Chromium's (a paint event with a
	// screenshot) runs its page a second time when the first load misses, and fails with both.
	twice := func(name string, check func() string) {
		t.Helper()
		first := check()
		if first == "" {
			return
		}
		if second := check(); second != "" {
			t.Errorf("%s, twice:\n  %s\n  %s", name, first, second)
		}
	}
	twice("LCP of the large image arriving last", func() string {
		lcp := load("/lcp").Visual
		if lcp.LCPMs == nil || lcp.LCPType != "image" || !strings.HasSuffix(lcp.LCPURL, "/large.png") || lcp.LCPSizePx != 600*400 {
			return fmt.Sprintf("LCP %v %q %q %v, want the large image (240000 px)", deref(lcp.LCPMs), lcp.LCPType, lcp.LCPURL, lcp.LCPSizePx)
		}
		if lcp.CLS == nil || *lcp.CLS != 0 {
			t.Errorf("CLS %v of a page that does not shift, want 0", deref(lcp.CLS))
		}
		// The large image is the last change of the picture: the first frame at 100 % shows it.
		shown := *lcp.VisuallyCompleteMs
		if d := math.Abs(*lcp.LCPMs - shown); d > oneFrameMS {
			return fmt.Sprintf("LCP %.1f ms, the frame showing the image %.1f ms: %.1f ms apart, more than one frame", *lcp.LCPMs, shown, d)
		}
		return ""
	})

	if cls := load("/shift").Visual.CLS; cls == nil || *cls <= 0 {
		t.Errorf("CLS %v of a page that shifts, want > 0", deref(cls))
	}

	twice("Speed Index of a page painted at once", func() string {
		once := load("/once")
		v := once.Visual
		// the first visual change (frames before it are blank: 0 %) is the whole page
		change := slices.IndexFunc(v.Frames, func(f Frame) bool { return f.Progress > 0 })
		if v.SpeedIndexMs == nil || change < 0 || v.Frames[change].Progress != 100 {
			return fmt.Sprintf("speed index %v; progress %v: want a first visual change to 100 %%", deref(v.SpeedIndexMs), v.Progress())
		}
		at := v.Frames[change].TimeMS
		if *v.SpeedIndexMs != at || *v.VisuallyCompleteMs != at {
			return fmt.Sprintf("speed index %.1f, visually complete %.1f; the page painted at once at %.1f", *v.SpeedIndexMs, *v.VisuallyCompleteMs, at)
		}
		paint, which := once.FirstPaintMS, "first paint"
		if paint < 0 {
			paint, which = once.FirstContentfulPaintMS, "first contentful paint"
		}
		if d := math.Abs(*v.SpeedIndexMs - paint); d > oneFrameMS {
			return fmt.Sprintf("speed index %.1f ms, %s %.1f ms: more than one frame apart", *v.SpeedIndexMs, which, paint)
		}
		return ""
	})
	assertClean(t, cfg.ProfileParent)
}
