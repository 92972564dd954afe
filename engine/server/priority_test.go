package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"golang.org/x/net/http2"

	"github.com/wirelab/wirelab/engine/page"
	"github.com/wirelab/wirelab/engine/spdy"
)

// pacer holds a link's departure schedule: each write leaves when the previous ones have been
// serialised at rate bytes per second (a constrained link on loopback, at the server's socket).
type pacer struct {
	rate float64
	mu   sync.Mutex
	free time.Time
}

// wait blocks until n more bytes may leave.
func (p *pacer) wait(n int) {
	p.mu.Lock()
	now := time.Now()
	if p.free.Before(now) {
		p.free = now
	}
	p.free = p.free.Add(time.Duration(float64(n) / p.rate * float64(time.Second)))
	until := p.free
	p.mu.Unlock()
	time.Sleep(time.Until(until))
}

// pacedConn writes through a pacer in pieces of at most one MTU.
type pacedConn struct {
	net.Conn
	p *pacer
}

func (c *pacedConn) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		n := min(len(b), 1500)
		c.p.wait(n)
		m, err := c.Conn.Write(b[:n])
		written += m
		if err != nil {
			return written, err
		}
		b = b[n:]
	}
	return written, nil
}

// pacedPacketConn sends datagrams through a pacer.
type pacedPacketConn struct {
	net.PacketConn
	p *pacer
}

func (c *pacedPacketConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	c.p.wait(len(b))
	return c.PacketConn.WriteTo(b, addr)
}

// pacedHooks paces every connection the server accepts at rate bytes per second.
func pacedHooks(rate float64) testHooks {
	return testHooks{
		wrapConn:       func(c net.Conn) net.Conn { return &pacedConn{Conn: c, p: &pacer{rate: rate}} },
		wrapPacketConn: func(pc net.PacketConn) net.PacketConn { return &pacedPacketConn{PacketConn: pc, p: &pacer{rate: rate}} },
	}
}

// fetchPrioritised requests paths[0] with urgency urgencies[0], then at once paths[1] with
// urgencies[1], … over proto (one connection), and reads every response whole.
func fetchPrioritised(t *testing.T, s *Server, proto Protocol, paths []string, urgencies []int) {
	t.Helper()
	headers := make([]string, len(urgencies))
	for i, u := range urgencies {
		headers[i] = fmt.Sprintf("u=%d", u)
	}
	fetchWithPriority(t, s, proto, paths, urgencies, headers)
}

// fetchWithPriority requests paths on one connection, each with its RFC 9218 priority header
// (urgencies: spdy3's priorities), and reads every response whole.
func fetchWithPriority(t *testing.T, s *Server, proto Protocol, paths []string, urgencies []int, headers []string) {
	t.Helper()
	root, _ := s.RootURL(proto, "prio")
	u, _ := neturl.Parse(root)
	switch proto {
	case H2, H2C:
		c := dialRawH2(t, s, proto)
		open := map[uint32]bool{}
		for i, p := range paths {
			id := uint32(2*i + 1)
			c.get(id, p, [2]string{"priority", headers[i]})
			open[id] = true
		}
		for len(open) > 0 {
			switch f := c.next().(type) {
			case *http2.DataFrame:
				if f.StreamEnded() {
					delete(open, f.StreamID)
				}
			case *http2.RSTStreamFrame, *http2.GoAwayFrame:
				t.Fatalf("%s: %v", proto, f)
			}
		}
	case H3, SPDY3:
		var rt http.RoundTripper
		if proto == H3 {
			tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: s.certs.CAPool()},
				Dial: func(ctx context.Context, addr string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
					a, err := hostAddr(s, addr)
					if err != nil {
						return nil, err
					}
					return quic.DialAddrEarly(ctx, a, tc, qc)
				}}
			defer tr.Close()
			rt = tr
		} else {
			cc, err := spdy.NewClientConn(tls.Client(dialHost(t, s, u.Host), spdy.ClientTLSConfig(&tls.Config{RootCAs: s.certs.CAPool(), ServerName: u.Hostname()})), spdy.ClientConfig{})
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			rt = cc
		}
		var wg sync.WaitGroup
		errs := make([]error, len(paths))
		for i, p := range paths {
			req, _ := http.NewRequest("GET", "https://"+u.Host+p, nil)
			req.Header.Set("Priority", headers[i])
			if proto == SPDY3 {
				req = req.WithContext(spdy.WithRequestOptions(context.Background(), spdy.RequestOptions{Priority: uint8(urgencies[i])}))
			}
			wg.Go(func() {
				resp, err := rt.RoundTrip(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				errs[i] = err
			})
			if proto == H3 && i == 0 {
				// http3.Transport dials on the first request: let it open the connection so that
				// both requests share it (the server logs per connection).
				for len(s.Conns()) == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("%s: %v", proto, err)
			}
		}
	}
}

