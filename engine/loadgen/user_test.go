package loadgen

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/client"
	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/server"
	"github.com/wirelab/wirelab/engine/server/servertest"
)

// startBuiltin serves pg over every protocol on 127.0.0.1 (free ports).
func startBuiltin(t *testing.T, pg *page.Page) *server.Server {
	t.Helper()
	return servertest.Start(t, pg, server.DefaultConfig(netip.MustParseAddr("127.0.0.1")))
}

// realRun runs spec's scenario against srv with Tab users, as `loadgen` does.
func realRun(t *testing.T, srv *server.Server, spec *Spec, interval ...func(Interval)) (*Summary, *client.ConnGauge) {
	t.Helper()
	root, err := srv.RootURL(server.Protocol(spec.Protocol), page.NewToken())
	if err != nil {
		t.Fatal(err)
	}
	l, err := client.New(client.Config{Protocol: client.Protocol(spec.Protocol), RootCAs: srv.Certs().CAPool(), LoopbackOnly: true,
		Resolver: client.StaticResolver{"s1.wirelab.test": netip.MustParseAddr("127.0.0.1")}, Timeout: spec.Timeout()})
	if err != nil {
		t.Fatal(err)
	}
	gauge := &client.ConnGauge{}
	sum, err := Run(context.Background(), Config{Spec: spec, Start: time.Now(), NewUser: TabUsers(l, root, spec, gauge),
		Conns: gauge, Probe: NewProbe(), Interval: func(iv Interval) {
			for _, f := range interval {
				f(iv)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	return sum, gauge
}

// VUs load the page as the loader does, over the connection discipline asked for: per_vu keeps
// one connection set per VU for the whole run (h2, h3: one connection per VU; HTTP/1.x at most
// six), per_iteration opens a set per page; every response is a hit; nothing is left open.
func TestTabUsersAgainstBuiltin(t *testing.T) {
	pg, err := page.Load("synthetic:12x2kB", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		proto, conns string
	}{{"h1", "per_vu"}, {"h1s", "per_vu"}, {"h2", "per_vu"}, {"h3", "per_vu"}, {"h2", "per_iteration"}} {
		t.Run(tc.proto+"/"+tc.conns, func(t *testing.T) {
			srv := startBuiltin(t, pg)
			spec := mustDecode(t, fmt.Sprintf(`{"protocol":%q,"client":{"connections":%q},"interval_s":0.5,"think":{"mean_s":0.05},
				"scenario":{"start":4,"stages":[{"duration_s":1.5,"target":4}]}}`, tc.proto, tc.conns))
			sum, gauge := realRun(t, srv, spec)
			tot := sum.Totals
			if tot.Pages < 4 || tot.PagesFailed != 0 || tot.Errors.Total() != 0 {
				t.Fatalf("%d pages, %d failed, errors %+v", tot.Pages, tot.PagesFailed, tot.Errors)
			}
			if tot.Hits != tot.Pages*int64(len(pg.Objects)) || tot.Bytes != tot.Pages*pg.TotalBytes() {
				t.Errorf("%d hits, %d bytes for %d pages of %d objects, %d bytes", tot.Hits, tot.Bytes, tot.Pages, len(pg.Objects), pg.TotalBytes())
			}
			served := int64(len(srv.Conns()))
			switch {
			case tc.conns == "per_iteration":
				if tot.ConnectionsOpened != tot.Pages {
					t.Errorf("per_iteration: %d connections for %d pages; want one per page", tot.ConnectionsOpened, tot.Pages)
				}
			case tc.proto == "h1" || tc.proto == "h1s":
				if tot.ConnectionsOpened < 4 || tot.ConnectionsOpened > 4*6 {
					t.Errorf("per_vu: %d connections for 4 VUs; want 4–24", tot.ConnectionsOpened)
				}
			default:
				if tot.ConnectionsOpened != 4 {
					t.Errorf("per_vu: %d connections for 4 VUs; want 4", tot.ConnectionsOpened)
				}
			}
			if tc.proto != "h3" && served != tot.ConnectionsOpened { // h3: the server records QUIC connections as they close
				t.Errorf("the server saw %d connections, the VUs opened %d", served, tot.ConnectionsOpened)
			}
			if gauge.Open() != 0 {
				t.Errorf("%d connections open after the run", gauge.Open())
			}
			// The built-in server keeps every connection: all closes were the VUs' own.
			if tot.ConnectionsClosedByServer != 0 {
				t.Errorf("%d connections closed by the server, want none", tot.ConnectionsClosedByServer)
			}
			if mid := sum.Outcomes.MaxPagesPerS; mid <= 0 || sum.Totals.RequestMs == nil || sum.Generator.CPUMs <= 0 {
				t.Errorf("max pages/s %v, request times %+v, generator CPU %v ms", mid, sum.Totals.RequestMs, sum.Generator.CPUMs)
			}
		})
	}
}

// A server that stops mid-run yields errors by kind, not a crash; the run ends on time.
func TestServerStoppedMidRun(t *testing.T) {
	pg, err := page.Load("synthetic:6x2kB", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, proto := range []string{"h1", "h2"} {
		t.Run(proto, func(t *testing.T) {
			srv := startBuiltin(t, pg)
			spec := mustDecode(t, fmt.Sprintf(`{"protocol":%q,"interval_s":0.5,"think":{"mean_s":0.02},"client":{"timeout_s":2},
				"scenario":{"start":3,"stages":[{"duration_s":2,"target":3}]}}`, proto))
			var closedByServer int64
			time.AfterFunc(700*time.Millisecond, func() { srv.Close() })
			start := time.Now()
			sum, _ := realRun(t, srv, spec, func(iv Interval) { closedByServer += iv.ConnectionsClosedByServer })
			if d := time.Since(start); d > 6*time.Second {
				t.Errorf("the run took %v", d)
			}
			e := sum.Totals.Errors
			if sum.Totals.Pages == 0 || sum.Totals.PagesFailed == 0 || e.ConnectRefused == 0 || e.Other != 0 {
				t.Errorf("%d pages, %d failed, errors %+v; want pages, then failures, connection refusals among them, none unclassified",
					sum.Totals.Pages, sum.Totals.PagesFailed, e)
			}
			if sum.Outcomes.VUsAtFirstError == nil || *sum.Outcomes.VUsAtFirstError != 3 {
				t.Errorf("vus_at_first_error %v, want 3", sum.Outcomes.VUsAtFirstError)
			}
			// The server's close ended the VUs' kept connections (at least one each), and the
			// intervals' counts add up to the run's.
			if n := sum.Totals.ConnectionsClosedByServer; n < 3 || n != closedByServer {
				t.Errorf("%d connections closed by the server (intervals: %d); want ≥ 3, the same", n, closedByServer)
			}
		})
	}
}
