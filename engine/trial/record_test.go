package trial

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/contract/contracttest"
	"github.com/wirelab/wirelab/engine/internal/seam"
	"github.com/wirelab/wirelab/engine/pktlog"
)

func TestSequence(t *testing.T) {
	s := &Spec{Protocols: []string{"h1s", "h2", "h3"}, Repetitions: 3, Order: "alternate", Seed: 1}
	var got []string
	for i, l := range Sequence(s) {
		if l.Index != i {
			t.Fatalf("index %d at position %d", l.Index, i)
		}
		got = append(got, fmt.Sprintf("%s%d", l.Protocol, l.Repetition))
	}
	if want := "h1s0 h20 h30 h1s1 h21 h31 h1s2 h22 h32"; strings.Join(got, " ") != want {
		t.Errorf("alternate: %s, want %s", strings.Join(got, " "), want)
	}

	s.Order, s.Repetitions = "random", 20
	a, b := Sequence(s), Sequence(s)
	s.Seed = 2
	c := Sequence(s)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("the same seed gave two orders")
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Error("seeds 1 and 2 gave the same order of 60 loads")
	}
	count, next := map[string]int{}, map[string]int{}
	alternating := true
	for i, l := range a {
		count[l.Protocol]++
		if l.Repetition != next[l.Protocol] {
			t.Errorf("load %d: %s repetition %d, want %d (numbered in running order)", i, l.Protocol, l.Repetition, next[l.Protocol])
		}
		next[l.Protocol]++
		if l.Protocol != s.Protocols[i%3] {
			alternating = false
		}
	}
	if alternating {
		t.Error("random order is the alternate order")
	}
	for _, p := range s.Protocols {
		if count[p] != 20 {
			t.Errorf("%s: %d loads, want 20", p, count[p])
		}
	}
}

// rec builds a packet record at client time ms.
func rec(dir pktlog.Dir, proto uint8, sport, dport uint16, flags uint8, payload uint16, ms float64) pktlog.Record {
	r := pktlog.Record{Dir: dir, Proto: proto, SrcPort: sport, DstPort: dport, Flags: flags, Payload: payload, IPLen: 40 + payload}
	client, server := [4]byte{10, 77, 0, 2}, [4]byte{10, 77, 1, 1}
	if dir == pktlog.Up {
		r.Src, r.Dst = client, server
	} else {
		r.Src, r.Dst = server, client
	}
	ns := int64(ms * 1e6)
	r.In, r.Out = ns, ns
	if dir == pktlog.Down {
		r.In = ns - 10e6 // entered 10 ms before the client got it
	}
	return r
}

func TestOwnKeepsTheLoadsFlows(t *testing.T) {
	const syn, synack, ack, fin, psh = pktlog.FlagSYN, pktlog.FlagSYN | pktlog.FlagACK, pktlog.FlagACK, pktlog.FlagFIN | pktlog.FlagACK, pktlog.FlagPSH | pktlog.FlagACK
	recs := []pktlog.Record{
		rec(pktlog.Down, pktlog.ProtoTCP, 443, 40000, fin, 0, 15), // an earlier load's connection, still closing
		rec(pktlog.Up, pktlog.ProtoTCP, 40000, 443, ack, 0, 16),   // … and the client's answer
		rec(pktlog.Down, pktlog.ProtoUDP, 443, 50000, 0, 30, 17),  // a datagram to an earlier load's QUIC port
		rec(pktlog.Up, pktlog.ProtoUDP, 41000, 53, 0, 33, 20),     // this load: DNS
		rec(pktlog.Down, pktlog.ProtoUDP, 53, 41000, 0, 64, 40),
		rec(pktlog.Up, pktlog.ProtoTCP, 40002, 443, syn, 0, 41),
		rec(pktlog.Down, pktlog.ProtoTCP, 443, 40002, synack, 0, 61),
		rec(pktlog.Up, pktlog.ProtoTCP, 40002, 443, psh, 200, 62),
		rec(pktlog.Down, pktlog.ProtoTCP, 443, 40002, psh, 1000, 82),
		rec(pktlog.Up, pktlog.ProtoUDP, 50002, 443, 0, 1200, 83), // this load: QUIC
		rec(pktlog.Down, pktlog.ProtoUDP, 443, 50002, 0, 1200, 103),
		rec(pktlog.Up, 1, 0, 0, 0, 56, 104), // ICMP: kept
	}
	own, stray := Own(recs)
	if stray != 3 || len(own) != 9 {
		t.Fatalf("own %d, stray %d; want 9 and 3", len(own), stray)
	}
	s := pktlog.Summarize(own)
	if s.FirstPacket != 20*time.Millisecond || s.FirstRequest != 62*time.Millisecond || s.LastResponse != 103*time.Millisecond {
		t.Errorf("first %v, first request %v, last response %v", s.FirstPacket, s.FirstRequest, s.LastResponse)
	}
	// A response byte after the load completed (a TLS close_notify) does not extend ToW.
	late := append(own, rec(pktlog.Down, pktlog.ProtoTCP, 443, 40002, psh, 24, 130))
	if s := pktlog.SummarizeUntil(late, 110*time.Millisecond); s.LastResponse != 103*time.Millisecond || s.Down.Packets != 5 {
		t.Errorf("cut at 110 ms: last response %v, %d down packets (counted all the same)", s.LastResponse, s.Down.Packets)
	}
}

