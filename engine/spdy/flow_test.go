package spdy

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// openReplied opens a stream from the client and replies from the server, leaving it open for
// server DATA.
func openReplied(t *testing.T, p *pair, path string) uint32 {
	t.Helper()
	id, err := p.c.OpenStream(getRequest(path), 0, true)
	if err != nil {
		t.Fatal(err)
	}
	p.pump()
	if err := p.s.Reply(id, Header{{":status", "200"}, {":version", "HTTP/1.1"}}, false); err != nil {
		t.Fatal(err)
	}
	p.pump()
	return id
}

// sendAll sends as much of body as the windows allow in chunks of at most chunk bytes and returns
// what is left. The stream stays open.
func sendAll(t *testing.T, c *Conn, id uint32, body []byte, chunk int) []byte {
	t.Helper()
	for len(body) > 0 {
		n := min(len(body), chunk, c.SendWindow(id))
		if n == 0 {
			return body
		}
		if err := c.SendData(id, body[:n], false); err != nil {
			t.Fatal(err)
		}
		body = body[n:]
	}
	return body
}

func receivedData(evs []Event, id uint32) []byte {
	var b []byte
	for _, e := range evs {
		if d, ok := e.(*DataReceived); ok && d.StreamID == id {
			b = append(b, d.Data...)
		}
	}
	return b
}

func TestFlowControlStreamWindow(t *testing.T) {
	p := newPair(t, Config{}, Config{})
	id := openReplied(t, p, "/big")
	body := bytes.Repeat([]byte("0123456789abcdef"), 200<<10/16) // 200 KiB > 64 KiB
	rest := sendAll(t, p.s, id, body, 4096)
	if sent := len(body) - len(rest); sent != DefaultInitialWindowSize {
		t.Fatalf("sent %d before any WINDOW_UPDATE, want exactly the 64 KiB window", sent)
	}
	if err := p.s.SendData(id, rest[:1], false); !errors.Is(err, ErrFlowControl) {
		t.Fatalf("1 byte past the window: %v", err)
	}
	p.pump()
	// The client has not consumed anything: no credit comes back.
	if p.s.SendWindow(id) != 0 {
		t.Fatalf("window %d without consumption", p.s.SendWindow(id))
	}
	for len(rest) > 0 {
		got := receivedData(p.cev, id)
		p.cev = nil
		p.c.Consumed(id, len(got))
		p.pump()
		if p.s.SendWindow(id) == 0 {
			t.Fatalf("no credit after consuming %d bytes", len(got))
		}
		rest = sendAll(t, p.s, id, rest, 4096)
		p.pump()
	}
	p.pump()
}

func TestFlowControlWindowUpdateThreshold(t *testing.T) {
	p := newPair(t, Config{}, Config{})
	id := openReplied(t, p, "/")
	sendAll(t, p.s, id, make([]byte, 40000), 40000)
	p.pump()
	p.c.Consumed(id, 32767) // just under half of 64 KiB: nothing yet
	if b := p.c.DataToSend(); len(b) != 0 {
		t.Fatalf("WINDOW_UPDATE before half a window: %v", describe(framesOf(t, b)))
	}
	p.c.Consumed(id, 1)
	fs := framesOf(t, p.c.DataToSend())
	want := []Frame{&WindowUpdateFrame{StreamID: id, DeltaWindowSize: 32768}, &WindowUpdateFrame{StreamID: 0, DeltaWindowSize: 32768}}
	if describe(fs) != describe(want) {
		t.Fatalf("got %s", describe(fs))
	}
}

// The session window (SPDY/3.1) caps all streams together even when stream windows are larger.
func TestFlowControlSessionWindow(t *testing.T) {
	p := newPair(t, Config{InitialWindowSize: 1 << 20}, Config{})
	ids := []uint32{openReplied(t, p, "/a"), openReplied(t, p, "/b"), openReplied(t, p, "/c")}
	for _, id := range ids {
		if w := p.s.SendWindow(id); w != DefaultSessionWindowSize {
			t.Fatalf("stream %d window %d, want the session's 64 KiB", id, w)
		}
	}
	total := 0
	for _, id := range ids {
		total += 100000 - len(sendAll(t, p.s, id, make([]byte, 100000), 16384))
	}
	if total != DefaultSessionWindowSize {
		t.Fatalf("sent %d across streams, want 64 KiB", total)
	}
	p.pump()
	for _, id := range ids {
		p.c.Consumed(id, len(receivedData(p.cev, id)))
	}
	p.pump()
	if w := p.s.SessionSendWindow(); w != DefaultSessionWindowSize {
		t.Fatalf("session window after consumption %d", w)
	}
}

// SETTINGS_INITIAL_WINDOW_SIZE moves the windows of open streams, possibly below zero.
func TestFlowControlInitialWindowChange(t *testing.T) {
	p := newPair(t, Config{}, Config{})
	id := openReplied(t, p, "/")
	sendAll(t, p.s, id, make([]byte, 10000), 10000)
	ev, err := p.s.Receive(AppendMust(t, nil, &SettingsFrame{Settings: []Setting{{ID: SettingInitialWindowSize, Value: 1000}}}))
	if err != nil || len(ev) != 1 {
		t.Fatalf("%v %v", ev, err)
	}
	if w := p.s.SendWindow(id); w != 0 {
		t.Fatalf("window %d, want 0 (it is 1000-10000 < 0)", w)
	}
	p.s.Receive(AppendMust(t, nil, &WindowUpdateFrame{StreamID: id, DeltaWindowSize: 10000}))
	if w := p.s.SendWindow(id); w != 1000 {
		t.Fatalf("window %d, want 1000", w)
	}
	if _, err := p.s.Receive(AppendMust(t, nil, &SettingsFrame{Settings: []Setting{{ID: SettingInitialWindowSize, Value: 1 << 31}}})); err == nil {
		t.Fatal("INITIAL_WINDOW_SIZE 2^31 accepted")
	}
}

