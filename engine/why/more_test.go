package why

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/link"
	"github.com/wirelab/wirelab/engine/pktlog"
)

// TestDNSAndCompute: a name looked up across the path (1 RTT of dns), the document over a fresh
// connection (setup and transfer), then — 5 ms of the loader's parsing later — a request it
// references on the same connection: dns, setup, transfer ×2 and the 5 ms of compute between the
// document's end and the reference's issue.
func TestDNSAndCompute(t *testing.T) {
	s := newSim(rtt100)
	root := s.request(100*time.Millisecond, 1000, -1)
	root.onEnd = func() {
		child := s.request(s.now+5*time.Millisecond, 1000, -1)
		child.initiator = root.idx
	}
	s.run()
	in, _ := s.input(t)
	query := pktlog.Record{In: 0, Out: int64(50 * time.Millisecond), Dir: pktlog.Up, Proto: pktlog.ProtoUDP,
		Src: simClient, Dst: [4]byte{10, 77, 2, 53}, SrcPort: 5353, DstPort: 53, IPLen: 60, Payload: 32}
	answer := query
	answer.In, answer.Out, answer.Dir = int64(50*time.Millisecond), int64(100*time.Millisecond), pktlog.Down
	answer.Src, answer.Dst, answer.SrcPort, answer.DstPort = query.Dst, query.Src, 53, 5353
	in.Packets = append([]pktlog.Record{query, answer}, in.Packets...)
	in.Start = 0
	in.Timeline.Requests[0].Issued, in.Timeline.Requests[0].DNSStart = 0, 0
	res := Decompose(in)
	want := map[Part]float64{DNS: 100, Setup: 100, Transfer: 200, Compute: 5}
	for p := Part(0); p < NumParts; p++ {
		if got := res.Parts[p]; math.Abs(got-want[p]) > 1 {
			t.Errorf("%s = %.3f ms, want %.3f", Defs[p].Key, got, want[p])
		}
	}
	if t.Failed() {
		t.Log("\n" + describe(in, res))
	}
}

