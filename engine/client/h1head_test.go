package client

import (
	"bufio"
	"bytes"
	"net/http"
	"testing"
)

var h1HeadSeeds = []string{
	"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Wed, 25 Nov 2026 15:00:00 GMT\r\nContent-Type: image/png\r\nContent-Length: 2000\r\nLast-Modified: Wed, 25 Nov 2026 14:00:00 GMT\r\nConnection: keep-alive\r\nETag: \"1-7d0\"\r\nAccept-Ranges: bytes\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/html; charset=utf-8\r\n\r\nhello",
	"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nConnection: close\r\n\r\n",
	"HTTP/1.1 200\r\nContent-Length: 3\r\nConnection: Keep-Alive, Close\r\n\r\nabc",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
	"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc",
	"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi",
	"HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: +3\r\n\r\nabc",
	"HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nBad Name: x\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Type:\timage/png \r\nContent-Length:  0 \r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n",
	"HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n",
}

// TestH1HeadLean: the heads the lean path takes (nginx's and the built-in server's kind) and
// the ones it leaves to net/http.
func TestH1HeadLean(t *testing.T) {
	for i, lean := range []bool{true, true, true, true, false, false, false, false, false, false, false, false, false, true, false, false} {
		h, n, ok := parseH1Head([]byte(h1HeadSeeds[i]))
		if ok != lean {
			t.Errorf("%q: lean %v, want %v", h1HeadSeeds[i], ok, lean)
			continue
		}
		if ok {
			checkH1HeadAgrees(t, []byte(h1HeadSeeds[i]), h, n)
		}
	}
	h, _, _ := parseH1Head([]byte(h1HeadSeeds[0]))
	if h != (h1Head{status: 200, contentType: "image/png", contentLength: 2000}) {
		t.Errorf("nginx's head: %+v", h)
	}
	if h, _, _ := parseH1Head([]byte(h1HeadSeeds[3])); !h.close {
		t.Errorf("Connection: Keep-Alive, Close: not close")
	}
}

// FuzzH1Head: whatever head the lean path accepts, net/http reads the same way — status, content
// type, content length, whether the connection closes, where the body starts.
func FuzzH1Head(f *testing.F) {
	for _, s := range h1HeadSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if h, n, ok := parseH1Head(b); ok {
			checkH1HeadAgrees(t, b, h, n)
		}
	})
}

func checkH1HeadAgrees(t *testing.T, b []byte, h h1Head, n int) {
	t.Helper()
	br := bufio.NewReaderSize(bytes.NewReader(b), len(b)+16)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("%q: lean path accepted %+v, net/http: %v", b, h, err)
	}
	if resp.StatusCode != h.status || resp.Header.Get("Content-Type") != h.contentType || resp.ContentLength != h.contentLength || resp.Close != h.close {
		t.Fatalf("%q: lean %+v, net/http status %d type %q length %d close %v", b, h, resp.StatusCode, resp.Header.Get("Content-Type"), resp.ContentLength, resp.Close)
	}
	if rest := len(b) - br.Buffered(); rest != n {
		t.Fatalf("%q: lean head length %d, net/http read %d", b, n, rest)
	}
}
