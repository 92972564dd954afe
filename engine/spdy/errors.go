package spdy

import (
	"errors"
	"fmt"
)

// Error hierarchy
//
//	error
//	 ├── *SessionError   the peer broke the session: a GOAWAY (and perhaps one RST_STREAM) is queued,
//	 │                   the Conn is dead; Receive returns it.
//	 ├── *StreamError    the peer broke one stream: a RST_STREAM is queued, the session goes on;
//	 │                   Receive reports it as a StreamReset event, never as an error.
//	 └── local misuse    the application asked for something the protocol forbids (ErrStreamClosed,
//	                     ErrFlowControl, …); nothing is sent, the call fails.

// RstStatus is the status code of a RST_STREAM frame.
type RstStatus uint32

// RST_STREAM status codes (SPDY/3 section 2.6.3). Zero is not a valid status.
const (
	ProtocolError       RstStatus = 1  // PROTOCOL_ERROR: a generic error; use only when nothing more specific applies
	InvalidStream       RstStatus = 2  // INVALID_STREAM: a frame for a stream that is not active
	RefusedStream       RstStatus = 3  // REFUSED_STREAM: refused before any processing; safe to retry
	UnsupportedVersion  RstStatus = 4  // UNSUPPORTED_VERSION: the SYN_STREAM's version is not supported
	Cancel              RstStatus = 5  // CANCEL: the creator of the stream no longer needs it
	InternalError       RstStatus = 6  // INTERNAL_ERROR: the implementation failed
	FlowControlError    RstStatus = 7  // FLOW_CONTROL_ERROR: the peer violated flow control
	StreamInUse         RstStatus = 8  // STREAM_IN_USE: a second SYN_STREAM or SYN_REPLY for a stream
	StreamAlreadyClosed RstStatus = 9  // STREAM_ALREADY_CLOSED: data or headers after the peer's FIN
	InvalidCredentials  RstStatus = 10 // INVALID_CREDENTIALS: SPDY/3 CREDENTIAL (removed in 3.1)
	FrameTooLarge       RstStatus = 11 // FRAME_TOO_LARGE: a frame this implementation cannot support
)

var rstStatusNames = [...]string{
	0: "RST_STATUS_0", "PROTOCOL_ERROR", "INVALID_STREAM", "REFUSED_STREAM", "UNSUPPORTED_VERSION",
	"CANCEL", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "STREAM_IN_USE", "STREAM_ALREADY_CLOSED",
	"INVALID_CREDENTIALS", "FRAME_TOO_LARGE",
}

func (s RstStatus) String() string {
	if int(s) < len(rstStatusNames) {
		return rstStatusNames[s]
	}
	return fmt.Sprintf("RST_STATUS_%d", uint32(s))
}

// GoAwayStatus is the status code of a GOAWAY frame.
type GoAwayStatus uint32

// GOAWAY status codes (SPDY/3 section 2.6.6).
const (
	GoAwayOK            GoAwayStatus = 0 // OK: a normal session teardown
	GoAwayProtocolError GoAwayStatus = 1 // PROTOCOL_ERROR: a generic error
	GoAwayInternalError GoAwayStatus = 2 // INTERNAL_ERROR: the implementation failed
)

func (s GoAwayStatus) String() string {
	switch s {
	case GoAwayOK:
		return "OK"
	case GoAwayProtocolError:
		return "PROTOCOL_ERROR"
	case GoAwayInternalError:
		return "INTERNAL_ERROR"
	}
	return fmt.Sprintf("GOAWAY_STATUS_%d", uint32(s))
}

// SessionError is a violation that ends the session (SPDY/3 section 2.4.1): the Conn queues a
// GOAWAY with Status and stops. When RstStreamID is non-zero a RST_STREAM(RstStreamID, RstStatus)
// goes out first, e.g. FRAME_TOO_LARGE for a header block whose decompression had to be abandoned.
type SessionError struct {
	Status      GoAwayStatus // the GOAWAY status
	RstStreamID uint32       // a stream to reset before the GOAWAY; 0 for none
	RstStatus   RstStatus    // the RST_STREAM status when RstStreamID != 0
	Reason      string       // what was wrong, for logs and tests
}

func (e *SessionError) Error() string {
	if e.RstStreamID != 0 {
		return fmt.Sprintf("spdy: session error %s (stream %d %s): %s", e.Status, e.RstStreamID, e.RstStatus, e.Reason)
	}
	return fmt.Sprintf("spdy: session error %s: %s", e.Status, e.Reason)
}

// StreamError is a violation confined to one stream (SPDY/3 section 2.4.2): the Conn queues a
// RST_STREAM and forgets the stream; the session continues.
type StreamError struct {
	StreamID uint32    // the stream to reset
	Status   RstStatus // the RST_STREAM status
	Reason   string    // what was wrong, for logs and tests
}

func (e *StreamError) Error() string {
	return fmt.Sprintf("spdy: stream %d error %s: %s", e.StreamID, e.Status, e.Reason)
}

func sessionErrorf(format string, args ...any) *SessionError {
	return &SessionError{Status: GoAwayProtocolError, Reason: fmt.Sprintf(format, args...)}
}

func streamErrorf(id uint32, status RstStatus, format string, args ...any) *StreamError {
	return &StreamError{StreamID: id, Status: status, Reason: fmt.Sprintf(format, args...)}
}

// Local misuse: what the application asked for is not allowed; nothing was sent.
var (
	ErrStreamClosed      = errors.New("spdy: stream is closed for sending")
	ErrUnknownStream     = errors.New("spdy: no such stream")
	ErrFlowControl       = errors.New("spdy: data exceeds the send window")
	ErrTooManyStreams    = errors.New("spdy: the peer's MAX_CONCURRENT_STREAMS is reached")
	ErrGoingAway         = errors.New("spdy: the session is going away; no new streams")
	ErrWrongRole         = errors.New("spdy: operation not allowed for this endpoint's role")
	ErrAlreadyReplied    = errors.New("spdy: SYN_REPLY already sent on this stream")
	ErrStreamIDExhausted = errors.New("spdy: stream ids exhausted")
)
