package pktlog

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/internal/pkttest"
)

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
	pageEvents(func(dir Dir, fate Fate, in, out time.Duration, p []byte) { l.Add(dir, fate, in, out, p) })
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
	wantDown := DirStats{Packets: 6, Bytes: 74 + 40 + 1488 + 540 + 1488 + 40, DropsQueue: 1, DropsLoss: 1, Retransmissions: 2}
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
	l.DropBefore(200 * ms)
	if n := l.Len(); n != 4 {
		t.Errorf("%d records after DropBefore(200ms), want 4", n)
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
			l.Add(Up, Delivered, time.Duration(i), time.Duration(i), b)
		}
		s := Summarize(l.Take())
		if s.Up.Retransmissions != c.want {
			t.Errorf("%s: %d retransmissions, want %d", c.name, s.Up.Retransmissions, c.want)
		}
	}
	// Flows are told apart by ports.
	var l Log
	other := netip.MustParseAddrPort("10.77.0.2:40001")
	l.Add(Up, Delivered, 0, 0, pkttest.TCP(cli, srv, 1, 0, pkttest.ACK, make([]byte, 10)))
	l.Add(Up, Delivered, 1, 1, pkttest.TCP(other, srv, 1, 0, pkttest.ACK, make([]byte, 10)))
	if s := Summarize(l.Take()); s.Up.Retransmissions != 0 {
		t.Error("two flows with the same sequence numbers counted as retransmission")
	}
}

func TestQUICToW(t *testing.T) {
	var l Log
	q := netip.MustParseAddrPort("10.77.0.2:50000")
	l.Add(Up, Delivered, 0, 0, pkttest.UDP(cdns, sdns, make([]byte, 30)))
	l.Add(Down, Delivered, 10*ms, 20*ms, pkttest.UDP(sdns, cdns, make([]byte, 30)))
	l.Add(Up, Delivered, 21*ms, 31*ms, pkttest.UDP(q, srv, make([]byte, 1200))) // Initial: request data for UDP
	l.Add(Down, Delivered, 32*ms, 42*ms, pkttest.UDP(srv, q, make([]byte, 1200)))
	l.Add(Down, DroppedLoss, 33*ms, 0, pkttest.UDP(srv, q, make([]byte, 1200)))
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
				l.Add(Dir(g), Delivered, time.Duration(i), time.Duration(i), pk)
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
		l.Add(Down, Delivered, time.Duration(i), time.Duration(i), pk)
	}
}

// The log spans many chunks; DropBefore and Take keep records added meanwhile and lose none.
func TestChunksAndDropBefore(t *testing.T) {
	var l Log
	l.DropBefore(time.Hour) // empty: nothing happens
	pk := pkttest.TCP(cli, srv, 1, 0, pkttest.ACK, nil)
	const n = 3*chunkSize + 100
	for i := 0; i < n; i++ {
		l.Add(Up, Delivered, time.Duration(i), time.Duration(i), pk)
	}
	if l.Len() != n {
		t.Fatalf("Len %d", l.Len())
	}
	l.DropBefore(chunkSize + 7)
	if got, want := l.Len(), n-chunkSize-7; got != want {
		t.Fatalf("after DropBefore: %d records, want %d", got, want)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := n; i < n+5000; i++ {
			l.Add(Down, Delivered, time.Duration(i), time.Duration(i), pk)
		}
	}()
	for i := 0; i < 20; i++ {
		l.DropBefore(time.Duration(2*chunkSize + i))
	}
	wg.Wait()
	recs := l.Take()
	if len(recs) != n+5000-(2*chunkSize+19) {
		t.Fatalf("%d records after concurrent DropBefore, want %d", len(recs), n+5000-(2*chunkSize+19))
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].In != recs[i-1].In+1 {
			t.Fatalf("record %d: In %d after %d", i, recs[i].In, recs[i-1].In)
		}
	}
}
