package client

import (
	"io"
	"sync"
)

// Buffers a load generator's thousands of idle connections need not hold each (docs/loadtest.md:
// memory per VU). A connection's write buffer is only in use between a frame's (or request's)
// first byte and the flush that follows: pooledWriter takes one from a process-wide pool for that
// span and gives it back, so an idle connection holds none.

// writeBufSize is a pooled write buffer's size: a flush is due when this much is buffered (a
// page's HEADERS frames together stay well below it).
const writeBufSize = 16 << 10

var writeBufs = sync.Pool{New: func() any { b := make([]byte, 0, writeBufSize); return &b }}

// pooledWriter buffers writes to w in a buffer from writeBufs held from the first Write to the
// Flush that empties it. As bufio.Writer it writes the buffer out by itself once writeBufSize is
// buffered. Not safe for concurrent use (h2Conn holds its write lock).
type pooledWriter struct {
	w   io.Writer
	buf *[]byte // nil: none held
	err error   // the first write error: every later Write and Flush returns it
}

func (pw *pooledWriter) Write(p []byte) (int, error) { return pooledAppend(pw, p) }

func (pw *pooledWriter) WriteString(s string) (int, error) { return pooledAppend(pw, s) }

func pooledAppend[T string | []byte](pw *pooledWriter, p T) (int, error) {
	if pw.err != nil {
		return 0, pw.err
	}
	if pw.buf == nil {
		pw.buf = writeBufs.Get().(*[]byte)
	}
	*pw.buf = append(*pw.buf, p...)
	if len(*pw.buf) >= writeBufSize {
		if err := pw.Flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Buffered is the number of bytes written and not yet flushed.
func (pw *pooledWriter) Buffered() int {
	if pw.buf == nil {
		return 0
	}
	return len(*pw.buf)
}

// Flush writes the buffered bytes to w and gives the buffer back to the pool.
func (pw *pooledWriter) Flush() error {
	if pw.err != nil {
		return pw.err
	}
	if pw.buf == nil {
		return nil
	}
	b := pw.buf
	pw.buf = nil
	var err error
	if len(*b) > 0 {
		_, err = pw.w.Write(*b)
	}
	if cap(*b) <= 4*writeBufSize { // a rare huge write's buffer is left to the collector
		*b = (*b)[:0]
		writeBufs.Put(b)
	}
	if err != nil {
		pw.err = err
	}
	return err
}
