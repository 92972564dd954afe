package client

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2HeaderBlock decodes an h2 connection's response header blocks (HEADERS and the CONTINUATION
// frames after it) on the read loop, keeping only the fields the loader reads. It replaces x/net's
// Framer.ReadMetaHeaders, whose MetaHeadersFrame costs a load generator about ten allocations per
// response (the frame, the closures and captured variables of its emit function, the field slice
// as it grows): half of an h2 page's allocations. The checks are x/net's (RFC 9113 §8.2, §8.3):
// a field value or name that is not allowed, a pseudo-header after a regular one, any pseudo-header
// but one :status — a stream error, or a connection error if a CONTINUATION frame follows it; a
// header list above MaxHeaderListSize — truncated (the stream is reset), a connection error if a
// fragment goes on past twice the budget; an HPACK error — a connection error. Every block is decoded, also one for a
// stream already closed, so that the HPACK context stays in step.
type h2HeaderBlock struct {
	dec     *hpack.Decoder
	max     uint32 // the header list size announced (SETTINGS_MAX_HEADER_LIST_SIZE)
	keepAll bool   // the fields not read here are kept in rest (a load with an HTTP cache)

	// The block being decoded (active between its HEADERS frame and END_HEADERS).
	active      bool
	streamID    uint32
	endStream   bool
	remain      uint32 // header list bytes left before the block is truncated
	truncated   bool
	invalid     error
	sawRegular  bool
	status      string
	statusCount int
	contentType string
	contentLen  string
	altSvc      string
	rest        []hpack.HeaderField // with keepAll
}

func newH2HeaderBlock(max uint32, keepAll bool) *h2HeaderBlock {
	b := &h2HeaderBlock{dec: hpack.NewDecoder(4096, nil), max: max, keepAll: keepAll}
	b.dec.SetMaxStringLength(int(max))
	b.dec.SetEmitFunc(b.emit)
	return b
}

// begin starts the block of a HEADERS frame.
func (b *h2HeaderBlock) begin(f *http2.HeadersFrame) {
	*b = h2HeaderBlock{dec: b.dec, max: b.max, keepAll: b.keepAll, rest: b.rest[:0],
		active: true, streamID: f.StreamID, endStream: f.StreamEnded(), remain: b.max}
	b.dec.SetEmitEnabled(true)
}

// fragment decodes one fragment of the block; done reports END_HEADERS. An error is a connection
// error.
func (b *h2HeaderBlock) fragment(frag []byte, endHeaders bool) (done bool, err error) {
	// x/net's limits (the CONTINUATION flood, CVE-2023-45288): a fragment of more than twice the
	// bytes still allowed (the header list's and the trailers') is not decoded; after a
	// truncation, none is; nor any after an invalid field, whose fields no longer count against
	// the budget.
	if b.invalid != nil || int64(len(frag)) > 2*(int64(b.remain)+int64(b.trailerRemain())) {
		b.active = false
		return true, http2.ConnectionError(http2.ErrCodeProtocol)
	}
	if _, err := b.dec.Write(frag); err != nil {
		b.active = false
		return true, http2.ConnectionError(http2.ErrCodeCompression)
	}
	if !endHeaders {
		return false, nil
	}
	b.active = false
	if err := b.dec.Close(); err != nil {
		return true, http2.ConnectionError(http2.ErrCodeCompression)
	}
	return true, nil
}

// trailerRemain is x/net's budget for trailers, none after a truncation.
func (b *h2HeaderBlock) trailerRemain() uint32 {
	if b.truncated {
		return 0
	}
	return b.max
}

// streamError is the block's stream error, nil if its fields are allowed.
func (b *h2HeaderBlock) streamError() error {
	if b.invalid != nil {
		return http2.StreamError{StreamID: b.streamID, Code: http2.ErrCodeProtocol, Cause: b.invalid}
	}
	return nil
}

func (b *h2HeaderBlock) emit(hf hpack.HeaderField) {
	if b.invalid != nil || b.truncated {
		return
	}
	if !httpguts.ValidHeaderFieldValue(hf.Value) {
		b.fail(fmt.Errorf("h2: invalid value of header field %q", hf.Name))
		return
	}
	if strings.HasPrefix(hf.Name, ":") {
		switch {
		case b.sawRegular:
			b.fail(errors.New("h2: pseudo header field after regular header field"))
		case hf.Name != ":status":
			b.fail(fmt.Errorf("h2: pseudo header field %q in a response", hf.Name))
		case b.statusCount > 0:
			b.fail(errors.New("h2: duplicate :status"))
		}
		if b.invalid != nil {
			return
		}
	} else {
		b.sawRegular = true
		if !validWireFieldName(hf.Name) {
			b.fail(fmt.Errorf("h2: invalid header field name %q", hf.Name))
			return
		}
	}
	if size := hf.Size(); size > b.remain {
		b.truncated, b.remain = true, 0
		b.dec.SetEmitEnabled(false)
		return
	} else {
		b.remain -= size
	}
	switch hf.Name {
	case ":status":
		b.status, b.statusCount = hf.Value, b.statusCount+1
	case "content-type":
		b.contentType = hf.Value
	case "content-length":
		b.contentLen = hf.Value
	case "alt-svc":
		b.altSvc = hf.Value
	default:
		if b.keepAll {
			b.rest = append(b.rest, hf)
		}
	}
}

func (b *h2HeaderBlock) fail(err error) {
	b.invalid = err
	b.dec.SetEmitEnabled(false) // the rest of the block only keeps the HPACK context in step
}

// statusCode is the block's :status, ok false when it is missing or not three digits (100–999;
// no sign, no spaces).
func (b *h2HeaderBlock) statusCode() (int, bool) {
	if len(b.status) != 3 || b.status[0] == '0' || !allDigits(b.status) {
		return 0, false
	}
	status, _ := strconv.Atoi(b.status)
	return status, true
}

// contentLength is the block's content-length, -1 when absent or not digits alone (as
// parseH1Head: no sign, no spaces, at most 18 digits).
func (b *h2HeaderBlock) contentLength() int64 {
	if len(b.contentLen) == 0 || len(b.contentLen) > 18 || !allDigits(b.contentLen) {
		return -1
	}
	n, _ := strconv.ParseInt(b.contentLen, 10, 64)
	return n
}

func allDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// validWireFieldName is x/net's validWireHeaderFieldName: a token in lower case.
func validWireFieldName(v string) bool {
	if len(v) == 0 {
		return false
	}
	for _, r := range v {
		if !httpguts.IsTokenRune(r) || 'A' <= r && r <= 'Z' {
			return false
		}
	}
	return true
}
