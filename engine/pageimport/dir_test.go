package pageimport

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// record encodes one mahimahi record with the wire format's primitives (field numbers and types
// of mahimahi's http_record.proto), independently of the importer's descriptor.
func record(scheme int, host, target, status, ctype, body string) []byte {
	msg := func(first string, headers [][2]string, body string) []byte {
		var b []byte
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, first)
		for _, h := range headers {
			var hb []byte
			hb = protowire.AppendTag(hb, 1, protowire.BytesType)
			hb = protowire.AppendString(hb, h[0])
			hb = protowire.AppendTag(hb, 2, protowire.BytesType)
			hb = protowire.AppendString(hb, h[1])
			b = protowire.AppendTag(b, 2, protowire.BytesType)
			b = protowire.AppendBytes(b, hb)
		}
		if body != "" {
			b = protowire.AppendTag(b, 3, protowire.BytesType)
			b = protowire.AppendString(b, body)
		}
		return b
	}
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, "93.184.216.34")
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, 443)
	b = protowire.AppendTag(b, 3, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(scheme))
	b = protowire.AppendTag(b, 4, protowire.BytesType)
	b = protowire.AppendBytes(b, msg("GET "+target+" HTTP/1.1", [][2]string{{"Host", host}, {"User-Agent", "test"}}, ""))
	b = protowire.AppendTag(b, 5, protowire.BytesType)
	b = protowire.AppendBytes(b, msg("HTTP/1.1 "+status, [][2]string{{"Content-Type", ctype}}, body))
	return b
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func harText(n int) string {
	var b strings.Builder
	b.WriteString(`{"log":{"version":"1.2","creator":{"name":"t","version":"1"},"entries":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		mime, size, ini := "image/png", 2000, `,"_initiator":{"type":"parser","url":"https://a.example/"}`
		switch i {
		case 0:
			mime, size, ini = "text/html", 30000, ""
		case 1:
			mime = "text/css"
		}
		fmt.Fprintf(&b, `{"startedDateTime":"2026-01-01T00:00:00.%03dZ","time":5,"request":{"method":"GET","url":"https://a.example/o%d"},`+
			`"response":{"status":200,"headers":[],"content":{"size":%d,"mimeType":%q},"bodySize":%d},"timings":{"send":1,"wait":2,"receive":2}%s}`,
			i%1000, i, size, mime, size, ini)
		if i == 0 {
			b.Reset()
			b.WriteString(`{"log":{"version":"1.2","creator":{"name":"t","version":"1"},"entries":[`)
			fmt.Fprintf(&b, `{"startedDateTime":"2026-01-01T00:00:00.000Z","time":5,"request":{"method":"GET","url":"https://a.example/"},`+
				`"response":{"status":200,"headers":[],"content":{"size":30000,"mimeType":"text/html"},"bodySize":30000},"timings":{"send":1,"wait":2,"receive":2}}`)
		}
	}
	b.WriteString(`]}}`)
	return b.String()
}

// The directory: a valid HAR, a HAR with 10⁵ entries, a truncated HAR, a mahimahi folder and
// garbage — the valid ones imported, the rest skipped with their reason; links refused.
func TestDir(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	valid := harText(12)
	write(t, filepath.Join(dir, "valid.har"), []byte(valid))
	write(t, filepath.Join(dir, "huge.har"), []byte(harText(100_000)))
	write(t, filepath.Join(dir, "truncated.har"), []byte(valid[:len(valid)/2]))
	write(t, filepath.Join(dir, "garbage.bin"), []byte("\x00\x01 not a page"))
	write(t, filepath.Join(dir, "garbage.har"), []byte("<html>this is no HAR</html>"))
	html := `<html><head><link rel="stylesheet" href="/s.css"><script src="https://cdn.b.example/app.js"></script></head>` +
		`<body><img src="/i.png"><img src="https://cdn.b.example/p.jpg"></body></html>`
	css := `body{background:url(/bg.png)}`
	rec := filepath.Join(dir, "mm-site")
	write(t, filepath.Join(rec, "save.a1"), record(2, "www.a.example", "/", "200 OK", "text/html; charset=utf-8", html))
	write(t, filepath.Join(rec, "save.b2"), record(2, "www.a.example", "/s.css", "200 OK", "text/css", css))
	write(t, filepath.Join(rec, "save.c3"), record(2, "cdn.b.example", "/app.js", "200 OK", "application/javascript", strings.Repeat("x", 5000)))
	write(t, filepath.Join(rec, "save.d4"), record(2, "www.a.example", "/i.png", "200 OK", "image/png", strings.Repeat("p", 3000)))
	write(t, filepath.Join(rec, "save.e5"), record(2, "cdn.b.example", "/p.jpg", "200 OK", "image/jpeg", strings.Repeat("j", 7000)))
	write(t, filepath.Join(rec, "save.f6"), record(2, "www.a.example", "/bg.png", "200 OK", "image/png", strings.Repeat("b", 900)))
	write(t, filepath.Join(rec, "save.g7"), record(2, "www.a.example", "/gone", "404 Not Found", "text/html", "no"))
	write(t, filepath.Join(rec, "junk"), []byte("\xff\xff\xff\xff garbage"))
	write(t, filepath.Join(dir, "not-a-recording", "a.txt"), []byte("hello"))
	// Links: to a HAR outside, to a recording outside, and inside the recording to a record outside.
	write(t, filepath.Join(outside, "secret.har"), []byte(valid))
	write(t, filepath.Join(outside, "rec", "save.x"), record(1, "www.c.example", "/", "200 OK", "text/html", html))
	for link, target := range map[string]string{
		filepath.Join(dir, "link.har"):       filepath.Join(outside, "secret.har"),
		filepath.Join(dir, "link-recording"): filepath.Join(outside, "rec"),
		filepath.Join(rec, "save.z9"):        filepath.Join(outside, "rec", "save.x"),
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}

	res, err := Dir(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	imported := map[string]Imported{}
	for _, im := range res.Imported {
		imported[im.Entry] = im
	}
	if len(imported) != 2 {
		t.Fatalf("imported %v; want valid.har and mm-site; skipped %v", res.Imported, res.Skipped)
	}
	if pg := imported["valid.har"].Page; pg == nil || len(pg.Objects) != 12 || pg.Name != "valid" {
		t.Errorf("valid.har: %+v", imported["valid.har"])
	}
	mm := imported["mm-site"]
	if mm.Page == nil || len(mm.Page.Objects) != 6 || mm.Kind != "mahimahi" {
		t.Fatalf("mm-site: %+v", mm)
	}
	if mm.SkippedRecords != 2 { // junk, and the link
		t.Errorf("mm-site: %d skipped records (%s); want 2", mm.SkippedRecords, mm.FirstSkipped)
	}
	pg := mm.Page
	if pg.Objects[0].Path != "/" && !strings.HasSuffix(pg.Objects[0].Domain, "a.example") {
		t.Errorf("root %+v", pg.Objects[0])
	}
	var bg, js bool
	for _, o := range pg.Objects {
		if o.Domain == "www.c.example" {
			t.Error("a record behind a link was read")
		}
		if strings.HasSuffix(o.Path, "bg.png") {
			bg = o.Parent != "" && o.Size == 900
		}
		if strings.HasSuffix(o.Path, "app.js") {
			js = o.Size == 5000 && o.Group == "b.example"
		}
	}
	if !bg || !js {
		t.Errorf("bg.png owned by the CSS with 900 bytes: %v; app.js 5000 bytes on b.example: %v", bg, js)
	}
	want := map[string]string{
		"huge.har":        "at most 10000",
		"truncated.har":   "not a HAR",
		"garbage.bin":     "neither a HAR file",
		"garbage.har":     "not a HAR",
		"not-a-recording": "none of its 1 files is a record",
		"link.har":        "symbolic link",
		"link-recording":  "symbolic link",
	}
	if len(res.Skipped) != len(want) {
		t.Errorf("skipped %v", res.Skipped)
	}
	for _, s := range res.Skipped {
		if w, ok := want[s.Entry]; !ok || !strings.Contains(s.Reason, w) {
			t.Errorf("skipped %s: %q; want %q", s.Entry, s.Reason, w)
		}
	}
}

// An entry swapped for a FIFO after the listing is refused by openRegular without blocking.
func TestOpenRegularRefusesAFIFOWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "x.har"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	done := make(chan error, 1)
	go func() {
		f, err := openRegular(root, "x.har")
		if f != nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("openRegular(FIFO) = %v, want not a regular file", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("openRegular blocked on a FIFO")
	}
}
