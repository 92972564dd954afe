package pktlog

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/internal/pkttest"
	"github.com/wirelab/wirelab/engine/link"
)

// The fates the tests use.
const (
	Delivered    = link.Delivered
	Marked       = link.Marked
	DroppedLoss  = link.DroppedLoss
	DroppedQueue = link.DroppedQueue
	DroppedAQM   = link.DroppedAQM
)

type Fate = link.Fate

var (
	cli  = netip.MustParseAddrPort("10.77.0.2:40000")
	srv  = netip.MustParseAddrPort("10.77.1.1:443")
	cdns = netip.MustParseAddrPort("10.77.0.2:5353")
	sdns = netip.MustParseAddrPort("10.77.2.53:53")
	ms   = time.Millisecond
)

func TestParse(t *testing.T) {
	var r Record
	p := pkttest.TCP(cli, srv, 7, 9, pkttest.ACK|pkttest.PSH, make([]byte, 100))
	Parse(p, &r)
	want := Record{Src: [4]byte{10, 77, 0, 2}, Dst: [4]byte{10, 77, 1, 1}, Seq: 7, Ack: 9, IPLen: 140, Payload: 100,
		SrcPort: 40000, DstPort: 443, Proto: ProtoTCP, Flags: FlagACK | FlagPSH}
	if r != want {
		t.Errorf("TCP: got %+v\nwant %+v", r, want)
	}
	r = Record{}
	Parse(pkttest.UDP(cdns, sdns, make([]byte, 33)), &r)
	if r.Proto != ProtoUDP || r.Payload != 33 || r.DstPort != 53 || r.IPLen != 61 {
		t.Errorf("UDP: %+v", r)
	}
	// Truncated packets keep what can be read and never panic.
	for n := 0; n < len(p); n++ {
		r = Record{}
		Parse(p[:n], &r)
		if r.IPLen != uint16(n) {
			t.Fatalf("truncated to %d: IPLen %d", n, r.IPLen)
		}
	}
	// Trailing bytes beyond the IP total length are ignored.
	r = Record{}
	Parse(append(pkttest.TCP(cli, srv, 1, 1, pkttest.ACK, nil), 0, 0, 0), &r)
	if r.IPLen != 40 || r.Payload != 0 {
		t.Errorf("padding: %+v", r)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(pkttest.TCP(cli, srv, 1, 2, pkttest.SYN, nil))
	f.Add(pkttest.UDP(cdns, sdns, []byte("q")))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Record
		Parse(b, &r) // never panics, whatever crossed the link
		if len(b) <= 0xffff && (int(r.IPLen) > len(b) || r.Payload > r.IPLen) {
			t.Fatalf("IP length %d, payload %d for %d bytes", r.IPLen, r.Payload, len(b))
		}
	})
}

// page is a hand-built load: DNS, handshake, request, response with one lost and retransmitted
// segment, FIN. Times are (in, out) in ms.
func page(l *Log) {
	pageEvents(func(dir Dir, fate Fate, in, out time.Duration, p []byte) { l.Add(dir, fate, in, out, 0, p) })
}

