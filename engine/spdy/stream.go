package spdy

// streamState is a stream's state as seen by this endpoint (SPDY/3 sections 2.3.6–2.3.7).
type streamState uint8

const (
	stateOpen             streamState = iota // both sides may send
	stateHalfClosedLocal                     // this endpoint sent FIN, or may not send (a push it received)
	stateHalfClosedRemote                    // the peer sent FIN, or may not send (a push this endpoint made)
	stateClosed                              // neither may send
)

func (s streamState) String() string {
	return [...]string{"open", "half-closed (local)", "half-closed (remote)", "closed"}[s]
}

// streamEvent is what happens to a stream after it is opened.
type streamEvent uint8

const (
	evSend    streamEvent = iota // this endpoint sends SYN_REPLY, HEADERS or DATA without FIN
	evSendFin                    // … with FIN
	evRecv                       // the peer's SYN_REPLY, HEADERS or DATA without FIN arrives
	evRecvFin                    // … with FIN
	evReset                      // RST_STREAM, sent or received
)

// transition is one cell of the table: the next state, or what is wrong. A send that is not
// allowed is the application's mistake (localErr); a frame the peer may not send is answered with
// RST_STREAM(rst).
type transition struct {
	next     streamState
	localErr error
	rst      RstStatus
}

// streamTransitions is the whole state machine: every (state, event) pair has an entry.
var streamTransitions = [4][5]transition{
	stateOpen: {
		evSend:    {next: stateOpen},
		evSendFin: {next: stateHalfClosedLocal},
		evRecv:    {next: stateOpen},
		evRecvFin: {next: stateHalfClosedRemote},
		evReset:   {next: stateClosed},
	},
	stateHalfClosedLocal: {
		evSend:    {localErr: ErrStreamClosed},
		evSendFin: {localErr: ErrStreamClosed},
		evRecv:    {next: stateHalfClosedLocal},
		evRecvFin: {next: stateClosed},
		evReset:   {next: stateClosed},
	},
	stateHalfClosedRemote: {
		evSend:    {next: stateHalfClosedRemote},
		evSendFin: {next: stateClosed},
		evRecv:    {rst: StreamAlreadyClosed},
		evRecvFin: {rst: StreamAlreadyClosed},
		evReset:   {next: stateClosed},
	},
	stateClosed: {
		evSend:    {localErr: ErrStreamClosed},
		evSendFin: {localErr: ErrStreamClosed},
		evRecv:    {rst: StreamAlreadyClosed},
		evRecvFin: {rst: StreamAlreadyClosed},
		evReset:   {next: stateClosed},
	},
}

// initialState is the state right after SYN_STREAM: who opened it, whether it is unidirectional,
// and whether the SYN_STREAM carried FIN.
func initialState(local, unidirectional, fin bool) streamState {
	s := stateOpen
	if unidirectional {
		// Only the opener sends.
		if local {
			s = stateHalfClosedRemote
		} else {
			s = stateHalfClosedLocal
		}
	}
	if fin {
		if local {
			s = streamTransitions[s][evSendFin].next
		} else {
			s = streamTransitions[s][evRecvFin].next
		}
	}
	return s
}

// stream is the Conn's record of one open stream.
type stream struct {
	id       uint32
	state    streamState
	priority uint8
	local    bool   // this endpoint opened it
	assoc    uint32 // associated-to stream (push)
	// replied: for a stream this endpoint opened, whether the SYN_REPLY arrived; for one the peer
	// opened, whether this endpoint sent it. Push streams need no reply: true from the start.
	replied bool

	sendWindow int64 // credit for DATA this endpoint may send (may go negative after SETTINGS)
	recvWindow int64 // credit the peer still has on this stream
	unacked    int64 // bytes the application consumed that WINDOW_UPDATE has not yet returned
}
