package spdy

// Event is what Conn.Receive reports: one of *StreamOpened, *HeadersReceived, *DataReceived,
// *StreamEnded, *StreamReset, *SettingsReceived, *PingReceived, *PingAcknowledged, *GoAway,
// *WindowUpdated. Events are returned in the order their frames arrived.
type Event interface{ isEvent() }

// StreamOpened: the peer opened a stream with SYN_STREAM (a request at a server, a pushed stream
// at a client).
type StreamOpened struct {
	// StreamID is the new stream's id (odd when the client opened it, even for server push).
	StreamID uint32
	// AssociatedStreamID is the stream a pushed stream belongs to; 0 for a request.
	AssociatedStreamID uint32
	// Priority is 0 (highest) … 7 (lowest); a write scheduler should honour it.
	Priority uint8
	// Slot is the SPDY/3 CREDENTIAL slot as received (unused by 3.1).
	Slot uint8
	// Unidirectional is set when this endpoint may not send on the stream (server push).
	Unidirectional bool
	// Header is the decoded, validated header block (:method, :path, … for a request).
	Header Header
}

// HeadersReceived: a SYN_REPLY or a HEADERS frame arrived on an open stream.
type HeadersReceived struct {
	// StreamID is the stream.
	StreamID uint32
	// Reply is true for SYN_REPLY (the response headers), false for a HEADERS frame.
	Reply bool
	// Header is the decoded, validated header block.
	Header Header
}

// DataReceived: a DATA frame arrived. Its bytes count against the receive windows until the
// application hands them back with Conn.Consumed.
type DataReceived struct {
	// StreamID is the stream.
	StreamID uint32
	// Data is the payload (owned by the receiver of the event).
	Data []byte
}

// StreamEnded: the peer sent FLAG_FIN; it will send nothing more on the stream. It follows the
// StreamOpened, HeadersReceived or DataReceived event of the frame that carried the flag.
type StreamEnded struct {
	// StreamID is the stream.
	StreamID uint32
}

// StreamReset: a stream was aborted, by the peer's RST_STREAM (Remote) or by this endpoint because
// the peer broke a stream rule (the RST_STREAM is already queued). A stream refused for
// MAX_CONCURRENT_STREAMS is reported here without a StreamOpened before it.
type StreamReset struct {
	// StreamID is the stream.
	StreamID uint32
	// Status is the RST_STREAM status.
	Status RstStatus
	// Remote is true when the peer sent the RST_STREAM.
	Remote bool
}

// SettingsReceived: the peer's SETTINGS frame arrived and has been applied
// (MAX_CONCURRENT_STREAMS, INITIAL_WINDOW_SIZE).
type SettingsReceived struct {
	// Clear is FLAG_SETTINGS_CLEAR_SETTINGS: forget persisted settings.
	Clear bool
	// Settings are the entries in wire order, with their persist flags.
	Settings []Setting
}

// PingReceived: the peer sent a PING; the echo is already queued.
type PingReceived struct {
	// ID is the ping's id (odd from a client, even from a server).
	ID uint32
}

// PingAcknowledged: the echo of a PING this endpoint sent (Conn.Ping) came back.
type PingAcknowledged struct {
	// ID is the id Conn.Ping returned.
	ID uint32
}

// GoAway: the peer sent GOAWAY. No new streams may be opened on this session.
type GoAway struct {
	// LastGoodStreamID is the last stream the peer accepted; later ones it never processed.
	LastGoodStreamID uint32
	// Status is the GOAWAY status.
	Status GoAwayStatus
	// Unprocessed lists the streams this endpoint opened above LastGoodStreamID; they are closed
	// and safe to retry on another session.
	Unprocessed []uint32
}

// WindowUpdated: the peer granted send credit with WINDOW_UPDATE.
type WindowUpdated struct {
	// StreamID is the stream, or 0 for the session window (SPDY/3.1).
	StreamID uint32
	// Delta is the credit granted, bytes.
	Delta uint32
}

func (*StreamOpened) isEvent()     {}
func (*HeadersReceived) isEvent()  {}
func (*DataReceived) isEvent()     {}
func (*StreamEnded) isEvent()      {}
func (*StreamReset) isEvent()      {}
func (*SettingsReceived) isEvent() {}
func (*PingReceived) isEvent()     {}
func (*PingAcknowledged) isEvent() {}
func (*GoAway) isEvent()           {}
func (*WindowUpdated) isEvent()    {}
