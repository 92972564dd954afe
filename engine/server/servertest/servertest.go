// Package servertest starts the built-in origin server (engine/server) for tests of the packages
// that load pages from it — the loader, the browser driver, the load generator, the commands —
// on loopback, every protocol on a free port, stopped when the test ends.
package servertest

import (
	"net/netip"
	"testing"

	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server"
)

// Start serves pg with cfg, its ports replaced by free ones (0), and closes the server when the
// test ends.
func Start(t testing.TB, pg *page.Page, cfg server.Config) *server.Server {
	t.Helper()
	cfg.PortHTTP, cfg.PortHTTPS, cfg.PortQUIC = 0, 0, 0
	srv, err := server.Start(pg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// Loopback serves pg on 127.0.0.1…N, origin i on 127.0.0.(i+1), with the default configuration
// changed by mutate (nil: none), and returns the server and each origin host's address.
func Loopback(t testing.TB, pg *page.Page, mutate func(*server.Config)) (*server.Server, map[string]netip.Addr) {
	t.Helper()
	var addrs []netip.Addr
	hosts := map[string]netip.Addr{}
	for i := range pg.Origins {
		a := netip.AddrFrom4([4]byte{127, 0, 0, byte(i + 1)})
		addrs = append(addrs, a)
		hosts[page.OriginHost(i)] = a
	}
	cfg := server.DefaultConfig(addrs...)
	if mutate != nil {
		mutate(&cfg)
	}
	return Start(t, pg, cfg), hosts
}
