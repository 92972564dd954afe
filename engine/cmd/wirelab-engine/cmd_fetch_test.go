package main

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/internal/cli"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server"
	"github.com/wirelab/wirelab/engine/server/servertest"
)

func TestFetchBadFlags(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(empty, []byte("# nothing\n\n"), 0o600)
	notPEM := filepath.Join(dir, "ca.txt")
	os.WriteFile(notPEM, []byte("not a certificate"), 0o600)
	const u = "https://s1.wirelab.test/L/t/"
	for _, tc := range []struct {
		args []string
		want string // the message must name this
	}{
		{[]string{u}, "--proto: required"},
		{[]string{u, "--proto", "h4"}, "--proto h4: allowed: h1, h1s, h2, h2c, h3, spdy3"},
		{[]string{u, "--proto", "h2", "--priority", "urgent"}, "--priority urgent: allowed: none, chrome, dependency"},
		{[]string{u, "--proto", "h2", "--priority", "dependency"}, "--priority dependency: needs --page"},
		{[]string{u, "--proto", "h2", "--page", "nosuchpage"}, "--page nosuchpage"},
		{[]string{u, "--proto", "h2", "--accept-push=maybe"}, "accept-push"},
		{[]string{u, "--proto", "h2", "--mode", "eager"}, "--mode eager: allowed: flat, objects"},
		{[]string{u, "--proto", "h2", "--mode", "replay"}, "--page: required with --mode replay"},
		{[]string{u, "--proto", "h2", "--mode", "replay", "--page", "twitter", "--compute-scale", "-1"}, "-compute-scale: allowed: a number 0–100"},
		{[]string{u, "--proto", "h2", "--mode", "replay", "--page", "nosuchpage"}, "--page nosuchpage"},
		{[]string{u, "--proto", "h2", "--compute-scale", "2"}, "--compute-scale: only with --mode replay"},
		{[]string{u, "--proto", "h1", "--max-conns", "0"}, `"0" for flag -max-conns: allowed: an integer 1–64`},
		{[]string{u, "--proto", "h1", "--max-conns", "65"}, `flag -max-conns: allowed`},
		{[]string{u, "--proto", "h1", "--timeout", "soon"}, `"soon" for flag -timeout: allowed: a duration > 0`},
		{[]string{u, "--proto", "h1", "--timeout", "0s"}, `flag -timeout: allowed`},
		{[]string{u, "--proto", "h1", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"--proto", "h1"}, "want exactly one URL, got 0"},
		{[]string{u, u, "--proto", "h1"}, "want exactly one URL, got 2"},
		{[]string{u, "--proto", "h2", "--dns", "10.77.2.53", "--resolve", "a=10.77.1.1"}, "--dns and --resolve: choose one"},
		{[]string{u, "--proto", "h2", "--dns", "dns.example:53"}, "--dns dns.example:53: want an IP address"},
		{[]string{u, "--proto", "h2", "--resolve", "s1.wirelab.test"}, "--resolve s1.wirelab.test:"},
		{[]string{u, "--proto", "h2", "--ca", filepath.Join(dir, "missing.pem")}, "--ca " + filepath.Join(dir, "missing.pem")},
		{[]string{u, "--proto", "h2", "--ca", notPEM}, "no PEM certificate"},
		{[]string{u, "--proto", "h2", "--mode", "objects"}, "--urls: required with --mode objects"},
		{[]string{u, "--proto", "h2", "--urls", empty}, "only with --mode objects"},
		{[]string{u, "--proto", "h2", "--mode", "objects", "--urls", empty}, "no URLs in the list"},
		{[]string{"https://10.78.0.1/", "--proto", "h2"}, "not a lab target"},
		{[]string{"http://s1.wirelab.test/", "--proto", "h2"}, "scheme http does not match protocol h2"},
		{[]string{"https://s1.wirelab.test/", "--proto", "h2", "--keylog", filepath.Join(dir, "no", "such", "dir")}, "--keylog"},
	} {
		var out bytes.Buffer
		err := runFetch(tc.args, strings.NewReader(""), &out)
		if err == nil || !cli.IsUsage(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want a usage error naming %q", tc.args, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: message is not one line: %q", tc.args, err)
		}
		if out.Len() != 0 {
			t.Errorf("%q: printed %q on stdout", tc.args, out.String())
		}
	}
	// main maps them to exit status 2.
	if code := exitCode(cli.Usagef("x")); code != 2 {
		t.Errorf("usage error exits %d", code)
	}
}

// Targets off the machine are refused before anything is resolved or sent: the engine runs where
// no route leads off the machine (offMachine), so that a broken guard could not reach them.
func TestFetchRefusesTargetsOffTheMachine(t *testing.T) {
	run := offMachine(t)
	const u = "https://s1.wirelab.test/L/t/"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{u, "--proto", "h2", "--dns", "8.8.8.8"}, "--dns 8.8.8.8: not a lab target"},
		{[]string{"https://example.com/", "--proto", "h2"}, `host "example.com": not a lab target`},
		{[]string{"https://192.0.2.1/", "--proto", "h2"}, `host "192.0.2.1": not a lab target`},
	} {
		wantRefused(t, tc.args, run(append([]string{"fetch"}, tc.args...)...), tc.want)
	}
}

