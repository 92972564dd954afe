package client

import (
	"context"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server"
	"github.com/wirelab/wirelab/engine/server/servertest"
)

// The loader against the built-in origin server (engine/server) on loopback, one address per
// origin (127.0.0.N): the checks that need no emulated link.

// startBuiltin serves pg on 127.0.0.1…N with every protocol on free ports (servertest.Loopback).
func startBuiltin(t *testing.T, pg *page.Page, mutate func(*server.Config)) (*server.Server, StaticResolver) {
	t.Helper()
	srv, hosts := servertest.Loopback(t, pg, mutate)
	return srv, StaticResolver(hosts)
}

func builtinLoad(t *testing.T, srv *server.Server, resolver StaticResolver, proto Protocol, mode Mode) *Result {
	t.Helper()
	token := page.NewToken()
	root, err := srv.RootURL(server.Protocol(proto), token)
	if err != nil {
		t.Fatal(err)
	}
	var objects []string
	if mode == ModeObjects {
		if objects, err = srv.URLs(server.Protocol(proto), token); err != nil {
			t.Fatal(err)
		}
	}
	l, err := New(Config{Protocol: proto, Mode: mode, Resolver: resolver, RootCAs: srv.Certs().CAPool(), Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.Load(context.Background(), root, objects)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestBuiltinCorpus: every corpus page loads with no error over every protocol; object count and
// body bytes equal the page spec exactly; h2/h2c/h3 use exactly one connection per origin and
// HTTP/1.x at most six.
func TestBuiltinCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the whole corpus")
	}
	for _, name := range page.CorpusNames() {
		t.Run(name, func(t *testing.T) {
			pg, err := page.Load(name, 1)
			if err != nil {
				t.Fatal(err)
			}
			srv, resolver := startBuiltin(t, pg, nil)
			for _, proto := range Protocols {
				before := len(srv.Conns())
				res := builtinLoad(t, srv, resolver, proto, ModeFlat)
				if res.Err != nil {
					t.Fatalf("%s: %v", proto, res.Err)
				}
				if res.Objects != len(pg.Objects) || res.BodyBytes != pg.TotalBytes() {
					t.Errorf("%s: %d objects, %d bytes; the page has %d and %d", proto, res.Objects, res.BodyBytes, len(pg.Objects), pg.TotalBytes())
				}
				perOrigin := map[int]int{}
				for _, c := range srv.Conns()[before:] {
					perOrigin[c.Origin]++
				}
				for origin, n := range perOrigin {
					if (proto == H1 || proto == H1S) && n > 6 || (proto != H1 && proto != H1S) && n != 1 {
						t.Errorf("%s: origin %d served %d connections", proto, origin+1, n)
					}
				}
				if proto != H1 && proto != H1S && res.Connections != len(pg.Origins) {
					t.Errorf("%s: %d connections for %d origins", proto, res.Connections, len(pg.Origins))
				}
			}
		})
	}
}

// TestBuiltinOneStream: with max_concurrent_streams = 1 the server's frame observer never sees two
// open h2 streams (flat mode), and the loader still gets every object.
func TestBuiltinOneStream(t *testing.T) {
	pg, err := page.Load("synthetic:20x2kB", 1)
	if err != nil {
		t.Fatal(err)
	}
	srv, resolver := startBuiltin(t, pg, func(c *server.Config) { c.MaxConcurrentStreams = 1 })
	for _, proto := range []Protocol{H2, H2C, H3} {
		res := builtinLoad(t, srv, resolver, proto, ModeFlat)
		if res.Err != nil || res.Objects != len(pg.Objects) {
			t.Fatalf("%s: %v, %d objects", proto, res.Err, res.Objects)
		}
	}
	for _, c := range srv.Conns() {
		if c.MaxActive > 1 {
			t.Errorf("%s connection %d: %d requests in handlers at once", c.Protocol, c.ID, c.MaxActive)
		}
		if c.H2 != nil && c.H2.MaxOpenStreams > 1 {
			t.Errorf("%s connection %d: %d streams open at once", c.Protocol, c.ID, c.H2.MaxOpenStreams)
		}
	}
}

// TestBuiltinObjectsMode: study W's object-level loads over the built-in server, all at once.
func TestBuiltinObjectsMode(t *testing.T) {
	pg, err := page.Load("synthetic:64x10kB", 1)
	if err != nil {
		t.Fatal(err)
	}
	srv, resolver := startBuiltin(t, pg, nil)
	for _, proto := range Protocols {
		res := builtinLoad(t, srv, resolver, proto, ModeObjects)
		if res.Err != nil || res.Objects != len(pg.Objects) || res.BodyBytes != pg.TotalBytes() {
			t.Errorf("%s: %v, %d objects %d bytes, want %d and %d", proto, res.Err, res.Objects, res.BodyBytes, len(pg.Objects), pg.TotalBytes())
		}
	}
}
