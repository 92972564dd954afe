package server

import (
	"fmt"
	"hash/fnv"
	"testing"

	"github.com/wirelab/wirelab/engine/page"
)

// entityTagFmt is the ETag's definition: FNV-64a of the object's ID, size and base,
// NUL-separated, in 16 hex digits between quotes.
func entityTagFmt(obj page.Object, base page.Base) string {
	f := fnv.New64a()
	fmt.Fprintf(f, "%s\x00%d\x00%s\x00%d\x00%s\x00%s", obj.ID, obj.Size, base.Scheme, base.Port, base.Token, base.Host)
	return fmt.Sprintf(`"%016x"`, f.Sum64())
}

// The ETag computed on every response (without fmt) is the definition's, for long and short
// fields alike (a token of page.MaxTokenLen, a host, port 0).
func TestEntityTagIsTheDefinition(t *testing.T) {
	objs := []page.Object{{ID: "o0", Size: 1}, {ID: "o12345", Size: 123456789}, {ID: "", Size: 0}}
	bases := []page.Base{
		{Scheme: "https", Port: 443, Token: "bench"},
		{Scheme: "http", Port: 0, Token: "t"},
		{Scheme: "https", Port: 65535, Token: string(make([]byte, page.MaxTokenLen)), Host: "www.example.wirelab.test"},
	}
	for _, o := range objs {
		for _, b := range bases {
			if got, want := entityTag(o, b), entityTagFmt(o, b); got != want {
				t.Errorf("entityTag(%q, %+v) = %s; want %s", o.ID, b, got, want)
			}
		}
	}
	if a := testing.AllocsPerRun(100, func() { entityTag(objs[1], bases[0]) }); a > 1 {
		t.Errorf("%v allocations per ETag; want 1 (the string)", a)
	}
}

func BenchmarkEntityTag(b *testing.B) {
	o, base := page.Object{ID: "o12", Size: 2048}, page.Base{Scheme: "https", Port: 8443, Token: "bench"}
	b.Run("fmt", func(b *testing.B) {
		for b.Loop() {
			entityTagFmt(o, base)
		}
	})
	b.Run("now", func(b *testing.B) {
		for b.Loop() {
			entityTag(o, base)
		}
	})
}
