package why

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
	"github.com/wirelab/wirelab/engine/pktlog"
)

const ms = float64(time.Millisecond)

// story is a load with a known decomposition: the parts it must have (within 1 ms; parts not
// named must be below 1 ms) and the retransmissions by kind.
type story struct {
	name  string
	build func(t *testing.T) (Input, pktlog.Summary)
	want  map[Part]float64
	retx  Retx
}

// rtt100 is a 100 ms path, 50 ms each way.
var rtt100 = simPath{delayUp: 50 * time.Millisecond, delayDown: 50 * time.Millisecond}

// twentyLosingOnce builds 20 segments sent at once (initial window 100) on rtt100, segment i
// (from 0) lost the first time it is sent.
func twentyLosingOnce(i int) func(t *testing.T) (Input, pktlog.Summary) {
	return func(t *testing.T) (Input, pktlog.Summary) {
		s := newSim(rtt100)
		s.iw = 100
		s.drop = func(p simPacket) bool { return p.dir == pktlog.Down && p.seq == 1+int64(i)*simMSS && p.nth == 1 }
		s.request(0, 20*simMSS, -1)
		s.run()
		return s.input(t)
	}
}

func stories() []story {
	const S = 1500 * 8 * 1000.0 / 10e6 // ms: one full packet at 10 Mbit/s (1.2 ms)
	return []story{{
		// 20 segments sent at once on an unlimited path; the 10th is lost; the ten after it bring
		// three duplicate ACKs to the server one RTT after it sent them, and the repair arrives half
		// an RTT later. Setup is the handshake (1 RTT), transfer the request's and the response's
		// way (½ RTT each), recovery from the ninth segment's arrival to the repair's (1 RTT).
		name:  "one drop repaired by fast retransmit",
		build: twentyLosingOnce(9),
		want:  map[Part]float64{Setup: 100, Transfer: 100, Recovery: 100},
		retx:  Retx{Fast: 1},
	}, {
		// The last of 20 segments is lost: no duplicate ACK, the 300 ms timer (restarted by the
		// ACKs of the other 19, which reach the server 1 RTT after they left) fires, and the repair
		// arrives half an RTT later: recovery = ½ RTT (the 19th's arrival to the ACKs' arrival at
		// the server) + RTO + ½ RTT.
		name:  "one drop repaired by a timeout",
		build: twentyLosingOnce(19),
		want:  map[Part]float64{Setup: 100, Transfer: 100, Recovery: 400},
		retx:  Retx{Timeout: 1},
	}, {
		// 20 segments, initial window 10: the ACKs of the first ten are all lost, so the server's
		// timer fires 300 ms after its transmissions and re-sends the first segment, which had
		// arrived (spurious). Its ACK (cumulative: 11) releases the rest in slow start from one
		// segment: 2, then 4, then 4 more. Window: the round trip after the first ten left (their
		// ACKs would have come then) and the two slow-start rounds before the last (1 RTT each);
		// recovery: from one RTT after the transmissions to the timeout (200 ms) and the repair's
		// round trip (1 RTT); transfer: the request's way and the last round's (½ RTT each).
		name: "a spurious timeout",
		build: func(t *testing.T) (Input, pktlog.Summary) {
			s := newSim(rtt100)
			acks := 0
			s.drop = func(p simPacket) bool {
				if p.dir == pktlog.Up && p.n == 0 && p.ack > 1 && acks < 10 {
					acks++
					return true
				}
				return false
			}
			s.request(0, 20*simMSS, -1)
			s.run()
			return s.input(t)
		},
		want: map[Part]float64{Setup: 100, Transfer: 100, Window: 300, Recovery: 300},
		retx: Retx{Spurious: 1},
	}, {
		// Seven requests at once for one origin over HTTP/1.1: six connections open, the seventh
		// waits for the first to finish its request (a 200 ms server think) and then goes on it.
		// The last to finish is the seventh: it waited for the handshake of the connection it got
		// (setup, 1 RTT), then for that connection's first request (queueing: ½ + 0.2 + ½ RTT s),
		// then its own exchange (transfer ½ RTT each way, server 200 ms).
		name: "a request queued behind six busy connections",
		build: func(t *testing.T) (Input, pktlog.Summary) {
			s := newSim(rtt100)
			s.think = 200 * time.Millisecond
			for i := 0; i < 7; i++ {
				s.request(0, 1000, -1)
			}
			s.run()
			return s.input(t)
		},
		want: map[Part]float64{Setup: 100, Queueing: 300, Server: 200, Transfer: 100},
	}, {
		// 150 segments at 10 Mbit/s (S = 1.2 ms a packet) over 100 ms RTT (a BDP of 83 packets)
		// from an initial window of 10: slow start sends rounds of 10, 20, 40 and 80 segments,
		// each starting RTT + S after the one before; between rounds the bottleneck idles while
		// the server waits for ACKs: window = 3 (RTT + S) − 70 S. Transfer is every packet's
		// serialisation (150 S) and the request's and the last segment's way (½ RTT each).
		name: "slow start from IW 10 into a known bandwidth-delay product",
		build: func(t *testing.T) (Input, pktlog.Summary) {
			p := rtt100
			p.rateDown = 10e6
			s := newSim(p)
			s.request(0, 150*simMSS, -1)
			s.run()
			return s.input(t)
		},
		want: map[Part]float64{Setup: 100, Transfer: 150*S + 100, Window: 3*(100+S) - 70*S},
	}, {
		// Three h2 streams on one connection, their 30 segments interleaved (1, 3, 5, 1, 3, 5 …)
		// and sent at once; the fourth segment (stream 1's second) is lost. Everything after it
		// arrives half an RTT after it left, so stream 5, which completes last, has all of its bytes
		// at the client, held behind stream 1's hole until the fast retransmit's repair arrives one
		// RTT later: head-of-line blocking.
		name: "a lost segment holding three h2 streams",
		build: func(t *testing.T) (Input, pktlog.Summary) {
			s := newSim(rtt100)
			s.iw, s.h2 = 100, true
			s.drop = func(p simPacket) bool { return p.dir == pktlog.Down && p.seq == 1+3*simMSS && p.nth == 1 }
			for _, st := range []int64{1, 3, 5} {
				s.request(0, 10*simMSS, st)
			}
			s.run()
			in, sum := s.input(t)
			var m StreamMap
			m.Remote = "10.77.0.2:40000"
			for k := int64(0); k < 30; k++ {
				m.Runs = append(m.Runs, StreamRun{Stream: 1 + 2*(k%3), Start: k * simMSS, End: (k + 1) * simMSS})
			}
			in.Maps = []StreamMap{m}
			in.Timeline.Requests[2].End++ // stream 5's END_STREAM is parsed last
			return in, sum
		},
		want: map[Part]float64{Setup: 100, Transfer: 100, HoL: 100},
		retx: Retx{Fast: 1},
	}}
}

