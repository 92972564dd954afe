package client

import (
	"context"
	"math"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/page/pagetest"
	"github.com/wirelab/wirelab/engine/server"
)

// simulate drives a replay planner in virtual time: every download's first chunk arrives after
// firstChunk, its end after total; it returns each URL's [issued, end] and the load's end.
func simulate(t *testing.T, p *replayPlanner, firstChunk, total func(u string) time.Duration) (map[string][2]time.Duration, time.Duration) {
	t.Helper()
	var now time.Duration
	p.now = func() time.Duration { return now }
	type ev struct {
		at    time.Duration
		url   string
		chunk bool
		seq   int
	}
	var events []ev
	seq := 0
	times := map[string][2]time.Duration{}
	issue := func(reqs []plannedRequest) {
		for _, r := range reqs {
			u := r.url.String()
			if _, dup := times[u]; dup {
				t.Fatalf("%s requested twice", u)
			}
			times[u] = [2]time.Duration{now, -1}
			events = append(events, ev{now + firstChunk(u), u, true, seq}, ev{now + total(u), u, false, seq + 1})
			seq += 2
		}
	}
	issue(p.start())
	for steps := 0; ; steps++ {
		if steps > 10000 {
			t.Fatal("the replay does not end")
		}
		sort.Slice(events, func(i, j int) bool {
			if events[i].at != events[j].at {
				return events[i].at < events[j].at
			}
			return events[i].seq < events[j].seq
		})
		deadline, timed := p.nextDeadline()
		switch {
		case len(events) > 0 && (!timed || events[0].at <= deadline):
			e := events[0]
			events = events[1:]
			now = e.at
			u, _ := url.Parse(e.url)
			r := &request{url: u}
			if e.chunk {
				issue(p.firstChunk(r))
			} else {
				tm := times[e.url]
				tm[1] = now
				times[e.url] = tm
				issue(p.completed(r))
			}
		case timed:
			now = deadline
			issue(p.timer(now))
		default:
			end, complete := p.end()
			if !complete {
				t.Fatal("the replay stopped with activities unfinished")
			}
			return times, end
		}
	}
}

// TestReplayVirtualTime: downloads of 100 ms (first chunk after 60 ms) and the hand-made graph:
// the critical path root → parse → js → evaluate → parse → image takes 100 + 50 + 100 + 80·s +
// 40·s + 100 ms; d2 starts when e1 ends, d3 when p1 ends.
func TestReplayVirtualTime(t *testing.T) {
	pg := pagetest.CriticalPath()
	root, _ := url.Parse("https://s1.wirelab.test/L/tok/")
	for _, scale := range []float64{0, 0.5, 1, 2} {
		p, err := newReplayPlanner(pg, root, scale, nil)
		if err != nil {
			t.Fatal(err)
		}
		times, end := simulate(t, p, func(string) time.Duration { return 60 * time.Millisecond }, func(string) time.Duration { return 100 * time.Millisecond })
		ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
		e1 := ms(60 + 50*scale + 100 + 80*scale) // d1 issued when p0 ends (p0 starts at d0's first chunk)
		if scale == 0 {
			e1 = ms(60 + 100) // p0 is instant at the first chunk
		}
		p1 := max(e1, ms(100)) + ms(40*scale)
		want := max(e1+ms(100), p1+ms(100))
		if end != want {
			t.Errorf("scale %g: replay ends at %v, want %v", scale, end, want)
		}
		if got := times["https://s1.wirelab.test/L/tok/a.png"][0]; got != e1 {
			t.Errorf("scale %g: image 1 issued at %v, want %v (e1's end)", scale, got, e1)
		}
		if got := times["https://s1.wirelab.test/L/tok/b.png"][0]; got != p1 {
			t.Errorf("scale %g: image 2 issued at %v, want %v (p1's end)", scale, got, p1)
		}
		if len(times) != 4 {
			t.Errorf("scale %g: %d requests, want 4", scale, len(times))
		}
	}
}

