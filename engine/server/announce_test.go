package server

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/wirelab/wirelab/engine/page"
)

// AltSvc is sent with every response over every protocol, found or not; without it, none is.
func TestAltSvc(t *testing.T) {
	pg, _ := page.Corpus("twitter", 1)
	const value = `h3=":443"; ma=60`
	s := startTest(t, pg, func(c *Config) { c.AltSvc = value })
	plain := startTest(t, pg, nil)
	for _, proto := range AllProtocols {
		url, _ := s.RootURL(proto, "alt")
		for _, u := range []string{url, url + "missing.css"} {
			r := fetch(newClient(t, s, proto, nil), u)
			if r.err != nil || r.header.Get("Alt-Svc") != value {
				t.Errorf("%s %s: Alt-Svc %q, err %v; want %q", proto, u, r.header.Get("Alt-Svc"), r.err, value)
			}
		}
		url, _ = plain.RootURL(proto, "alt")
		if r := fetch(newClient(t, plain, proto, nil), url); r.err != nil || r.header.Values("Alt-Svc") != nil {
			t.Errorf("%s without AltSvc: %v, err %v", proto, r.header.Values("Alt-Svc"), r.err)
		}
	}
}

// upgradeRequest sends an HTTP/1.1 request asking for h2c on a new connection to the server's
// cleartext port and returns the connection and the response's status line and headers.
func upgradeRequest(t *testing.T, s *Server, path string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	c, err := net.Dial("tcp", netip.AddrPortFrom(s.cfg.Addrs[0], uint16(s.Ports().HTTP)).String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var settings bytes.Buffer
	fr := http2.NewFramer(&settings, nil)
	fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
	payload := base64.RawURLEncoding.EncodeToString(settings.Bytes()[9:]) // the frame's payload only
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: s1.wirelab.test\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: %s\r\n\r\n", path, payload)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, br, resp
}

// With H2CUpgrade a request asking for h2c gets 101 and then its response as HTTP/2 stream 1;
// the server records it as h2c. Without it the same request gets an HTTP/1.1 answer.
func TestH2CUpgrade(t *testing.T) {
	pg, _ := page.Corpus("twitter", 1)
	s := startTest(t, pg, func(c *Config) { c.H2CUpgrade = true })
	root, _ := s.RootURL(H1, "up")
	path := root[strings.Index(root, "/L/"):]
	c, br, resp := upgradeRequest(t, s, path)
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Upgrade") != "h2c" {
		t.Fatalf("upgrade answered %s %v", resp.Status, resp.Header)
	}
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, br)
	fr.WriteSettings()
	status, body := "", 0
	dec := hpack.NewDecoder(4096, func(f hpack.HeaderField) {
		if f.Name == ":status" {
			status = f.Value
		}
	})
	for done := false; !done; {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading h2 frames after the upgrade: %v", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			if f.StreamID != 1 {
				t.Fatalf("response on stream %d, want 1", f.StreamID)
			}
			if _, err := dec.Write(f.HeaderBlockFragment()); err != nil {
				t.Fatal(err)
			}
			done = f.StreamEnded()
		case *http2.DataFrame:
			body += len(f.Data())
			done = f.StreamEnded()
		}
	}
	if status != "200" || int64(body) != pg.Objects[0].Size {
		t.Errorf("stream 1: status %q, %d body bytes; want 200, %d", status, body, pg.Objects[0].Size)
	}
	c.Close()
	recs, _ := s.Records()
	if len(recs) != 1 || recs[0].Protocol != H2C || recs[0].Stream != 1 || recs[0].Status != 200 {
		t.Errorf("records: %+v", recs)
	}

	plain := startTest(t, pg, nil)
	_, _, resp = upgradeRequest(t, plain, path)
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 1 {
		t.Errorf("without H2CUpgrade: %s %s", resp.Proto, resp.Status)
	}
	resp.Body.Close()
}

// Close also ends an upgraded connection that is still open.
func TestH2CUpgradeClosedByClose(t *testing.T) {
	pg, _ := page.Corpus("twitter", 1)
	s := startTest(t, pg, func(c *Config) { c.H2CUpgrade = true })
	c, br, resp := upgradeRequest(t, s, "/L/x/")
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatal(resp.Status)
	}
	io.WriteString(c, http2.ClientPreface)
	http2.NewFramer(c, nil).WriteSettings()
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs on an upgraded connection")
	}
	if _, err := io.Copy(io.Discard, br); err != nil && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
		t.Errorf("after Close: %v", err)
	}
}

// Servers given the same certificates (LoadCerts of one NewCerts) serve them and leave the files to
// their owner: several sites of the probe's local internet share one CA.
func TestSharedCerts(t *testing.T) {
	certs, err := NewCerts("", loopback(2))
	if err != nil {
		t.Fatal(err)
	}
	defer certs.Remove()
	pg, _ := page.Corpus("twitter", 1)
	load := func() *Certs {
		c, err := LoadCerts(certs.Dir)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a := startTest(t, pg, func(c *Config) { c.Certs = load() })
	b := startTest(t, pg, func(c *Config) { c.Addrs = loopback(2)[1:]; c.Certs = load() })
	for _, s := range []*Server{a, b} {
		url, _ := s.RootURL(H2, "shared")
		if r := fetch(newClient(t, s, H2, nil), url); r.err != nil || r.status != 200 {
			t.Fatalf("h2 with shared certs: %v %d", r.err, r.status)
		}
	}
	a.Close()
	b.Close()
	if _, err := os.Stat(certs.CAPath()); err != nil {
		t.Errorf("Close removed shared certificates: %v", err)
	}
}

func TestAnnounceValidation(t *testing.T) {
	pg, _ := page.Corpus("twitter", 1)
	for field, mutate := range map[string]func(*Config){
		"alt_svc":     func(c *Config) { c.AltSvc = "h3=\":443\"\r\nX: y" },
		"h2c_upgrade": func(c *Config) { c.H2CUpgrade, c.Protocols = true, []Protocol{H1, H2} },
	} {
		cfg := DefaultConfig(loopback(1)...)
		cfg.PortHTTP, cfg.PortHTTPS, cfg.PortQUIC = 0, 0, 0
		mutate(&cfg)
		s, err := Start(pg, cfg)
		if err == nil {
			s.Close()
			t.Errorf("%s: accepted", field)
		} else if !strings.HasPrefix(err.Error(), field+":") {
			t.Errorf("%s: %v", field, err)
		}
	}
}
