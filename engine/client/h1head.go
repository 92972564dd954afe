package client

import (
	"bytes"
	"strconv"

	"golang.org/x/net/http/httpguts"
)

// h1Head is an HTTP/1.1 response head read by the lean path (parseH1Head).
type h1Head struct {
	status        int
	contentType   string
	contentLength int64
	close         bool // Connection: close
}

// maxLeanHeaderFields bounds the header fields the lean path reads; more go to net/http.
const maxLeanHeaderFields = 64

// parseH1Head parses the commonest response head — HTTP/1.1, a final status other than 204 and
// 304, a body of Content-Length bytes, no Transfer-Encoding — from the start of b, sans-IO, and
// returns its length. ok is false for any other head, a head not wholly in b, or anything
// net/http would refuse or read differently (a bad status line, a field name that is not a
// token, a control byte in a value, an obsolete line folding, several Content-Length fields):
// the caller then reads the head with net/http.ReadResponse, which decides. On the load
// generator's page loop it costs a fraction of net/http's, which builds a Header map, an
// http.Response and a body reader per response (FuzzH1Head checks that both agree).
func parseH1Head(b []byte) (h h1Head, n int, ok bool) {
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		return h, 0, false
	}
	n = end + 4
	head := b[:end+2] // every line ends with CRLF
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	// "HTTP/1.1 NNN[ reason]"
	if len(line) < 12 || string(line[:9]) != "HTTP/1.1 " || (len(line) > 12 && line[12] != ' ') {
		return h, 0, false
	}
	for _, d := range line[9:12] {
		if d < '0' || d > '9' {
			return h, 0, false
		}
		h.status = 10*h.status + int(d-'0')
	}
	if h.status < 200 || h.status == 204 || h.status == 304 || line[9] == '0' {
		return h, 0, false
	}
	for _, c := range line[12:] {
		if c < ' ' && c != '\t' || c == 0x7f {
			return h, 0, false
		}
	}
	h.contentLength = -1
	typeSeen := false
	for fields := 0; len(rest) > 0; fields++ {
		if fields == maxLeanHeaderFields {
			return h, 0, false
		}
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, value, found := bytes.Cut(line, []byte(":"))
		if !found || len(name) == 0 {
			return h, 0, false
		}
		for _, c := range name {
			if !httpguts.IsTokenRune(rune(c)) {
				return h, 0, false
			}
		}
		for _, c := range value {
			if c < ' ' && c != '\t' || c == 0x7f {
				return h, 0, false
			}
		}
		value = bytes.Trim(value, " \t")
		switch {
		case asciiEqualFold(name, "content-length"):
			if h.contentLength >= 0 || len(value) == 0 || len(value) > 18 {
				return h, 0, false
			}
			for _, d := range value {
				if d < '0' || d > '9' {
					return h, 0, false
				}
			}
			h.contentLength, _ = strconv.ParseInt(string(value), 10, 64)
		case asciiEqualFold(name, "transfer-encoding"):
			return h, 0, false
		case asciiEqualFold(name, "content-type"):
			if !typeSeen {
				h.contentType, typeSeen = contentTypeString(value), true
			}
		case asciiEqualFold(name, "connection"):
			// any Connection field naming the close token (the value is not kept: no allocation)
			h.close = h.close || httpguts.HeaderValuesContainsToken([]string{string(value)}, "close")
		}
	}
	if h.contentLength < 0 {
		return h, 0, false
	}
	return h, n, true
}

// asciiEqualFold reports whether b equals the lower-case ASCII string s, ignoring case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// contentTypeString is string(b), without allocating for the commonest values.
func contentTypeString(b []byte) string {
	switch string(b) {
	case "image/png":
		return "image/png"
	case "image/jpeg":
		return "image/jpeg"
	case "image/gif":
		return "image/gif"
	case "image/webp":
		return "image/webp"
	case "image/svg+xml":
		return "image/svg+xml"
	case "text/html":
		return "text/html"
	case "text/html; charset=utf-8":
		return "text/html; charset=utf-8"
	case "text/css":
		return "text/css"
	case "text/css; charset=utf-8":
		return "text/css; charset=utf-8"
	case "application/javascript":
		return "application/javascript"
	case "text/javascript":
		return "text/javascript"
	case "text/javascript; charset=utf-8":
		return "text/javascript; charset=utf-8"
	case "application/json":
		return "application/json"
	case "text/plain":
		return "text/plain"
	case "text/plain; charset=utf-8":
		return "text/plain; charset=utf-8"
	}
	return string(b)
}
