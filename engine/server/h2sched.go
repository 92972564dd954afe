package server

// The HTTP/2 write scheduler of the built-in server: RFC 9218 urgency and incremental.
//
// Adapted from golang.org/x/net/http2's priorityWriteSchedulerRFC9218 (writesched_priority_rfc9218.go,
// Copyright 2025 The Go Authors, BSD-3-Clause). x/net uses that scheduler by default only from
// Go 1.27 on (before, clientPriorityDisabled is always true and connections get the round-robin
// scheduler), its constructor is unexported, and x/net feeds priority signals (the priority header,
// PRIORITY_UPDATE) only to its own type. So this copy of its algorithm is fed by the server itself:
// the handler sets a stream's priority from the request's priority header before it writes
// anything (h2Scheduler.requestPriority), and the connection's frame observer hands it each
// PRIORITY_UPDATE as it is read (h2Scheduler.priorityUpdate). RFC 7540 priority signals (PRIORITY
// frames, HEADERS priority fields), which x/net passes to AdjustStream, are ignored, as RFC 9218
// allows.
//
// What it guarantees: control frames (SETTINGS, PING, WINDOW_UPDATE, RST_STREAM, GOAWAY, …) go
// first; then, among streams with a frame queued and flow-control credit, the lowest urgency value
// wins; within an urgency, non-incremental streams are served one at a time in the order they were
// opened, incremental ones round robin frame by frame, and when both kinds are waiting they
// alternate. A stream's frames leave in the order they were queued. Like x/net's, the scheduler
// only sees what handlers have queued: x/net's handler writes block until their frame is written,
// so a stream that has not queued its next piece yet cannot hold back a less urgent one.
//
// Defaults follow x/net: until the client has sent a priority signal on the connection, a stream
// without one is u=3 incremental (round robin, the historical behaviour); afterwards u=3 not
// incremental (RFC 9218's default). Pushed streams start with the same default.

import (
	"math"
	"reflect"
	"sync"

	"golang.org/x/net/http2"

	"github.com/wirelab/wirelab/engine/internal/priority"
)

// h2Queue is one stream's frames and its place in its urgency ring.
type h2Queue struct {
	id         uint32
	prio       priority.Priority
	fromUpdate bool // set by a PRIORITY_UPDATE: the request's header no longer applies
	frames     []http2.FrameWriteRequest
	prev, next *h2Queue
}

// consume pops up to n flow-controlled bytes of the first frame (x/net's writeQueue.consume).
func (q *h2Queue) consume(n int32) (http2.FrameWriteRequest, bool) {
	if len(q.frames) == 0 {
		return http2.FrameWriteRequest{}, false
	}
	consumed, rest, parts := q.frames[0].Consume(n)
	switch parts {
	case 0:
		return http2.FrameWriteRequest{}, false
	case 1:
		q.frames[0] = http2.FrameWriteRequest{}
		q.frames = q.frames[1:]
	case 2:
		q.frames[0] = rest
	}
	return consumed, true
}

// maxPendingUpdates bounds the PRIORITY_UPDATEs kept for streams not opened yet.
const maxPendingUpdates = 256

type h2Scheduler struct {
	mu      sync.Mutex
	control []http2.FrameWriteRequest
	heads   [priority.MaxUrgency + 1][2]*h2Queue // [urgency][incremental]
	streams map[uint32]*h2Queue
	pending map[uint32]priority.Priority // PRIORITY_UPDATEs that arrived before their stream
	aware   bool                         // the client has sent a priority signal
	// prioritizeIncremental alternates incremental and non-incremental streams of one urgency.
	prioritizeIncremental bool
}

var _ http2.WriteScheduler = (*h2Scheduler)(nil)

func newH2Scheduler() *h2Scheduler {
	return &h2Scheduler{streams: map[uint32]*h2Queue{}, pending: map[uint32]priority.Priority{}}
}

func (ws *h2Scheduler) defaultLocked() priority.Priority {
	return priority.Priority{Urgency: priority.DefaultUrgency, Incremental: !ws.aware}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (ws *h2Scheduler) linkLocked(q *h2Queue) {
	u, i := q.prio.Urgency, b2i(q.prio.Incremental)
	head := ws.heads[u][i]
	if head == nil {
		ws.heads[u][i] = q
		q.next, q.prev = q, q
		return
	}
	// Insert before head: the end of the ring.
	q.prev, q.next = head.prev, head
	q.prev.next = q
	q.next.prev = q
}

func (ws *h2Scheduler) unlinkLocked(q *h2Queue) {
	u, i := q.prio.Urgency, b2i(q.prio.Incremental)
	if q.next == q {
		ws.heads[u][i] = nil
	} else {
		q.prev.next = q.next
		q.next.prev = q.prev
		if ws.heads[u][i] == q {
			ws.heads[u][i] = q.next
		}
	}
	q.next, q.prev = nil, nil
}

// OpenStream implements http2.WriteScheduler.
func (ws *h2Scheduler) OpenStream(id uint32, _ http2.OpenStreamOptions) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.streams[id] != nil {
		panic("h2Scheduler: stream opened twice")
	}
	q := &h2Queue{id: id, prio: ws.defaultLocked()}
	if p, ok := ws.pending[id]; ok {
		delete(ws.pending, id)
		q.prio, q.fromUpdate = p, true
	}
	ws.streams[id] = q
	ws.linkLocked(q)
}