func TestFetchHelp(t *testing.T) {
	var out bytes.Buffer
	if err := runFetch([]string{"-h"}, nil, &out); err != nil || !strings.HasPrefix(out.String(), "usage: wirelab-engine fetch URL") {
		t.Errorf("-h: %v %q", err, out.String())
	}
}

// testOrigin serves a small page over TLS on 127.0.0.1 and writes its CA to a PEM file.
func testOrigin(t *testing.T) (base, caFile string, sizes map[string]int) {
	sizes = map[string]int{"/": 0, "/s.css": 0, "/a.png": 3000, "/b.png": 4500, "/c.png": 100}
	bodies := map[string][]byte{
		"/":      []byte(`<!doctype html><link rel="stylesheet" href="/s.css"><img src="/a.png"><img src="a.png">`),
		"/s.css": []byte(`.x{background:url(b.png)}`),
	}
	for p, n := range sizes {
		if bodies[p] == nil {
			bodies[p] = bytes.Repeat([]byte{byte(n)}, n)
		}
		sizes[p] = len(bodies[p])
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := bodies[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if strings.HasSuffix(r.URL.Path, ".css") {
			w.Header().Set("Content-Type", "text/css")
		} else if r.URL.Path == "/" {
			w.Header().Set("Content-Type", "text/html")
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)
	return srv.URL, caFile, sizes
}

func TestFetchJSON(t *testing.T) {
	base, ca, sizes := testOrigin(t)
	var out bytes.Buffer
	harPath := filepath.Join(t.TempDir(), "load.har")
	err := runFetch([]string{"--proto", "h1s", base + "/", "--ca", ca, "--json", "--max-conns", "2", "--har", harPath}, nil, &out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one JSON line, got %q", out.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	// The load record's loader fields (seam.LoaderResult), and the loader's own in client.
	keys := make([]string, 0, len(rec))
	for k := range rec {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{"body_bytes", "client", "connections", "error", "monotonic_end_ns", "monotonic_start_ns", "objects",
		"phases_ms", "plt_ms", "protocol", "pushed_bytes", "pushes_unused", "pushes_used", "quic_packets_lost",
		"started_at", "timeline", "tls_handshakes", "tls_resumed", "view"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	extras := make([]string, 0)
	for k := range rec["client"].(map[string]any) {
		extras = append(extras, k)
	}
	sort.Strings(extras)
	if want := []string{"dns_queries", "mode", "priority", "protocols", "retries", "url", "zero_rtt_connections"}; !reflect.DeepEqual(extras, want) {
		t.Errorf("client %v, want %v", extras, want)
	}
	// The load's instants on CLOCK_MONOTONIC: end − start is the PLT, and both lie in the past.
	var now unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
	start, end := rec["monotonic_start_ns"].(float64), rec["monotonic_end_ns"].(float64)
	if d := (end - start) / 1e6; math.Abs(d-rec["plt_ms"].(float64)) > 0.01 || end > float64(now.Nano()) || start < float64(now.Nano())-60e9 {
		t.Errorf("monotonic start %.0f end %.0f (now %d), plt %v ms", start, end, now.Nano(), rec["plt_ms"])
	}
	phases := rec["phases_ms"].(map[string]any)
	if len(phases) != 7 || phases["connect"] == nil || phases["blocked"] == nil {
		t.Errorf("phases_ms %v", phases)
	}
	total := 0
	for _, n := range sizes {
		total += n
	}
	// "/" and "a.png" resolve to the same URL as "/a.png": 4 objects.
	if rec["objects"] != float64(4) || rec["body_bytes"] != float64(total-sizes["/c.png"]) || rec["error"] != nil || rec["plt_ms"].(float64) <= 0 {
		t.Errorf("record %s", lines[0])
	}
	if c := rec["connections"].(float64); c < 1 || c > 2 || rec["tls_handshakes"] != c {
		t.Errorf("connections %v, tls_handshakes %v with --max-conns 2", c, rec["tls_handshakes"])
	}
	// The HAR: one page, one entry per object, with the loader's extensions.
	data, err := os.ReadFile(harPath)
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Log struct {
			Creator struct{ Name string }
			Pages   []struct{ ID string }
			Entries []struct {
				Protocol string `json:"_protocol"`
				ConnID   string `json:"_connection"`
			}
		}
	}
	if err := json.Unmarshal(data, &h); err != nil {
		t.Fatal(err)
	}
	if h.Log.Creator.Name != "wirelab-engine" || len(h.Log.Pages) != 1 || len(h.Log.Entries) != 4 {
		t.Errorf("HAR: %s", data)
	}
	for _, e := range h.Log.Entries {
		if e.Protocol != "HTTP/1.1" || e.ConnID == "" {
			t.Errorf("HAR entry %+v", e)
		}
	}
}

func TestFetchObjectsAndFailure(t *testing.T) {
	base, ca, sizes := testOrigin(t)
	list := filepath.Join(t.TempDir(), "urls.txt")
	os.WriteFile(list, []byte("# objects\n/a.png\nb.png\n\n"+base+"/c.png\n"), 0o600)
	var out bytes.Buffer
	if err := runFetch([]string{base + "/", "--proto=h1s", "--mode=objects", "--urls=" + list, "--ca=" + ca}, nil, &out); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("3 objects, %d body bytes", sizes["/a.png"]+sizes["/b.png"]+sizes["/c.png"])
	if !strings.Contains(out.String(), want) {
		t.Errorf("table output lacks %q:\n%s", want, out.String())
	}
	// A missing object: the result is printed, the command fails (exit 1, not 2).
	out.Reset()
	err := runFetch([]string{base + "/", "--proto", "h1s", "--mode", "objects", "--urls", "-", "--ca", ca, "--json"}, strings.NewReader("/a.png\n/missing.png\n"), &out)
	if err == nil || cli.IsUsage(err) || !strings.Contains(err.Error(), "/missing.png: status 404") || exitCode(err) != 1 {
		t.Errorf("missing object: %v", err)
	}
	var rec struct {
		Error   *string `json:"error"`
		Objects int     `json:"objects"`
	}
	if json.Unmarshal(out.Bytes(), &rec) != nil || rec.Error == nil || rec.Objects != 1 {
		t.Errorf("printed %q", out.String())
	}
	// Without the CA the handshake fails: a load error.
	err = runFetch([]string{base + "/", "--proto", "h1s", "--json"}, nil, &out)
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusted server: %v", err)
	}
}

// TestFetchPushPrioritySPDY: fetch against the built-in server pushing everything: over h2 and
// spdy3 it accepts the pushes by default (no request for a pushed object), reports them in the
// JSON line, marks them in the HAR (_was_pushed) with each entry's priority, and names spdy3's
// entries spdy/3.1; --accept-push=false turns push off.
func TestFetchPushPrioritySPDY(t *testing.T) {
	pg, err := page.Load("twitter", 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.DefaultConfig(netip.MustParseAddr("127.0.0.1"))
	cfg.Push, _ = server.ParsePushPolicy("all")
	srv := servertest.Start(t, pg, cfg)
	var pushedBytes int64
	for _, o := range pg.Objects[1:] {
		pushedBytes += o.Size
	}
	for _, tc := range []struct {
		proto, wire string
		accept      bool
	}{{"h2", "h2", true}, {"spdy3", "spdy/3.1", true}, {"spdy3", "spdy/3.1", false}} {
		root, _ := srv.RootURL(server.Protocol(tc.proto), page.NewToken())
		harPath := filepath.Join(t.TempDir(), "load.har")
		var out bytes.Buffer
		args := []string{root, "--proto", tc.proto, "--resolve", "s1.wirelab.test=127.0.0.1", "--ca", srv.Certs().CAPath(),
			"--priority", "chrome", "--page", "twitter", "--json", "--har", harPath, fmt.Sprintf("--accept-push=%v", tc.accept)}
		if err := runFetch(args, nil, &out); err != nil {
			t.Fatalf("%v: %v", tc, err)
		}
		var rec struct {
			Objects      int   `json:"objects"`
			PushedBytes  int64 `json:"pushed_bytes"`
			PushesUsed   int   `json:"pushes_used"`
			PushesUnused int   `json:"pushes_unused"`
		}
		if err := json.Unmarshal(out.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		wantUsed, wantBytes := len(pg.Objects)-1, pushedBytes
		if !tc.accept {
			wantUsed, wantBytes = 0, 0
		}
		if rec.Objects != len(pg.Objects) || rec.PushesUsed != wantUsed || rec.PushedBytes != wantBytes || rec.PushesUnused != 0 {
			t.Errorf("%v: record %s", tc, out.String())
		}
		data, _ := os.ReadFile(harPath)
		var h struct {
			Log struct {
				Entries []struct {
					Protocol  string `json:"_protocol"`
					WasPushed int    `json:"_was_pushed"`
					Priority  string `json:"_priority_signal"`
				}
			}
		}
		if err := json.Unmarshal(data, &h); err != nil {
			t.Fatal(err)
		}
		pushed := 0
		for _, e := range h.Log.Entries {
			pushed += e.WasPushed
			if e.Protocol != tc.wire || e.Priority == "" {
				t.Errorf("%v: HAR entry %+v", tc, e)
			}
		}
		if pushed != wantUsed {
			t.Errorf("%v: %d HAR entries _was_pushed, want %d", tc, pushed, wantUsed)
		}
	}
}