func TestStories(t *testing.T) {
	for _, st := range stories() {
		t.Run(st.name, func(t *testing.T) {
			in, sum := st.build(t)
			res := Decompose(in)
			checkPartition(t, st.name, in, sum, res)
			for p := Part(0); p < NumParts; p++ {
				want := st.want[p]
				if got := res.Parts[p]; math.Abs(got-want) > 1 {
					t.Errorf("%s = %.3f ms, want %.3f ms", Defs[p].Key, got, want)
				}
			}
			if res.Retx != st.retx {
				t.Errorf("retransmissions %+v, want %+v", res.Retx, st.retx)
			}
			if res.Retx.Total() != sum.Retransmissions() {
				t.Errorf("kinds sum to %d, the packet log counts %d retransmissions", res.Retx.Total(), sum.Retransmissions())
			}
			if t.Failed() || testing.Verbose() {
				t.Log("\n" + describe(in, res))
			}
		})
	}
}

// checkPartition: the interval is the load's tow_first_packet_ms and the parts sum to it.
func checkPartition(t *testing.T, name string, in Input, sum pktlog.Summary, res Result) {
	t.Helper()
	total := float64(in.End-in.Start) / ms
	if fp, _ := sum.ToWFirstPacket(); math.Abs(total-float64(fp)/ms) > 1e-6 {
		t.Fatalf("%s: interval %.3f ms, tow_first_packet %.3f ms", name, total, float64(fp)/ms)
	}
	if got := res.Parts.Sum(); math.Abs(got-total) > 1e-3 {
		t.Errorf("%s: parts sum to %.6f ms, the interval is %.6f ms", name, got, total)
	}
}

