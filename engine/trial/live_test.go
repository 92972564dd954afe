package trial

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/har"
	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/sites"
)

// Live pages are checked before anything exists: every refusal is one field error, and a public
// site is refused without allow_internet before its name is ever resolved. (Prepare sends nothing:
// the public pages here with allow_internet are checks of the spec, never loads.)
func TestLivePageRefusals(t *testing.T) {
	cases := []struct{ spec, field, words string }{
		{`{"page":"url:h3.wirelab.test"}`, "page", "url: and an http:// or https:// URL"},
		{`{"page":"url:"}`, "page", "url: and an http:// or https:// URL"},
		{`{"page":"url:ftp://h3.wirelab.test/"}`, "page", `scheme "ftp" is not http or https`},
		{`{"page":"url:https://"}`, "page", "has no host"},
		{`{"page":"url:https://h3.wirelab.test:8443/"}`, "page", "has no port"},
		{`{"page":"url:https://nowhere.wirelab.test/"}`, "page", "not a site of the local internet; its sites are h1.wirelab.test"},
		{`{"page":"url:https://example.org/"}`, "page", "public sites are loaded only with --allow-internet"},
		{`{"page":"url:https://192.0.2.1/"}`, "page", "public sites are loaded only with --allow-internet"},
		{`{"page":"url:https://example.org/","allow_internet":true}`, "gap_ms", "at least 1000 ms apart"},
		{`{"page":"url:https://example.org/","allow_internet":true,"gap_ms":999}`, "gap_ms", "at least 1000 ms apart"},
		{`{"page":"url:https://192.0.2.1/","allow_internet":true,"gap_ms":2000}`, "page", "special-purpose address (documentation (TEST-NET-1))"},
		{`{"page":"url:https://10.77.1.1/","allow_internet":true,"gap_ms":2000}`, "page", "special-purpose address (private)"},
		{`{"page":"url:https://example.org/","allow_internet":true,"gap_ms":2000,"network":"rtt=50ms,iw=20"}`, "network", "iw sets the servers' initial window"},
		{`{"page":"url:https://example.org/","allow_internet":true,"gap_ms":2000,"network":"tcpplus=4"}`, "network", "tcpplus acts on the servers' side"},
		{`{"page":"url:https://example.org/","allow_internet":true,"gap_ms":2000,"network":"rtt=50ms,origin_delay=1:20ms"}`, "network", "origin_delay needs the page's origins"},
		{`{"page":"url:https://example.org/","allow_internet":true,"gap_ms":2000,"shards":2}`, "shards", "shards must be 1"},
		{`{"page":"url:https://h3.wirelab.test/","shards":2}`, "shards", "shards must be 1"},
		{`{"page":"url:https://h3.wirelab.test/","server":{"push":"all"}}`, "server", "no server knob applies"},
		{`{"page":"url:https://h3.wirelab.test/","client":{"mode":"objects"}}`, "client.mode", "must be flat"},
		{`{"page":"url:https://h3.wirelab.test/","client":{"impl":"chromium"},"protocols":["h2c"]}`, "protocols[0]", "not loadable by client.impl chromium"},
		{`{"page":"url:https://h3.wirelab.test/","client":{"dns":"static"}}`, "client.dns", "must be server"},
		{`{"page":"url:https://h3.wirelab.test/","network":"rtt=banana"}`, "network", ""},
		{`{"page":"url:https://h3.wirelab.test/","client":{"impl":"chromium"},"capture":{"har":false}}`, "capture.har", "checked against its HAR"},
	}
	for _, c := range cases {
		s, err := DecodeSpec([]byte(c.spec))
		if err != nil {
			t.Errorf("%s: decode: %v", c.spec, err)
			continue
		}
		_, err = Prepare(s)
		fe, ok := fielderr.As(err)
		if !ok {
			t.Errorf("%s: %v, want a field error", c.spec, err)
			continue
		}
		if fe.Field != c.field || !strings.Contains(err.Error(), c.words) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s:\n got %q\nwant field %s with %q on one line", c.spec, err, c.field, c.words)
		}
	}
}

