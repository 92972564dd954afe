package spdy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
)

// DefaultDataChunkSize is the largest DATA frame the Server and ClientConn send unless configured:
// mod_spdy's 4 kB.
const DefaultDataChunkSize = 4096

// maxStreamBuffer bounds the bytes an application may queue on one stream before its Write blocks.
const maxStreamBuffer = 64 << 10

// outStream is what a stream has queued for sending.
type outStream struct {
	buf         []byte
	fin         bool   // send FIN after buf
	finSent     bool   // FIN has been handed to the Conn
	onFinQueued func() // called (lock held) when the FIN is handed to the Conn
}

// session runs a Conn over a net.Conn: a reader goroutine feeds Receive, a writer goroutine writes
// DataToSend, and DATA is handed to the Conn chunk by chunk in priority order, never more than a
// few chunks ahead of the socket, so a newly urgent stream overtakes quickly. Everything on the Conn
// happens under mu.
type session struct {
	nc    net.Conn
	chunk int

	mu      sync.Mutex
	cond    *sync.Cond // broadcast on every change: data, credit, writes, close
	conn    *Conn
	sched   *PriorityScheduler
	out     map[uint32]*outStream
	wbuf    []byte // bytes taken from the Conn, not yet written
	queued  uint64 // bytes taken from the Conn so far
	written uint64 // bytes written to nc so far
	marks   []mark
	closing bool  // write what is queued, then close
	closed  bool  // nc is closed; nothing more happens
	err     error // why the session ended

	handle   func(events []Event) // called with mu held
	onClosed func()               // called once, without mu, when the session is over
	dataSent func(id uint32, n int)
	done     chan struct{}
}

// mark runs fn once the byte at offset at has been written to the transport, or earlier when
// the peer's reply on stream shows the request reached it (firePending).
type mark struct {
	at     uint64
	stream uint32
	fn     func()
}

