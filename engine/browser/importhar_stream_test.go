package browser

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/page"
)

// harWith writes a HAR whose entries are n GET 200 objects of size bytes each (the first an HTML
// document), followed by tail — text that is not JSON when a test wants to know whether the
// importer read that far.
func harWith(t testing.TB, n int, size int64, tail string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"log":{"version":"1.2","creator":{"name":"test","version":"1"},"entries":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		mime, sz := "image/png", size
		if i == 0 {
			mime, sz = "text/html", 1<<20 // room for the references to every other object
		}
		fmt.Fprintf(&b, `{"startedDateTime":"2026-01-01T00:00:00.%03dZ","time":5,"request":{"method":"GET","url":"https://a.example/o%d"},`+
			`"response":{"status":200,"headers":[],"content":{"size":%d,"mimeType":%q},"bodySize":%d},"timings":{"send":1,"wait":2,"receive":2}}`,
			i%1000, i, sz, mime, sz)
	}
	b.WriteString(tail)
	f := filepath.Join(t.TempDir(), "x.har")
	if err := os.WriteFile(f, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// The importer checks the page's limits as entries arrive: a HAR past a limit is refused at the
// entry that crosses it, before the rest of the file is read — here the rest is not even JSON.
func TestImportHARRefusesEarly(t *testing.T) {
	if testing.Short() {
		// Four HARs of up to page.MaxObjects entries, parsed on one goroutine: 0.4 s, but 48 s under
		// the race detector (make test's go-race phase runs -short), which has nothing to race here.
		t.Skip("parses HARs at the page limits")
	}
	const garbage = `,{{{ not JSON at all`
	cases := []struct {
		name  string
		n     int
		size  int64
		field string
	}{
		{"objects", page.MaxObjects + 1, 10, "entries"},
		{"bytes", int(page.MaxPageBytes/page.MaxObjectBytes) + 1, page.MaxObjectBytes, fmt.Sprintf("entries[%d]", page.MaxPageBytes/page.MaxObjectBytes)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ImportHAR(harWith(t, c.n, c.size, garbage), RecordOptions{Name: "big"})
			fe, ok := fielderr.As(err)
			if !ok || fe.Field != c.field || !strings.Contains(err.Error(), "at most") {
				t.Fatalf("err = %v, want the limit named at %s", err, c.field)
			}
		})
	}
	// At the limit it is a page.
	pg, err := ImportHAR(harWith(t, page.MaxObjects, 10, `]}}`), RecordOptions{Name: "max"})
	if err != nil || len(pg.Objects) != page.MaxObjects {
		t.Fatalf("a HAR of exactly %d objects: %v", page.MaxObjects, err)
	}
}

// The HAR's structure is checked as it is read: every refusal names where.
func TestImportHARStructure(t *testing.T) {
	entry := `{"request":{"method":"GET","url":"https://a.example/"},"response":{"status":200,"content":{"size":500,"mimeType":"text/html"}}}`
	cases := []struct{ har, field string }{
		{`[]`, "har"},
		{`{"log":[]}`, "log"},
		{`{"log":{"entries":[` + entry + `]},"log":{}}`, "log"},
		{`{"log":{"entries":[` + entry + `],"entries":[]}}`, "log.entries"},
		{`{"log":{"entries":{}}}`, "log.entries"},
		{`{"log":{"pages":[]}}`, "log.entries"},
		{`{"log":{"entries":[` + entry + `]}} {}`, "har"},
		{`{"log":{"entries":[` + entry + `,7]}}`, "entries[1]"},
		{`{"log":{"entries":[{"response":{"status":"ok"}}]}}`, "entries[0].response.status"},
		{`{"log":{"entries":[{"response":{"content":{"size":"fifty"}}}]}}`, "entries[0]"},
	}
	for _, c := range cases {
		f := filepath.Join(t.TempDir(), "x.har")
		if err := os.WriteFile(f, []byte(c.har), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := ImportHAR(f, RecordOptions{Name: "x"})
		fe, ok := fielderr.As(err)
		if !ok || fe.Field != c.field {
			t.Errorf("%s: err = %v, want one naming %s", c.har, err, c.field)
		}
	}
	// Members the importer does not use are skipped, whatever they hold.
	f := filepath.Join(t.TempDir(), "x.har")
	if err := os.WriteFile(f, []byte(`{"x":[{"y":[1,2,{"z":null}]}],"log":{"pages":[{"id":"p"}],"entries":[`+entry+`],"comment":"c"},"w":"v"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if pg, err := ImportHAR(f, RecordOptions{Name: "x"}); err != nil || len(pg.Objects) != 1 {
		t.Errorf("a HAR with members the importer skips: %v", err)
	}
}

// BenchmarkImportHAR: time and memory per entry stay flat from 1,000 to 10,000 entries (the
// import is linear in the HAR's size).
func BenchmarkImportHAR(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		f := harWith(b, n, 2000, `]}}`)
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ImportHAR(f, RecordOptions{Name: "bench"}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/entry")
		})
	}
}