// TestQUICStory: an h3 load as datagrams — the handshake's round trip (setup), the request's and
// the response's way (transfer), and one response datagram lost and repaired a round trip later:
// with the loader's stream arrivals the stream waits for its own missing bytes (recovery); the
// link is unlimited, so nothing else competes.
func TestQUICStory(t *testing.T) {
	const half = 50 * time.Millisecond
	cli, srv := simClient, simServer
	dg := func(in time.Duration, dir pktlog.Dir, fate link.Fate) pktlog.Record {
		r := pktlog.Record{In: int64(in), Out: int64(in + half), Dir: dir, Fate: fate, Proto: pktlog.ProtoUDP, IPLen: 1252, Payload: 1224}
		if fate != link.Delivered {
			r.Out = r.In
		}
		if dir == pktlog.Up {
			r.Src, r.Dst, r.SrcPort, r.DstPort = cli, srv, 50000, 443
		} else {
			r.Src, r.Dst, r.SrcPort, r.DstPort = srv, cli, 443, 50000
		}
		return r
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	recs := []pktlog.Record{
		dg(0, pktlog.Up, link.Delivered),           // Initial
		dg(ms(50), pktlog.Down, link.Delivered),    // server's flight
		dg(ms(100), pktlog.Up, link.Delivered),     // Finished + request
		dg(ms(150), pktlog.Down, link.Delivered),   // response 0…1000
		dg(ms(150), pktlog.Down, link.DroppedLoss), // response 1000…2000: lost
		dg(ms(150), pktlog.Down, link.Delivered),   // response 2000…3000
		dg(ms(200), pktlog.Up, link.Delivered),     // ACK telling of the gap
		dg(ms(250), pktlog.Down, link.Delivered),   // repair 1000…2000
	}
	tl := Timeline{
		Conns: []Conn{{ID: 1, Transport: "udp", Local: "0.0.0.0:50000", Remote: "10.77.1.1:443",
			Arrivals: [][4]int64{{0, 200_000, 0, 1000}, {0, 200_000, 2000, 1000}, {0, 300_000, 1000, 1000}}}},
		Requests: []Request{{URL: "https://s1.wirelab.test/", Initiator: -1, Conn: 1, Stream: 0, Issued: 0, DNSStart: Unset,
			Connect: 0, SSLStart: 0, ConnectEnd: 100_000, SendStart: 100_000, SendEnd: 100_000, FirstByte: 200_000, End: 300_010}},
	}
	for _, arrivals := range []string{"stream", "none", "other streams"} {
		in := Input{Packets: append([]pktlog.Record(nil), recs...), Timeline: tl, Start: 0, End: ms(300)}
		switch arrivals {
		case "none":
			in.Timeline.Conns = []Conn{{ID: 1, Transport: "udp", Local: "10.77.0.2:50000", Remote: "10.77.1.1:443"}}
		case "other streams":
			// The loader recorded the server's control stream but none of the request's frames
			// (the load ended before quic-go recorded its packets): the request's stream is
			// followed by the connection's datagrams, not taken as complete from the start (the
			// old rule charged everything after the request's arrival to compute).
			in.Timeline.Conns = []Conn{{ID: 1, Transport: "udp", Local: "10.77.0.2:50000", Remote: "10.77.1.1:443",
				Arrivals: [][4]int64{{3, 100_000, 0, 10}}}}
		}
		pktlog.SortByIn(in.Packets)
		res := Decompose(in)
		// Without the arrivals the connection's datagrams tell the same story here: the one lost
		// is waited for once the datagrams sent with it have arrived.
		want := map[Part]float64{Setup: 100, Transfer: 100, Recovery: 100}
		for p := Part(0); p < NumParts; p++ {
			if got := res.Parts[p]; math.Abs(got-want[p]) > 1 {
				t.Errorf("arrivals of %s: %s = %.3f ms, want %.3f", arrivals, Defs[p].Key, got, want[p])
			}
		}
		if t.Failed() {
			t.Log("\n" + describe(in, res))
		}
	}
}

// TestRandomLoads: whatever the path, the losses and the windows, the parts are a partition of the
// interval — non-negative, summing to it, the critical path tiling it — and every retransmission
// the packet log counts has exactly one kind.
func TestRandomLoads(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 1))
	for run := 0; run < 200; run++ {
		p := simPath{delayUp: time.Duration(1+rng.IntN(100)) * time.Millisecond, delayDown: time.Duration(1+rng.IntN(100)) * time.Millisecond}
		if rng.IntN(2) == 0 {
			p.rateDown = int64(1+rng.IntN(20)) * 1e6
		}
		if rng.IntN(3) == 0 {
			p.rateUp = int64(1+rng.IntN(20)) * 1e6
		}
		s := newSim(p)
		s.iw = float64(2 + rng.IntN(20))
		s.think = time.Duration(rng.IntN(30)) * time.Millisecond
		s.h2 = rng.IntN(3) == 0
		loss := rng.Float64() * 0.05
		// the simulated client never retransmits: its SYN and requests always arrive
		s.drop = func(sp simPacket) bool {
			return sp.flags&pktlog.FlagSYN == 0 && (sp.dir == pktlog.Down || sp.n == 0) && rng.Float64() < loss
		}
		n := 1 + rng.IntN(8)
		for i := 0; i < n; i++ {
			s.request(time.Duration(rng.IntN(3))*time.Millisecond, int64(1+rng.IntN(60))*1000, int64(1+2*i))
		}
		s.run()
		in, sum := s.input(t)
		res := Decompose(in)
		total := float64(in.End-in.Start) / float64(time.Millisecond)
		if math.Abs(res.Parts.Sum()-total) > 1e-3 {
			t.Fatalf("run %d: parts sum to %.6f, interval %.6f", run, res.Parts.Sum(), total)
		}
		for k, v := range res.Parts {
			if v < 0 {
				t.Fatalf("run %d: %s = %f", run, Defs[k].Key, v)
			}
		}
		for k := range res.Path {
			if k > 0 && res.Path[k].From != res.Path[k-1].To {
				t.Fatalf("run %d: the critical path has a gap at %v", run, res.Path[k].From)
			}
		}
		if len(res.Path) == 0 || res.Path[0].From != in.Start || res.Path[len(res.Path)-1].To != in.End {
			t.Fatalf("run %d: the critical path does not span the interval", run)
		}
		if res.Retx.Total() != sum.Retransmissions() {
			t.Fatalf("run %d: %+v by kind, %d counted", run, res.Retx, sum.Retransmissions())
		}
	}
}