// describe prints the critical path (for a failing story).
func describe(in Input, res Result) string {
	var b strings.Builder
	for _, s := range res.Path {
		fmt.Fprintf(&b, "%9.3f → %9.3f ms  %-14s req %d\n", float64(s.From-in.Start)/ms, float64(s.To-in.Start)/ms, Defs[s.Part].Key, s.Request)
	}
	fmt.Fprintf(&b, "parts: %s\n", mustJSON(res.Parts))
	return b.String()
}

func mustJSON(p Parts) string {
	b, _ := p.MarshalJSON()
	return string(b)
}

// TestStoryFairQueue: a load behind another flow's burst, through the link model's own gateway. 100
// datagrams of 1500 B enter a 10 Mbit/s downlink at 0 (1.2 ms each: the burst drains at 120 ms);
// the load's SYN-ACK reaches the gateway at 50 ms. Behind drop-tail it waits for the 58⅓ packets
// ahead of it — gateway 70 ms; FQ-CoDel serves it from its own flow queue once the packet on the
// wire has left — gateway under one packet's time (the log's SojournUS tells the replay which
// packet the rate stage took). Everything else is the same: the gateway is the difference.
func TestStoryFairQueue(t *testing.T) {
	path := simPath{delayUp: 50 * time.Millisecond, delayDown: 50 * time.Millisecond, rateDown: 10e6}
	const packet = 1.2 // ms: 1500 B at 10 Mbit/s
	run := func(discipline string) (Input, Result) {
		s := newSim(path)
		s.iw = 100
		s.withGateway(t, discipline)
		s.flood(0, 100, 1500)
		s.request(0, 20*simMSS, -1)
		s.run()
		in, sum := s.input(t)
		res := Decompose(in)
		checkPartition(t, discipline, in, sum, res)
		if res.Retx != (Retx{}) {
			t.Errorf("%s: retransmissions %+v, want none", discipline, res.Retx)
		}
		if t.Failed() || testing.Verbose() {
			t.Logf("%s:\n%s", discipline, describe(in, res))
		}
		return in, res
	}
	_, fifo := run(profile.DropTail)
	fqIn, fq := run(profile.FQCoDel)
	if g := fifo.Parts[Gateway]; math.Abs(g-70) > 1 {
		t.Errorf("drop-tail: gateway_ms %.3f, want 70 (the burst's 58⅓ packets ahead of the SYN-ACK)", g)
	}
	if g := fq.Parts[Gateway]; g > packet {
		t.Errorf("fq_codel: gateway_ms %.3f, want under one packet's %.1f ms", g, packet)
	}
	for p := Part(0); p < NumParts; p++ {
		if p != Gateway && math.Abs(fifo.Parts[p]-fq.Parts[p]) > 1 {
			t.Errorf("%s: %.3f ms behind drop-tail, %.3f behind fq_codel: only the gateway should differ", Defs[p].Key, fifo.Parts[p], fq.Parts[p])
		}
	}
	// Without the sojourns the replay would serve FQ-CoDel's packets in arrival order, as a FIFO,
	// and charge the SYN-ACK for the burst ahead of it until it reached the client (50.4 ms: a FIFO
	// would have sent it at 120 ms, after its real arrival at 100.4 ms).
	for i := range fqIn.Others {
		fqIn.Others[i].SojournUS = 0
	}
	for i := range fqIn.Packets {
		fqIn.Packets[i].SojournUS = 0
	}
	if g := Decompose(fqIn).Parts[Gateway]; g < 40 {
		t.Errorf("fq_codel replayed in arrival order: gateway_ms %.3f; the story does not tell the orders apart", g)
	}
}
