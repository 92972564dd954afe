package bench

import (
	"fmt"
	"html"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// PaintPages are the pages `bench visual` builds that paint: the corpus pages' images are not
// decodable pictures and their root document is a little text, so their filmstrip is nearly white
// (a handful of non-white pixels), and a Speed Index comparison on them compares noise. Each is a
// saved site (an HTML document with a heading, text, a stylesheet and JPEG pictures of its
// layout's sizes, generated from a seed), served as a mirrored page (`pages mirror`).
var PaintPages = []string{"paint:hero", "paint:grid", "paint:article"}

// paintLayouts: the pictures' sizes in CSS pixels, per layout.
var paintLayouts = map[string][][2]int{
	"hero":    {{1200, 500}, {380, 240}, {380, 240}, {380, 240}},
	"grid":    {{300, 200}, {300, 200}, {300, 200}, {300, 200}, {300, 200}, {300, 200}, {300, 200}, {300, 200}, {300, 200}, {300, 200}, {300, 200}, {300, 200}},
	"article": {{640, 360}, {640, 420}},
}

// IsPaintPage reports whether name is one of PaintPages.
func IsPaintPage(name string) bool { return slices.Contains(PaintPages, name) }

// BuildPaintPage writes the paint page name's site under dir and its page file (pages mirror,
// run with engine) and returns the page file's path.
func BuildPaintPage(engine, dir, name string, seed uint64) (string, error) {
	layout := strings.TrimPrefix(name, "paint:")
	sizes, ok := paintLayouts[layout]
	if !ok {
		return "", fmt.Errorf("%q is not a paint page; want one of %s", name, strings.Join(PaintPages, ", "))
	}
	site := filepath.Join(dir, "paint-"+layout)
	if err := os.MkdirAll(site, 0o755); err != nil {
		return "", err
	}
	rng := rand.New(rand.NewPCG(seed, uint64(len(layout))))
	var body strings.Builder
	fmt.Fprintf(&body, "<h1>%s</h1>\n<p class=lead>%s</p>\n<div class=%s>\n", html.EscapeString("wirelab "+layout), words(rng, 40), layout)
	for i, s := range sizes {
		file := fmt.Sprintf("img%02d.jpg", i)
		if err := writePicture(filepath.Join(site, file), s[0], s[1], rng); err != nil {
			return "", err
		}
		fmt.Fprintf(&body, "<figure><img src=%q width=%d height=%d alt=\"\"><figcaption>%s</figcaption></figure>\n", file, s[0], s[1], words(rng, 6))
	}
	body.WriteString("</div>\n")
	for range 4 {
		fmt.Fprintf(&body, "<p>%s</p>\n", words(rng, 60))
	}
	css := `body{font:16px/1.5 sans-serif;margin:0 24px;color:#222;background:#fff}
h1{font-size:40px;background:#1d4e89;color:#fff;padding:16px;margin:0 -24px 16px}
.lead{font-size:20px;color:#444}
figure{display:inline-block;margin:8px}
img{display:block;max-width:100%;height:auto}
.grid figure{margin:4px}
`
	page := "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>" + layout + "</title>" +
		"<link rel=stylesheet href=\"style.css\"></head><body>\n" + body.String() + "</body></html>\n"
	if err := os.WriteFile(filepath.Join(site, "style.css"), []byte(css), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(site, "index.html"), []byte(page), 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(dir, "paint-"+layout+".json")
	cmd := exec.Command(engine, "pages", "mirror", site, "--out", out, "--name", "paint-"+layout)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("pages mirror %s: %v: %s", site, err, strings.TrimSpace(string(b)))
	}
	return out, nil
}

// writePicture writes a w × h JPEG: a few blobs of colour on a gradient, with fine noise so that
// it weighs what a photograph of its size does (~0.3–0.5 byte per pixel at quality 85).
func writePicture(path string, w, h int, rng *rand.Rand) error {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	base := [3]float64{rng.Float64() * 255, rng.Float64() * 255, rng.Float64() * 255}
	type blob struct {
		x, y, r float64
		c       [3]float64
	}
	blobs := make([]blob, 3+rng.IntN(4))
	for i := range blobs {
		blobs[i] = blob{rng.Float64() * float64(w), rng.Float64() * float64(h), (0.1 + 0.3*rng.Float64()) * float64(max(w, h)),
			[3]float64{rng.Float64() * 255, rng.Float64() * 255, rng.Float64() * 255}}
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := base
			t := float64(y) / float64(h)
			for k := range c {
				c[k] = c[k]*(1-t) + (255-c[k])*t*0.6
			}
			for _, b := range blobs {
				d := math.Hypot(float64(x)-b.x, float64(y)-b.y) / b.r
				if d < 1 {
					for k := range c {
						c[k] = c[k]*d + b.c[k]*(1-d)
					}
				}
			}
			n := rng.Float64()*40 - 20
			img.Set(x, y, color.RGBA{clamp8(c[0] + n), clamp8(c[1] + n), clamp8(c[2] + n), 255})
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := jpeg.Encode(f, img, &jpeg.Options{Quality: 85}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func clamp8(v float64) uint8 { return uint8(max(0, min(255, v))) }

var lorem = strings.Fields("protocol stream frame window packet latency bandwidth server client header priority push " +
	"connection handshake congestion loss queue paint layout image style script document origin cache resource")

func words(rng *rand.Rand, n int) string {
	out := make([]string, n)
	for i := range out {
		out[i] = lorem[rng.IntN(len(lorem))]
	}
	return strings.Join(out, " ")
}
