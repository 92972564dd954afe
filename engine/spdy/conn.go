package spdy

import (
	"compress/zlib"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Role is which end of the session a Conn is.
type Role uint8

const (
	// RoleClient opened the transport connection; its streams are odd.
	RoleClient Role = iota + 1
	// RoleServer accepted it; its (pushed) streams are even.
	RoleServer
)

func (r Role) String() string {
	switch r {
	case RoleClient:
		return "client"
	case RoleServer:
		return "server"
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// Protocol defaults.
const (
	DefaultInitialWindowSize    = 64 << 10 // SPDY/3 per-stream window
	DefaultSessionWindowSize    = 64 << 10 // SPDY/3.1 session window at the start
	DefaultMaxConcurrentStreams = 100
	DefaultMaxControlFrameSize  = 1 << 20
)

// Config holds a Conn's knobs. The zero value means every default.
type Config struct {
	// MaxConcurrentStreams is how many streams the peer may have open towards this endpoint at
	// once; it is advertised in SETTINGS and SYN_STREAMs beyond it are refused (REFUSED_STREAM).
	// Default 100.
	MaxConcurrentStreams uint32
	// InitialWindowSize is the per-stream receive window this endpoint grants, bytes; advertised as
	// SETTINGS_INITIAL_WINDOW_SIZE. Default 65536, at most 2^31-1.
	InitialWindowSize uint32
	// SessionWindowSize is the session-level receive window (SPDY/3.1), bytes. The protocol starts
	// it at 65536; a larger value is granted with a WINDOW_UPDATE on stream 0 at the start.
	// Default 65536, at most 2^31-1.
	SessionWindowSize uint32
	// MaxControlFrameSize bounds the payload of a control frame this endpoint accepts, bytes.
	// DATA frames are bounded by the receive windows instead. Default 1 MiB.
	MaxControlFrameSize uint32
	// MaxHeaderBlockSize bounds a decompressed header block, bytes (zlib-bomb defence).
	// Default 256 KiB.
	MaxHeaderBlockSize int
	// HeaderCompressionLevel is the zlib level of this endpoint's header blocks, 1 … 9.
	// Default (0): zlib's default level.
	HeaderCompressionLevel int
}

func (c Config) withDefaults() (Config, error) {
	if c.MaxConcurrentStreams == 0 {
		c.MaxConcurrentStreams = DefaultMaxConcurrentStreams
	}
	if c.InitialWindowSize == 0 {
		c.InitialWindowSize = DefaultInitialWindowSize
	}
	if c.SessionWindowSize == 0 {
		c.SessionWindowSize = DefaultSessionWindowSize
	}
	if c.MaxControlFrameSize == 0 {
		c.MaxControlFrameSize = DefaultMaxControlFrameSize
	}
	if c.MaxHeaderBlockSize == 0 {
		c.MaxHeaderBlockSize = DefaultMaxHeaderBlockSize
	}
	switch {
	case c.InitialWindowSize > MaxWindow:
		return c, fmt.Errorf("spdy: InitialWindowSize %d: allowed 1 … %d", c.InitialWindowSize, MaxWindow)
	case c.SessionWindowSize < DefaultSessionWindowSize || c.SessionWindowSize > MaxWindow:
		return c, fmt.Errorf("spdy: SessionWindowSize %d: allowed %d … %d", c.SessionWindowSize, DefaultSessionWindowSize, MaxWindow)
	case c.MaxControlFrameSize > MaxFrameLength || c.MaxControlFrameSize < 64:
		return c, fmt.Errorf("spdy: MaxControlFrameSize %d: allowed 64 … %d", c.MaxControlFrameSize, MaxFrameLength)
	case c.MaxHeaderBlockSize < 0:
		return c, fmt.Errorf("spdy: MaxHeaderBlockSize %d: must be positive", c.MaxHeaderBlockSize)
	case c.HeaderCompressionLevel < 0 || c.HeaderCompressionLevel > 9:
		return c, fmt.Errorf("spdy: HeaderCompressionLevel %d: allowed 0 (default) or 1 … 9", c.HeaderCompressionLevel)
	}
	return c, nil
}

// maxRecentlyReset bounds the memory of streams this endpoint reset, whose in-flight frames are
// dropped silently.
const maxRecentlyReset = 1024

// Conn is one SPDY/3.1 session, sans-IO: bytes from the transport go into Receive, bytes for the
// transport come out of DataToSend, and the application acts through the stream methods. It never
// reads a clock, starts a goroutine or touches a socket, and it is not safe for concurrent use.
type Conn struct {
	role Role
	cfg  Config

	enc *HeaderCompressor
	dec *HeaderDecompressor

	in  []byte // received bytes not yet forming a whole frame
	out []byte // frames queued for the transport

	streams     map[uint32]*stream
	nextLocalID uint32 // the id the next locally opened stream gets
	lastLocalID uint32 // the highest id this endpoint opened
	lastRemote  uint32 // the highest id the peer opened (and this endpoint accepted or refused)

	activeLocal  uint32 // open streams this endpoint opened
	activeRemote uint32 // open streams the peer opened

	recentlyReset      map[uint32]struct{}
	recentlyResetOrder []uint32

	peerMaxStreams  uint32 // the peer's SETTINGS_MAX_CONCURRENT_STREAMS (unlimited until it says)
	peerInitialWin  int64  // the peer's SETTINGS_INITIAL_WINDOW_SIZE: our send window for new streams
	sessionSend     int64  // session credit for DATA this endpoint sends
	sessionRecv     int64  // session credit the peer still has
	sessionUnacked  int64  // consumed bytes not yet returned with WINDOW_UPDATE(0)
	nextPingID      uint32 // the id of the next Ping
	outstandingPing map[uint32]struct{}
	// settingsPing is the PING sent right after our SETTINGS when they lower the stream window
	// below SPDY's default. SPDY/3 has no SETTINGS acknowledgement, and the peer may open streams
	// and send DATA under the default window before our SETTINGS reach it; its echo tells us the
	// peer has applied them (frames are processed in order). Until then (settingsPending) streams
	// the peer opens start with the default window, and on the echo every peer-opened stream's
	// window drops by the same delta the peer applied, so both ends keep the same account.
	settingsPing    uint32
	settingsPending bool

	goAwaySent     bool
	goAwayReceived bool
	err            error // set once the session is dead
}

// NewConn returns a session for role. The SETTINGS frame (MAX_CONCURRENT_STREAMS,
// INITIAL_WINDOW_SIZE) and, if the session window is larger than the protocol's 64 KiB, a
// WINDOW_UPDATE for stream 0 are queued at once.
func NewConn(role Role, cfg Config) (*Conn, error) {
	if role != RoleClient && role != RoleServer {
		return nil, fmt.Errorf("spdy: role %d: must be RoleClient or RoleServer", role)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	level := cfg.HeaderCompressionLevel
	if level == 0 {
		level = zlib.DefaultCompression
	}
	enc, err := NewHeaderCompressor(level)
	if err != nil {
		return nil, err
	}
	c := &Conn{
		role:            role,
		cfg:             cfg,
		enc:             enc,
		dec:             NewHeaderDecompressor(cfg.MaxHeaderBlockSize),
		streams:         make(map[uint32]*stream),
		recentlyReset:   make(map[uint32]struct{}),
		peerMaxStreams:  math.MaxUint32,
		peerInitialWin:  DefaultInitialWindowSize,
		sessionSend:     DefaultSessionWindowSize,
		sessionRecv:     int64(cfg.SessionWindowSize),
		outstandingPing: make(map[uint32]struct{}),
	}
	if role == RoleClient {
		c.nextLocalID, c.nextPingID = 1, 1
	} else {
		c.nextLocalID, c.nextPingID = 2, 2
	}
	c.queue(&SettingsFrame{Settings: []Setting{
		{ID: SettingMaxConcurrentStreams, Value: cfg.MaxConcurrentStreams},
		{ID: SettingInitialWindowSize, Value: cfg.InitialWindowSize},
	}})
	if extra := cfg.SessionWindowSize - DefaultSessionWindowSize; extra > 0 {
		c.queue(&WindowUpdateFrame{StreamID: 0, DeltaWindowSize: extra})
	}
	if cfg.InitialWindowSize < DefaultInitialWindowSize {
		c.settingsPing, c.settingsPending = c.nextPingID, true
		c.nextPingID += 2
		c.queue(&PingFrame{ID: c.settingsPing})
	}
	return c, nil
}

// Role is the endpoint's role.
func (c *Conn) Role() Role { return c.role }

// DataToSend returns the bytes queued for the transport since the last call (nil if none). The
// caller owns the slice.
func (c *Conn) DataToSend() []byte {
	b := c.out
	c.out = nil
	return b
}

// Err is the error that ended the session, or nil.
func (c *Conn) Err() error { return c.err }

func (c *Conn) queue(f Frame) {
	out, err := AppendFrame(c.out, f)
	if err != nil {
		// Every frame the Conn builds has in-range fields; a failure is a bug here.
		panic(fmt.Sprintf("spdy: building %s: %v", f.Type(), err))
	}
	c.out = out
}

func (c *Conn) isLocalID(id uint32) bool {
	return (id%2 == 1) == (c.role == RoleClient)
}

// ---- receiving ----

// Receive consumes bytes from the transport and returns the events they complete. A partial frame
// waits for the next call. When the peer breaks a session rule, the RST_STREAM/GOAWAY are queued
// (send them: DataToSend) and a *SessionError is returned with the events before it; the session is
// then dead and every later call returns the same error. Stream-level faults never return an
// error: they are answered with RST_STREAM and reported as StreamReset.
func (c *Conn) Receive(data []byte) ([]Event, error) {
	if c.err != nil {
		return nil, c.err
	}
	c.in = append(c.in, data...)
	var events []Event
	consumed := 0
	for {
		rest := c.in[consumed:]
		h, ok := ParseFrameHeader(rest)
		if !ok {
			break
		}
		if err := c.checkFrameHeader(h, rest); err != nil {
			return events, c.fail(err)
		}
		f, n, err := ParseFrame(rest)
		if err != nil {
			return events, c.fail(err)
		}
		if f == nil {
			break
		}
		consumed += n
		events, err = c.handle(f, events)
		if err != nil {
			return events, c.fail(err)
		}
	}
	c.in = append(c.in[:0], c.in[consumed:]...)
	return events, nil
}

// checkFrameHeader refuses oversized frames as soon as their header is in, before buffering them.
func (c *Conn) checkFrameHeader(h FrameHeader, b []byte) error {
	if !h.Control {
		if int64(h.Length) > c.sessionRecv {
			return sessionErrorf("DATA of %d bytes on stream %d exceeds the session window %d", h.Length, h.StreamID, c.sessionRecv)
		}
		return nil
	}
	if h.Length <= c.cfg.MaxControlFrameSize {
		return nil
	}
	e := sessionErrorf("%s of %d bytes exceeds MaxControlFrameSize %d", h.Type, h.Length, c.cfg.MaxControlFrameSize)
	switch h.Type {
	case TypeSynStream, TypeSynReply, TypeHeaders:
		// Its header block will never be decompressed: the contexts part ways, so the session
		// ends, after FRAME_TOO_LARGE for the stream (section 2.6.3).
		if len(b) >= FrameHeaderLen+4 {
			if id := be31(b[8:12]); id != 0 {
				e.RstStreamID, e.RstStatus = id, FrameTooLarge
			}
		}
	}
	return e
}

// fail ends the session: RST_STREAM (if the error names one) and GOAWAY are queued.
func (c *Conn) fail(err error) error {
	var se *SessionError
	if !errors.As(err, &se) {
		se = &SessionError{Status: GoAwayInternalError, Reason: err.Error()}
	}
	if se.RstStreamID != 0 && se.RstStatus != 0 {
		c.queue(&RstStreamFrame{StreamID: se.RstStreamID, Status: se.RstStatus})
	}
	if !c.goAwaySent {
		c.queue(&GoAwayFrame{LastGoodStreamID: c.lastRemote, Status: se.Status})
		c.goAwaySent = true
	}
	c.err = se
	return se
}

func (c *Conn) handle(f Frame, events []Event) ([]Event, error) {
	switch f := f.(type) {
	case *DataFrame:
		return c.handleData(f, events)
	case *SynStreamFrame:
		return c.handleSynStream(f, events)
	case *SynReplyFrame:
		return c.handleReplyOrHeaders(f.StreamID, f.Fin(), true, f.HeaderBlock, events)
	case *HeadersFrame:
		return c.handleReplyOrHeaders(f.StreamID, f.Fin(), false, f.HeaderBlock, events)
	case *RstStreamFrame:
		return c.handleRstStream(f, events)
	case *SettingsFrame:
		return c.handleSettings(f, events)
	case *PingFrame:
		return c.handlePing(f, events), nil
	case *GoAwayFrame:
		return c.handleGoAway(f, events), nil
	case *WindowUpdateFrame:
		return c.handleWindowUpdate(f, events)
	case *UnknownFrame:
		return events, nil // section 2.2.1: unknown control frames are ignored
	}
	return events, fmt.Errorf("spdy: unhandled frame %T", f)
}

// decodeHeaders always inflates the block (keeping the shared context in step) before any stream
// rule is applied. A session fault names the stream for FRAME_TOO_LARGE.
func (c *Conn) decodeHeaders(id uint32, block []byte) (Header, *StreamError, error) {
	h, err := c.dec.Decode(block)
	if err == nil {
		return h, nil, nil
	}
	var se *SessionError
	if errors.As(err, &se) {
		if se.RstStatus != 0 && id != 0 {
			se.RstStreamID = id
		}
		return nil, nil, se
	}
	var ste *StreamError
	if errors.As(err, &ste) {
		ste.StreamID = id
		return nil, ste, nil
	}
	return nil, nil, err
}

func (c *Conn) handleSynStream(f *SynStreamFrame, events []Event) ([]Event, error) {
	id := f.StreamID
	h, herr, err := c.decodeHeaders(id, f.HeaderBlock)
	if err != nil {
		return events, err
	}
	if id == 0 {
		return events, sessionErrorf("SYN_STREAM for stream 0")
	}
	if c.isLocalID(id) {
		return events, sessionErrorf("SYN_STREAM %d has this endpoint's parity (%s)", id, c.role)
	}
	if c.goAwaySent && id > c.lastRemote {
		return events, nil // section 2.6.6: after GOAWAY, new streams are ignored
	}
	if _, inUse := c.streams[id]; inUse {
		return c.resetStream(id, StreamInUse, events), nil
	}
	if id <= c.lastRemote {
		return events, sessionErrorf("SYN_STREAM %d after stream %d: ids must increase", id, c.lastRemote)
	}
	c.lastRemote = id
	if herr != nil {
		return c.refuse(id, herr.Status, events), nil
	}
	if c.role == RoleClient && (f.AssociatedToStreamID == 0 || !f.Unidirectional()) {
		return c.refuse(id, ProtocolError, events), nil // a server's stream must be a push
	}
	if f.AssociatedToStreamID != 0 {
		if a, ok := c.streams[f.AssociatedToStreamID]; !ok || !a.local {
			return c.refuse(id, InvalidStream, events), nil
		}
	}
	if c.activeRemote >= c.cfg.MaxConcurrentStreams {
		return c.refuse(id, RefusedStream, events), nil
	}
	st := &stream{
		id:         id,
		state:      initialState(false, f.Unidirectional(), f.Fin()),
		priority:   f.Priority,
		assoc:      f.AssociatedToStreamID,
		replied:    f.Unidirectional(),
		sendWindow: c.peerInitialWin,
		recvWindow: c.remoteStreamRecvWindow(),
	}
	events = append(events, &StreamOpened{
		StreamID: id, AssociatedStreamID: f.AssociatedToStreamID, Priority: f.Priority, Slot: f.Slot,
		Unidirectional: f.Unidirectional(), Header: h,
	})
	if f.Fin() {
		events = append(events, &StreamEnded{StreamID: id})
	}
	if st.state != stateClosed {
		c.streams[id] = st
		c.activeRemote++
	}
	return events, nil
}

func (c *Conn) handleReplyOrHeaders(id uint32, fin, reply bool, block []byte, events []Event) ([]Event, error) {
	h, herr, err := c.decodeHeaders(id, block)
	if err != nil {
		return events, err
	}
	if id == 0 {
		return events, sessionErrorf("SYN_REPLY/HEADERS for stream 0")
	}
	st, ok := c.streams[id]
	if !ok {
		return c.frameOnInactiveStream(id, 0, events), nil
	}
	switch {
	case reply && !st.local:
		return c.resetStream(id, ProtocolError, events), nil // only the opener gets a SYN_REPLY
	case reply && st.replied:
		return c.resetStream(id, StreamInUse, events), nil
	case !reply && st.local && !st.replied:
		return c.resetStream(id, ProtocolError, events), nil // HEADERS before SYN_REPLY
	}
	if herr != nil {
		return c.resetStream(id, herr.Status, events), nil
	}
	if t := c.step(st, recvEvent(fin)); t.rst != 0 {
		return c.resetStream(id, t.rst, events), nil
	}
	if reply {
		st.replied = true
	}
	events = append(events, &HeadersReceived{StreamID: id, Reply: reply, Header: h})
	if fin {
		events = append(events, &StreamEnded{StreamID: id})
	}
	return events, nil
}

func recvEvent(fin bool) streamEvent {
	if fin {
		return evRecvFin
	}
	return evRecv
}

func sendEvent(fin bool) streamEvent {
	if fin {
		return evSendFin
	}
	return evSend
}

// step applies ev to st through the table; on success the state changes (and a closed stream is
// forgotten).
func (c *Conn) step(st *stream, ev streamEvent) transition {
	t := streamTransitions[st.state][ev]
	if t.rst != 0 || t.localErr != nil {
		return t
	}
	st.state = t.next
	if st.state == stateClosed {
		c.forget(st)
	}
	return t
}

func (c *Conn) forget(st *stream) {
	if _, ok := c.streams[st.id]; !ok {
		return
	}
	delete(c.streams, st.id)
	if st.local {
		c.activeLocal--
	} else {
		c.activeRemote--
	}
}

// frameOnInactiveStream answers a frame for a stream that is not open: silence for streams this
// endpoint reset (their frames were in flight) or that were never processed after GOAWAY,
// STREAM_ALREADY_CLOSED for streams that were open once, INVALID_STREAM for ids never used.
func (c *Conn) frameOnInactiveStream(id uint32, dataLen int, events []Event) []Event {
	c.creditSession(int64(dataLen))
	if _, ok := c.recentlyReset[id]; ok {
		return events
	}
	if c.goAwaySent && !c.isLocalID(id) && id > c.lastRemote {
		return events
	}
	status := InvalidStream
	if (c.isLocalID(id) && id <= c.lastLocalID) || (!c.isLocalID(id) && id <= c.lastRemote) {
		status = StreamAlreadyClosed
	}
	return c.resetStream(id, status, events)
}

// resetStream queues RST_STREAM(id, status), forgets the stream and reports it if it was open.
func (c *Conn) resetStream(id uint32, status RstStatus, events []Event) []Event {
	c.queue(&RstStreamFrame{StreamID: id, Status: status})
	c.rememberReset(id)
	if st, known := c.streams[id]; known {
		c.forget(st)
		events = append(events, &StreamReset{StreamID: id, Status: status})
	}
	return events
}

// refuse rejects a SYN_STREAM before the stream exists: RST_STREAM(id, status), reported as
// StreamReset (without a StreamOpened).
func (c *Conn) refuse(id uint32, status RstStatus, events []Event) []Event {
	c.queue(&RstStreamFrame{StreamID: id, Status: status})
	c.rememberReset(id)
	return append(events, &StreamReset{StreamID: id, Status: status})
}

func (c *Conn) rememberReset(id uint32) {
	if _, ok := c.recentlyReset[id]; ok {
		return
	}
	if len(c.recentlyResetOrder) >= maxRecentlyReset {
		delete(c.recentlyReset, c.recentlyResetOrder[0])
		c.recentlyResetOrder = c.recentlyResetOrder[1:]
	}
	c.recentlyReset[id] = struct{}{}
	c.recentlyResetOrder = append(c.recentlyResetOrder, id)
}

func (c *Conn) handleData(f *DataFrame, events []Event) ([]Event, error) {
	id, n := f.StreamID, int64(len(f.Data))
	if id == 0 {
		return events, sessionErrorf("DATA on stream 0")
	}
	c.sessionRecv -= n // checkFrameHeader made sure it stays >= 0
	st, ok := c.streams[id]
	if !ok {
		return c.frameOnInactiveStream(id, len(f.Data), events), nil
	}
	if st.local && !st.replied {
		c.creditSession(n)
		return c.resetStream(id, ProtocolError, events), nil // DATA before SYN_REPLY (section 2.6.1)
	}
	if n > st.recvWindow {
		c.creditSession(n)
		return c.resetStream(id, FlowControlError, events), nil
	}
	if t := c.step(st, recvEvent(f.Fin())); t.rst != 0 {
		c.creditSession(n)
		return c.resetStream(id, t.rst, events), nil
	}
	st.recvWindow -= n
	events = append(events, &DataReceived{StreamID: id, Data: append([]byte(nil), f.Data...)})
	if f.Fin() {
		events = append(events, &StreamEnded{StreamID: id})
	}
	return events, nil
}

func (c *Conn) handleRstStream(f *RstStreamFrame, events []Event) ([]Event, error) {
	if f.StreamID == 0 {
		return events, sessionErrorf("RST_STREAM for stream 0")
	}
	if f.Status == 0 {
		return events, sessionErrorf("RST_STREAM with status 0")
	}
	st, ok := c.streams[f.StreamID]
	if !ok {
		return events, nil // never answer a RST_STREAM with one (section 2.4.2)
	}
	c.step(st, evReset)
	return append(events, &StreamReset{StreamID: f.StreamID, Status: f.Status, Remote: true}), nil
}

func (c *Conn) handleSettings(f *SettingsFrame, events []Event) ([]Event, error) {
	for _, s := range f.Settings {
		switch s.ID {
		case SettingMaxConcurrentStreams:
			c.peerMaxStreams = s.Value
		case SettingInitialWindowSize:
			if s.Value > MaxWindow {
				return events, sessionErrorf("SETTINGS_INITIAL_WINDOW_SIZE %d exceeds 2^31-1", s.Value)
			}
			delta := int64(s.Value) - c.peerInitialWin
			c.peerInitialWin = int64(s.Value)
			for _, id := range c.sortedStreamIDs() {
				st := c.streams[id]
				st.sendWindow += delta
				if st.sendWindow > MaxWindow {
					events = c.resetStream(id, FlowControlError, events)
				}
			}
		}
	}
	return append(events, &SettingsReceived{Clear: f.Flags&FlagClearSettings != 0, Settings: slices.Clone(f.Settings)}), nil
}

func (c *Conn) sortedStreamIDs() []uint32 {
	ids := make([]uint32, 0, len(c.streams))
	for id := range c.streams {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// remoteStreamRecvWindow is the receive window of a stream the peer opens now: the window the
// peer believes it has (see settingsPing).
func (c *Conn) remoteStreamRecvWindow() int64 {
	if c.settingsPending {
		return DefaultInitialWindowSize
	}
	return int64(c.cfg.InitialWindowSize)
}

func (c *Conn) handlePing(f *PingFrame, events []Event) []Event {
	ours := (f.ID%2 == 1) == (c.role == RoleClient)
	if ours && c.settingsPending && f.ID == c.settingsPing {
		// The peer has applied our SETTINGS: it lowered the window of every stream it opened
		// under the default by the same delta.
		c.settingsPending = false
		delta := DefaultInitialWindowSize - int64(c.cfg.InitialWindowSize)
		for _, st := range c.streams {
			if !st.local {
				st.recvWindow -= delta
			}
		}
		return events
	}
	if ours {
		if _, ok := c.outstandingPing[f.ID]; ok {
			delete(c.outstandingPing, f.ID)
			return append(events, &PingAcknowledged{ID: f.ID})
		}
		return events // section 2.6.5: a PING of our parity we did not send is ignored
	}
	c.queue(&PingFrame{ID: f.ID})
	return append(events, &PingReceived{ID: f.ID})
}

func (c *Conn) handleGoAway(f *GoAwayFrame, events []Event) []Event {
	c.goAwayReceived = true
	ev := &GoAway{LastGoodStreamID: f.LastGoodStreamID, Status: f.Status}
	for _, id := range c.sortedStreamIDs() {
		st := c.streams[id]
		if st.local && id > f.LastGoodStreamID {
			c.forget(st)
			ev.Unprocessed = append(ev.Unprocessed, id)
		}
	}
	return append(events, ev)
}

func (c *Conn) handleWindowUpdate(f *WindowUpdateFrame, events []Event) ([]Event, error) {
	if f.StreamID == 0 {
		if f.DeltaWindowSize == 0 {
			return events, sessionErrorf("session WINDOW_UPDATE with delta 0")
		}
		c.sessionSend += int64(f.DeltaWindowSize)
		if c.sessionSend > MaxWindow {
			return events, sessionErrorf("session send window overflows to %d", c.sessionSend)
		}
		return append(events, &WindowUpdated{StreamID: 0, Delta: f.DeltaWindowSize}), nil
	}
	st, ok := c.streams[f.StreamID]
	if !ok {
		return events, nil // updates may trail a closed stream
	}
	if f.DeltaWindowSize == 0 {
		return c.resetStream(f.StreamID, ProtocolError, events), nil
	}
	st.sendWindow += int64(f.DeltaWindowSize)
	if st.sendWindow > MaxWindow {
		return c.resetStream(f.StreamID, FlowControlError, events), nil
	}
	return append(events, &WindowUpdated{StreamID: f.StreamID, Delta: f.DeltaWindowSize}), nil
}

// ---- flow control credit ----

// Consumed tells the Conn that the application has processed n bytes of DATA received on stream
// id (n is the length of DataReceived.Data, summed as the application likes). The credit goes back
// to the peer with WINDOW_UPDATE once half a window has accumulated, for the stream (while the peer
// may still send on it) and for the session. Unknown streams credit only the session.
func (c *Conn) Consumed(id uint32, n int) {
	if n <= 0 || c.err != nil {
		return
	}
	if st, ok := c.streams[id]; ok && st.state != stateHalfClosedRemote {
		st.unacked += int64(n)
		if st.unacked >= int64(c.cfg.InitialWindowSize)/2 {
			c.queue(&WindowUpdateFrame{StreamID: id, DeltaWindowSize: uint32(st.unacked)})
			st.recvWindow += st.unacked
			st.unacked = 0
		}
	}
	c.creditSession(int64(n))
}

func (c *Conn) creditSession(n int64) {
	if n <= 0 {
		return
	}
	c.sessionUnacked += n
	if c.sessionUnacked >= int64(c.cfg.SessionWindowSize)/2 {
		c.queue(&WindowUpdateFrame{StreamID: 0, DeltaWindowSize: uint32(c.sessionUnacked)})
		c.sessionRecv += c.sessionUnacked
		c.sessionUnacked = 0
	}
}

// SendWindow is how many DATA bytes stream id may send now: the smaller of its window and the
// session window, never negative; 0 for a stream that cannot send.
func (c *Conn) SendWindow(id uint32) int {
	st, ok := c.streams[id]
	if !ok || streamTransitions[st.state][evSend].localErr != nil {
		return 0
	}
	return int(max(0, min(st.sendWindow, c.sessionSend)))
}

// SessionSendWindow is the session's send credit.
func (c *Conn) SessionSendWindow() int { return int(max(0, c.sessionSend)) }

// StreamPriority is the priority of an open stream (0 highest … 7 lowest).
func (c *Conn) StreamPriority(id uint32) (uint8, bool) {
	st, ok := c.streams[id]
	if !ok {
		return 0, false
	}
	return st.priority, true
}

// IsOpen reports whether stream id is open in either direction.
func (c *Conn) IsOpen(id uint32) bool { _, ok := c.streams[id]; return ok }

// ActiveStreams is how many streams are open that this endpoint, resp. the peer, opened.
func (c *Conn) ActiveStreams() (local, remote int) { return int(c.activeLocal), int(c.activeRemote) }

// PeerMaxConcurrentStreams is the peer's MAX_CONCURRENT_STREAMS (math.MaxUint32 until it says).
func (c *Conn) PeerMaxConcurrentStreams() uint32 { return c.peerMaxStreams }

// ---- sending ----

func (c *Conn) usable() error {
	if c.err != nil {
		return c.err
	}
	return nil
}

// CanOpenStream reports whether OpenStream would succeed now (GOAWAY, concurrency, ids).
func (c *Conn) CanOpenStream() error {
	if err := c.usable(); err != nil {
		return err
	}
	if c.goAwayReceived || c.goAwaySent {
		return ErrGoingAway
	}
	if c.activeLocal >= c.peerMaxStreams {
		return ErrTooManyStreams
	}
	if c.nextLocalID > MaxStreamID {
		return ErrStreamIDExhausted
	}
	return nil
}

func (c *Conn) compress(h Header) ([]byte, error) {
	if err := ValidateHeader(h); err != nil {
		return nil, fmt.Errorf("spdy: invalid header to send: %w", err)
	}
	return c.enc.Compress(h)
}

// OpenStream sends SYN_STREAM for a new stream (a request, when the Conn is a client) and returns
// its id. priority is 0 (highest) … 7 (lowest); fin closes this endpoint's side at once (a request
// without a body).
func (c *Conn) OpenStream(h Header, priority uint8, fin bool) (uint32, error) {
	return c.open(h, 0, priority, fin, false)
}

// PushStream (server only) sends a unidirectional SYN_STREAM associated to the client's stream
// assoc and returns the pushed stream's id. The header must carry :scheme, :host and :path (and
// may carry :status and :version, or send them later with SendHeaders).
func (c *Conn) PushStream(assoc uint32, h Header, priority uint8, fin bool) (uint32, error) {
	if c.role != RoleServer {
		return 0, ErrWrongRole
	}
	a, ok := c.streams[assoc]
	if !ok || a.local {
		return 0, ErrUnknownStream
	}
	return c.open(h, assoc, priority, fin, true)
}

func (c *Conn) open(h Header, assoc uint32, priority uint8, fin, uni bool) (uint32, error) {
	if err := c.CanOpenStream(); err != nil {
		return 0, err
	}
	if priority > MaxPriority {
		return 0, fmt.Errorf("spdy: priority %d: allowed 0 … %d", priority, MaxPriority)
	}
	block, err := c.compress(h)
	if err != nil {
		return 0, err
	}
	id := c.nextLocalID
	c.nextLocalID += 2
	c.lastLocalID = id
	flags := Flags(0)
	if fin {
		flags |= FlagFin
	}
	if uni {
		flags |= FlagUnidirectional
	}
	c.queue(&SynStreamFrame{StreamID: id, AssociatedToStreamID: assoc, Priority: priority, Flags: flags, HeaderBlock: block})
	st := &stream{
		id: id, state: initialState(true, uni, fin), priority: priority, local: true, assoc: assoc,
		replied: uni, sendWindow: c.peerInitialWin, recvWindow: int64(c.cfg.InitialWindowSize),
	}
	if st.state != stateClosed {
		c.streams[id] = st
		c.activeLocal++
	}
	return id, nil
}

// sendable finds an open stream and checks that ev is allowed on it.
func (c *Conn) sendable(id uint32, ev streamEvent) (*stream, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	st, ok := c.streams[id]
	if !ok {
		return nil, ErrUnknownStream
	}
	if err := streamTransitions[st.state][ev].localErr; err != nil {
		return nil, err
	}
	return st, nil
}

// Reply sends the SYN_REPLY of a stream the peer opened (the response headers).
func (c *Conn) Reply(id uint32, h Header, fin bool) error {
	st, err := c.sendable(id, sendEvent(fin))
	if err != nil {
		return err
	}
	if st.local {
		return ErrWrongRole
	}
	if st.replied {
		return ErrAlreadyReplied
	}
	block, err := c.compress(h)
	if err != nil {
		return err
	}
	c.queue(&SynReplyFrame{StreamID: id, Flags: finFlag(fin), HeaderBlock: block})
	st.replied = true
	c.step(st, sendEvent(fin))
	return nil
}

// SendHeaders sends a HEADERS frame on an open stream (e.g. :status of a pushed stream, trailers).
func (c *Conn) SendHeaders(id uint32, h Header, fin bool) error {
	st, err := c.sendable(id, sendEvent(fin))
	if err != nil {
		return err
	}
	if !st.local && !st.replied {
		return fmt.Errorf("spdy: HEADERS before SYN_REPLY on stream %d", id)
	}
	block, err := c.compress(h)
	if err != nil {
		return err
	}
	c.queue(&HeadersFrame{StreamID: id, Flags: finFlag(fin), HeaderBlock: block})
	c.step(st, sendEvent(fin))
	return nil
}

// SendData sends data as one DATA frame. It must fit SendWindow(id) (ErrFlowControl otherwise;
// nothing is sent) and MaxFrameLength; chunking and scheduling are the caller's. An empty frame with
// fin is always allowed.
func (c *Conn) SendData(id uint32, data []byte, fin bool) error {
	st, err := c.sendable(id, sendEvent(fin))
	if err != nil {
		return err
	}
	if !st.local && !st.replied {
		return fmt.Errorf("spdy: DATA before SYN_REPLY on stream %d", id)
	}
	n := int64(len(data))
	if n > MaxFrameLength {
		return fmt.Errorf("spdy: DATA of %d bytes exceeds the frame limit %d", n, MaxFrameLength)
	}
	if n > 0 && (n > st.sendWindow || n > c.sessionSend) {
		return ErrFlowControl
	}
	c.queue(&DataFrame{StreamID: id, Flags: finFlag(fin), Data: data})
	st.sendWindow -= n
	c.sessionSend -= n
	c.step(st, sendEvent(fin))
	return nil
}

func finFlag(fin bool) Flags {
	if fin {
		return FlagFin
	}
	return 0
}

// ResetStream aborts an open stream with RST_STREAM(status).
func (c *Conn) ResetStream(id uint32, status RstStatus) error {
	if err := c.usable(); err != nil {
		return err
	}
	if status == 0 {
		return fmt.Errorf("spdy: RST_STREAM status 0 is invalid")
	}
	st, ok := c.streams[id]
	if !ok {
		return ErrUnknownStream
	}
	c.queue(&RstStreamFrame{StreamID: id, Status: status})
	c.rememberReset(id)
	c.step(st, evReset)
	return nil
}

// Ping sends a PING and returns its id; PingAcknowledged reports the echo. The caller measures the
// round trip with its own clock.
func (c *Conn) Ping() (uint32, error) {
	if err := c.usable(); err != nil {
		return 0, err
	}
	id := c.nextPingID
	c.nextPingID += 2 // wraps modulo 2^32, keeping the parity
	c.outstandingPing[id] = struct{}{}
	c.queue(&PingFrame{ID: id})
	return id, nil
}

// GoAway sends GOAWAY naming the last stream the peer opened that this endpoint accepted. Open
// streams finish; new ones from the peer are ignored and OpenStream fails.
func (c *Conn) GoAway(status GoAwayStatus) error {
	if err := c.usable(); err != nil {
		return err
	}
	if c.goAwaySent {
		return nil
	}
	c.queue(&GoAwayFrame{LastGoodStreamID: c.lastRemote, Status: status})
	c.goAwaySent = true
	return nil
}
