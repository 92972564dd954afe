package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// The engine's half of the bad-input corpus (docs/bad-input.md; tests/test_bad_input.py is the
// control plane's): every case is a user's mistake and must exit 2 with exactly one line on stderr
// naming the field (want), print nothing on stdout, and leave nothing behind — no file in the
// case's directory beyond those it set up (a trial's --out is never created), no state file of
// the process in /run/wirelab.

// badPageGood is a valid page file; cases edit it.
const badPageGood = `{"name":"p","seed":1,"origins":[{"host":"s1.wirelab.test"}],"objects":[
  {"id":"root","path":"/index.html","origin":0,"size":2000,"type":"html","content_type":"text/html"},
  {"id":"a","path":"/a.js","origin":0,"size":500,"type":"js","content_type":"application/javascript"}]}`

const badHARGood = `{"log":{"version":"1.2","creator":{"name":"t","version":"1"},"pages":[{"id":"p","title":"t","startedDateTime":"2024-01-01T00:00:00Z","pageTimings":{}}],"entries":[
 {"pageref":"p","startedDateTime":"2024-01-01T00:00:00Z","time":1,"request":{"method":"GET","url":"https://a.example/","httpVersion":"h2","headers":[],"queryString":[],"cookies":[],"headersSize":-1,"bodySize":0},"response":{"status":200,"statusText":"","httpVersion":"h2","headers":[],"cookies":[],"content":{"size":5000,"mimeType":"text/html"},"redirectURL":"","headersSize":-1,"bodySize":5000},"cache":{},"timings":{"send":0,"wait":1,"receive":0}},
 {"pageref":"p","startedDateTime":"2024-01-01T00:00:00Z","time":1,"request":{"method":"GET","url":"https://a.example/x.js","httpVersion":"h2","headers":[],"queryString":[],"cookies":[],"headersSize":-1,"bodySize":0},"response":{"status":200,"statusText":"","httpVersion":"h2","headers":[],"cookies":[],"content":{"size":50,"mimeType":"text/javascript"},"redirectURL":"","headersSize":-1,"bodySize":50},"cache":{},"timings":{"send":0,"wait":1,"receive":0}}]}}`

// fifo as a file's content in a case makes the file a FIFO (named pipe) with no writer: reading
// it would block.
const fifo = "<fifo>"

type badCase struct {
	name  string
	args  []string          // {dir} is the case's directory
	files map[string]string // relative to {dir}; "->target" makes a symbolic link, fifo a FIFO
	want  string            // the field (or flag) the line must name; {dir} is the case's directory
	// offMachine: the case gives a guard a target off the machine; it runs where no route leads
	// off the machine (offMachine).
	offMachine bool
}

func specCase(name, spec, want string) badCase {
	return badCase{name: "trial spec: " + name, args: []string{"trial", "--spec", "{dir}/spec.json", "--out", "{dir}/out"},
		files: map[string]string{"spec.json": spec}, want: want}
}

func pageCase(name, page, want string) badCase {
	c := specCase("page file: "+name, `{"page":"{dir}/page.json"}`, want)
	c.files["page.json"] = page
	return c
}

func harCase(name, har, want string) badCase {
	return badCase{name: "import-har: " + name, args: []string{"pages", "import-har", "{dir}/x.har", "--out", "{dir}/page.json"},
		files: map[string]string{"x.har": har}, want: want}
}

func mirrorCase(name string, files map[string]string, want string) badCase {
	return badCase{name: "mirror: " + name, args: []string{"pages", "mirror", "{dir}/site", "--out", "{dir}/page.json"}, files: files, want: want}
}