func newSession(nc net.Conn, conn *Conn, chunk int) *session {
	if chunk <= 0 {
		chunk = DefaultDataChunkSize
	}
	s := &session{
		nc: nc, chunk: min(chunk, MaxFrameLength), conn: conn,
		sched: NewPriorityScheduler(), out: make(map[uint32]*outStream), done: make(chan struct{}),
	}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// run starts the reader and writer; it returns when both have stopped.
func (s *session) run() error {
	s.mu.Lock()
	s.flushLocked()
	s.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.readLoop() }()
	go func() { defer wg.Done(); s.writeLoop() }()
	wg.Wait()
	close(s.done)
	if s.onClosed != nil {
		s.onClosed()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if errors.Is(s.err, io.EOF) || errors.Is(s.err, net.ErrClosed) {
		return nil
	}
	return s.err
}

func (s *session) readLoop() {
	buf := make([]byte, 64<<10)
	for {
		n, rerr := s.nc.Read(buf)
		s.mu.Lock()
		if n > 0 && !s.closed && s.conn.Err() == nil {
			events, err := s.conn.Receive(buf[:n])
			s.handle(events)
			if err != nil {
				s.shutdownLocked(err)
			}
			s.flushLocked()
		}
		if rerr != nil {
			s.closeLocked(rerr)
		}
		stop := s.closed || s.closing
		s.mu.Unlock()
		if stop {
			return
		}
	}
}

func (s *session) writeLoop() {
	for {
		s.mu.Lock()
		for len(s.wbuf) == 0 && !s.closed && !s.closing {
			s.cond.Wait()
		}
		if len(s.wbuf) == 0 {
			if s.closing && !s.closed {
				s.closeLocked(s.err)
			}
			s.mu.Unlock()
			return
		}
		b := s.wbuf
		s.wbuf = nil
		s.mu.Unlock()

		n, err := s.nc.Write(b)

		s.mu.Lock()
		s.written += uint64(n)
		// Hooks run with the session locked (see StreamTrace), so that a reply handled by the
		// read loop can never be reported before the write that preceded it.
		for len(s.marks) > 0 && s.marks[0].at <= s.written {
			s.marks[0].fn()
			s.marks = s.marks[1:]
		}
		if err != nil {
			s.closeLocked(err)
		} else {
			s.flushLocked()
		}
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

// afterWrittenLocked runs fn (with the session locked) once everything queued so far for stream
// has been written to the transport.
func (s *session) afterWrittenLocked(stream uint32, fn func()) {
	s.drainLocked()
	if s.written >= s.queued {
		fn()
		return
	}
	s.marks = append(s.marks, mark{at: s.queued, stream: stream, fn: fn})
}

// firePendingLocked runs stream's pending write marks now: the peer replied on stream, so the
// request's bytes left us even if the write loop has not yet been told that its Write returned.
func (s *session) firePendingLocked(stream uint32) {
	kept := s.marks[:0]
	for _, m := range s.marks {
		if m.stream == stream {
			m.fn()
			continue
		}
		kept = append(kept, m)
	}
	s.marks = kept
}

// drainLocked moves the Conn's output to the write buffer.
func (s *session) drainLocked() {
	if b := s.conn.DataToSend(); len(b) > 0 {
		s.wbuf = append(s.wbuf, b...)
		s.queued += uint64(len(b))
		s.cond.Broadcast()
	}
}

// flushLocked hands DATA to the Conn in priority order while little is waiting for the socket,
// then moves everything to the write buffer.
// readBodyLocked is a body's Read (s.mu held): it waits until stream id's buffered body has bytes,
// the session closes or done says the body will get no more, then reads what there is into p and
// grants the peer that much window again. false: nothing to read (the caller says why).
func (s *session) readBodyLocked(id uint32, body *bytes.Buffer, p []byte, done func() bool) (int, bool) {
	for body.Len() == 0 && !done() && !s.closed {
		s.cond.Wait()
	}
	if body.Len() == 0 {
		return 0, false
	}
	n, _ := body.Read(p)
	s.conn.Consumed(id, n)
	s.flushLocked()
	return n, true
}

func (s *session) flushLocked() {
	if s.closed {
		return
	}
	s.drainLocked()
	for len(s.wbuf) < 4*s.chunk && s.conn.Err() == nil {
		id, ok := s.sched.Next(func(id uint32) bool {
			o := s.out[id]
			if len(o.buf) == 0 {
				return o.fin && !o.finSent
			}
			return s.conn.SendWindow(id) > 0
		})
		if !ok {
			break
		}
		o := s.out[id]
		n := min(len(o.buf), s.chunk, s.conn.SendWindow(id))
		fin := o.fin && n == len(o.buf)
		if err := s.conn.SendData(id, o.buf[:n], fin); err != nil {
			// The stream was reset or closed under us: drop what it had queued.
			s.dropLocked(id)
			continue
		}
		o.buf = o.buf[n:]
		if len(o.buf) == 0 {
			o.buf = nil
		}
		if s.dataSent != nil && n > 0 {
			s.dataSent(id, n)
		}
		if fin {
			o.finSent = true
			if o.onFinQueued != nil {
				o.onFinQueued()
			}
			s.dropLocked(id)
		}
		s.drainLocked()
	}
	s.drainLocked()
	s.cond.Broadcast()
}

// queueDataLocked appends p (copied) to stream id's output, waiting while the stream has
// maxStreamBuffer bytes queued. It fails if the stream or the session is gone.
func (s *session) queueDataLocked(id uint32, priority uint8, p []byte, gone func() error) (int, error) {
	written := 0
	for len(p) > 0 {
		if err := gone(); err != nil {
			return written, err
		}
		o := s.outLocked(id, priority)
		if len(o.buf) >= maxStreamBuffer {
			s.cond.Wait()
			continue
		}
		n := min(len(p), maxStreamBuffer-len(o.buf))
		o.buf = append(o.buf, p[:n]...)
		p = p[n:]
		written += n
		s.flushLocked()
	}
	return written, nil
}

// finishLocked queues FIN for stream id after whatever it has queued.
func (s *session) finishLocked(id uint32, priority uint8, onFinQueued func()) {
	o := s.outLocked(id, priority)
	o.fin = true
	o.onFinQueued = onFinQueued
	s.flushLocked()
}

func (s *session) outLocked(id uint32, priority uint8) *outStream {
	o, ok := s.out[id]
	if !ok {
		o = &outStream{}
		s.out[id] = o
		s.sched.Add(id, priority)
	}
	return o
}

func (s *session) dropLocked(id uint32) {
	delete(s.out, id)
	s.sched.Remove(id)
	s.cond.Broadcast()
}

// shutdownLocked ends the session after what is queued (e.g. GOAWAY) has been written.
func (s *session) shutdownLocked(err error) {
	if s.err == nil {
		s.err = err
	}
	s.drainLocked()
	s.closing = true
	s.cond.Broadcast()
}

// closeLocked closes the transport at once.
func (s *session) closeLocked(err error) {
	if s.closed {
		return
	}
	if s.err == nil {
		s.err = err
	}
	s.closed = true
	s.nc.Close()
	s.cond.Broadcast()
}