// pageEvents calls emit with page's packets, as the emulator's observer sees them.
func pageEvents(emit func(dir Dir, fate Fate, in, out time.Duration, p []byte)) {
	add := func(dir Dir, fate Fate, in, out float64, p []byte) {
		emit(dir, fate, time.Duration(in*float64(ms)), time.Duration(out*float64(ms)), p)
	}
	add(Up, Delivered, 0, 25, pkttest.UDP(cdns, sdns, make([]byte, 30)))
	add(Down, Delivered, 26, 51, pkttest.UDP(sdns, cdns, make([]byte, 46)))
	add(Up, Delivered, 52, 77, pkttest.TCP(cli, srv, 1000, 0, pkttest.SYN, nil))
	add(Down, Delivered, 77, 102, pkttest.TCP(srv, cli, 5000, 1001, pkttest.SYN|pkttest.ACK, nil))
	add(Up, Delivered, 102, 127, pkttest.TCP(cli, srv, 1001, 5001, pkttest.ACK, nil))
	add(Up, Delivered, 102.5, 127.5, pkttest.TCP(cli, srv, 1001, 5001, pkttest.ACK|pkttest.PSH, make([]byte, 200)))
	add(Down, Delivered, 128, 153, pkttest.TCP(srv, cli, 5001, 1201, pkttest.ACK, make([]byte, 1448)))
	add(Down, DroppedLoss, 128.1, 0, pkttest.TCP(srv, cli, 6449, 1201, pkttest.ACK, make([]byte, 1448)))
	add(Down, Delivered, 128.2, 153.2, pkttest.TCP(srv, cli, 7897, 1201, pkttest.ACK|pkttest.PSH, make([]byte, 500)))
	add(Up, Delivered, 153, 178, pkttest.TCP(cli, srv, 1201, 6449, pkttest.ACK, nil))
	add(Up, Delivered, 153.3, 178.3, pkttest.TCP(cli, srv, 1201, 6449, pkttest.ACK, nil)) // dup ACK: not a retransmission
	add(Down, Delivered, 178.5, 203.5, pkttest.TCP(srv, cli, 6449, 1201, pkttest.ACK, make([]byte, 1448)))
	add(Up, Delivered, 204, 229, pkttest.TCP(cli, srv, 1201, 8397, pkttest.ACK|pkttest.FIN, nil))
	add(Down, DroppedQueue, 229, 0, pkttest.TCP(srv, cli, 8397, 1202, pkttest.ACK|pkttest.FIN, nil))
	add(Down, Delivered, 430, 455, pkttest.TCP(srv, cli, 8397, 1202, pkttest.ACK|pkttest.FIN, nil)) // FIN retransmitted
}

func TestSummarizePage(t *testing.T) {
	var l Log
	page(&l)
	s := Summarize(l.Take())
	if s.FirstPacket != 0 || s.FirstRequest != 102500*time.Microsecond || s.LastResponse != 203500*time.Microsecond {
		t.Errorf("first packet %v, first request %v, last response %v", s.FirstPacket, s.FirstRequest, s.LastResponse)
	}
	if tow, ok := s.ToW(); !ok || tow != 101*ms {
		t.Errorf("ToW %v %v, want 101ms", tow, ok)
	}
	if tow, ok := s.ToWFirstPacket(); !ok || tow != 203500*time.Microsecond {
		t.Errorf("first-packet ToW %v %v", tow, ok)
	}
	wantUp := DirStats{Packets: 7, Bytes: 58 + 40 + 40 + 240 + 40 + 40 + 40}
	if s.Up != wantUp {
		t.Errorf("up %+v, want %+v", s.Up, wantUp)
	}
	wantDown := DirStats{Packets: 6, Bytes: 74 + 40 + 1488 + 540 + 1488 + 40, DropsQueue: 1, DropsTail: 1, DropsLoss: 1, Retransmissions: 2}
	if s.Down != wantDown {
		t.Errorf("down %+v, want %+v", s.Down, wantDown)
	}
	if s.Retransmissions() != 2 {
		t.Errorf("retransmissions %d", s.Retransmissions())
	}
	if l.Len() != 0 {
		t.Error("Take did not empty the log")
	}
}