func badInputCases() []badCase {
	long := strings.Repeat("x", 200_000)
	rep := func(old, new string) string { return strings.Replace(badPageGood, old, new, 1) }
	harRep := func(old, new string) string { return strings.Replace(badHARGood, old, new, 1) }
	cases := []badCase{
		// Trial specs: the JSON document.
		specCase("not JSON", `{page: twitter}`, "spec"),
		specCase("empty file", ``, "spec"),
		specCase("an array", `["twitter"]`, "spec"),
		specCase("trailing garbage", `{"page":"twitter"} x`, "spec"),
		specCase("NaN literal", `{"page":"twitter","gap_ms":NaN}`, "spec"),
		specCase("Infinity literal", `{"page":"twitter","gap_ms":Infinity}`, "spec"),
		specCase("huge exponent", `{"page":"twitter","gap_ms":1e999}`, "gap_ms"),
		specCase("unknown field", `{"page":"twitter","pages":1}`, "pages"),
		specCase("unknown field, 130 kB name", `{"page":"twitter","`+long+`":1}`, "unknown field"),
		specCase("page missing", `{"protocols":["h2"]}`, "page"),
		specCase("page a number", `{"page":3}`, "page"),
		specCase("page null", `{"page":null}`, "page"),
		specCase("page unknown", `{"page":"twiter"}`, "page"),
		specCase("page 200 kB name", `{"page":"`+long+`"}`, "page"),
		specCase("page synthetic malformed", `{"page":"synthetic:manyx10kB"}`, "page"),
		specCase("page synthetic bad size", `{"page":"synthetic:4x10XB"}`, "page"),
		specCase("page file missing", `{"page":"{dir}/nope.json"}`, "page"),
		specCase("page file is a directory", `{"page":"{dir}/"}`, "page"),
		specCase("protocols empty", `{"page":"twitter","protocols":[]}`, "protocols"),
		specCase("protocol unknown", `{"page":"twitter","protocols":["h4"]}`, "protocols[0]"),
		specCase("protocol not a string", `{"page":"twitter","protocols":[2]}`, "protocols"),
		specCase("protocols not a list", `{"page":"twitter","protocols":"h2"}`, "protocols"),
		specCase("protocols duplicated", `{"page":"twitter","protocols":["h2","h2"]}`, "protocols"),
		specCase("repetitions zero", `{"page":"twitter","repetitions":0}`, "repetitions"),
		specCase("repetitions negative", `{"page":"twitter","repetitions":-1}`, "repetitions"),
		specCase("repetitions fractional", `{"page":"twitter","repetitions":1.5}`, "repetitions"),
		specCase("repetitions a string", `{"page":"twitter","repetitions":"3"}`, "repetitions"),
		specCase("repetitions huge", `{"page":"twitter","repetitions":100000000}`, "repetitions"),
		specCase("order unknown", `{"page":"twitter","order":"shuffled"}`, "order"),
		specCase("gap_ms negative", `{"page":"twitter","gap_ms":-5}`, "gap_ms"),
		specCase("seed negative", `{"page":"twitter","seed":-1}`, "seed"),
		specCase("seed fractional", `{"page":"twitter","seed":0.5}`, "seed"),
		specCase("shards negative", `{"page":"twitter","shards":-1}`, "shards"),
		specCase("shards too many", `{"page":"twitter","shards":100000}`, "shards"),
		specCase("shard_mode unknown", `{"page":"twitter","shard_mode":"random"}`, "shard_mode"),
		specCase("contract wrong", `{"page":"twitter","contract":"wirelab.trial/v99"}`, "contract"),
		specCase("trial_id with a slash", `{"page":"twitter","trial_id":"../x"}`, "trial_id"),
		specCase("trial_id 100 kB", `{"page":"twitter","trial_id":"`+long[:100000]+`"}`, "trial_id"),
		// Network profiles and traces.
		specCase("network unknown key", `{"page":"twitter","network":"rt=10ms"}`, "network"),
		specCase("network unknown preset", `{"page":"twitter","network":"5g-ultra"}`, "network"),
		specCase("network rtt negative", `{"page":"twitter","network":"rtt=-1ms"}`, "network"),
		specCase("network rtt no unit", `{"page":"twitter","network":"rtt=10"}`, "network"),
		specCase("network rtt huge", `{"page":"twitter","network":"rtt=99999s"}`, "network"),
		specCase("network bw garbage", `{"page":"twitter","network":"bw=fast"}`, "network"),
		specCase("network loss over 100%", `{"page":"twitter","network":"loss=150%"}`, "network"),
		specCase("network loss NaN", `{"page":"twitter","network":"loss=nan"}`, "network"),
		specCase("network bw inf", `{"page":"twitter","network":"bw=infmbit"}`, "network"),
		specCase("network queue zero", `{"page":"twitter","network":"queue=0"}`, "network"),
		specCase("network empty value", `{"page":"twitter","network":"rtt=10ms,bw="}`, "network"),
		specCase("network not a string", `{"page":"twitter","network":5}`, "network"),
		specCase("network cc unknown", `{"page":"twitter","network":"cc=nosuchcc"}`, "network"),
		specCase("network iw zero", `{"page":"twitter","network":"iw=0"}`, "network"),
		specCase("trace file missing", `{"page":"twitter","network":"trace_down={dir}/none.trace"}`, "trace_down"),
		specCase("trace file a directory", `{"page":"twitter","network":"trace_down={dir}"}`, "trace_down"),
		{name: "trace: garbage", args: []string{"trial", "--spec", "{dir}/spec.json", "--out", "{dir}/out"},
			files: map[string]string{"spec.json": `{"page":"twitter","network":"trace_down={dir}/t"}`, "t": "hello\n"}, want: "trace_down"},
		{name: "trace: empty", args: []string{"trial", "--spec", "{dir}/spec.json", "--out", "{dir}/out"},
			files: map[string]string{"spec.json": `{"page":"twitter","network":"trace_up={dir}/t"}`, "t": ""}, want: "trace_up"},
		{name: "trace: decreasing", args: []string{"trial", "--spec", "{dir}/spec.json", "--out", "{dir}/out"},
			files: map[string]string{"spec.json": `{"page":"twitter","network":"trace_down={dir}/t"}`, "t": "5\n3\n"}, want: "trace_down"},
		{name: "trace: negative", args: []string{"trial", "--spec", "{dir}/spec.json", "--out", "{dir}/out"},
			files: map[string]string{"spec.json": `{"page":"twitter","network":"trace_down={dir}/t"}`, "t": "-1\n"}, want: "trace_down"},
		// Server, client and capture knobs.
		specCase("server unknown field", `{"page":"twitter","server":{"pushh":"all"}}`, "server.pushh"),
		specCase("server not an object", `{"page":"twitter","server":"fast"}`, "server"),
		specCase("server.max_concurrent_streams too many", `{"page":"twitter","server":{"max_concurrent_streams":1001}}`, "server.max_concurrent_streams"),
		specCase("server.impl unknown", `{"page":"twitter","server":{"impl":"lighttpd"}}`, "server.impl"),
		specCase("server.push level too deep", `{"page":"twitter","server":{"push":"dependency-level:1001"}}`, "server.push"),
		specCase("server.nginx unknown knob", `{"page":"twitter","server":{"impl":"nginx","nginx":{"workers":2}}}`, "server.nginx.workers"),
		specCase("protocol a server does not serve", `{"page":"twitter","protocols":["h3"],"server":{"impl":"nginx"}}`, "protocols[0]"),
		specCase("server.push unknown", `{"page":"twitter","server":{"push":"some"}}`, "server.push"),
		specCase("server.push dependency-level:0", `{"page":"twitter","server":{"push":"dependency-level:0"}}`, "server.push"),
		specCase("client unknown field", `{"page":"twitter","client":{"imp":"engine"}}`, "client.imp"),
		specCase("client.impl unknown", `{"page":"twitter","client":{"impl":"firefox"}}`, "client.impl"),
		specCase("client.mode unknown", `{"page":"twitter","client":{"mode":"eager"}}`, "client.mode"),
		specCase("client.timeout_s negative", `{"page":"twitter","client":{"timeout_s":-1}}`, "client.timeout_s"),
		specCase("client.compute_scale negative", `{"page":"twitter","client":{"compute_scale":-1}}`, "client.compute_scale"),
		specCase("client.priority unknown", `{"page":"twitter","client":{"priority":"firefox"}}`, "client.priority"),
		specCase("capture unknown field", `{"page":"twitter","capture":{"pcaps":true}}`, "capture.pcaps"),
		specCase("capture.pcap a string", `{"page":"twitter","capture":{"pcap":"yes"}}`, "capture.pcap"),
		// Page files named by a spec.
		pageCase("not JSON", `{`, `page: got "{dir}/page.json"; invalid JSON`),
		pageCase("unknown field", rep(`"size":500`, `"sise":500`), "objects[1].sise"),
		pageCase("no objects", `{"name":"p","seed":1,"origins":[{"host":"s1.wirelab.test"}],"objects":[]}`, "objects"),
		pageCase("size zero", rep(`"size":500`, `"size":0`), "objects[1].size"),
		pageCase("size negative", rep(`"size":500`, `"size":-5`), "objects[1].size"),
		pageCase("size a string", rep(`"size":500`, `"size":"500"`), "size"),
		pageCase("size 2 GiB", rep(`"size":500`, `"size":2147483648`), "objects[1].size"),
		pageCase("duplicate id", rep(`"id":"a"`, `"id":"root"`), "objects[1].id"),
		pageCase("duplicate path", rep(`"path":"/a.js"`, `"path":"/index.html"`), "objects[1].path"),
		pageCase("path traversal", rep(`"path":"/a.js"`, `"path":"/../etc/passwd"`), "objects[1].path"),
		pageCase("origin out of range", rep(`"origin":0,"size":500`, `"origin":3,"size":500`), "objects[1].origin"),
		pageCase("type unknown", rep(`"type":"js"`, `"type":"wasm"`), "objects[1].type"),
		pageCase("content type bad", rep(`"content_type":"application/javascript"`, `"content_type":"js"`), "objects[1].content_type"),
		pageCase("name 10 MB", strings.Replace(badPageGood, `"name":"p"`, `"name":"`+strings.Repeat("n", 10<<20)+`"`, 1), "name"),
		pageCase("origin host wrong", rep(`"host":"s1.wirelab.test"`, `"host":"evil.example"`), "origins[0].host"),
		pageCase("dependency cycle", strings.TrimSuffix(badPageGood, "}")+`,"activities":[
		  {"id":"d0","kind":"download","object":"root","deps":[{"on":"e1"}]},
		  {"id":"d1","kind":"download","object":"a","deps":[{"on":"d0"}]},
		  {"id":"e1","kind":"evaluate","object":"a","duration_ms":1,"deps":[{"on":"d1"}]}]}`, "activities"),
		pageCase("file outside root_dir (..)", strings.Replace(rep(`"id":"a",`, `"id":"a","file":"../secret",`), `"seed":1,`, `"seed":1,"root_dir":"site",`, 1), "objects[1].file"),
		pageCase("file absolute", strings.Replace(rep(`"id":"a",`, `"id":"a","file":"/etc/passwd",`), `"seed":1,`, `"seed":1,"root_dir":"site",`, 1), "objects[1].file"),
		pageCase("file without root_dir", rep(`"id":"a",`, `"id":"a","file":"a.js",`), "root_dir"),
		func() badCase {
			c := pageCase("file is a link out of root_dir", strings.Replace(rep(`"id":"a",`, `"id":"a","file":"a.js",`), `"seed":1,`, `"seed":1,"root_dir":"site",`, 1), "objects[1].file")
			c.files["secret"] = strings.Repeat("s", 500)
			c.files["site/a.js"] = "->../secret"
			return c
		}(),
		func() badCase {
			c := pageCase("file under a directory link out of root_dir", strings.Replace(rep(`"id":"a",`, `"id":"a","file":"d/a.js",`), `"seed":1,`, `"seed":1,"root_dir":"site",`, 1), "objects[1].file")
			c.files["outside/a.js"] = strings.Repeat("s", 500)
			c.files["site/x"] = "x"
			c.files["site/d"] = "->../outside"
			return c
		}(),
		// Command-line paths and flags of trial.
		{name: "trial: no --spec", args: []string{"trial", "--out", "{dir}/out"}, want: "--spec"},
		{name: "trial: no --out", args: []string{"trial", "--spec", "{dir}/s.json"}, files: map[string]string{"s.json": `{"page":"twitter"}`}, want: "--out"},
		{name: "trial: --spec missing", args: []string{"trial", "--spec", "{dir}/none.json", "--out", "{dir}/out"}, want: "--spec"},
		{name: "trial: --spec a directory", args: []string{"trial", "--spec", "{dir}", "--out", "{dir}/out"}, want: "--spec"},
		{name: "trial: --out a file", args: []string{"trial", "--spec", "{dir}/s.json", "--out", "{dir}/s.json"}, files: map[string]string{"s.json": `{"page":"twitter"}`}, want: "--out"},
		{name: "trial: --out holds a trial", args: []string{"trial", "--spec", "{dir}/s.json", "--out", "{dir}/o"}, files: map[string]string{"s.json": `{"page":"twitter"}`, "o/trial.json": "{}"}, want: "--out"},
		{name: "trial: unknown flag", args: []string{"trial", "--spek", "x"}, want: "spek"},
		{name: "trial: extra argument", args: []string{"trial", "--spec", "{dir}/s.json", "--out", "{dir}/o", "more"}, want: "more"},
		{name: "trial --check: no spec", args: []string{"trial", "--check"}, want: "--spec"},
		{name: "trial --check: both", args: []string{"trial", "--check", "--spec", "{dir}/s.json", "--specs", "{dir}/s.json"}, want: "--spec"},
		{name: "trial --check: bad spec", args: []string{"trial", "--check", "--spec", "{dir}/s.json"}, files: map[string]string{"s.json": `{"page":"twitter","repetitions":0}`}, want: "repetitions"},
		{name: "trial --check: second of several bad", args: []string{"trial", "--check", "--specs", "{dir}/s.jsonl"},
			files: map[string]string{"s.jsonl": "{\"page\":\"twitter\",\"trial_id\":\"a\"}\n{\"page\":\"twitter\",\"trial_id\":\"b\",\"order\":\"x\"}\n"}, want: `spec 2 (trial_id "b"): order`},
		{name: "trial --check: empty specs", args: []string{"trial", "--check", "--specs", "{dir}/s.jsonl"}, files: map[string]string{"s.jsonl": "\n"}, want: "--specs"},
		{name: "trial: --specs without --check", args: []string{"trial", "--specs", "{dir}/s.jsonl", "--out", "{dir}/o"}, want: "--specs"},
		// HAR files.
		{name: "import-har: missing file", args: []string{"pages", "import-har", "{dir}/none.har"}, want: "none.har"},
		harCase("not JSON", `{"log":`, "har"),
		harCase("no log", `{"lag":{}}`, "log.entries"),
		harCase("entries not a list", `{"log":{"entries":{}}}`, "log.entries"),
		harCase("bodySize negative", harRep(`"bodySize":50}`, `"bodySize":-7}`), "entries[1].response.bodySize"),
		harCase("no entries", harRep(`"entries":[`, `"entries":[]}},"x":[`), "entries"),
		harCase("entry URL garbage", harRep(`"url":"https://a.example/x.js"`, `"url":"https://a.example/%zz"`), "entries[1].request.url"),
		harCase("negative content size", harRep(`"size":50,`, `"size":-50,`), "entries[1].response.content.size"),
		harCase("content size a string", harRep(`"size":50,`, `"size":"fifty",`), "entries[1]"),
		harCase("content size 1e300", harRep(`"size":50,`, `"size":1e300,`), "entries[1].response.content.size"),
		harCase("content size fractional", harRep(`"size":50,`, `"size":5.5,`), "entries[1].response.content.size"),
		// Mirrored sites.
		{name: "mirror: missing directory", args: []string{"pages", "mirror", "{dir}/none"}, want: "none"},
		{name: "mirror: a file", args: []string{"pages", "mirror", "{dir}/f"}, files: map[string]string{"f": "x"}, want: "directory"},
		mirrorCase("no root document", map[string]string{"site/a.html": "<p>", "site/b.html": "<p>"}, "index.html"),
		mirrorCase("link to a file outside", map[string]string{"site/index.html": `<img src="s.png">`, "secret": "S", "site/s.png": "->../secret"}, "s.png"),
		mirrorCase("link to a directory outside", map[string]string{"site/index.html": `<script src="js/a.js"></script>`, "out/a.js": "S", "site/js": "->../out"}, "js/a.js"),
		mirrorCase("chain of links out", map[string]string{"site/index.html": `<link rel=stylesheet href="a.css">`, "s.css": "S", "site/a.css": "->b.css", "site/b.css": "->../s.css"}, "a.css"),
		mirrorCase("root document a link out", map[string]string{"site/x": "x", "i.html": "<p>", "site/index.html": "->../i.html"}, "index.html"),
		mirrorCase("empty referenced file", map[string]string{"site/index.html": `<img src="e.png">`, "site/e.png": ""}, "e.png"),
		// Special files a spec or a flag names: refused without blocking or reading a device
		// (docs/bad-input.md, "Files and paths").
		pageCase("a FIFO", fifo, "page: got"),
		specCase("page file a character device", `{"page":"/dev/zero"}`, "a character device"),
		func() badCase {
			c := specCase("page file a FIFO named in the spec", `{"page":"{dir}/p.fifo"}`, "a FIFO")
			c.files["p.fifo"] = fifo
			return c
		}(),
		{name: "trace: a FIFO", args: []string{"trial", "--spec", "{dir}/spec.json", "--out", "{dir}/out"},
			files: map[string]string{"spec.json": `{"page":"twitter","network":"trace_down={dir}/t"}`, "t": fifo}, want: "trace_down"},
		specCase("trace a character device", `{"page":"twitter","network":"trace_up=/dev/zero"}`, "a character device"),
		{name: "server.config: a FIFO", args: []string{"trial", "--check", "--spec", "{dir}/spec.json"},
			files: map[string]string{"spec.json": `{"page":"twitter","server":{"impl":"nginx","config":"{dir}/c"}}`, "c": fifo}, want: "server.config"},
		specCase("server.config a character device", `{"page":"twitter","server":{"impl":"nginx","config":"/dev/zero"}}`, "server.config"),
		{name: "server.config: over 1 MiB", args: []string{"trial", "--check", "--spec", "{dir}/spec.json"},
			files: map[string]string{"spec.json": `{"page":"twitter","server":{"impl":"nginx","config":"{dir}/c"}}`, "c": strings.Repeat("#\n", 600_000)}, want: "at most 1 MiB"},
		{name: "import-har: a FIFO", args: []string{"pages", "import-har", "{dir}/x.har", "--out", "{dir}/page.json"}, files: map[string]string{"x.har": fifo}, want: "a FIFO"},
		{name: "import-har: a character device", args: []string{"pages", "import-har", "/dev/zero"}, want: "a character device"},
		{name: "mirror: a FIFO", args: []string{"pages", "mirror", "{dir}/site"}, files: map[string]string{"site": fifo}, want: "directory"},
		{name: "trial: --spec a FIFO", args: []string{"trial", "--spec", "{dir}/s.json", "--out", "{dir}/out"}, files: map[string]string{"s.json": fifo}, want: "--spec"},
		{name: "trial --check: --specs a FIFO", args: []string{"trial", "--check", "--specs", "{dir}/s.jsonl"}, files: map[string]string{"s.jsonl": fifo}, want: "--specs"},
		{name: "loadtest: --spec a FIFO", args: []string{"loadtest", "--check", "--spec", "{dir}/s.json"}, files: map[string]string{"s.json": fifo}, want: "--spec"},
		{name: "probe: --list a FIFO", args: []string{"probe", "--list", "{dir}/l"}, files: map[string]string{"l": fifo}, want: "--list"},
		{name: "probe: --ca a character device", args: []string{"probe", "--ca", "/dev/zero", "h1.wirelab.test"}, want: "--ca"},
		{name: "fetch: --urls a FIFO", args: []string{"fetch", "https://s1.wirelab.test/", "--proto", "h2", "--mode", "objects", "--urls", "{dir}/u"}, files: map[string]string{"u": fifo}, want: "--urls"},
		{name: "fetch: --ca a FIFO", args: []string{"fetch", "https://s1.wirelab.test/", "--proto", "h2", "--ca", "{dir}/ca"}, files: map[string]string{"ca": fifo}, want: "--ca"},
		// Output paths: checked before any work (docs/bad-input.md, "Files and paths").
		{name: "import-har: --out in a missing directory", args: []string{"pages", "import-har", "{dir}/x.har", "--out", "{dir}/none/p.json"},
			files: map[string]string{"x.har": badHARGood}, want: "--out {dir}/none/p.json: cannot be written"},
		{name: "import-har: --out a directory", args: []string{"pages", "import-har", "{dir}/x.har", "--out", "{dir}/d"},
			files: map[string]string{"x.har": badHARGood, "d/keep": "x"}, want: "--out {dir}/d: is a directory"},
		{name: "pages import: DIR missing", args: []string{"pages", "import", "{dir}/none", "--out", "{dir}/o"}, want: "pages import DIR {dir}/none: does not exist"},
		{name: "pages import: DIR a FIFO", args: []string{"pages", "import", "{dir}/f", "--out", "{dir}/o"}, files: map[string]string{"f": fifo}, want: "is a FIFO"},
		{name: "pages import: DIR a file", args: []string{"pages", "import", "{dir}/f", "--out", "{dir}/o"}, files: map[string]string{"f": "x"}, want: "give a directory"},
		{name: "pages import: --out in a missing directory", args: []string{"pages", "import", "{dir}/c", "--out", "{dir}/none/o"},
			files: map[string]string{"c/x.har": "{}"}, want: "--out {dir}/none/o"},
		{name: "pages import: --out a file", args: []string{"pages", "import", "{dir}/c", "--out", "{dir}/f"},
			files: map[string]string{"c/x.har": "{}", "f": "x"}, want: "--out {dir}/f: is a file"},
		{name: "pages generate: --out in a missing directory", args: []string{"pages", "generate", "--like", "httparchive-2014", "--count", "2", "--out", "{dir}/none/o"}, want: "--out {dir}/none/o"},
		{name: "mirror: --out in a missing directory", args: []string{"pages", "mirror", "{dir}/site", "--out", "{dir}/none/p.json"},
			files: map[string]string{"site/index.html": "<p>"}, want: "--out {dir}/none/p.json"},
		{name: "mirror: --out a directory", args: []string{"pages", "mirror", "{dir}/site", "--out", "{dir}/site"},
			files: map[string]string{"site/index.html": "<p>"}, want: "is a directory; give a file to write"},
		{name: "mirror: --out a FIFO", args: []string{"pages", "mirror", "{dir}/site", "--out", "{dir}/o"},
			files: map[string]string{"site/index.html": "<p>", "o": fifo}, want: "is a FIFO"},
		{name: "mirror: --out under a file", args: []string{"pages", "mirror", "{dir}/site", "--out", "{dir}/f/p.json"},
			files: map[string]string{"site/index.html": "<p>", "f": "x"}, want: "is a file, not a directory"},
		{name: "record: --out in a missing directory", args: []string{"pages", "record", "twitter", "--out", "{dir}/none/p.json"}, want: "--out"},
		{name: "record: --har a directory", args: []string{"pages", "record", "twitter", "--out", "{dir}/p.json", "--har", "{dir}"}, want: "--har"},
		{name: "fetch: --har in a missing directory", args: []string{"fetch", "https://s1.wirelab.test/", "--proto", "h2", "--har", "{dir}/none/x.har"}, want: "--har"},
		{name: "fetch: --keylog a directory", args: []string{"fetch", "https://s1.wirelab.test/", "--proto", "h2", "--keylog", "{dir}"}, want: "--keylog"},
		{name: "browse: --har a directory", args: []string{"browse", "https://s1.wirelab.test/", "--proto", "h2", "--har", "{dir}"}, want: "--har"},
		{name: "trial: --out in a missing directory", args: []string{"trial", "--spec", "{dir}/s.json", "--out", "{dir}/none/out"},
			files: map[string]string{"s.json": `{"page":"twitter"}`}, want: "--out"},
		{name: "loadtest: --out under a file", args: []string{"loadtest", "--spec", "{dir}/s.json", "--out", "{dir}/f/out"},
			files: map[string]string{"s.json": `{"page":"neoload50","protocol":"h2","scenario":{"stages":[{"duration_s":1,"target":1}]}}`, "f": "x"}, want: "--out"},
		{name: "shell: --stats in a missing directory", args: []string{"shell", "--stats", "{dir}/none/s.json", "--", "true"}, want: "--stats"},
		{name: "shell: --pcap a file", args: []string{"shell", "--pcap", "{dir}/f", "--", "true"}, files: map[string]string{"f": "x"}, want: "--pcap"},
		// Terminal escapes in input are shown escaped, never echoed raw.
		{name: "pages show: escapes in the name", args: []string{"pages", "show", "\x1b]0;title\a\x1b[2Jx"}, want: `\x1b]0;title`},
		{name: "fetch: escapes in --page", args: []string{"fetch", "https://s1.wirelab.test/", "--proto", "h2", "--page", "\x1b[2Jx"}, want: `\x1b[2Jx`},
		{name: "mirror: escapes in the directory", args: []string{"pages", "mirror", "{dir}/\x1b[2J\u202e"}, want: `\x1b[2J\u202e`},
		{name: "import-har: escapes in the file name", args: []string{"pages", "import-har", "{dir}/\x9b2J.har"}, want: `\x9b2J.har`},
		// Non-finite and unbounded numbers.
		specCase("gap_ms over an hour", `{"page":"twitter","gap_ms":3600001}`, "gap_ms"),
		specCase("client.timeout_s a day", `{"page":"twitter","client":{"timeout_s":86400}}`, "client.timeout_s"),
		specCase("client.compute_scale 1e300", `{"page":"twitter","client":{"compute_scale":1e300}}`, "client.compute_scale"),
		{name: "fetch: --compute-scale inf", args: []string{"fetch", "https://s1.wirelab.test/", "--proto", "h2", "--compute-scale", "inf"}, want: "compute-scale"},
		{name: "fetch: --timeout a year", args: []string{"fetch", "https://s1.wirelab.test/", "--proto", "h2", "--timeout", "8760h"}, want: "timeout"},
		{name: "bench variability: --compute-scale NaN", args: []string{"bench", "variability", "--compute-scale", "NaN"}, want: "--compute-scale"},
		{name: "bench tcpplus: --timeout a day", args: []string{"bench", "tcpplus", "--timeout", "24h"}, want: "--timeout"},
		{name: "pages record: --timeout a year", args: []string{"pages", "record", "twitter", "--out", "{dir}/p.json", "--timeout", "8760h"}, want: "--timeout"},
		// Other commands' inputs.
		{name: "unknown command", args: []string{"trail"}, want: "trail"},
		{name: "pages show: unknown page", args: []string{"pages", "show", "twiter"}, want: "page"},
		{name: "pages show: shards negative", args: []string{"pages", "show", "twitter", "--shards", "-2"}, want: "shards"},
		{name: "pages validate: bad page", args: []string{"pages", "validate", "{dir}/p.json"}, files: map[string]string{"p.json": strings.Replace(badPageGood, `"size":500`, `"size":0`, 1)}, want: "objects[1].size"},
		{name: "pages urls: bad token", args: []string{"pages", "urls", "twitter", "--token", "a b/c"}, want: "token"},
		{name: "serve: unknown page", args: []string{"serve", "--page", "twiter", "--addrs", "127.0.0.1"}, want: "page"},
		{name: "fetch: unknown protocol", args: []string{"fetch", "https://s1.wirelab.test/", "--proto", "h4"}, want: "--proto"},
		{name: "fetch: target outside the lab", args: []string{"fetch", "https://example.com/", "--proto", "h2"}, want: "example.com", offMachine: true},
		{name: "shell: bad profile", args: []string{"shell", "--net", "rtt=fast", "--", "true"}, want: "rtt"},
		{name: "gc: negative owner", args: []string{"gc", "--owner", "-1"}, want: "--owner"},
		{name: "gc: extra argument", args: []string{"gc", "now"}, want: "now"},
		{name: "browse: unknown protocol", args: []string{"browse", "https://s1.wirelab.test/", "--proto", "h4"}, want: "--proto"},
	}
	return cases
}

