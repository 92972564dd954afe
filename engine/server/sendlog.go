package server

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// sendLog records, for one multiplexed connection (h2, h2c, h3, spdy3), the order in which the
// server sent response payload. Its unit is one piece of payload as the protocol frames it:
// an HTTP/2 or SPDY DATA frame with a non-empty payload as it is written to the socket, a QUIC
// STREAM frame carrying new stream data as it is packed into a packet (HTTP/3 framing included;
// retransmissions are counted apart). Every unit gets the next sequence number on the connection,
// so comparing two streams' LastSeq tells which one the server finished first.
type sendLog struct {
	mu       sync.Mutex
	seq      int
	streams  map[uint64]*StreamSend
	runs     []SendRun
	runsLost int
	highest  map[uint64]int64 // h3: the highest stream offset sent so far, per stream
}

// maxSendRuns bounds the run-length log kept per connection; later runs are only counted.
const maxSendRuns = 100_000

// StreamSend is what one stream's response payload looked like on the way out.
type StreamSend struct {
	StreamID uint64 `json:"stream_id"`
	// Bytes is the payload sent (h2/spdy3: DATA payload; h3: STREAM frame data, which includes
	// the HTTP/3 HEADERS and DATA frame headers), not counting retransmissions.
	Bytes int64 `json:"bytes"`
	// Units is the number of DATA (or STREAM) frames that carried it.
	Units int `json:"units"`
	// FirstSeq and LastSeq are the sequence numbers (1, 2, … on the connection) of the stream's
	// first and last unit: LastSeq orders the streams by when the server finished sending them.
	FirstSeq int `json:"first_seq"`
	LastSeq  int `json:"last_seq"`
	// First and Last are the wall-clock times of the first and last unit.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// RetransmittedBytes is h3 stream data sent again after a loss (0 for TCP protocols, whose
	// retransmissions happen in the kernel).
	RetransmittedBytes int64 `json:"retransmitted_bytes,omitempty"`
}

// SendRun is a run of consecutive units of one stream in a connection's send order.
type SendRun struct {
	StreamID uint64 `json:"stream_id"`
	Units    int    `json:"units"`
	Bytes    int64  `json:"bytes"`
}

func newSendLog() *sendLog {
	return &sendLog{streams: map[uint64]*StreamSend{}}
}

// data records a unit of n payload bytes of stream sent now. Empty units are not recorded.
func (l *sendLog) data(stream uint64, n int64, now time.Time) {
	if n <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dataLocked(stream, n, now)
}

func (l *sendLog) dataLocked(stream uint64, n int64, now time.Time) {
	l.seq++
	st := l.streams[stream]
	if st == nil {
		st = &StreamSend{StreamID: stream, FirstSeq: l.seq, First: now}
		l.streams[stream] = st
	}
	st.Bytes += n
	st.Units++
	st.LastSeq, st.Last = l.seq, now
	if k := len(l.runs) - 1; k >= 0 && l.runs[k].StreamID == stream {
		l.runs[k].Units++
		l.runs[k].Bytes += n
		return
	}
	if len(l.runs) >= maxSendRuns {
		l.runsLost++
		return
	}
	l.runs = append(l.runs, SendRun{StreamID: stream, Units: 1, Bytes: n})
}

// streamFrame records an h3 STREAM frame [offset, offset+n) of stream sent now: the part above
// the highest offset sent so far is new data (a unit), the rest a retransmission.
func (l *sendLog) streamFrame(stream uint64, offset, n int64, now time.Time) {
	if n <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.highest == nil {
		l.highest = map[uint64]int64{}
	}
	end := offset + n
	high := l.highest[stream]
	if end <= high {
		if st := l.streams[stream]; st != nil {
			st.RetransmittedBytes += n
		}
		return
	}
	fresh := end - max(offset, high)
	l.highest[stream] = end
	l.dataLocked(stream, fresh, now)
	if again := n - fresh; again > 0 {
		l.streams[stream].RetransmittedBytes += again
	}
}

// stream returns a copy of one stream's record.
func (l *sendLog) stream(id uint64) (StreamSend, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, ok := l.streams[id]
	if !ok {
		return StreamSend{}, false
	}
	return *st, true
}

// snapshot returns the streams in the order they finished (LastSeq) and the runs.
func (l *sendLog) snapshot() (streams []StreamSend, runs []SendRun, runsLost int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	streams = make([]StreamSend, 0, len(l.streams))
	for _, st := range l.streams {
		streams = append(streams, *st)
	}
	slices.SortFunc(streams, func(a, b StreamSend) int { return cmp.Compare(a.LastSeq, b.LastSeq) })
	return streams, append([]SendRun(nil), l.runs...), l.runsLost
}
