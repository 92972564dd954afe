package trial

import (
	"fmt"
	"net/netip"

	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/server/impl"

	"slices"
	"strings"
	"testing"
)

func prepared(t *testing.T, spec string) *Prepared {
	t.Helper()
	s, err := DecodeSpec([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// flagValue is the value following flag in args ("" when absent).
func flagValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// A replay load gets the served page's file and the compute scale; flat loads get neither.
func TestLoaderArgsReplay(t *testing.T) {
	p := prepared(t, `{"page":"nytimes","shards":3,"protocols":["h2c","h2"],"client":{"mode":"replay","compute_scale":0.5}}`)
	files := loadFiles{CAFile: "/x/ca.pem", PageFile: "/x/page.json", HAR: "/o/0.har"}
	args, err := loaderArgs(p, p.Sequence[0], "tok", files)
	if err != nil {
		t.Fatal(err)
	}
	if args[0] != "fetch" || !strings.HasPrefix(args[1], "http://s1.wirelab.test/L/tok/") {
		t.Errorf("args %q: want fetch of the h2c root URL", args)
	}
	for flag, want := range map[string]string{"--mode": "replay", "--page": "/x/page.json", "--compute-scale": "0.5", "--proto": "h2c", "--dns": "10.77.2.53", "--har": "/o/0.har"} {
		if got := flagValue(args, flag); got != want {
			t.Errorf("%s %q, want %q (args %q)", flag, got, want, args)
		}
	}
	if slices.Contains(args, "--ca") {
		t.Errorf("cleartext load got --ca: %q", args)
	}
	args, _ = loaderArgs(p, p.Sequence[1], "tok", files)
	if flagValue(args, "--ca") != "/x/ca.pem" {
		t.Errorf("h2 load: %q", args)
	}
	if _, err := loaderArgs(p, p.Sequence[0], "tok", loadFiles{}); err == nil {
		t.Error("a replay load without the page file was accepted")
	}
	flat := prepared(t, `{"page":"nytimes","protocols":["h2"]}`)
	args, _ = loaderArgs(flat, flat.Sequence[0], "tok", files)
	if slices.Contains(args, "--page") || slices.Contains(args, "--compute-scale") {
		t.Errorf("flat load: %q", args)
	}
}

// server.push goes to serve --push; the loader accepts pushes only when the server pushes, and
// signals client.priority with the served page (types and depths); spdy3 is fetched over https
// from the TLS port with the run's CA.
func TestMechanismArgs(t *testing.T) {
	p := prepared(t, `{"page":"twitter","protocols":["spdy3","h2c"],"server":{"push":"dependency-level:1"},"client":{"priority":"dependency"}}`)
	serve := builtinArgv(t, p)
	if flagValue(serve, "--push") != "dependency-level:1" || flagValue(serve, "--protocols") != "spdy3,h2c" {
		t.Errorf("serve args %q", serve)
	}
	files := loadFiles{CAFile: "/x/ca.pem", PageFile: "/x/page.json"}
	spdy, err := loaderArgs(p, p.Sequence[0], "tok", files)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(spdy[1], "https://s1.wirelab.test/L/tok/") {
		t.Errorf("spdy3 root URL %q: want https on the default port", spdy[1])
	}
	for flag, want := range map[string]string{"--proto": "spdy3", "--mode": "flat", "--priority": "dependency", "--page": "/x/page.json", "--ca": "/x/ca.pem"} {
		if got := flagValue(spdy, flag); got != want {
			t.Errorf("%s %q, want %q (args %q)", flag, got, want, spdy)
		}
	}
	if !slices.Contains(spdy, "--accept-push=true") || slices.Contains(spdy, "--compute-scale") {
		t.Errorf("spdy3 args %q", spdy)
	}
	if _, err := loaderArgs(p, p.Sequence[0], "tok", loadFiles{CAFile: "/x/ca.pem"}); err == nil {
		t.Error("a dependency-priority load without the page file was accepted")
	}

	plain := prepared(t, `{"page":"twitter","protocols":["h2"]}`)
	if got := flagValue(builtinArgv(t, plain), "--push"); got != "none" {
		t.Errorf("default serve --push %q", got)
	}
	args, _ := loaderArgs(plain, plain.Sequence[0], "tok", files)
	if flagValue(args, "--priority") != "none" || !slices.Contains(args, "--accept-push=false") || slices.Contains(args, "--page") {
		t.Errorf("default fetch args %q", args)
	}
}

// A Chromium load is browse with the SPKI hash (no CA file) and the resolver of client.dns.
func TestLoaderArgsChromium(t *testing.T) {
	p := prepared(t, `{"page":"twitter","protocols":["h1","h3"],"client":{"impl":"chromium","dns":"static","timeout_s":30}}`)
	files := loadFiles{CAFile: "/x/ca.pem", SPKI: "abc=", HAR: "/o/1.har"}
	h1, err := loaderArgs(p, p.Sequence[0], "tok", files)
	if err != nil {
		t.Fatal(err)
	}
	h3, err := loaderArgs(p, p.Sequence[1], "tok", files)
	if err != nil {
		t.Fatal(err)
	}
	if h1[0] != "browse" || !strings.HasPrefix(h1[1], "http://") || slices.Contains(h1, "--spki") {
		t.Errorf("h1: %q", h1)
	}
	for flag, want := range map[string]string{"--proto": "h3", "--spki": "abc=", "--timeout": "30s", "--har": "/o/1.har",
		"--resolve": "www.wirelab.test=10.77.1.1,s1.wirelab.test=10.77.1.1"} {
		if got := flagValue(h3, flag); got != want {
			t.Errorf("%s %q, want %q (args %q)", flag, got, want, h3)
		}
	}
	if slices.Contains(h3, "--ca") || slices.Contains(h3, "--mode") || !slices.Contains(h3, "--json") {
		t.Errorf("h3: %q", h3)
	}
	if _, err := loaderArgs(p, p.Sequence[1], "tok", loadFiles{}); err == nil {
		t.Error("an https Chromium load without the SPKI hash was accepted")
	}
	// the defaults: a first view on a desktop screen at full speed, with frames where asked
	for _, flag := range []string{"--view", "--cpu-slowdown"} {
		if slices.Contains(h3, flag) {
			t.Errorf("default spec passes %s: %q", flag, h3)
		}
	}
	if got := flagValue(h3, "--viewport"); got != "1350x940" {
		t.Errorf("--viewport %q, want the default 1350x940", got)
	}
	if !slices.Contains(h3, "--screenshots") || slices.Contains(h3, "--frames") {
		t.Errorf("capture.screenshots (default true) without a frames directory: %q", h3)
	}
	// the visual and view knobs pass through (docs/vitals.md)
	p = prepared(t, `{"page":"twitter","protocols":["h2"],"client":{"impl":"chromium","view":"repeat","cpu_slowdown":4,
		"viewport":"412x823@1.75,mobile"},"capture":{"screenshots":false}}`)
	h2, err := loaderArgs(p, p.Sequence[0], "tok", loadFiles{SPKI: "abc=", Frames: "/o/frames/0-h2-0"})
	if err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{"--view": "repeat", "--cpu-slowdown": "4", "--viewport": "412x823@1.75,mobile",
		"--frames": "/o/frames/0-h2-0"} {
		if got := flagValue(h2, flag); got != want {
			t.Errorf("%s %q, want %q (args %q)", flag, got, want, h2)
		}
	}
	if slices.Contains(h2, "--screenshots") {
		t.Errorf("capture.screenshots false: %q", h2)
	}
}

// client.h3 and client.view reach both loaders: fetch gets --h3 and --view, browse gets --h3 and
// every origin's host in --quic-hosts (Chromium accepts the run's certificate over QUIC only for
// them); the lab is asked to announce h3 (Alt-Svc) or to serve HTTPS records.
func TestLoaderArgsH3Discovery(t *testing.T) {
	for _, tc := range []struct{ impl, h3, view string }{{"engine", "alt-svc", "repeat"}, {"engine", "https-rr", "first"}, {"chromium", "alt-svc", "repeat"}, {"chromium", "https-rr", "first"}} {
		p := prepared(t, fmt.Sprintf(`{"page":"twitter","shards":2,"protocols":["h3","h2"],"repetitions":1,"client":{"impl":%q,"h3":%q,"view":%q}}`, tc.impl, tc.h3, tc.view))
		args, err := loaderArgs(p, p.Sequence[0], "tok", loadFiles{CAFile: "/x/ca.pem", SPKI: "abc="})
		if err != nil {
			t.Fatal(err)
		}
		h2, err := loaderArgs(p, p.Sequence[1], "tok", loadFiles{CAFile: "/x/ca.pem", SPKI: "abc="})
		if err != nil {
			t.Fatal(err)
		}
		if p.Sequence[1].Protocol != "h2" || slices.Contains(h2, "--h3") || slices.Contains(h2, "--quic-hosts") {
			t.Errorf("%+v: the h2 load (%s) gets %q", tc, p.Sequence[1].Protocol, h2)
		}
		if got := flagValue(args, "--h3"); got != tc.h3 {
			t.Errorf("%+v: --h3 %q (args %q)", tc, got, args)
		}
		if got := flagValue(args, "--view"); (got != "repeat") != (tc.view == "first") {
			t.Errorf("%+v: --view %q (args %q)", tc, got, args)
		}
		if got := flagValue(args, "--quic-hosts"); tc.impl == "chromium" && got != "s1.wirelab.test,s2.wirelab.test,www.wirelab.test" {
			t.Errorf("%+v: --quic-hosts %q", tc, got)
		}
	}
	// forced, the default: nothing passed
	p := prepared(t, `{"page":"twitter","protocols":["h3"]}`)
	args, _ := loaderArgs(p, p.Sequence[0], "tok", loadFiles{CAFile: "/x/ca.pem"})
	if slices.Contains(args, "--h3") || slices.Contains(args, "--view") {
		t.Errorf("default: %q", args)
	}
	// the built-in server announces h3 only when asked, on the QUIC port
	p = prepared(t, `{"page":"twitter","protocols":["h2","h3"],"client":{"h3":"alt-svc"}}`)
	in := &impl.Provision{PageArg: p.PageArg, Seed: 1, Shards: 1, ShardMode: "round-robin", Origins: []netip.Addr{labaddr.OriginAddr(1)},
		Protocols: p.Spec.Protocols, Server: p.Spec.Server, CertDir: "/x", Engine: "e", Ports: impl.DefaultPorts}
	for _, ask := range []bool{false, true} {
		in.AnnounceH3 = ask
		l, err := impl.Builtin{}.Provision(in)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := flagValue(l.Argv, "--alt-svc"), map[bool]string{true: `h3=":443"; ma=86400`}[ask]; got != want {
			t.Errorf("AnnounceH3 %v: --alt-svc %q, want %q", ask, got, want)
		}
	}
}

// What Chromium cannot do is refused before anything starts, naming the field.
func TestChromiumRefusals(t *testing.T) {
	for spec, want := range map[string]string{
		`{"page":"twitter","protocols":["h2","spdy3"],"client":{"impl":"chromium"}}`:          `protocols[1]: got "spdy3"; not loadable by client.impl chromium`,
		`{"page":"twitter","protocols":["h2c"],"client":{"impl":"chromium"}}`:                 `protocols[0]: got "h2c"; not loadable by client.impl chromium`,
		`{"page":"twitter","protocols":["h2"],"client":{"impl":"chromium","mode":"objects"}}`: `client.mode: got "objects"`,
		// what only Chromium does (docs/vitals.md)
		`{"page":"twitter","protocols":["h3"],"client":{"h3":"https-rr","dns":"static"}}`:                   `client.h3: got "https-rr"; finds HTTP/3 in the lab DNS server's HTTPS records`,
		`{"page":"twitter","protocols":["h3"],"client":{"impl":"chromium","h3":"https-rr","dns":"static"}}`: `client.h3: got "https-rr"`,
		`{"page":"twitter","protocols":["h2"],"client":{"cpu_slowdown":4}}`:                                 `client.cpu_slowdown: got "4"; slows Chromium's renderer`,
		`{"page":"twitter","protocols":["h2"],"client":{"impl":"chromium","viewport":"412x823@0.0"}}`:       `client.viewport: got "412x823@0.0"`,
	} {
		s, err := DecodeSpec([]byte(spec))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Prepare(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
}

// builtinArgv is the command line the built-in server's implementation runs for a prepared trial.
func builtinArgv(t *testing.T, p *Prepared) []string {
	t.Helper()
	l, err := impl.Builtin{}.Provision(&impl.Provision{PageArg: p.PageArg, Seed: p.Spec.Seed, Shards: p.Spec.Shards,
		ShardMode: p.Spec.ShardMode, Origins: []netip.Addr{labaddr.OriginAddr(1)}, Protocols: p.Spec.Protocols,
		Server: p.Spec.Server, CertDir: "/x/certs", Engine: "wirelab-engine", Ports: impl.DefaultPorts})
	if err != nil {
		t.Fatal(err)
	}
	return l.Argv[1:]
}
