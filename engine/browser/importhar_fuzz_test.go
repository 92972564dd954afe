package browser

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/page"
)

// FuzzImportHAR: a HAR file from anywhere either becomes a valid page (whose JSON the page parser
// reads back) or is refused with a one-line error; never a panic.
func FuzzImportHAR(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "twitter-chromium-h2.har"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	for _, s := range []string{`{"log":{"entries":[]}}`, `{"log":{}}`, `{}`, `[]`,
		`{"log":{"entries":[{"request":{"method":"GET","url":"https://a.test/"},"response":{"status":200,"content":{"size":10,"mimeType":"text/html"}}}]}}`} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "in.har")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := ImportHAR(path, RecordOptions{})
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("imported an invalid page: %v", err)
		}
		if _, err := page.Parse(p.JSON()); err != nil {
			t.Fatalf("the imported page's JSON is refused: %v", err)
		}
	})
}
