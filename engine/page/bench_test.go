package page

import (
	"io"
	"testing"
)

// BenchmarkBody measures content generation (MB/s) for a 1 MB image and the nytimes root HTML.
func BenchmarkBody(b *testing.B) {
	for _, c := range []struct {
		name string
		page string
		obj  int
	}{{"png-1MB", "synthetic:1x1MB", 1}, {"html-nytimes", "nytimes", 0}} {
		p, err := Load(c.page, 1)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(p.Objects[c.obj].Size)
			for b.Loop() {
				body, err := p.Body(c.obj, Base{Scheme: "https", Token: "bench"})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := body.WriteTo(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
