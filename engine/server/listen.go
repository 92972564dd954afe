package server

import (
	"bufio"
	"errors"
	"net"
	"sync"
	"time"
)

// chanListener hands connections accepted elsewhere to an http.Server.
type chanListener struct {
	addr   net.Addr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// deliver passes c to Accept; false if the listener is closed.
func (l *chanListener) deliver(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.closed:
		return false
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// prefaceTimeout bounds how long a new cleartext connection may take to show whether it speaks
// HTTP/1.1 or HTTP/2.
const prefaceTimeout = 30 * time.Second

// sniffPreface reads from c until its first bytes either match the HTTP/2 client preface in full
// (true) or differ from it (false). The bytes read stay in the returned reader.
func sniffPreface(c net.Conn) (bool, *bufio.Reader, error) {
	br := bufio.NewReaderSize(c, 4096)
	if err := c.SetReadDeadline(time.Now().Add(prefaceTimeout)); err != nil {
		return false, nil, err
	}
	defer c.SetReadDeadline(time.Time{})
	for n := 1; n <= len(clientPreface); n++ {
		b, err := br.Peek(n)
		if len(b) == n && b[n-1] != clientPreface[n-1] {
			return false, br, nil
		}
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return false, br, nil
			}
			return false, br, err
		}
		// Peek(n) may have buffered more: check it all at once.
		if buf := br.Buffered(); buf > n {
			m := min(buf, len(clientPreface))
			more, _ := br.Peek(m)
			for i := n; i < m; i++ {
				if more[i] != clientPreface[i] {
					return false, br, nil
				}
			}
			n = m - 1
			if m == len(clientPreface) {
				return true, br, nil
			}
		}
	}
	return true, br, nil
}

// bufferedConn reads first what a bufio.Reader already took from the connection.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
