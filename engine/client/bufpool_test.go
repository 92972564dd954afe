package client

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

type countingWriter struct {
	bytes.Buffer
	writes int
	err    error
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.err != nil {
		return 0, w.err
	}
	return w.Buffer.Write(p)
}

// pooledWriter buffers like bufio.Writer — one write per Flush, a write of its own once
// writeBufSize is buffered — and holds a buffer only between the first write and the flush.
func TestPooledWriter(t *testing.T) {
	var w countingWriter
	pw := &pooledWriter{w: &w}
	if pw.buf != nil || pw.Buffered() != 0 || pw.Flush() != nil || w.writes != 0 {
		t.Fatal("a fresh writer holds a buffer or writes on Flush")
	}
	pw.WriteString("PRI * HTTP/2.0")
	pw.Write([]byte("\r\n"))
	if pw.Buffered() != 16 || w.writes != 0 || pw.buf == nil {
		t.Fatalf("buffered %d, %d writes", pw.Buffered(), w.writes)
	}
	if err := pw.Flush(); err != nil || w.writes != 1 || w.String() != "PRI * HTTP/2.0\r\n" || pw.buf != nil {
		t.Fatalf("flush: %v, %d writes of %q, buffer held %v", err, w.writes, w.String(), pw.buf != nil)
	}
	big := strings.Repeat("x", writeBufSize+10)
	if n, err := pw.WriteString(big); n != len(big) || err != nil || w.writes != 2 || pw.Buffered() != 0 {
		t.Fatalf("a write past the buffer's size: %d, %v; %d writes, %d buffered", n, err, w.writes, pw.Buffered())
	}
	w.err = errors.New("broken pipe")
	pw.WriteString("abc")
	if err := pw.Flush(); err == nil || pw.buf != nil {
		t.Fatal("a failed flush returned no error or kept its buffer")
	}
	if _, err := pw.Write([]byte("d")); err == nil || pw.buf != nil {
		t.Fatal("a write after a failed flush succeeded or took a buffer")
	}
}