// The gateway's verdicts: drops by cause, marks, the queue's sojourn times and the flows that lost
// or had marked packets; a drop after acceptance keeps its time.
func TestGatewayFacts(t *testing.T) {
	var l Log
	other := netip.MustParseAddrPort("10.77.0.2:40001")
	ect := func(p []byte, ecn byte) []byte { p[1] |= ecn; return p }
	for i := 0; i < 100; i++ {
		at := time.Duration(i) * ms
		l.Add(Down, Delivered, at, at+30*ms, time.Duration(i)*100*time.Microsecond, pkttest.TCP(srv, cli, uint32(i*1000), 1, pkttest.ACK, make([]byte, 1000)))
	}
	l.Add(Down, Marked, 101*ms, 131*ms, 20*ms, ect(pkttest.TCP(srv, cli, 200_000, 1, pkttest.ACK, make([]byte, 1000)), 3))
	l.Add(Down, DroppedAQM, 102*ms, 140*ms, 38*ms, pkttest.TCP(srv, cli, 201_000, 1, pkttest.ACK, make([]byte, 1000)))
	l.Add(Down, DroppedQueue, 103*ms, 0, 0, pkttest.TCP(srv, other, 7, 1, pkttest.ACK, make([]byte, 1000)))
	l.Add(Down, link.DroppedOverflow, 104*ms, 150*ms, 46*ms, pkttest.TCP(srv, other, 1007, 1, pkttest.ACK, make([]byte, 1000)))
	l.Add(Up, Delivered, 105*ms, 120*ms, 0, ect(pkttest.TCP(other, srv, 1, 1, pkttest.ACK, nil), 2))
	recs := l.Take()
	if r := recs[100]; r.Fate != Marked || r.ECN != 3 || r.SojournUS != 20_000 {
		t.Errorf("marked record %+v", r)
	}
	if r := recs[101]; r.Out != int64(140*ms) || r.SojournUS != 38_000 {
		t.Errorf("a drop at dequeue keeps its time: %+v", r)
	}
	if r := recs[102]; r.Out != r.In {
		t.Errorf("a tail drop is at arrival: %+v", r)
	}
	s := Summarize(recs)
	want := DirStats{Packets: 101, Bytes: 101 * 1040, DropsQueue: 3, DropsTail: 1, DropsAQM: 1, DropsOverflow: 1, Marks: 1,
		Sojourn: Sojourn{P50: 5.0, P95: 9.5, P99: 9.9, Max: 20}}
	if s.Down != want {
		t.Errorf("down %+v\nwant %+v", s.Down, want)
	}
	if s.Flows != 2 || len(s.Congested) != 2 {
		t.Fatalf("flows %d, congested %+v", s.Flows, s.Congested)
	}
	if c := s.Congested[0]; c.Drops != 2 || c.Marks != 0 || c.Client != "10.77.0.2:40001" || c.Server != "10.77.1.1:443" || c.Proto != "tcp" || c.Packets != 1 {
		t.Errorf("the flow with most drops first: %+v", c)
	}
	if c := s.Congested[1]; c.Drops != 1 || c.Marks != 1 || c.Packets != 101 {
		t.Errorf("second flow: %+v", c)
	}
}

func TestWindow(t *testing.T) {
	var l Log
	page(&l)
	// The DNS answer is delivered at 51 ms: in a window starting at 50 ms although it entered at 26.
	w := l.Window(50*ms, 103*ms)
	if len(w) != 5 {
		t.Fatalf("%d records in [50ms,103ms): %+v", len(w), w)
	}
	if w[0].Proto != ProtoUDP || w[0].Dir != Down {
		t.Errorf("first record of the window: %+v", w[0])
	}
	for i := 1; i < len(w); i++ {
		if w[i].In < w[i-1].In {
			t.Fatal("window not ordered by In")
		}
	}
	s := Summarize(w)
	if _, ok := s.ToW(); ok {
		t.Error("ToW without response data in the window")
	}
}

func TestRetransmissions(t *testing.T) {
	p := func(seq uint32, flags uint8, n int) []byte {
		return pkttest.TCP(cli, srv, seq, 0, flags, make([]byte, n))
	}
	cases := []struct {
		name string
		pkts [][]byte
		want int64
	}{
		{"in order", [][]byte{p(0, pkttest.SYN, 0), p(1, pkttest.ACK, 100), p(101, pkttest.ACK, 100)}, 0},
		{"SYN again", [][]byte{p(0, pkttest.SYN, 0), p(0, pkttest.SYN, 0)}, 1},
		{"partial overlap", [][]byte{p(1, pkttest.ACK, 100), p(51, pkttest.ACK, 100)}, 1},
		{"pure ACKs", [][]byte{p(1, pkttest.ACK, 100), p(101, pkttest.ACK, 0), p(101, pkttest.ACK, 0)}, 0},
		{"gap then fill", [][]byte{p(1, pkttest.ACK, 100), p(201, pkttest.ACK, 100), p(101, pkttest.ACK, 100)}, 1},
		{"sequence wrap", [][]byte{p(0xffffffb0, pkttest.ACK, 100), p(0x14, pkttest.ACK, 100), p(0xffffffb0, pkttest.ACK, 100)}, 1},
	}
	for _, c := range cases {
		var l Log
		for i, b := range c.pkts {
			l.Add(Up, Delivered, time.Duration(i), time.Duration(i), 0, b)
		}
		s := Summarize(l.Take())
		if s.Up.Retransmissions != c.want {
			t.Errorf("%s: %d retransmissions, want %d", c.name, s.Up.Retransmissions, c.want)
		}
	}
	// A drop in the middle of a GSO super-packet is logged when the link decides it, before the
	// segments ahead of it are delivered and logged; at one In they still count in sending order.
	var gso Log
	gso.Add(Up, DroppedLoss, 5, 5, 0, p(201, pkttest.ACK, 100))
	gso.Add(Up, Delivered, 5, 9, 0, p(1, pkttest.ACK, 100))
	gso.Add(Up, Delivered, 5, 9, 0, p(101, pkttest.ACK, 100))
	gso.Add(Up, Delivered, 5, 9, 0, p(301, pkttest.ACK, 100))
	if s := Summarize(gso.Take()); s.Up.Retransmissions != 0 {
		t.Errorf("a GSO burst with a drop: %d retransmissions, want 0", s.Up.Retransmissions)
	}
	// Flows are told apart by ports.
	var l Log
	other := netip.MustParseAddrPort("10.77.0.2:40001")
	l.Add(Up, Delivered, 0, 0, 0, pkttest.TCP(cli, srv, 1, 0, pkttest.ACK, make([]byte, 10)))
	l.Add(Up, Delivered, 1, 1, 0, pkttest.TCP(other, srv, 1, 0, pkttest.ACK, make([]byte, 10)))
	if s := Summarize(l.Take()); s.Up.Retransmissions != 0 {
		t.Error("two flows with the same sequence numbers counted as retransmission")
	}
}