func TestBuildRecord(t *testing.T) {
	schemas := contracttest.Load(t)
	fetchLine := `{"url":"https://s1.wirelab.test/L/x/","protocol":"h2","mode":"flat","started_at":"2026-11-22T05:00:00.5Z",
	  "plt_ms":812.4567,"connections":1,"tls_handshakes":1,"tls_resumed":0,"objects":7,"body_bytes":324800,
	  "phases_ms":{"dns":40,"connect":80,"ssl":40,"send":0.1,"wait":300,"receive":400,"blocked":1.2},
	  "dns_queries":1,"retries":0,"pushed_bytes":251284,"pushes_used":3,"pushes_unused":1,"priority":"chrome",
	  "error":null,"monotonic_start_ns":5,"monotonic_end_ns":9,"on_load_ms":900}`
	var summary map[string]any
	if err := json.Unmarshal([]byte(fetchLine), &summary); err != nil {
		t.Fatal(err)
	}
	lr, err := seam.NewLoaderResult(summary, 5, 9)
	if err != nil {
		t.Fatal(err)
	}
	f := &lr
	w := pktlog.Summary{FirstPacket: 10 * time.Millisecond, FirstRequest: 90 * time.Millisecond, LastResponse: 800 * time.Millisecond,
		Up: pktlog.DirStats{Packets: 100, Bytes: 9000, DropsLoss: 1, Retransmissions: 1}, Down: pktlog.DirStats{Packets: 300, Bytes: 340000, DropsQueue: 2, Retransmissions: 3}}
	r := BuildRecord("tid", Load{Index: 3, Protocol: "h2", Repetition: 1}, time.Now(), f, w, "")
	if r.TowMs != 710 || r.TowFirstPacketMs != 790 || r.PltMs != 812.457 || r.Retransmissions != 4 || r.DropsLoss != 1 || r.DropsQueue != 2 {
		t.Errorf("record %+v", r)
	}
	if r.PushedBytes != 251284 || r.PushesUsed != 3 || r.PushesUnused != 1 || r.Client["priority"] != "chrome" {
		t.Errorf("pushes %d bytes, %d used, %d unused; client.priority %v", r.PushedBytes, r.PushesUsed, r.PushesUnused, r.Client["priority"])
	}
	if r.StartedAt != "2026-11-22T05:00:00.5Z" || r.Error != nil {
		t.Errorf("started_at %s error %v", r.StartedAt, r.Error)
	}
	for _, k := range []string{"url", "mode", "dns_queries", "retries", "on_load_ms"} {
		if _, ok := r.Client[k]; !ok {
			t.Errorf("client.%s missing", k)
		}
	}
	for _, k := range []string{"plt_ms", "monotonic_end_ns", "protocol", "pushed_bytes", "pushes_used"} {
		if _, ok := r.Client[k]; ok {
			t.Errorf("client.%s: has its own place", k)
		}
	}
	har := "har/3-h2-1.har"
	r.HAR = &har
	r.Pcap = &PcapPaths{Client: "pcap/3-h2-1-client.pcap", Server: "pcap/3-h2-1-server.pcap"}
	check := func(r Record) {
		t.Helper()
		b, _ := json.Marshal(r)
		if err := schemas.Validate(contracttest.LoadRecord, b); err != nil {
			t.Errorf("%s: %v", b, err)
		}
	}
	check(r)
	if r.View != "first" || r.LCPMs != nil || r.VisualProgress != nil {
		t.Errorf("engine load: view %q, lcp %v, visual progress %v; want a first view without visual metrics", r.View, r.LCPMs, r.VisualProgress)
	}

	// A Chromium repeat view: the view and the visual metrics are the record's own fields.
	browseLine := `{"url":"https://s1.wirelab.test/L/x/","protocol":"h2","mode":"browser","plt_ms":500,"view":"repeat",
	  "lcp_ms":412.5,"lcp_url":"https://s1.wirelab.test/L/x/3.jpg","lcp_size_px":240000,"lcp_type":"image","cls":0.118,
	  "speed_index_ms":300.2,"visually_complete_ms":420,"visual_progress":[[0,0],[210.5,40],[420,100]],"error":null,
	  "client":{"impl":"chromium","first_view_plt_ms":900}}`
	var bs map[string]any
	if err := json.Unmarshal([]byte(browseLine), &bs); err != nil {
		t.Fatal(err)
	}
	blr, err := seam.NewLoaderResult(bs, 5, 9)
	if err != nil {
		t.Fatal(err)
	}
	r = BuildRecord("tid", Load{Index: 6, Protocol: "h2"}, time.Now(), &blr, w, "")
	frames := "frames/6-h2-0"
	r.Frames = &frames
	if r.View != "repeat" || *r.LCPMs != 412.5 || *r.LCPURL != "https://s1.wirelab.test/L/x/3.jpg" || *r.CLS != 0.118 ||
		*r.SpeedIndexMs != 300.2 || len(r.VisualProgress) != 3 || r.Client["first_view_plt_ms"] != 900.0 {
		t.Errorf("chromium record %+v", r)
	}
	for _, k := range []string{"view", "lcp_ms", "visual_progress"} {
		if _, ok := r.Client[k]; ok {
			t.Errorf("client.%s: has its own place", k)
		}
	}
	check(r)

	// The process failed: no loader result, the failure is the error.
	r = BuildRecord("tid", Load{Index: 4, Protocol: "h3"}, time.Now(), nil, pktlog.Summary{FirstPacket: -1, FirstRequest: -1, LastResponse: -1}, "fetch: killed by killed: no output")
	if r.Error == nil || !strings.HasPrefix(*r.Error, "fetch: killed") || r.TowMs != 0 {
		t.Errorf("failed load: %+v", r)
	}
	check(r)

	// The loader succeeded but nothing crossed the link: not a measurement.
	f.Error = nil
	r = BuildRecord("tid", Load{Index: 5, Protocol: "h2"}, time.Now(), f, pktlog.Summary{FirstPacket: -1, FirstRequest: -1, LastResponse: -1}, "")
	if r.Error == nil || !strings.Contains(*r.Error, "crossed the emulated link") {
		t.Errorf("load without packets: error %v", r.Error)
	}
	check(r)
}