func setUpCase(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		body := strings.ReplaceAll(files[n], "{dir}", dir)
		if body == fifo {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if target, ok := strings.CutPrefix(body, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != dir {
			out = append(out, strings.TrimPrefix(p, dir))
		}
		return nil
	})
	return out
}

// TestBadInputCorpus is the engine's bad-input corpus (docs/bad-input.md).
func TestBadInputCorpus(t *testing.T) {
	t.Parallel() // no timing bound: runs beside the package's other such tests (parallel_test.go)
	cases := badInputCases()
	if len(cases) < 100 {
		t.Fatalf("%d cases; the corpus promises at least 100 on this side", len(cases))
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("duplicate case name %q", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			setUpCase(t, dir, c.files)
			before := listTree(t, dir)
			args := make([]string, len(c.args))
			for i, a := range c.args {
				args[i] = strings.ReplaceAll(a, "{dir}", dir)
			}
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), testMainEnv+"=1")
			if c.offMachine {
				cmd = offMachine(t)(args...)
			}
			cmd.Env = append(cmd.Env, "TMPDIR="+dir)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("exit %v; want 2 (stderr %q)", err, cut(stderr.String()))
			}
			line := stderr.String()
			if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
				t.Errorf("stderr is not one line: %q", cut(line))
			}
			if len(line) > 1000 {
				t.Errorf("stderr line of %d bytes: values must be cut (%q)", len(line), cut(line))
			}
			if want := strings.ReplaceAll(c.want, "{dir}", dir); !strings.Contains(line, want) {
				t.Errorf("stderr %q does not name %q", cut(line), want)
			}
			if i := strings.IndexFunc(strings.TrimSuffix(line, "\n"), isControl); i >= 0 {
				t.Errorf("stderr holds a control character at byte %d: %q", i, cut(line))
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q; want nothing", cut(stdout.String()))
			}
			if after := listTree(t, dir); !slices.Equal(before, after) {
				t.Errorf("left behind: files before %v, after %v", before, after)
			}
			assertNoStateOf(t, cmd.Process.Pid)
		})
	}
}

// assertNoStateOf fails if a state file in /run/wirelab names pid as its owner.
func assertNoStateOf(t *testing.T, pid int) {
	t.Helper()
	paths, _ := filepath.Glob("/run/wirelab/*.json")
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var st struct {
			PID int `json:"pid"`
		}
		if json.Unmarshal(data, &st) == nil && st.PID == pid {
			t.Errorf("state file %s of the refused command left behind", p)
		}
	}
}

// isControl: a character that can drive a terminal (C0, DEL, C1, a bidirectional override).
func isControl(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

func cut(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