func TestLivePagePrepared(t *testing.T) {
	s, err := DecodeSpec([]byte(`{"page":"url:HTTPS://H3.wirelab.test/L/fixture/?q=1","protocols":["h1","h2","h3"],"repetitions":2,"gap_ms":500,"network":"rtt=20ms"}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	if p.Live == nil || !p.Live.Local || p.Live.Host != "h3.wirelab.test" || p.Page != nil {
		t.Fatalf("live %+v, page %v", p.Live, p.Page)
	}
	for proto, want := range map[string]string{"h1": "http://h3.wirelab.test/L/fixture/?q=1", "h2": "https://h3.wirelab.test/L/fixture/?q=1"} {
		if got := p.Live.LoadURL(proto); got != want {
			t.Errorf("LoadURL(%s) = %s, want %s", proto, got, want)
		}
	}
	if len(p.Sequence) != 6 || p.Sequence[0].Protocol != "h1" || p.Sequence[3].Protocol != "h1" {
		t.Errorf("sequence %+v", p.Sequence)
	}
	// The path is the local internet's: the slow site's extra round trip on its origin.
	if p.Origins() != len(sites.Served(sites.Catalog())) || s.NetworkRes.OriginExtraRTT[7] != sites.SlowExtraRTT {
		t.Errorf("origins %d, extra round trips %v", p.Origins(), s.NetworkRes.OriginExtraRTT)
	}
	if s.NetworkRes.Up.Delay != 10*time.Millisecond {
		t.Errorf("up delay %v, want half of rtt=20ms", s.NetworkRes.Up.Delay)
	}
	files := liveFiles{CAFile: "/ca.pem", SPKI: "c3BraQ==", HAR: "/h.har"}
	args := strings.Join(liveLoaderArgs(p, p.Sequence[1], files), " ")
	for _, want := range []string{"fetch https://h3.wirelab.test/L/fixture/?q=1 --proto h2 --mode flat", "--dns 10.77.2.53", "--ca /ca.pem", "--har /h.har"} {
		if !strings.Contains(args, want) {
			t.Errorf("fetch args %q lack %q", args, want)
		}
	}
	if args := strings.Join(liveLoaderArgs(p, p.Sequence[0], files), " "); strings.Contains(args, "--ca") {
		t.Errorf("an h1 load is given the CA: %s", args)
	}
	// Chromium: browse with the run's DNS server and the sites' certificate's SPKI hash; h3 is
	// forced by browse (--origin-to-force-quic-on).
	s.Client.Impl = "chromium"
	args = strings.Join(liveLoaderArgs(p, p.Sequence[2], files), " ")
	for _, want := range []string{"browse https://h3.wirelab.test/L/fixture/?q=1 --proto h3", "--dns 10.77.2.53", "--spki c3BraQ==", "--json", "--har /h.har"} {
		if !strings.Contains(args, want) {
			t.Errorf("browse args %q lack %q", args, want)
		}
	}
	if args := strings.Join(liveLoaderArgs(p, p.Sequence[0], files), " "); strings.Contains(args, "--spki") || !strings.HasPrefix(args, "browse http://") {
		t.Errorf("an h1 load by Chromium: %s", args)
	}
}

// A public page (a check of the spec: nothing is sent): the path is the spec's profile alone (native
// by default), and each load's loader is told --allow-internet and trusts the system's roots.
func TestPublicPagePrepared(t *testing.T) {
	s, err := DecodeSpec([]byte(`{"page":"url:https://www.example.org/a?b=c","protocols":["h1s","h2","h3"],"allow_internet":true,"gap_ms":2000}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	if p.Live == nil || p.Live.Local || p.Live.Host != "www.example.org" {
		t.Fatalf("live %+v", p.Live)
	}
	if got := s.NetworkRes.String(); got != "native" {
		t.Errorf("path %s, want native", got)
	}
	files := liveFiles{CAFile: "/ca.pem", SPKI: "c3BraQ==", HAR: "/h.har"}
	fetch := strings.Join(liveLoaderArgs(p, p.Sequence[1], files), " ")
	if !strings.Contains(fetch, "fetch https://www.example.org/a?b=c --proto h2") || !strings.Contains(fetch, "--allow-internet") ||
		!strings.Contains(fetch, "--dns 10.77.2.53") || strings.Contains(fetch, "--ca") {
		t.Errorf("fetch args %q", fetch)
	}
	s.Client.Impl = "chromium"
	browse := strings.Join(liveLoaderArgs(p, p.Sequence[2], files), " ")
	if !strings.Contains(browse, "browse https://www.example.org/a?b=c --proto h3") || !strings.Contains(browse, "--allow-internet") || strings.Contains(browse, "--spki") {
		t.Errorf("browse args %q", browse)
	}
}

// A Chromium load counts as a load over its protocol only if every response in its HAR was spoken
// over it; an entry without a response is the load's own error, not a fallback.
func TestSpokenOtherwise(t *testing.T) {
	write := func(versions ...string) string {
		l := &har.Log{}
		for i, v := range versions {
			e := har.Entry{Request: har.Request{Method: "GET", URL: "https://h1.wirelab.test/L/fixture/" + string(rune('a'+i))}}
			if v != "" {
				e.Response = har.Response{Status: 200, HTTPVersion: v}
			}
			l.Entries = append(l.Entries, e)
		}
		path := filepath.Join(t.TempDir(), "l.har")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := har.Write(f, l); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, c := range []struct {
		proto    string
		versions []string
		words    string
	}{
		{"h2", []string{"h2", "h2", ""}, ""},
		{"h1s", []string{"http/1.1", "HTTP/1.1"}, ""},
		{"h3", []string{"h3", "h3"}, ""},
		{"h2", []string{"h2", "http/1.1"}, "/L/fixture/b was answered over http/1.1, not h2"},
		{"h3", []string{"h2"}, "answered over h2, not h3"},
	} {
		got, err := spokenOtherwise(write(c.versions...), c.proto)
		if err != nil || (c.words == "") != (got == "") || !strings.Contains(got, c.words) {
			t.Errorf("%s %v: %q, %v; want %q", c.proto, c.versions, got, err, c.words)
		}
	}
	if _, err := spokenOtherwise(filepath.Join(t.TempDir(), "none.har"), "h2"); err == nil {
		t.Error("a missing HAR is not an error")
	}
}
