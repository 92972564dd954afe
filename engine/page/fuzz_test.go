package page

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParse: page JSON from anywhere (a file, an import) either parses into a valid page whose
// JSON reads back as the same page, or is refused with a one-line error; never a panic.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"twitter", "flags", "synthetic:3x1kB"} {
		p, err := Load(name, 1)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p.JSON())
	}
	for _, s := range []string{`{}`, `{"name":"x","objects":[]}`, `[]`, `{"name":"x","objects":[{"path":"/","size":-1}]}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted an invalid page: %v", err)
		}
		again, err := Parse(p.JSON())
		if err != nil {
			t.Fatalf("the page's own JSON is refused: %v", err)
		}
		if !bytes.Equal(again.JSON(), p.JSON()) {
			t.Fatalf("JSON does not round-trip:\n%s\n%s", p.JSON(), again.JSON())
		}
	})
}