func TestQUICToW(t *testing.T) {
	var l Log
	q := netip.MustParseAddrPort("10.77.0.2:50000")
	l.Add(Up, Delivered, 0, 0, 0, pkttest.UDP(cdns, sdns, make([]byte, 30)))
	l.Add(Down, Delivered, 10*ms, 20*ms, 0, pkttest.UDP(sdns, cdns, make([]byte, 30)))
	l.Add(Up, Delivered, 21*ms, 31*ms, 0, pkttest.UDP(q, srv, make([]byte, 1200))) // Initial: request data for UDP
	l.Add(Down, Delivered, 32*ms, 42*ms, 0, pkttest.UDP(srv, q, make([]byte, 1200)))
	l.Add(Down, DroppedLoss, 33*ms, 0, 0, pkttest.UDP(srv, q, make([]byte, 1200)))
	s := Summarize(l.Take())
	if tow, ok := s.ToW(); !ok || tow != 21*ms {
		t.Errorf("QUIC ToW %v %v, want 21ms", tow, ok)
	}
	if tow, ok := s.ToWFirstPacket(); !ok || tow != 42*ms {
		t.Errorf("QUIC first-packet ToW %v %v, want 42ms", tow, ok)
	}
}

func TestConcurrentAdd(t *testing.T) {
	var l Log
	var wg sync.WaitGroup
	pk := pkttest.TCP(cli, srv, 1, 0, pkttest.ACK, nil)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				l.Add(Dir(g), Delivered, time.Duration(i), time.Duration(i), 0, pk)
			}
		}(g)
	}
	wg.Wait()
	s := Summarize(l.Take())
	if s.Up.Packets != 1000 || s.Down.Packets != 1000 {
		t.Errorf("%+v", s)
	}
}

func BenchmarkAdd(b *testing.B) {
	var l Log
	pk := pkttest.TCP(cli, srv, 1, 0, pkttest.ACK, make([]byte, 1448))
	for i := 0; i < b.N; i++ {
		l.Add(Down, Delivered, time.Duration(i), time.Duration(i), 0, pk)
	}
}

// The log spans many chunks; Take keeps the records added meanwhile for the next window and
// loses none.
func TestChunksAndTake(t *testing.T) {
	var l Log
	pk := pkttest.TCP(cli, srv, 1, 0, pkttest.ACK, nil)
	const n = 3*chunkSize + 100
	for i := 0; i < n; i++ {
		l.Add(Up, Delivered, time.Duration(i), time.Duration(i), 0, pk)
	}
	if l.Len() != n {
		t.Fatalf("Len %d", l.Len())
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := n; i < n+5000; i++ {
			l.Add(Down, Delivered, time.Duration(i), time.Duration(i), 0, pk)
		}
	}()
	first := l.Take()
	wg.Wait()
	recs := append(first, l.Take()...)
	if len(recs) != n+5000 {
		t.Fatalf("%d records over two windows, want %d", len(recs), n+5000)
	}
	SortByIn(recs)
	for i := 1; i < len(recs); i++ {
		if recs[i].In != recs[i-1].In+1 {
			t.Fatalf("record %d: In %d after %d", i, recs[i].In, recs[i-1].In)
		}
	}
}