// TestReplayMainThread: computations never overlap. Two stylesheets arriving together are
// evaluated one after the other, so a download released by the second starts after both.
func TestReplayMainThread(t *testing.T) {
	p := &page.Page{Name: "main-thread", Seed: 1, Origins: []page.Origin{{Host: page.OriginHost(0)}},
		Objects: []page.Object{
			{ID: "root", Path: "/index.html", Size: 1, Type: page.TypeHTML, ContentType: "text/html; charset=utf-8"},
			{ID: "c1", Path: "/1.css", Size: 10, Type: page.TypeCSS, ContentType: "text/css"},
			{ID: "c2", Path: "/2.css", Size: 10, Type: page.TypeCSS, ContentType: "text/css"},
			{ID: "img", Path: "/i.png", Size: 10, Type: page.TypeImage, ContentType: "image/png", Parent: "c2"},
		},
		Activities: []page.Activity{
			{ID: "d0", Kind: page.KindDownload, Object: "root"},
			{ID: "d1", Kind: page.KindDownload, Object: "c1", Deps: []page.Dep{{On: "d0"}}},
			{ID: "d2", Kind: page.KindDownload, Object: "c2", Deps: []page.Dep{{On: "d0"}}},
			{ID: "e1", Kind: page.KindEvaluate, Object: "c1", DurationMs: 30, Deps: []page.Dep{{On: "d1"}}},
			{ID: "e2", Kind: page.KindEvaluate, Object: "c2", DurationMs: 20, Deps: []page.Dep{{On: "d2"}}},
			{ID: "d3", Kind: page.KindDownload, Object: "img", Deps: []page.Dep{{On: "e2"}}},
		}}
	p.Objects[0].Size = page.MinSize(p, 0)
	p.Objects[1].Size, p.Objects[2].Size = max(page.MinSize(p, 1), 10), max(page.MinSize(p, 2), 10)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	root, _ := url.Parse("https://s1.wirelab.test/L/tok/")
	pl, err := newReplayPlanner(p, root, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	times, end := simulate(t, pl, func(string) time.Duration { return 5 * time.Millisecond }, func(string) time.Duration { return 10 * time.Millisecond })
	// d1, d2 end at 20 ms; e1 runs 20–50 (ready first: graph order on a tie), e2 50–70; d3 70–80.
	if got := times["https://s1.wirelab.test/L/tok/i.png"][0]; got != 70*time.Millisecond {
		t.Errorf("image issued at %v, want 70ms (after both evaluations, one at a time)", got)
	}
	if end != 80*time.Millisecond {
		t.Errorf("end %v, want 80ms", end)
	}
}

// TestReplayErrors: replay needs a page and its root URL.
func TestReplayErrors(t *testing.T) {
	if _, err := New(Config{Protocol: H2, Mode: ModeReplay}); err == nil {
		t.Error("replay without a page accepted")
	}
	pg := pagetest.CriticalPath()
	if _, err := New(Config{Protocol: H2, Mode: ModeReplay, Page: pg, ComputeScale: -1}); err == nil {
		t.Error("negative compute scale accepted")
	}
	l, err := New(Config{Protocol: H2, Mode: ModeReplay, Page: pg, ComputeScale: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Load(context.Background(), "https://s1.wirelab.test/other/", nil); err == nil {
		t.Error("a URL outside /L/<token>/ accepted")
	}
	if _, err := ParseMode("replay"); err != nil {
		t.Error(err)
	}
}

// TestReplayBuiltin: replays of the corpus pages' recorded graphs against the built-in server
// fetch every object exactly once, over every protocol.
func TestReplayBuiltin(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the corpus")
	}
	for _, name := range []string{"twitter", "nytimes"} {
		pg, err := page.Load(name, 1)
		if err != nil {
			t.Fatal(err)
		}
		srv, resolver := startBuiltin(t, pg, nil)
		for _, proto := range Protocols {
			root, err := srv.RootURL(server.Protocol(proto), page.NewToken())
			if err != nil {
				t.Fatal(err)
			}
			l, err := New(Config{Protocol: proto, Mode: ModeReplay, Page: pg, ComputeScale: 1, Resolver: resolver,
				RootCAs: srv.Certs().CAPool(), Timeout: 60 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			res, err := l.Load(context.Background(), root, nil)
			if err != nil || res.Err != nil {
				t.Fatalf("%s %s: %v %v", name, proto, err, res.Err)
			}
			if res.Objects != len(pg.Objects) || res.BodyBytes != pg.TotalBytes() {
				t.Errorf("%s %s: %d objects, %d bytes; want %d, %d", name, proto, res.Objects, res.BodyBytes, len(pg.Objects), pg.TotalBytes())
			}
			if ms(res.PLT) < criticalCompute(pg) {
				t.Errorf("%s %s: plt %.1f ms shorter than the graph's computation on its critical path %.1f ms", name, proto, ms(res.PLT), criticalCompute(pg))
			}
		}
	}
}

// criticalCompute is the longest chain of computation in the graph (ms): a lower bound of any
// replay at compute scale 1.
func criticalCompute(p *page.Page) float64 {
	byID := map[string]page.Activity{}
	for _, a := range p.Activities {
		byID[a.ID] = a
	}
	memo := map[string]float64{}
	var longest func(id string) float64
	longest = func(id string) float64 {
		if v, ok := memo[id]; ok {
			return v
		}
		a := byID[id]
		best := 0.0
		for _, d := range a.Deps {
			best = math.Max(best, longest(d.On))
		}
		memo[id] = best + a.DurationMs
		return memo[id]
	}
	worst := 0.0
	for _, a := range p.Activities {
		worst = math.Max(worst, longest(a.ID))
	}
	return worst
}

// TestReplayEqualsFlatDelayed: through a delayed path (50 ms each way), a page without computation
// — a synthetic page, replayed with compute_scale 0 — loads in the same time as flat mode: both
// request the root, then every image once it has arrived.
func TestReplayEqualsFlatDelayed(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time delays")
	}
	pg, err := page.Load("synthetic:8x20kB", 1)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := startBuiltin(t, pg, nil)
	for _, proto := range []Protocol{H1, H2} {
		// The proxy listens on the server's port on another address, so that the URLs the
		// server's HTML holds (with its port) lead through the proxy too.
		port := srv.Ports().Port(server.Protocol(proto))
		target := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))
		proxied := delayTCPOn(t, "127.0.0.2:"+strconv.Itoa(port), target, 50*time.Millisecond)
		plt := map[Mode][]float64{}
		for rep := 0; rep < 5; rep++ {
			for _, mode := range []Mode{ModeFlat, ModeReplay} {
				cfg := Config{Protocol: proto, Mode: mode, Resolver: StaticResolver{page.OriginHost(0): proxied.Addr()},
					RootCAs: srv.Certs().CAPool(), Timeout: 30 * time.Second}
				if mode == ModeReplay {
					cfg.Page, cfg.ComputeScale = pg, 0
				}
				l, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				root := proto.Scheme() + "://" + page.OriginHost(0) + ":" + strconv.Itoa(int(proxied.Port())) + "/L/" + page.NewToken() + "/"
				res, err := l.Load(context.Background(), root, nil)
				if err != nil || res.Err != nil {
					t.Fatalf("%s %s: %v %v", proto, mode, err, res.Err)
				}
				if res.Objects != len(pg.Objects) {
					t.Fatalf("%s %s: %d objects", proto, mode, res.Objects)
				}
				plt[mode] = append(plt[mode], ms(res.PLT))
			}
		}
		// The user-space proxy sleeps per chunk, so a loaded machine only ever adds time: compare
		// the least disturbed loads (minimum of 5). Same round trips (≥ 200 ms): within 5 % + 5 ms.
		f, r := minimum(plt[ModeFlat]), minimum(plt[ModeReplay])
		t.Logf("%s: flat %v ms, replay %v ms", proto, plt[ModeFlat], plt[ModeReplay])
		if math.Abs(f-r) > 0.05*f+5 {
			t.Errorf("%s: replay (scale 0) fastest %.1f ms vs flat %.1f ms", proto, r, f)
		}
	}
}

func minimum(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[0]
}