// A randomised exchange: several streams, random chunk sizes, random consumption. The sender
// never exceeds a window (SendData refuses, and the receiver would reset or tear down the session,
// which pump turns into a test failure), and every byte arrives in order.
func TestFlowControlRandomised(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		p := newPair(t, Config{InitialWindowSize: uint32(1000 + rng.IntN(70000))}, Config{})
		n := 1 + rng.IntN(5)
		ids := make([]uint32, n)
		bodies := map[uint32][]byte{}
		rest := map[uint32][]byte{}
		for i := range ids {
			ids[i] = openReplied(t, p, "/r")
			b := make([]byte, rng.IntN(300000))
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
			bodies[ids[i]], rest[ids[i]] = b, b
			if len(b) == 0 {
				p.s.SendData(ids[i], nil, true)
			}
		}
		got := map[uint32][]byte{}
		for round := 0; round < 100000; round++ {
			id := ids[rng.IntN(n)]
			if len(rest[id]) > 0 {
				w := p.s.SendWindow(id)
				if w < len(rest[id]) {
					if err := p.s.SendData(id, rest[id][:w+1], false); !errors.Is(err, ErrFlowControl) {
						t.Fatalf("seed %d: %d bytes with window %d: %v", seed, w+1, w, err)
					}
				}
				k := min(len(rest[id]), w, 1+rng.IntN(20000))
				if k > 0 {
					if err := p.s.SendData(id, rest[id][:k], k == len(rest[id])); err != nil {
						t.Fatalf("seed %d: %v", seed, err)
					}
					rest[id] = rest[id][k:]
				}
			}
			p.pump()
			for _, e := range p.cev {
				if d, ok := e.(*DataReceived); ok {
					got[d.StreamID] = append(got[d.StreamID], d.Data...)
					// Sometimes only half is handed back at once.
					p.c.Consumed(d.StreamID, len(d.Data)-rng.IntN(2)*len(d.Data)/2)
				}
			}
			// Consume whatever was held back, sometimes.
			if rng.IntN(4) == 0 {
				for _, id := range ids {
					p.c.Consumed(id, 1+rng.IntN(5000))
				}
			}
			p.cev = nil
			p.pump()
			done := true
			for _, id := range ids {
				done = done && len(rest[id]) == 0
			}
			if done {
				break
			}
		}
		for _, id := range ids {
			if !bytes.Equal(got[id], bodies[id]) {
				t.Fatalf("seed %d stream %d: got %d bytes, want %d (left %d)", seed, id, len(got[id]), len(bodies[id]), len(rest[id]))
			}
		}
	}
}

// A server that grants less than SPDY's 64 KiB default must accept DATA the client sent under the
// default before the server's SETTINGS reached it (SPDY/3 has no SETTINGS acknowledgement), and
// afterwards hold the client to exactly the window the client itself computes.
func TestFlowControlDataBeforeSettingsArrive(t *testing.T) {
	c, err := NewConn(RoleClient, Config{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewConn(RoleServer, Config{InitialWindowSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	serverHello := s.DataToSend() // SETTINGS (4096) + the settings PING, held back for now
	// The client opens an upload and sends 20 kB under the default window it still assumes.
	id, err := c.OpenStream(Header{{":method", "POST"}, {":path", "/up"}, {":version", "HTTP/1.1"},
		{":host", "www.wirelab.test"}, {":scheme", "https"}}, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SendData(id, make([]byte, 20000), false); err != nil {
		t.Fatal(err)
	}
	ev, err := s.Receive(c.DataToSend())
	if err != nil {
		t.Fatal(err)
	}
	if got := len(receivedData(ev, id)); got != 20000 {
		t.Fatalf("server took %d of 20000 bytes sent under the default window; events %v", got, ev)
	}
	for _, e := range ev {
		if _, ok := e.(*StreamReset); ok {
			t.Fatalf("server reset the stream: %v", ev)
		}
	}
	// Now the client learns the 4096 window: its send window is 4096 - 20000 < 0.
	if _, err := c.Receive(serverHello); err != nil {
		t.Fatal(err)
	}
	if w := c.SendWindow(id); w != 0 {
		t.Fatalf("client send window %d after the smaller SETTINGS, want 0", w)
	}
	if _, err := s.Receive(c.DataToSend()); err != nil { // the PING echo
		t.Fatal(err)
	}
	if s.settingsPending {
		t.Fatal("server still waits for the echo of its settings PING")
	}
	// Both ends agree: the stream may take 4096 - 20000 + credit. The server consumes all
	// 20000 bytes: the credit brings the client's window back to exactly 4096.
	s.Consumed(id, 20000)
	if _, err := c.Receive(s.DataToSend()); err != nil {
		t.Fatal(err)
	}
	if w := c.SendWindow(id); w != 4096 {
		t.Fatalf("client send window %d after full credit, want 4096", w)
	}
	if err := c.SendData(id, make([]byte, 4096), false); err != nil {
		t.Fatal(err)
	}
	ev, err = s.Receive(c.DataToSend())
	if err != nil || len(receivedData(ev, id)) != 4096 {
		t.Fatalf("4096 within the window: %v %v", ev, err)
	}
	// One byte beyond what both ends agree on is a flow-control error.
	raw := AppendMust(t, nil, &DataFrame{StreamID: id, Data: []byte{1}})
	ev, _ = s.Receive(raw)
	out := framesOf(t, s.DataToSend())
	if len(out) != 1 || out[0].(*RstStreamFrame).Status != FlowControlError {
		t.Fatalf("1 byte past the agreed window: events %v, frames %v", ev, out)
	}
}
