package seam

import (
	"flag"
	"io"
	"reflect"
	"testing"
	"time"
)

// What a parent's Args writes, the child's Bind reads back into the same struct: for every field.
func TestArgsAndBindRoundTrip(t *testing.T) {
	sv := Serve{Page: "/x/p.json", Seed: 9, Shards: 3, ShardMode: "tld", Addrs: []string{"10.77.1.1", "10.77.1.2"},
		Protocols: []string{"h1s", "h2"}, PortHTTP: 8080, PortHTTPS: 8443, PortQUIC: 8443, MaxConcurrentStreams: 7,
		WriteChunkBytes: 4096, TLSVersion: "1.2", SessionResumption: true, KeepAlive: false, Push: "all",
		CertDir: "/c", Certs: "/d", ReadyFile: "/r", DNS: "10.77.2.53:53", Records: "/req", Conns: "/conns", QUICStats: true,
		AltSvc: `h3=":8443"; ma=86400`, HTTPSALPN: []string{"h3", "h2"}}
	back := DefaultServe()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	back.Bind(fs)
	if err := fs.Parse(sv.Args()[1:]); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sv, back) {
		t.Errorf("serve:\n sent %+v\n read %+v", sv, back)
	}

	fe := Fetch{URL: "https://s1.wirelab.test/L/t/", Proto: "h2", Mode: "replay", Page: "/x/p.json", Seed: 3, ComputeScale: "0.5",
		URLs: "/u", MaxConns: 4, Priority: "chrome", AcceptPush: false, DNS: "10.77.2.53", Resolve: "", CA: "/ca.pem",
		Timeout: 30 * time.Second, JSON: true, HAR: "/h.har", KeyLog: "/k", AllowAnyTarget: true, AllowInternet: true,
		H3: "https-rr", View: "repeat"}
	fb := DefaultFetch()
	fs = flag.NewFlagSet("fetch", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fb.Bind(fs, 64)
	args := fe.Args()
	if args[0] != "fetch" || args[1] != fe.URL {
		t.Fatalf("fetch args %q", args)
	}
	if err := fs.Parse(args[2:]); err != nil {
		t.Fatal(err)
	}
	fb.URL = args[1]
	if !reflect.DeepEqual(fe, fb) {
		t.Errorf("fetch:\n sent %+v\n read %+v", fe, fb)
	}

	br := Browse{URL: "https://s1.wirelab.test/L/t/", Proto: "h3", Resolve: "s1.wirelab.test=10.77.1.1", SPKI: "abc=",
		Timeout: time.Minute, JSON: true, HAR: "/h.har", Chromium: "/usr/bin/chromium", ChromiumLog: true, AllowInternet: true,
		View: "repeat", H3: "alt-svc", QUICHosts: []string{"s1.wirelab.test", "s2.wirelab.test"}, CPUSlowdown: 4,
		Viewport: "412x823@1.75,mobile", Screenshots: true, Frames: "/f/3-h2-1", VisualTrace: "/t/3-h2-1.json"}
	bb := DefaultBrowse()
	fs = flag.NewFlagSet("browse", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	bb.Bind(fs)
	args = br.Args()
	if err := fs.Parse(args[2:]); err != nil {
		t.Fatal(err)
	}
	bb.URL = args[1]
	if !reflect.DeepEqual(br, bb) {
		t.Errorf("browse:\n sent %+v\n read %+v", br, bb)
	}
}

// A loader's summary becomes a LoaderResult: its own fields in place, a nested client kept, every
// other field in client.
func TestNewLoaderResult(t *testing.T) {
	summary := map[string]any{"plt_ms": 12.5, "objects": 3, "protocol": "h2", "url": "u", "mode": "browser",
		"client": map[string]any{"impl": "chromium", "on_load_ms": 13.1}, "error": nil, "quic_packets_lost": 2}
	r, err := NewLoaderResult(summary, 5, 9)
	if err != nil {
		t.Fatal(err)
	}
	if r.PltMs != 12.5 || r.Objects != 3 || r.QUICPacketsLost != 2 || r.MonotonicStartNs != 5 || r.MonotonicEndNs != 9 {
		t.Errorf("fields %+v", r)
	}
	want := map[string]any{"impl": "chromium", "on_load_ms": 13.1, "url": "u", "mode": "browser"}
	if !reflect.DeepEqual(r.Client, want) {
		t.Errorf("client %v, want %v", r.Client, want)
	}
}