// How a fetch process's end becomes a record's loader result or error.
func TestFetchOutcome(t *testing.T) {
	ok := `{"plt_ms":10,"objects":1,"error":null}`
	for _, tc := range []struct {
		name     string
		out      fetchOutcome
		result   bool
		failure  string
		stopping bool
	}{
		{"completed", fetchOutcome{stdout: []byte(ok + "\n")}, true, "", false},
		{"failed load: exit 1 with a result", fetchOutcome{exitCode: 1, stdout: []byte(`{"plt_ms":10,"error":"x: status 404"}`)}, true, "", false},
		{"usage error: the trial's bug", fetchOutcome{exitCode: 2, stderr: []byte("wirelab-engine: --proto: required\n")}, false, "", true},
		{"crash", fetchOutcome{exitCode: 3, stderr: []byte("panic: boom\n")}, false, "fetch: exit status 3: panic: boom", false},
		{"killed", fetchOutcome{exitCode: -1, failure: "fetch: killed by killed: no output"}, false, "fetch: killed", false},
		{"no output", fetchOutcome{stderr: []byte("")}, false, "fetch printed no result", false},
	} {
		f, failure, err := tc.out.result()
		if (f != nil) != tc.result || (err != nil) != tc.stopping || !strings.HasPrefix(failure, tc.failure) || (tc.failure == "" && failure != "") {
			t.Errorf("%s: result %v, failure %q, err %v", tc.name, f != nil, failure, err)
		}
	}
}