// startPaced starts a server for pg on loopback whose sockets are paced at 400 kB/s, closed at the
// end of the test.
func startPaced(t *testing.T, pg *page.Page) *Server {
	t.Helper()
	c := DefaultConfig(loopback(1)...)
	c.PortHTTP, c.PortHTTPS, c.PortQUIC = 0, 0, 0
	s, err := start(pg, c, pacedHooks(400e3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// sentOf returns what the server logged of the responses to paths (in their order) and the
// send order over all its connections.
func sentOf(t *testing.T, s *Server, paths ...string) ([]*StreamSend, []SendRun) {
	t.Helper()
	recs, _ := s.Records()
	byPath := map[string]*StreamSend{}
	for _, r := range recs {
		byPath[r.Path] = r.Sent
	}
	sent := make([]*StreamSend, len(paths))
	for i, p := range paths {
		if sent[i] = byPath[p]; sent[i] == nil {
			t.Fatalf("no send log for %s: %+v", p, recs)
		}
	}
	var runs []SendRun
	for _, c := range s.Conns() {
		runs = append(runs, c.SendRuns...)
	}
	return sent, runs
}

// pacedPage is the two large objects the paced priority tests send (skipped with -short: paced
// transfers take a second per protocol).
func pacedPage(t *testing.T) *page.Page {
	t.Helper()
	if testing.Short() {
		t.Skip("paced transfers take a second per protocol")
	}
	pg, err := page.Load("synthetic:2x150kB", 1)
	if err != nil {
		t.Fatal(err)
	}
	return pg
}

// TestPriorityOrder: on a constrained link (the server's socket paced at 400 kB/s) two large
// responses, the less urgent one requested first, leave in urgency order: the more urgent one
// finishes first, and while it is under way the other sends few units (none on an idle machine;
// the tolerance, half the urgent stream's units, covers a handler that the machine's load keeps
// from queueing its data in time), over h2, h2c, h3 and spdy3. FIFO would finish the first
// request first; round robin would interleave them unit for unit.
func TestPriorityOrder(t *testing.T) {
	pg := pacedPage(t)
	for _, proto := range []Protocol{H2, H2C, H3, SPDY3} {
		t.Run(string(proto), func(t *testing.T) {
			s := startPaced(t, pg)
			low, high := "/L/prio"+pg.Objects[1].Path, "/L/prio"+pg.Objects[2].Path
			fetchPrioritised(t, s, proto, []string{low, high}, []int{6, 0})
			sent, runs := sentOf(t, s, low, high)
			lo, hi := sent[0], sent[1]
			if hi.LastSeq > lo.LastSeq {
				t.Errorf("u=0 finished after u=6: u=0 units %d–%d, u=6 %d–%d; runs %v", hi.FirstSeq, hi.LastSeq, lo.FirstSeq, lo.LastSeq, runs)
			}
			// Units of the less urgent stream sent while the urgent one was under way.
			between, seq := 0, 0
			for _, r := range runs {
				for range r.Units {
					seq++
					if r.StreamID == lo.StreamID && seq > hi.FirstSeq && seq < hi.LastSeq {
						between++
					}
				}
			}
			t.Logf("%s: u=0 units %d–%d (%d), u=6 units %d–%d (%d), u=6 units in between %d; runs %v", proto, hi.FirstSeq, hi.LastSeq, hi.Units, lo.FirstSeq, lo.LastSeq, lo.Units, between, runs)
			if between > hi.Units/2 {
				t.Errorf("%d units of u=6 went out while u=0 (%d units) was under way", between, hi.Units)
			}
		})
	}
}

// TestIncrementalInterleaves: RFC 9218's incremental flag. Two large responses of one urgency on a
// constrained link: without `i` the server sends them one at a time — the send order switches
// between them at most twice (once more than "one whole, then the other" when the second request
// arrives after the first response began and the scheduler takes it up, as quic-go does); with `i`
// on both it round-robins them, so their units alternate many times. Over h2, h2c and h3 (spdy3
// has no incremental flag).
func TestIncrementalInterleaves(t *testing.T) {
	pg := pacedPage(t)
	for _, proto := range []Protocol{H2, H2C, H3} {
		for _, incremental := range []bool{false, true} {
			name := fmt.Sprintf("%s/incremental=%v", proto, incremental)
			t.Run(name, func(t *testing.T) {
				s := startPaced(t, pg)
				a, b := "/L/inc"+pg.Objects[1].Path, "/L/inc"+pg.Objects[2].Path
				header := "u=3"
				if incremental {
					header = "u=3, i"
				}
				fetchWithPriority(t, s, proto, []string{a, b}, []int{3, 3}, []string{header, header})
				sent, runs := sentOf(t, s, a, b)
				sa, sb := sent[0], sent[1]
				// Switches between the two streams in the send order.
				switches, last := 0, uint64(0)
				for _, r := range runs {
					if r.StreamID != sa.StreamID && r.StreamID != sb.StreamID {
						continue
					}
					if last != 0 && r.StreamID != last {
						switches++
					}
					last = r.StreamID
				}
				first, second := sa, sb
				if sb.FirstSeq < sa.FirstSeq {
					first, second = sb, sa
				}
				overlap := first.LastSeq - second.FirstSeq // units of the first sent after the second began
				t.Logf("%s: units %d–%d and %d–%d, %d switches", name, first.FirstSeq, first.LastSeq, second.FirstSeq, second.LastSeq, switches)
				if incremental {
					if switches < 10 || overlap < first.Units/2 {
						t.Errorf("incremental streams were not interleaved: %d switches, %d of %d units overlapping", switches, overlap, first.Units)
					}
				} else if switches > 2 {
					t.Errorf("non-incremental streams were interleaved: %d switches between them", switches)
				}
			})
		}
	}
}

// TestPushPriorityUpdate: the h2 server applies PRIORITY_UPDATE frames to pushed streams. The
// client gives three pushes urgencies as their PUSH_PROMISEs arrive; on a constrained link they
// finish in urgency order: in promise order for u=1, 5, 7 and in reverse for u=7, 5, 1.
func TestPushPriorityUpdate(t *testing.T) {
	if testing.Short() {
		t.Skip("paced transfers")
	}
	pg, _ := page.Load("synthetic:3x100kB", 1)
	cfg := DefaultConfig(loopback(1)...)
	cfg.PortHTTP, cfg.PortHTTPS, cfg.PortQUIC = 0, 0, 0
	cfg.Push, _ = ParsePushPolicy("all")
	for _, urgencies := range [][]int{{1, 5, 7}, {7, 5, 1}} {
		s, err := start(pg, cfg, pacedHooks(400e3))
		if err != nil {
			t.Fatal(err)
		}
		c := dialRawH2(t, s, H2, http2.Setting{ID: http2.SettingEnablePush, Val: 1})
		c.get(1, "/L/upd/", [2]string{"priority", "u=0"})
		var promised []uint32
		open := map[uint32]bool{1: true}
		for len(open) > 0 {
			switch f := c.next().(type) {
			case *http2.PushPromiseFrame:
				c.promisedPath(f)
				if err := c.fr.WritePriorityUpdate(f.PromiseID, fmt.Sprintf("u=%d", urgencies[len(promised)])); err != nil {
					t.Fatal(err)
				}
				promised = append(promised, f.PromiseID)
				open[f.PromiseID] = true
			case *http2.DataFrame:
				if f.StreamEnded() {
					delete(open, f.StreamID)
				}
			case *http2.RSTStreamFrame, *http2.GoAwayFrame:
				t.Fatal(f)
			}
		}
		recs, _ := s.Records()
		last := map[uint64]int{}
		for _, r := range recs {
			if r.Sent != nil {
				last[r.Stream] = r.Sent.LastSeq
			}
		}
		var order []uint32
		for len(order) < len(promised) {
			best := uint32(0)
			for _, id := range promised {
				if !slices.Contains(order, id) && (best == 0 || last[uint64(id)] < last[uint64(best)]) {
					best = id
				}
			}
			order = append(order, best)
		}
		want := slices.Clone(promised)
		if urgencies[0] > urgencies[2] {
			slices.Reverse(want)
		}
		t.Logf("urgencies %v: pushes %v finished in order %v (last units %v)", urgencies, promised, order, last)
		if fmt.Sprint(order) != fmt.Sprint(want) {
			t.Errorf("urgencies %v: pushed streams finished in order %v, want %v", urgencies, order, want)
		}
		if conns := s.Conns(); len(conns) != 1 || conns[0].H2.PriorityUpdates != 3 {
			t.Errorf("the observer saw %+v", conns)
		}
		s.Close()
	}
}
