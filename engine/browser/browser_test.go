package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"

	"github.com/wirelab/wirelab/engine/contract/contracttest"
	"github.com/wirelab/wirelab/engine/har"
	"github.com/wirelab/wirelab/engine/page"
)

// Tests without Chromium: flags, the CDP → HAR timing conversion, graph recording from a trace,
// HAR import, profile GC. chromium_test.go drives the real browser.

func TestFlags(t *testing.T) {
	has := func(flags []string, f string) bool {
		for _, x := range flags {
			if x == f {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		proto   Protocol
		want    []string
		notWant []string
	}{
		{H1, []string{"--disable-quic"}, []string{"--disable-http2", "--origin-to-force-quic-on=*"}},
		{H1S, []string{"--disable-http2", "--disable-quic"}, []string{"--enable-quic"}},
		{H2, []string{"--disable-quic"}, []string{"--disable-http2"}},
		{H3, []string{"--enable-quic", "--origin-to-force-quic-on=*"}, []string{"--disable-quic", "--disable-http2"}},
	} {
		cfg := Config{Protocol: tc.proto, SPKIHashes: []string{"abc="}}
		f := cfg.Flags()
		for _, w := range append(tc.want, "--headless", "--dns-prefetch-disable", "--disable-background-networking",
			"--ignore-certificate-errors-spki-list=abc=", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE *.wirelab.test") {
			if !has(f, w) {
				t.Errorf("%s: missing %s in %v", tc.proto, w, f)
			}
		}
		for _, w := range tc.notWant {
			if has(f, w) {
				t.Errorf("%s: unexpected %s", tc.proto, w)
			}
		}
		if !strings.Contains(strings.Join(f, " "), "HttpsUpgrades") {
			t.Errorf("%s: HTTPS upgrades not disabled", tc.proto)
		}
	}
	static := Config{Protocol: H2, Resolve: map[string]netip.Addr{"s2.wirelab.test": netip.MustParseAddr("10.77.1.2"), "s1.wirelab.test": netip.MustParseAddr("10.77.1.1")}}
	if got, want := static.resolverRules(), "MAP s1.wirelab.test 10.77.1.1, MAP s2.wirelab.test 10.77.1.2, MAP * ~NOTFOUND"; got != want {
		t.Errorf("static rules %q, want %q", got, want)
	}
	// A public load (the egress router's): no rule narrows the resolver, and the hosts a load may
	// reach are names, the lab's addresses and public ones.
	internet := Config{Protocol: H2, Internet: true}
	for _, f := range internet.Flags() {
		if strings.HasPrefix(f, "--host-resolver-rules") || strings.HasPrefix(f, "--ignore-certificate-errors-spki-list") {
			t.Errorf("internet: %s", f)
		}
	}
	for host, ok := range map[string]bool{"example.org": true, "93.184.215.14": true, "10.77.1.1": true, "192.0.2.1": false, "127.0.0.1": false} {
		if err := internet.checkHost(host); (err == nil) != ok {
			t.Errorf("internet, %s: %v", host, err)
		}
		if err := (Config{}).checkHost(host); (err == nil) != (host == "10.77.1.1" || host == "127.0.0.1") {
			t.Errorf("lab, %s: %v", host, err)
		}
	}
	if _, err := ParseProtocol("h2c"); err == nil || !strings.Contains(err.Error(), "Chromium does not speak h2c") {
		t.Errorf("h2c: %v", err)
	}
}

func timing(base float64, dns, connect, ssl [2]float64, send [2]float64, headers [2]float64) *network.ResourceTiming {
	return &network.ResourceTiming{RequestTime: base, DNSStart: dns[0], DNSEnd: dns[1], ConnectStart: connect[0], ConnectEnd: connect[1],
		SslStart: ssl[0], SslEnd: ssl[1], SendStart: send[0], SendEnd: send[1], ReceiveHeadersStart: headers[0], ReceiveHeadersEnd: headers[1]}
}

// TestEntryTimings converts CDP timings to HAR phases: contiguous (they sum to end − issued),
// dns/connect/ssl -1 on a reused connection, ssl inside connect, h3's ssl = connect.
func TestEntryTimings(t *testing.T) {
	none := [2]float64{-1, -1}
	cases := []struct {
		name     string
		q        request
		want     [7]float64 // blocked dns connect ssl send wait receive
		protocol string
	}{
		{"new TLS connection", request{issued: 10.000, end: 10.100, done: true, resp: &network.Response{Protocol: "h2", Status: 200,
			Timing: timing(10.002, [2]float64{0, 1}, [2]float64{1, 31}, [2]float64{11, 31}, [2]float64{32, 33}, [2]float64{63, 64})}},
			[7]float64{2, 1, 31, 20, 1, 30, 35}, "h2"},
		{"reused connection", request{issued: 20.000, end: 20.050, done: true, resp: &network.Response{Protocol: "http/1.1", Status: 200,
			Timing: timing(20.005, none, none, none, [2]float64{0, 0.5}, [2]float64{20.5, 21})}},
			[7]float64{5, -1, -1, -1, 0.5, 20, 24.5}, "HTTP/1.1"},
		{"QUIC", request{issued: 30.000, end: 30.080, done: true, resp: &network.Response{Protocol: "h3", Status: 200,
			Timing: timing(30.000, [2]float64{0, 0}, [2]float64{0, 20}, none, [2]float64{20, 21}, [2]float64{41, 42})}},
			[7]float64{0, 0, 20, 20, 1, 20, 39}, "h3"},
	}
	for _, c := range cases {
		e := c.q.entry(c.q.issued)
		tm := e.Timings
		got := [7]float64{tm.Blocked, tm.DNS, tm.Connect, tm.SSL, tm.Send, tm.Wait, tm.Receive}
		for i := range got {
			if d := got[i] - c.want[i]; d > 1e-6 || d < -1e-6 {
				t.Errorf("%s: phases %v, want %v", c.name, got, c.want)
				break
			}
		}
		if e.Protocol != c.protocol {
			t.Errorf("%s: protocol %q, want %q", c.name, e.Protocol, c.protocol)
		}
		sum := 0.0
		for _, v := range []float64{tm.Blocked, tm.DNS, tm.Connect, tm.Send, tm.Wait, tm.Receive} {
			sum += max(v, 0)
		}
		if d := sum - (c.q.end-c.q.issued)*1000; d > 1e-6 || d < -1e-6 {
			t.Errorf("%s: phases sum to %v ms, the entry took %v", c.name, sum, (c.q.end-c.q.issued)*1000)
		}
	}
	for in, want := range map[string]string{"http/1.1": "HTTP/1.1", "h2": "h2", "h3": "h3", "h3-29": "h3", "HTTP/2": "h2"} {
		if got := wireProtocol(in); got != want {
			t.Errorf("wireProtocol(%q) = %q, want %q", in, got, want)
		}
	}
}

// traceEvent builds a complete (X) trace event at ms from the load's start (T0 = 100 s).
func traceEvent(name string, startMs, durMs float64, args string) TraceEvent {
	return TraceEvent{Name: name, Ph: "X", Ts: 100e6 + startMs*1000, Dur: durMs * 1000, Args: json.RawMessage(args)}
}

// TestRecordPageFromTrace builds a graph from a hand-made load: a root whose parser runs a
// synchronous script inside its second chunk, a stylesheet with an image, a body image found
// by the preload scanner.
func TestRecordPageFromTrace(t *testing.T) {
	root := "https://s1.wirelab.test/L/tok/"
	u := func(p string) string { return root + p }
	parser := func(lineURL string) *initiatorArg { return &initiatorArg{"parser", lineURL} }
	res := &Result{t0: 100, Entries: []Entry{
		entry(root, "document", "text/html", 2000, 0, 30, nil),
		entry(u("css/a.css"), "stylesheet", "text/css", 500, 21, 40, parser(root)),
		entry(u("js/b.js"), "script", "text/javascript", 800, 22, 45, parser(root)),
		entry(u("img/c.png"), "image", "image/png", 300, 35, 60, parser(root)),
		entry(u("img/d.png"), "image", "image/png", 300, 52, 70, parser(u("css/a.css"))),
	}}
	res.Trace = []TraceEvent{
		traceEvent("ParseHTML", 25, 4, fmt.Sprintf(`{"beginData":{"url":%q,"startLine":0},"endData":{"endLine":8}}`, root)),
		traceEvent("ParseAuthorStyleSheet", 41, 3, fmt.Sprintf(`{"data":{"styleSheetUrl":%q}}`, u("css/a.css"))),
		traceEvent("ParseHTML", 46, 10, fmt.Sprintf(`{"beginData":{"url":%q,"startLine":8},"endData":{"endLine":20}}`, root)),
		traceEvent("EvaluateScript", 47, 6, fmt.Sprintf(`{"data":{"url":%q}}`, u("js/b.js"))),
		traceEvent("ParseHTML", 80, 1, fmt.Sprintf(`{"beginData":{"url":%q,"startLine":20},"endData":{"endLine":21}}`, root)),
		traceEvent("Layout", 57, 2, `{}`),
	}
	pg, err := RecordPage(res, RecordOptions{Name: "hand-made"})
	if err != nil {
		t.Fatal(err)
	}
	acts := map[string]page.Activity{}
	byKind := map[string][]page.Activity{}
	for _, a := range pg.Activities {
		acts[a.ID] = a
		byKind[string(a.Kind)+":"+a.Object] = append(byKind[string(a.Kind)+":"+a.Object], a)
	}
	deps := func(a page.Activity) string {
		var s []string
		for _, d := range a.Deps {
			x := acts[d.On]
			s = append(s, string(x.Kind)+":"+x.Object+":"+string(d.Point()))
		}
		return strings.Join(s, " ")
	}
	parses := byKind["parse:o0"]
	if len(parses) != 3 {
		t.Fatalf("%d parse chunks, want 3", len(parses))
	}
	check := func(what string, a page.Activity, dur float64, wantDeps string) {
		t.Helper()
		if a.DurationMs != dur || deps(a) != wantDeps {
			t.Errorf("%s: %.1f ms, deps %q; want %.1f ms, %q", what, a.DurationMs, deps(a), dur, wantDeps)
		}
	}
	check("chunk 1", parses[0], 4, "download:o0:first_chunk")
	// chunk 2 ran the script inside it: its self time excludes the 6 ms evaluation; it waited
	// for the document's last bytes (chunk 1 ended before the download, chunk 2 began after).
	check("chunk 2", parses[1], 4, "parse:o0:complete download:o0:complete")
	// chunk 3 continues after the script.
	check("chunk 3", parses[2], 1, "parse:o0:complete evaluate:o2:complete")
	check("stylesheet", byKind["evaluate:o1"][0], 3, "download:o1:complete")
	check("script", byKind["evaluate:o2"][0], 6, "download:o2:complete parse:o0:complete evaluate:o1:complete")
	if a := byKind["evaluate:o2"][0]; a.Deps[1].On != parses[1].ID {
		t.Errorf("the script depends on %s, want the chunk that ran it (%s)", a.Deps[1].On, parses[1].ID)
	}
	// discovery: preload-scanned requests before the first chunk → the root's first chunk; a
	// request issued after chunk 1 → chunk 1; the stylesheet's image → its evaluation.
	check("css download", byKind["download:o1"][0], 0, "download:o0:first_chunk")
	check("body image", byKind["download:o3"][0], 0, "parse:o0:complete")
	check("css image", byKind["download:o4"][0], 0, "evaluate:o1:complete")
	if pg.Objects[4].Parent != "o1" || pg.Objects[0].Path != "/index.html" || pg.Objects[1].Path != "/css/a.css" {
		t.Errorf("objects: %+v", pg.Objects)
	}
	if _, err := page.Parse(pg.JSON()); err != nil {
		t.Fatal(err)
	}
	validateSchema(t, pg)
}

type initiatorArg struct{ typ, url string }

func entry(u, rtype, mime string, size int64, start, end float64, in *initiatorArg) Entry {
	e := Entry{URL: u, ResourceType: rtype, MimeType: mime, BodyBytes: size, Status: 200, StartMS: start, EndMS: end, Method: "GET"}
	if in != nil {
		e.Initiator = &har.Initiator{Type: in.typ, URL: in.url}
	}
	return e
}

// TestImportChromiumHARFixture: a HAR that Chromium recorded of the corpus page twitter (seed 1,
// served by the built-in server) imports back to the same objects, types and sizes.
func TestImportChromiumHARFixture(t *testing.T) {
	pg, err := ImportHAR("testdata/twitter-chromium-h2.har", RecordOptions{Name: "twitter-har"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := page.Corpus("twitter", 1)
	if err != nil {
		t.Fatal(err)
	}
	sameObjects(t, pg, want)
	// The graph: a parse of the root, and every other download released by the root.
	parses := 0
	for _, a := range pg.Activities {
		if a.Kind == page.KindParse {
			parses++
		}
	}
	if parses != 1 || len(pg.Activities) < len(pg.Objects)+1 {
		t.Errorf("%d activities, %d parses", len(pg.Activities), parses)
	}
}

// sameObjects checks that got has want's objects (paths, types, sizes), in any order.
func sameObjects(t *testing.T, got, want *page.Page) {
	t.Helper()
	byPath := map[string]page.Object{}
	for _, o := range got.Objects {
		byPath[o.Path] = o
	}
	if len(got.Objects) != len(want.Objects) {
		t.Errorf("%d objects, want %d", len(got.Objects), len(want.Objects))
	}
	for _, w := range want.Objects {
		g, ok := byPath[w.Path]
		if !ok {
			t.Errorf("missing %s", w.Path)
			continue
		}
		if g.Size != w.Size || g.Type != w.Type {
			t.Errorf("%s: %s %d B, want %s %d B", w.Path, g.Type, g.Size, w.Type, w.Size)
		}
	}
}

func TestImportHARHeuristics(t *testing.T) {
	har := `{"log":{"entries":[
 {"startedDateTime":"2026-01-01T00:00:00.000Z","time":100,"request":{"method":"GET","url":"https://www.example.com/"},
  "response":{"status":200,"content":{"size":5000,"mimeType":"text/html"},"bodySize":5000},"timings":{"blocked":0,"dns":10,"connect":20,"send":1,"wait":50,"receive":19},"_resourceType":"document"},
 {"startedDateTime":"2026-01-01T00:00:00.050Z","time":30,"request":{"method":"GET","url":"https://cdn.example.net/a.css"},
  "response":{"status":200,"content":{"size":800,"mimeType":"text/css"},"bodySize":800},"timings":{"send":1,"wait":20,"receive":9},"_resourceType":"stylesheet","_initiator":{"type":"parser","url":"https://www.example.com/"}},
 {"startedDateTime":"2026-01-01T00:00:00.130Z","time":20,"request":{"method":"GET","url":"https://cdn.example.net/bg.png"},
  "response":{"status":200,"content":{"size":0,"mimeType":"image/png"},"bodySize":-1},"_transferSize":333,"timings":{"send":1,"wait":10,"receive":9},"_resourceType":"image","_initiator":{"type":"parser","url":"https://cdn.example.net/a.css"}},
 {"startedDateTime":"2026-01-01T00:00:00.125Z","time":20,"request":{"method":"GET","url":"https://www.example.com/late.png"},
  "response":{"status":200,"content":{"size":700,"mimeType":"image/png"}},"timings":{"send":1,"wait":10,"receive":9},"_initiator":{"type":"parser","url":"https://www.example.com/"}},
 {"startedDateTime":"2026-01-01T00:00:00.140Z","time":5,"request":{"method":"POST","url":"https://www.example.com/beacon"},
  "response":{"status":204,"content":{"size":0}},"timings":{"send":1,"wait":2,"receive":2}}
]}}`
	f := filepath.Join(t.TempDir(), "x.har")
	os.WriteFile(f, []byte(har), 0o644)
	pg, err := ImportHAR(f, RecordOptions{Name: "example"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Objects) != 4 || len(pg.Origins) != 2 {
		t.Fatalf("objects %+v origins %d", pg.Objects, len(pg.Origins))
	}
	objs := map[string]page.Object{}
	for _, o := range pg.Objects {
		objs[o.Path] = o
	}
	if o := objs["/bg.png"]; o.Size != 333 || o.Origin != 1 || o.Domain != "cdn.example.net" || o.Group != "example.net" || o.Parent != objs["/a.css"].ID {
		t.Errorf("bg.png: %+v", o)
	}
	acts := map[string]page.Activity{}
	for _, a := range pg.Activities {
		acts[a.ID] = a
	}
	find := func(kind page.Kind, path string) page.Activity {
		for _, a := range pg.Activities {
			if a.Kind == kind && a.Object == objs[path].ID {
				return a
			}
		}
		t.Fatalf("no %s of %s", kind, path)
		return page.Activity{}
	}
	// The root ended at 100 ms; late.png started at 125 ms: the root's parse is estimated at 25 ms.
	if p := find(page.KindParse, "/index.html"); p.DurationMs != 25 {
		t.Errorf("root parse %.1f ms, want 25", p.DurationMs)
	}
	// The stylesheet started at 50 ms, before the root ended: it depends on the root's first chunk.
	if d := find(page.KindDownload, "/a.css"); len(d.Deps) != 1 || d.Deps[0].When != page.WhenFirstChunk {
		t.Errorf("a.css deps %+v", d.Deps)
	}
	// The stylesheet ended at 80 ms and its image started at 130: evaluation 50 ms, then the image.
	if e := find(page.KindEvaluate, "/a.css"); e.DurationMs != 50 {
		t.Errorf("a.css evaluation %.1f ms, want 50", e.DurationMs)
	}
	if d := find(page.KindDownload, "/bg.png"); len(d.Deps) != 1 || acts[d.Deps[0].On].Kind != page.KindEvaluate {
		t.Errorf("bg.png deps %+v", d.Deps)
	}
}

func TestGCProfiles(t *testing.T) {
	dir := t.TempDir()
	dead := filepath.Join(dir, fmt.Sprintf("%s%d-abc", ProfilePrefix, 0x7ffffff0))
	alive := filepath.Join(dir, fmt.Sprintf("%s%d-def", ProfilePrefix, os.Getpid()))
	other := filepath.Join(dir, "something-else")
	for _, d := range []string{dead, alive, other} {
		if err := os.MkdirAll(filepath.Join(d, "Default"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := GCProfiles(dir)
	if err != nil || len(removed) != 1 || removed[0] != dead {
		t.Fatalf("removed %v, %v", removed, err)
	}
	for _, d := range []string{alive, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s removed", d)
		}
	}
}

func TestResolvConfAndSPKI(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "resolv.conf")
	os.WriteFile(f, []byte("# run\nnameserver 10.77.2.53\nsearch wirelab.test\n"), 0o644)
	if err := CheckResolvConf(f, netip.MustParseAddr("10.77.2.53")); err != nil {
		t.Error(err)
	}
	os.WriteFile(f, []byte("nameserver 10.77.2.53\nnameserver 8.8.8.8\n"), 0o644)
	if err := CheckResolvConf(f, netip.MustParseAddr("10.77.2.53")); err == nil {
		t.Error("two nameservers accepted")
	}
	if _, err := SPKIHashesFromPEMFile(f); err == nil {
		t.Error("no certificate accepted")
	}
}

// validateSchema checks a page's JSON against the page JSON Schema (schemas/page.schema.json).
func validateSchema(t *testing.T, pg *page.Page) {
	t.Helper()
	if err := contracttest.Load(t).Validate(contracttest.Page, pg.JSON()); err != nil {
		t.Errorf("page %s does not validate against the page schema: %v", pg.Name, err)
	}
}

// TestPagesValidateAgainstSchema: recorded, imported and mirrored pages and the corpus pages with
// their recorded graphs validate against the JSON Schema.
func TestPagesValidateAgainstSchema(t *testing.T) {
	imported, err := ImportHAR("testdata/twitter-chromium-h2.har", RecordOptions{Name: "twitter-har"})
	if err != nil {
		t.Fatal(err)
	}
	validateSchema(t, imported)
	m, err := page.Mirror("../page/testdata/mirror-site", "")
	if err != nil {
		t.Fatal(err)
	}
	validateSchema(t, m.Page)
	for _, name := range page.CorpusNames() {
		pg, err := page.Corpus(name, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !page.HasRecordedGraph(name) || !strings.Contains(pg.Source, "graph recorded with Chrome/") {
			t.Errorf("%s: no recorded graph", name)
		}
		validateSchema(t, pg)
	}
}

// A load whose tab ended (Chromium exited, its DevTools connection closed) is not reported as a
// timeout, and a load cancelled by its caller says so.
func TestWaitTellsWhyTheLoadEnded(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	tab, closeTab := context.WithCancel(parent)
	load, cancelLoad := context.WithTimeout(tab, time.Hour)
	defer cancelLoad()
	closeTab()
	if err := newRecorder(false, false).wait(load, parent); !errors.Is(err, errBrowserGone) || strings.HasPrefix(err.Error(), "timeout") {
		t.Errorf("tab gone: %v; want errBrowserGone", err)
	}
	load, cancelLoad = context.WithTimeout(parent, time.Millisecond)
	defer cancelLoad()
	if err := newRecorder(false, false).wait(load, parent); err == nil || !strings.HasPrefix(err.Error(), "timeout:") {
		t.Errorf("deadline: %v; want a timeout", err)
	}
	load, cancelLoad = context.WithTimeout(parent, time.Hour)
	defer cancelLoad()
	cancelParent()
	if err := newRecorder(false, false).wait(load, parent); err == nil || !strings.HasPrefix(err.Error(), "load cancelled") {
		t.Errorf("caller cancelled: %v; want load cancelled", err)
	}
}