// The record's gateway object: drops by cause and sojourn per direction from the window, and the
// congested flows, at most MaxCongestedFlows of them, the worst first.
func TestRecordGateway(t *testing.T) {
	w := pktlog.Summary{
		Up:    pktlog.DirStats{DropsTail: 1, Sojourn: pktlog.Sojourn{P50: 0.5, P95: 1, P99: 2, Max: 3}},
		Down:  pktlog.DirStats{DropsAQM: 7, DropsOverflow: 2, Marks: 4, Sojourn: pktlog.Sojourn{P50: 12, P95: 40, P99: 48, Max: 60}},
		Flows: 50, FirstPacket: -1, FirstRequest: -1, LastResponse: -1,
	}
	for i := 0; i < 40; i++ {
		w.Congested = append(w.Congested, pktlog.Flow{Proto: "tcp", Client: fmt.Sprintf("10.77.0.2:%d", 40000+i), Server: "10.77.1.1:443", Drops: int64(40 - i)})
	}
	g := BuildRecord("tid", Load{Protocol: "h2"}, time.Now(), nil, w, "").Gateway
	if g == nil || g.Up.DropsTail != 1 || g.Down.DropsAQM != 7 || g.Down.DropsOverflow != 2 || g.Down.Marks != 4 || g.Down.SojournMs.P95 != 40 {
		t.Fatalf("gateway %+v", g)
	}
	if g.Flows != 50 || g.FlowsCongested != 40 || len(g.CongestedFlows) != MaxCongestedFlows || g.MaxFlowDrops != 40 || g.CongestedFlows[0].Drops != 40 {
		t.Errorf("flows %d, congested %d (%d listed), max %d", g.Flows, g.FlowsCongested, len(g.CongestedFlows), g.MaxFlowDrops)
	}
	if g := BuildRecord("tid", Load{Protocol: "h2"}, time.Now(), nil, pktlog.Summary{FirstPacket: -1, FirstRequest: -1, LastResponse: -1}, "").Gateway; g.CongestedFlows == nil {
		t.Error("no congested flows must be [] in JSON, not null")
	}
}

// The loader's accepted 0-RTT connections against the 0-RTT datagrams the packet log saw.
func TestZeroRTTDisagreement(t *testing.T) {
	for _, c := range []struct {
		conns   any
		packets int64
		bad     bool
	}{
		{float64(1), 0, true},
		{float64(1), 3, false},
		{float64(0), 2, false}, // early data sent and rejected
		{nil, 0, false},
		{2, 0, true},
	} {
		rec := Record{QUIC0RTTPackets: c.packets, Client: map[string]any{}}
		if c.conns != nil {
			rec.Client["zero_rtt_connections"] = c.conns
		}
		if got := zeroRTTDisagreement(rec) != ""; got != c.bad {
			t.Errorf("%v connections, %d datagrams: disagreement %v, want %v", c.conns, c.packets, got, c.bad)
		}
	}
}
