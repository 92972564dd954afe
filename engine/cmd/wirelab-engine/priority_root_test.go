package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/emulator"
	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/labaddr"
	"github.com/wirelab/wirelab/engine/link/profile"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server"
)

// TestPriorityThroughEmulatorRoot (root): the engine's client loads twitter's objects (its two
// images made 80 kB each) at once through the emulator at 1 Mbit/s (RTT 40 ms), images listed
// first, with the chrome policy. In the built-in server's send order, from the moment every
// stylesheet and script (u=1) has started until the last of them has finished, no image (u=2)
// data goes out (at most three units: data an image's handler had queued while an urgent one's next
// piece was not ready yet), although an image is still waiting — over h2, h3 and spdy3. (Before
// that moment, an image whose request arrived first legitimately has the link.) Round robin would
// interleave the images throughout. The client runs as `wirelab-engine fetch` in the client
// namespace, the server in this process in the server namespace.
func TestPriorityThroughEmulatorRoot(t *testing.T) {
	roottest.RequireTUN(t)
	pg, err := page.Load("twitter", 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range pg.Objects {
		if pg.Objects[i].Type == page.TypeImage {
			pg.Objects[i].Size = 80_000
		}
	}
	if err := pg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg, err := emulator.ConfigFromProfile(profile.MustParse("bw=1mbit,rtt=40ms"), 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	e, err := emulator.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	var srv *server.Server
	err = e.Topo.Do(netns.Server, func() error {
		sc := server.DefaultConfig(labaddr.OriginAddr(1))
		sc.CertDir = t.TempDir()
		var err error
		srv, err = server.Start(pg, sc)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	for _, proto := range []server.Protocol{server.H2, server.H3, server.SPDY3} {
		srv.ResetRecords()
		token := page.NewToken()
		urls, err := srv.URLs(proto, token)
		if err != nil {
			t.Fatal(err)
		}
		// Images first, then scripts and stylesheets: the requests go out in this order.
		var list []string
		for _, want := range []page.Type{page.TypeImage, page.TypeJS, page.TypeCSS} {
			for i, o := range pg.Objects {
				if o.Type == want {
					list = append(list, urls[i])
				}
			}
		}
		listFile := filepath.Join(dir, string(proto)+".urls")
		if err := os.WriteFile(listFile, []byte(strings.Join(list, "\n")), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := e.Topo.Command(netns.Client, os.Args[0], "fetch", urls[0], "--proto", string(proto), "--mode", "objects",
			"--urls", listFile, "--resolve", "s1.wirelab.test="+labaddr.OriginAddr(1).String(), "--ca", srv.Certs().CAPath(),
			"--priority", "chrome", "--page", "twitter", "--json", "--timeout", "60s")
		cmd.Env = append(os.Environ(), testMainEnv+"=1")
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: fetch: %v\n%s%s", proto, err, out.String(), stderr.String())
		}
		var rec struct {
			Objects int     `json:"objects"`
			PLT     float64 `json:"plt_ms"`
		}
		if err := json.Unmarshal(out.Bytes(), &rec); err != nil || rec.Objects != len(list) {
			t.Fatalf("%s: %s (%v)", proto, out.String(), err)
		}
		recs, _ := srv.Records()
		index := pg.ObjectIndex()
		typeOf := map[uint64]page.Type{}
		urgentStart, urgentEnd, imageLast := 0, 0, 0
		for _, r := range recs {
			if r.Sent == nil {
				t.Fatalf("%s: %s has no send log", proto, r.Path)
			}
			_, objPath, _ := page.SplitPath(r.Path)
			typ := pg.Objects[index[objPath]].Type
			typeOf[r.Stream] = typ
			want := "u=1"
			if typ == page.TypeImage {
				want = "u=2"
				imageLast = max(imageLast, r.Sent.LastSeq)
			} else {
				urgentStart = max(urgentStart, r.Sent.FirstSeq)
				urgentEnd = max(urgentEnd, r.Sent.LastSeq)
			}
			if r.Priority != want {
				t.Errorf("%s: %s %s arrived with priority %q, want %q", proto, typ, objPath, r.Priority, want)
			}
		}
		conns := srv.Conns()
		if len(conns) != 1 {
			t.Fatalf("%s: %d connections", proto, len(conns))
		}
		seq, imageUnits := 0, 0
		for _, run := range conns[0].SendRuns {
			for range run.Units {
				seq++
				if typeOf[run.StreamID] == page.TypeImage && seq > urgentStart && seq < urgentEnd {
					imageUnits++
				}
			}
		}
		t.Logf("%s: plt %.0f ms; all u=1 streams under way from unit %d, done at %d; image units in between %d; images done at %d; runs %v",
			proto, rec.PLT, urgentStart, urgentEnd, imageUnits, imageLast, conns[0].SendRuns)
		if imageLast < urgentEnd {
			t.Errorf("%s: every image finished before the stylesheets and scripts: nothing to prioritise", proto)
		}
		if imageUnits > 3 {
			t.Errorf("%s: %d image (u=2) units went out while every u=1 stream was under way", proto, imageUnits)
		}
	}
}
