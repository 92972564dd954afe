package spdy

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// pair is a client Conn and a server Conn wired back to back in memory.
type pair struct {
	t    *testing.T
	c, s *Conn
	cev  []Event // events the client has seen
	sev  []Event // events the server has seen
}

func newPair(t *testing.T, ccfg, scfg Config) *pair {
	t.Helper()
	c, err := NewConn(RoleClient, ccfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewConn(RoleServer, scfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &pair{t: t, c: c, s: s}
	p.pump()
	p.cev, p.sev = nil, nil
	return p
}

// pump moves bytes both ways until both are quiet; any error fails the test.
func (p *pair) pump() {
	p.t.Helper()
	for i := 0; i < 1000; i++ {
		cb, sb := p.c.DataToSend(), p.s.DataToSend()
		if len(cb) == 0 && len(sb) == 0 {
			return
		}
		ev, err := p.s.Receive(cb)
		if err != nil {
			p.t.Fatalf("server: %v", err)
		}
		p.sev = append(p.sev, ev...)
		ev, err = p.c.Receive(sb)
		if err != nil {
			p.t.Fatalf("client: %v", err)
		}
		p.cev = append(p.cev, ev...)
	}
	p.t.Fatal("pump did not settle")
}

func framesOf(t *testing.T, b []byte) []Frame {
	t.Helper()
	var out []Frame
	for len(b) > 0 {
		f, n, err := ParseFrame(b)
		if err != nil || f == nil {
			t.Fatalf("parsing output: %v (%d bytes left)", err, len(b))
		}
		out = append(out, f)
		b = b[n:]
	}
	return out
}

func getRequest(path string) Header {
	return Header{{":method", "GET"}, {":path", path}, {":version", "HTTP/1.1"}, {":host", "www.wirelab.test"}, {":scheme", "https"}}
}

func TestConnSettingsExchange(t *testing.T) {
	c, _ := NewConn(RoleClient, Config{InitialWindowSize: 1 << 20, SessionWindowSize: 10 << 20, MaxConcurrentStreams: 7})
	fs := framesOf(t, c.DataToSend())
	want := []Frame{
		&SettingsFrame{Settings: []Setting{{ID: SettingMaxConcurrentStreams, Value: 7}, {ID: SettingInitialWindowSize, Value: 1 << 20}}},
		&WindowUpdateFrame{StreamID: 0, DeltaWindowSize: 10<<20 - 65536},
	}
	if !reflect.DeepEqual(fs, want) {
		t.Fatalf("client opens with %#v", fs)
	}
	s, _ := NewConn(RoleServer, Config{})
	ev, err := s.Receive(AppendMust(t, nil, fs...))
	if err != nil {
		t.Fatal(err)
	}
	if len(ev) != 2 {
		t.Fatalf("events %#v", ev)
	}
	if se := ev[0].(*SettingsReceived); len(se.Settings) != 2 || se.Clear {
		t.Fatalf("%#v", se)
	}
	if wu := ev[1].(*WindowUpdated); wu.StreamID != 0 || wu.Delta != 10<<20-65536 {
		t.Fatalf("%#v", wu)
	}
	if s.PeerMaxConcurrentStreams() != 7 || s.SessionSendWindow() != 10<<20 {
		t.Fatalf("server did not apply: max %d session %d", s.PeerMaxConcurrentStreams(), s.SessionSendWindow())
	}
}

func AppendMust(t *testing.T, b []byte, fs ...Frame) []byte {
	t.Helper()
	for _, f := range fs {
		var err error
		if b, err = AppendFrame(b, f); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func TestConnConfigValidation(t *testing.T) {
	bad := []Config{
		{InitialWindowSize: 1 << 31},
		{SessionWindowSize: 1000},
		{MaxControlFrameSize: 1 << 24},
		{MaxHeaderBlockSize: -1},
		{HeaderCompressionLevel: 10},
	}
	for _, cfg := range bad {
		if _, err := NewConn(RoleServer, cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
	if _, err := NewConn(Role(9), Config{}); err == nil {
		t.Error("role 9 accepted")
	}
}

func TestConnRequestResponse(t *testing.T) {
	p := newPair(t, Config{}, Config{})
	id, err := p.c.OpenStream(getRequest("/"), 2, true)
	if err != nil || id != 1 {
		t.Fatalf("OpenStream: %d %v", id, err)
	}
	p.pump()
	want := []Event{
		&StreamOpened{StreamID: 1, Priority: 2, Header: getRequest("/")},
		&StreamEnded{StreamID: 1},
	}
	if !reflect.DeepEqual(p.sev, want) {
		t.Fatalf("server events %#v", p.sev)
	}
	if pr, ok := p.s.StreamPriority(1); !ok || pr != 2 {
		t.Fatalf("priority %d %v", pr, ok)
	}
	if err := p.s.Reply(1, Header{{":status", "200 OK"}, {":version", "HTTP/1.1"}}, false); err != nil {
		t.Fatal(err)
	}
	if err := p.s.Reply(1, Header{{":status", "200 OK"}}, false); !errors.Is(err, ErrAlreadyReplied) {
		t.Fatalf("second Reply: %v", err)
	}
	if err := p.s.SendData(1, []byte("hello"), true); err != nil {
		t.Fatal(err)
	}
	p.pump()
	wantC := []Event{
		&HeadersReceived{StreamID: 1, Reply: true, Header: Header{{":status", "200 OK"}, {":version", "HTTP/1.1"}}},
		&DataReceived{StreamID: 1, Data: []byte("hello")},
		&StreamEnded{StreamID: 1},
	}
	if !reflect.DeepEqual(p.cev, wantC) {
		t.Fatalf("client events %#v", p.cev)
	}
	for _, c := range []*Conn{p.c, p.s} {
		if c.IsOpen(1) {
			t.Fatalf("%s still has stream 1", c.Role())
		}
		if l, r := c.ActiveStreams(); l != 0 || r != 0 {
			t.Fatalf("%s active %d %d", c.Role(), l, r)
		}
	}
	if err := p.s.SendData(1, nil, true); !errors.Is(err, ErrUnknownStream) {
		t.Fatalf("send on closed stream: %v", err)
	}
	id, _ = p.c.OpenStream(getRequest("/2"), 0, false)
	if id != 3 {
		t.Fatalf("second stream id %d", id)
	}
}

// rawPeer builds frames as a misbehaving peer would, with its own compression context.
type rawPeer struct {
	t   *testing.T
	enc *HeaderCompressor
}

func newRawPeer(t *testing.T) *rawPeer {
	enc, err := NewHeaderCompressor(zlib.DefaultCompression)
	if err != nil {
		t.Fatal(err)
	}
	return &rawPeer{t: t, enc: enc}
}

func (r *rawPeer) block(h Header) []byte {
	b, err := r.enc.Compress(h)
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}

func (r *rawPeer) syn(id, assoc uint32, flags Flags, h Header) Frame {
	return &SynStreamFrame{StreamID: id, AssociatedToStreamID: assoc, Flags: flags, HeaderBlock: r.block(h)}
}

func (r *rawPeer) reply(id uint32, flags Flags) Frame {
	return &SynReplyFrame{StreamID: id, Flags: flags, HeaderBlock: r.block(Header{{":status", "200"}, {":version", "HTTP/1.1"}})}
}

func (r *rawPeer) headers(id uint32, flags Flags) Frame {
	return &HeadersFrame{StreamID: id, Flags: flags, HeaderBlock: r.block(Header{{"x-trailer", "1"}})}
}

func data(id uint32, flags Flags, n int) Frame {
	return &DataFrame{StreamID: id, Flags: flags, Data: bytes.Repeat([]byte{'d'}, n)}
}

// outcome is what a Conn must do with a script of frames from a peer.
type outcome struct {
	sent    []Frame   // the frames the Conn queues in response (SETTINGS of NewConn excluded)
	events  []string  // event types, with details where it matters
	session RstStatus // 0: no session error; otherwise the RST status paired with it (or 99 for none)
	goaway  *GoAwayFrame
}

func eventString(e Event) string {
	switch e := e.(type) {
	case *StreamOpened:
		return fmt.Sprintf("opened %d", e.StreamID)
	case *HeadersReceived:
		return fmt.Sprintf("headers %d reply=%v", e.StreamID, e.Reply)
	case *DataReceived:
		return fmt.Sprintf("data %d %d", e.StreamID, len(e.Data))
	case *StreamEnded:
		return fmt.Sprintf("ended %d", e.StreamID)
	case *StreamReset:
		return fmt.Sprintf("reset %d %s remote=%v", e.StreamID, e.Status, e.Remote)
	case *SettingsReceived:
		return "settings"
	case *PingReceived:
		return fmt.Sprintf("ping %d", e.ID)
	case *PingAcknowledged:
		return fmt.Sprintf("pong %d", e.ID)
	case *GoAway:
		return fmt.Sprintf("goaway %d %s %v", e.LastGoodStreamID, e.Status, e.Unprocessed)
	case *WindowUpdated:
		return fmt.Sprintf("window %d +%d", e.StreamID, e.Delta)
	}
	return fmt.Sprintf("%T", e)
}

func rst(id uint32, s RstStatus) Frame { return &RstStreamFrame{StreamID: id, Status: s} }

// TestConnIllegalTransitions feeds scripted frames to a Conn and checks the RST_STREAM / GOAWAY it
// answers with and the events it reports. The server-side cases run against a server Conn, the
// client-side ones against a client Conn whose streams 1 and 3 are opened first.
func TestConnIllegalTransitions(t *testing.T) {
	req := getRequest("/")
	type tc struct {
		name   string
		role   Role
		cfg    Config
		script func(r *rawPeer) []Frame
		want   outcome
	}
	cases := []tc{
		{"DATA after the peer's FIN (half-closed remote)", RoleServer, Config{}, func(r *rawPeer) []Frame {
			return []Frame{r.syn(1, 0, FlagFin, req), data(1, 0, 3)}
		}, outcome{sent: []Frame{rst(1, StreamAlreadyClosed)}, events: []string{"opened 1", "ended 1", "reset 1 STREAM_ALREADY_CLOSED remote=false"}}},
		{"DATA on a closed stream", RoleServer, Config{}, func(r *rawPeer) []Frame {
			return []Frame{r.syn(1, 0, 0, req), rst(1, Cancel), data(1, 0, 3)}
		}, outcome{sent: []Frame{rst(1, StreamAlreadyClosed)}, events: []string{"opened 1", "reset 1 CANCEL remote=true"}}},
		{"DATA on a stream never opened", RoleServer, Config{}, func(r *rawPeer) []Frame {
			return []Frame{data(5, 0, 3)}
		}, outcome{sent: []Frame{rst(5, InvalidStream)}}},
		{"DATA on stream 0", RoleServer, Config{}, func(r *rawPeer) []Frame {
			return []Frame{data(0, 0, 3)}
		}, outcome{session: 99, goaway: &GoAwayFrame{Status: GoAwayProtocolError}}},
		{"HEADERS after FIN", RoleServer, Config{}, func(r *rawPeer) []Frame {
			return []Frame{r.syn(1, 0, FlagFin, req), r.headers(1, 0)}
		}, outcome{sent: []Frame{rst(1, StreamAlreadyClosed)}, events: []string{"opened 1", "ended 1", "reset 1 STREAM_ALREADY_CLOSED remote=false"}}},
		{"SYN_STREAM twice", RoleServer, Config{}, func(r *rawPeer) []Frame {
			return []Frame{r.syn(1, 0, 0, req), r.syn(1, 0, 0, req)}
		}, outcome{sent: []Frame{rst(1, StreamInUse)}, events: []string{"opened 1", "reset 1 STREAM_IN_USE remote=false"}}},
		{"SYN_STREAM with decreasing id", RoleServer, Config{}, func(r *rawPeer) []Frame {
			return []Frame{r.syn(5, 0, FlagFin, req), r.syn(3, 0, FlagFin, req)}
		}, outcome{events: []string{"opened 5", "ended 5"}, session: 99, goaway: &GoAwayFrame{LastGoodStreamID: 5, Status: GoAwayProtocolError}}},
		{"SYN_STREAM with the server's parity", RoleServer, Config{}, func(r *rawPeer) []Frame {
			return []Frame{r.syn(2, 0, 0, req)}
		}, outcome{session: 99, goaway: &GoAwayFrame{Status: GoAwayProtocolError}}},
		{"SYN_STREAM for stream 0", RoleServer, Config{}, func(r *rawPeer) []Frame {
			return []Frame{r.syn(0, 0, 0, req)}
		}, outcome{session: 99, goaway: &GoAwayFrame{Status: GoAwayProtocolError}}},
		{"uppercase header: stream error, context survives", RoleServer, Config{}, func(r *rawPeer) []Frame {
			return []Frame{r.syn(1, 0, FlagFin, Header{{":method", "GET"}, {"Host", "x"}}), r.syn(3, 0, FlagFin, req)}
		}, outcome{sent: []Frame{rst(1, ProtocolError)}, events: []string{"reset 1 PROTOCOL_ERROR remote=false", "opened 3", "ended 3"}}},
		{"MAX_CONCURRENT_STREAMS exceeded", RoleServer, Config{MaxConcurrentStreams: 1}, func(r *rawPeer) []Frame {
			return []Frame{r.syn(1, 0, FlagFin, req), r.syn(3, 0, FlagFin, req), data(3, 0, 1)}
		}, outcome{sent: []Frame{rst(3, RefusedStream)}, events: []string{"opened 1", "ended 1", "reset 3 REFUSED_STREAM remote=false"}}},
		{"RST_STREAM is never answered", RoleServer, Config{}, func(r *rawPeer) []Frame {
			return []Frame{rst(7, Cancel)}
		}, outcome{}},
		{"RST_STREAM status 0", RoleServer, Config{}, func(r *rawPeer) []Frame {
			return []Frame{r.syn(1, 0, 0, req), rst(1, 0)}
		}, outcome{events: []string{"opened 1"}, session: 99, goaway: &GoAwayFrame{LastGoodStreamID: 1, Status: GoAwayProtocolError}}},
		{"stream WINDOW_UPDATE overflow", RoleServer, Config{}, func(r *rawPeer) []Frame {
			return []Frame{r.syn(1, 0, 0, req), &WindowUpdateFrame{StreamID: 1, DeltaWindowSize: MaxWindow}}
		}, outcome{sent: []Frame{rst(1, FlowControlError)}, events: []string{"opened 1", "reset 1 FLOW_CONTROL_ERROR remote=false"}}},
		{"stream WINDOW_UPDATE of 0", RoleServer, Config{}, func(r *rawPeer) []Frame {
			return []Frame{r.syn(1, 0, 0, req), &WindowUpdateFrame{StreamID: 1}}
		}, outcome{sent: []Frame{rst(1, ProtocolError)}, events: []string{"opened 1", "reset 1 PROTOCOL_ERROR remote=false"}}},
		{"session WINDOW_UPDATE overflow", RoleServer, Config{}, func(r *rawPeer) []Frame {
			return []Frame{&WindowUpdateFrame{StreamID: 0, DeltaWindowSize: MaxWindow}}
		}, outcome{session: 99, goaway: &GoAwayFrame{Status: GoAwayProtocolError}}},
		// The peer echoes the PING that follows our SETTINGS (id 2, the server's first) before it
		// opens the stream, so it knows the 100-byte window.
		{"DATA beyond the stream window", RoleServer, Config{InitialWindowSize: 100}, func(r *rawPeer) []Frame {
			return []Frame{&PingFrame{ID: 2}, r.syn(1, 0, 0, req), data(1, 0, 60), data(1, 0, 41)}
		}, outcome{sent: []Frame{rst(1, FlowControlError)}, events: []string{"opened 1", "data 1 60", "reset 1 FLOW_CONTROL_ERROR remote=false"}}},
		// Before that echo the peer may still use SPDY's default window, but no more.
		{"DATA beyond the default window before the SETTINGS echo", RoleServer, Config{InitialWindowSize: 100, SessionWindowSize: 1 << 20}, func(r *rawPeer) []Frame {
			return []Frame{r.syn(1, 0, 0, req), data(1, 0, 60000), data(1, 0, DefaultInitialWindowSize-60000+1)}
		}, outcome{sent: []Frame{rst(1, FlowControlError)}, events: []string{"opened 1", "data 1 60000", "reset 1 FLOW_CONTROL_ERROR remote=false"}}},
		{"DATA beyond the session window", RoleServer, Config{}, func(r *rawPeer) []Frame {
			return []Frame{r.syn(1, 0, 0, req), r.syn(3, 0, 0, req), data(1, 0, 40000), data(3, 0, 40000)}
		}, outcome{events: []string{"opened 1", "opened 3", "data 1 40000"}, session: 99, goaway: &GoAwayFrame{LastGoodStreamID: 3, Status: GoAwayProtocolError}}},
		{"oversized control frame", RoleServer, Config{MaxControlFrameSize: 64}, func(r *rawPeer) []Frame {
			return []Frame{&SynStreamFrame{StreamID: 1, HeaderBlock: make([]byte, 100)}}
		}, outcome{sent: []Frame{rst(1, FrameTooLarge)}, session: FrameTooLarge, goaway: &GoAwayFrame{Status: GoAwayProtocolError}}},
		{"unknown control frames are ignored", RoleServer, Config{}, func(r *rawPeer) []Frame {
			return []Frame{&UnknownFrame{FrameType: 10, Payload: []byte{1, 2}}, &UnknownFrame{FrameType: 0xffff}}
		}, outcome{}},
		{"PING from the peer is echoed; one of ours we never sent is ignored", RoleServer, Config{}, func(r *rawPeer) []Frame {
			return []Frame{&PingFrame{ID: 7}, &PingFrame{ID: 8}}
		}, outcome{sent: []Frame{&PingFrame{ID: 7}}, events: []string{"ping 7"}}},
		{"frames after GOAWAY for new streams are ignored", RoleServer, Config{}, func(r *rawPeer) []Frame {
			return []Frame{r.syn(1, 0, FlagFin, req)}
		}, outcome{events: []string{"opened 1", "ended 1"}}},
		// Client side: streams 1 and 3 are open (SYN_STREAM sent, no SYN_REPLY yet).
		{"DATA before SYN_REPLY", RoleClient, Config{}, func(r *rawPeer) []Frame {
			return []Frame{data(1, 0, 3)}
		}, outcome{sent: []Frame{rst(1, ProtocolError)}, events: []string{"reset 1 PROTOCOL_ERROR remote=false"}}},
		{"HEADERS before SYN_REPLY", RoleClient, Config{}, func(r *rawPeer) []Frame {
			return []Frame{r.headers(1, 0)}
		}, outcome{sent: []Frame{rst(1, ProtocolError)}, events: []string{"reset 1 PROTOCOL_ERROR remote=false"}}},
		{"SYN_REPLY twice", RoleClient, Config{}, func(r *rawPeer) []Frame {
			return []Frame{r.reply(1, 0), r.reply(1, 0)}
		}, outcome{sent: []Frame{rst(1, StreamInUse)}, events: []string{"headers 1 reply=true", "reset 1 STREAM_IN_USE remote=false"}}},
		{"SYN_REPLY for a stream never opened", RoleClient, Config{}, func(r *rawPeer) []Frame {
			return []Frame{r.reply(9, 0)}
		}, outcome{sent: []Frame{rst(9, InvalidStream)}}},
		{"push without UNIDIRECTIONAL", RoleClient, Config{}, func(r *rawPeer) []Frame {
			return []Frame{r.syn(2, 1, 0, req)}
		}, outcome{sent: []Frame{rst(2, ProtocolError)}, events: []string{"reset 2 PROTOCOL_ERROR remote=false"}}},
		{"push associated to a stream that is not open", RoleClient, Config{}, func(r *rawPeer) []Frame {
			return []Frame{r.syn(2, 5, FlagUnidirectional, req)}
		}, outcome{sent: []Frame{rst(2, InvalidStream)}, events: []string{"reset 2 INVALID_STREAM remote=false"}}},
		{"push, then DATA on it, then the client cannot send", RoleClient, Config{}, func(r *rawPeer) []Frame {
			return []Frame{r.syn(2, 1, FlagUnidirectional, req), data(2, FlagFin, 4)}
		}, outcome{events: []string{"opened 2", "data 2 4", "ended 2"}}},
		{"frames in flight on a stream this endpoint reset are dropped", RoleClient, Config{}, func(r *rawPeer) []Frame {
			return []Frame{r.reply(3, 0), data(3, 0, 10), data(3, FlagFin, 10)}
		}, outcome{}},
		{"GOAWAY closes streams above last-good", RoleClient, Config{}, func(r *rawPeer) []Frame {
			return []Frame{&GoAwayFrame{LastGoodStreamID: 1}}
		}, outcome{events: []string{"goaway 1 OK [3]"}}},
		{"SPDY/2 control frame", RoleClient, Config{}, func(r *rawPeer) []Frame {
			return nil // written raw below
		}, outcome{sent: []Frame{rst(2, UnsupportedVersion)}, session: UnsupportedVersion, goaway: &GoAwayFrame{Status: GoAwayProtocolError}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := NewConn(c.role, c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			conn.DataToSend()
			if c.role == RoleClient {
				conn.OpenStream(getRequest("/1"), 0, true)
				conn.OpenStream(getRequest("/3"), 0, true)
				if c.name == "frames in flight on a stream this endpoint reset are dropped" {
					if err := conn.ResetStream(3, Cancel); err != nil {
						t.Fatal(err)
					}
				}
				conn.DataToSend()
			}
			if c.name == "frames after GOAWAY for new streams are ignored" {
				conn.GoAway(GoAwayOK)
				conn.DataToSend()
				// stream 1 was never accepted: last good is 0, so it is ignored.
				c.want = outcome{}
			}
			r := newRawPeer(t)
			wire := AppendMust(t, nil, c.script(r)...)
			if c.name == "SPDY/2 control frame" {
				wire = hexBytes(t, "8002 0001 | 00 00000e | 00000002 00000001 0000 00000000")
			}
			// Feed byte by byte for half of the cases, all at once for the others: framing must
			// not depend on how the transport splits the bytes.
			var events []Event
			if len(c.name)%2 == 0 {
				for i := range wire {
					ev, err2 := conn.Receive(wire[i : i+1])
					events = append(events, ev...)
					if err2 != nil {
						err = err2
						break
					}
				}
			} else {
				events, err = conn.Receive(wire)
			}
			var got []string
			for _, e := range events {
				got = append(got, eventString(e))
			}
			if !reflect.DeepEqual(got, c.want.events) {
				t.Errorf("events %q, want %q", got, c.want.events)
			}
			sent := framesOf(t, conn.DataToSend())
			want := c.want.sent
			if c.want.goaway != nil {
				want = append(append([]Frame(nil), want...), c.want.goaway)
			}
			// Window credit for data that was dropped is returned; ignore those updates here.
			var kept []Frame
			for _, f := range sent {
				if wu, ok := f.(*WindowUpdateFrame); ok && wu.StreamID == 0 {
					continue
				}
				kept = append(kept, f)
			}
			if !reflect.DeepEqual(kept, want) {
				t.Errorf("sent %s, want %s", describe(kept), describe(want))
			}
			var se *SessionError
			if c.want.session != 0 {
				if !errors.As(err, &se) {
					t.Fatalf("error %v, want SessionError", err)
				}
				if c.want.session != 99 && se.RstStatus != c.want.session {
					t.Fatalf("session error %+v", se)
				}
				if _, err2 := conn.Receive(nil); err2 != err {
					t.Fatalf("after the session error Receive returns %v", err2)
				}
				if _, err2 := conn.OpenStream(req, 0, true); err2 == nil {
					t.Fatal("OpenStream works on a dead session")
				}
			} else if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
		})
	}
}

func describe(fs []Frame) string {
	var b bytes.Buffer
	for _, f := range fs {
		fmt.Fprintf(&b, "%s%+v ", f.Type(), f)
	}
	return b.String()
}

func TestConnLocalMisuse(t *testing.T) {
	p := newPair(t, Config{}, Config{})
	if _, err := p.c.PushStream(1, getRequest("/"), 0, false); !errors.Is(err, ErrWrongRole) {
		t.Fatalf("client push: %v", err)
	}
	if _, err := p.c.OpenStream(Header{{"Bad", "x"}}, 0, true); err == nil {
		t.Fatal("uppercase header sent")
	}
	if _, err := p.c.OpenStream(getRequest("/"), 8, true); err == nil {
		t.Fatal("priority 8 accepted")
	}
	id, _ := p.c.OpenStream(getRequest("/"), 0, true)
	if err := p.c.SendData(id, []byte("x"), false); !errors.Is(err, ErrStreamClosed) {
		t.Fatalf("data after own FIN: %v", err)
	}
	if err := p.c.Reply(id, Header{}, false); err == nil {
		t.Fatal("client replied to its own stream")
	}
	p.pump()
	if err := p.s.SendData(id, []byte("x"), false); err == nil {
		t.Fatal("server sent DATA before SYN_REPLY")
	}
	if err := p.s.SendHeaders(id, Header{{"a", "b"}}, false); err == nil {
		t.Fatal("server sent HEADERS before SYN_REPLY")
	}
	if err := p.s.ResetStream(id, 0); err == nil {
		t.Fatal("RST status 0 accepted")
	}
	if err := p.s.ResetStream(99, Cancel); !errors.Is(err, ErrUnknownStream) {
		t.Fatalf("reset unknown: %v", err)
	}
	if _, err := p.s.PushStream(99, getRequest("/x"), 0, false); !errors.Is(err, ErrUnknownStream) {
		t.Fatalf("push on unknown: %v", err)
	}
}

func TestConnPing(t *testing.T) {
	p := newPair(t, Config{}, Config{})
	id, err := p.c.Ping()
	if err != nil || id != 1 {
		t.Fatalf("Ping %d %v", id, err)
	}
	sid, _ := p.s.Ping()
	if sid != 2 {
		t.Fatalf("server ping id %d", sid)
	}
	p.pump()
	if !reflect.DeepEqual(p.sev, []Event{&PingReceived{ID: 1}, &PingAcknowledged{ID: 2}}) {
		t.Fatalf("server events %#v", p.sev)
	}
	if !reflect.DeepEqual(p.cev, []Event{&PingReceived{ID: 2}, &PingAcknowledged{ID: 1}}) {
		t.Fatalf("client events %#v", p.cev)
	}
	next, _ := p.c.Ping()
	if next != 3 {
		t.Fatalf("next ping id %d", next)
	}
}

func TestConnGoAway(t *testing.T) {
	p := newPair(t, Config{}, Config{})
	p.c.OpenStream(getRequest("/1"), 0, true)
	p.pump()
	p.s.GoAway(GoAwayOK)
	p.c.OpenStream(getRequest("/3"), 0, true) // crosses the GOAWAY
	p.pump()
	var ga *GoAway
	for _, e := range p.cev {
		if g, ok := e.(*GoAway); ok {
			ga = g
		}
	}
	if ga == nil || ga.LastGoodStreamID != 1 || !reflect.DeepEqual(ga.Unprocessed, []uint32{3}) {
		t.Fatalf("client saw %#v", ga)
	}
	for _, e := range p.sev {
		if o, ok := e.(*StreamOpened); ok && o.StreamID == 3 {
			t.Fatal("server accepted a stream after its GOAWAY")
		}
	}
	if _, err := p.c.OpenStream(getRequest("/5"), 0, true); !errors.Is(err, ErrGoingAway) {
		t.Fatalf("OpenStream after GOAWAY: %v", err)
	}
	// Stream 1 still completes.
	if err := p.s.Reply(1, Header{{":status", "200"}}, true); err != nil {
		t.Fatal(err)
	}
	p.pump()
	if p.c.IsOpen(1) {
		t.Fatal("stream 1 still open at the client")
	}
}

func TestConnPush(t *testing.T) {
	p := newPair(t, Config{}, Config{})
	p.c.OpenStream(getRequest("/"), 0, true)
	p.pump()
	push, err := p.s.PushStream(1, Header{{":scheme", "https"}, {":host", "www.wirelab.test"}, {":path", "/style.css"}}, 3, false)
	if err != nil || push != 2 {
		t.Fatalf("PushStream %d %v", push, err)
	}
	if err := p.s.SendHeaders(push, Header{{":status", "200"}, {":version", "HTTP/1.1"}}, false); err != nil {
		t.Fatal(err)
	}
	if err := p.s.SendData(push, []byte("body{}"), true); err != nil {
		t.Fatal(err)
	}
	p.pump()
	o, ok := p.cev[0].(*StreamOpened)
	if !ok || o.StreamID != 2 || o.AssociatedStreamID != 1 || !o.Unidirectional || o.Priority != 3 || o.Header.Get(":path") != "/style.css" {
		t.Fatalf("client saw %#v", p.cev[0])
	}
	got := []string{}
	for _, e := range p.cev[1:] {
		got = append(got, eventString(e))
	}
	if want := []string{"headers 2 reply=false", "data 2 6", "ended 2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("client events %q", got)
	}
	if p.c.IsOpen(2) || p.s.IsOpen(2) {
		t.Fatal("push stream still open")
	}
	// A second push that the client cannot send on, and resets.
	push2, _ := p.s.PushStream(1, Header{{":scheme", "https"}, {":host", "h"}, {":path", "/a.js"}}, 3, false)
	p.pump()
	if err := p.c.SendData(push2, []byte("x"), false); !errors.Is(err, ErrStreamClosed) {
		t.Fatalf("client sent on a push: %v", err)
	}
	if err := p.c.ResetStream(push2, Cancel); err != nil {
		t.Fatal(err)
	}
	p.pump()
	if e := p.sev[len(p.sev)-1]; eventString(e) != "reset 4 CANCEL remote=true" {
		t.Fatalf("server saw %s", eventString(e))
	}
}

func TestConnMaxConcurrentStreams(t *testing.T) {
	p := newPair(t, Config{}, Config{MaxConcurrentStreams: 2})
	if p.c.PeerMaxConcurrentStreams() != 2 {
		t.Fatalf("client sees limit %d", p.c.PeerMaxConcurrentStreams())
	}
	a, _ := p.c.OpenStream(getRequest("/a"), 0, true)
	p.c.OpenStream(getRequest("/b"), 0, true)
	if _, err := p.c.OpenStream(getRequest("/c"), 0, true); !errors.Is(err, ErrTooManyStreams) {
		t.Fatalf("third stream: %v", err)
	}
	p.pump()
	p.s.Reply(a, Header{{":status", "200"}}, true)
	p.pump()
	if err := p.c.CanOpenStream(); err != nil {
		t.Fatalf("after one finished: %v", err)
	}
}