// CloseStream implements http2.WriteScheduler: the stream's queued frames are discarded.
func (ws *h2Scheduler) CloseStream(id uint32) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	q := ws.streams[id]
	if q == nil {
		return
	}
	ws.unlinkLocked(q)
	delete(ws.streams, id)
}

// AdjustStream implements http2.WriteScheduler. x/net calls it with RFC 7540 priorities only
// (PRIORITY frames, HEADERS priority fields): they are ignored.
func (ws *h2Scheduler) AdjustStream(uint32, http2.PriorityParam) {}

// setLocked moves a stream to priority p (or remembers p until the stream opens).
func (ws *h2Scheduler) setLocked(id uint32, p priority.Priority, fromUpdate bool) {
	q := ws.streams[id]
	if q == nil {
		if fromUpdate && len(ws.pending) < maxPendingUpdates {
			ws.pending[id] = p
		}
		return
	}
	if !fromUpdate && q.fromUpdate {
		return // a PRIORITY_UPDATE came after the request's header: it wins
	}
	q.fromUpdate = q.fromUpdate || fromUpdate
	if q.prio == p {
		return
	}
	ws.unlinkLocked(q)
	q.prio = p
	ws.linkLocked(q)
}

// requestPriority applies the priority header of the request on stream id (present: the
// request carried one). The handler calls it before writing anything.
func (ws *h2Scheduler) requestPriority(id uint32, value string, present bool) priority.Priority {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if !present {
		if q := ws.streams[id]; q != nil {
			return q.prio
		}
		return ws.defaultLocked()
	}
	ws.aware = true
	p, _ := priority.Parse(value) // unparsable: the default, as x/net does
	ws.setLocked(id, p, false)
	if q := ws.streams[id]; q != nil {
		return q.prio
	}
	return p
}

// priorityUpdate applies a PRIORITY_UPDATE frame's field value to a stream. A value that does not
// parse is ignored (x/net answers it with a stream error; the observer cannot).
func (ws *h2Scheduler) priorityUpdate(id uint32, value string) {
	p, ok := priority.Parse(value)
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.aware = true
	if ok {
		ws.setLocked(id, p, true)
	}
}

// streamField locates FrameWriteRequest's unexported stream pointer, which is nil exactly for
// control frames (x/net's isControl). TestH2SchedulerControlFrames fails if x/net changes it.
var streamField = func() int {
	f, ok := reflect.TypeFor[http2.FrameWriteRequest]().FieldByName("stream")
	if !ok || f.Type.Kind() != reflect.Pointer || len(f.Index) != 1 {
		return -1
	}
	return f.Index[0]
}()

// isControl reports whether wr is not a stream's frame: SETTINGS, PING, GOAWAY, WINDOW_UPDATE of
// the connection, and every RST_STREAM. Without the field (a changed x/net) it falls back to
// "stream 0 or not an open stream", which delays a RST_STREAM of an open stream behind its data.
func (ws *h2Scheduler) isControlLocked(wr http2.FrameWriteRequest) bool {
	if streamField >= 0 {
		return reflect.ValueOf(&wr).Elem().Field(streamField).IsNil()
	}
	return wr.StreamID() == 0 || ws.streams[wr.StreamID()] == nil
}

// Push implements http2.WriteScheduler.
func (ws *h2Scheduler) Push(wr http2.FrameWriteRequest) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.isControlLocked(wr) {
		ws.control = append(ws.control, wr)
		return
	}
	q := ws.streams[wr.StreamID()]
	if q == nil {
		if wr.DataSize() > 0 {
			panic("h2Scheduler: DATA on a stream that is not open")
		}
		ws.control = append(ws.control, wr)
		return
	}
	q.frames = append(q.frames, wr)
}

// Pop implements http2.WriteScheduler.
func (ws *h2Scheduler) Pop() (http2.FrameWriteRequest, bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if len(ws.control) > 0 {
		wr := ws.control[0]
		ws.control[0] = http2.FrameWriteRequest{}
		ws.control = ws.control[1:]
		return wr, true
	}
	ws.prioritizeIncremental = !ws.prioritizeIncremental
	for u := range ws.heads {
		for k := range 2 {
			i := k
			if ws.prioritizeIncremental {
				i = 1 - k
			}
			head := ws.heads[u][i]
			if head == nil {
				continue
			}
			q := head
			for {
				if wr, ok := q.consume(math.MaxInt32); ok {
					if i == 1 {
						ws.heads[u][i] = q.next // round robin among incremental streams
					} else {
						ws.heads[u][i] = q // finish this one first
					}
					return wr, true
				}
				q = q.next
				if q == head {
					break
				}
			}
		}
	}
	return http2.FrameWriteRequest{}, false
}
