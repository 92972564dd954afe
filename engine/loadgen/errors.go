package loadgen

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/quic-go/quic-go"

	"github.com/wirelab/wirelab/engine/client"
)

// Kind is the kind of an error, as the interval records count them.
type Kind int

// The error kinds, in the order of Errors' fields.
const (
	ConnectRefused Kind = iota // the server refused the connection (nothing listens)
	Reset                      // the connection was reset or closed under a request (RST, EOF, h2 RST_STREAM/GOAWAY, QUIC close)
	Timeout                    // the page did not complete within client.timeout_s; an I/O timeout
	TLS                        // the TLS (or QUIC) handshake failed: certificate, alert, ALPN
	HTTPStatus                 // a response other than 200
	Other                      // anything else
	numKinds
)

// KindNames are the kinds as the records name them.
var KindNames = [numKinds]string{"connect_refused", "reset", "timeout", "tls", "http_status", "other"}

func (k Kind) String() string { return KindNames[k] }

// Classify is the kind of a request's failure: err (nil for a complete response) and status (0
// without a response).
func Classify(err error, status int) Kind {
	if status != 0 && status != 200 {
		return HTTPStatus
	}
	if err == nil {
		return Other // not an error; callers classify failures only
	}
	var ne net.Error
	var appErr *quic.ApplicationError
	var tErr *quic.TransportError
	var streamErr *quic.StreamError
	var statelessReset *quic.StatelessResetError
	var idle *quic.IdleTimeoutError
	var hsTimeout *quic.HandshakeTimeoutError
	var alert tls.AlertError
	var recHdr tls.RecordHeaderError
	var verify *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.Is(err, client.ErrTimeout), errors.Is(err, context.DeadlineExceeded), errors.As(err, &idle), errors.As(err, &hsTimeout):
		return Timeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return ConnectRefused
	case errors.As(err, &alert), errors.As(err, &recHdr), errors.As(err, &verify), errors.As(err, &unknownAuth),
		errors.As(err, &hostname), errors.As(err, &invalid), strings.Contains(err.Error(), "tls handshake"),
		strings.Contains(err.Error(), "quic handshake"), strings.Contains(err.Error(), "did not negotiate ALPN"):
		return TLS
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed), errors.As(err, &appErr), errors.As(err, &tErr),
		errors.As(err, &streamErr), errors.As(err, &statelessReset),
		strings.Contains(err.Error(), "GOAWAY"), strings.Contains(err.Error(), "stream reset"),
		strings.Contains(err.Error(), "session closed"):
		return Reset
	case errors.As(err, &ne) && ne.Timeout():
		return Timeout
	}
	return Other
}

// Errors counts errors by kind.
type Errors struct {
	ConnectRefused int64 `json:"connect_refused"`
	Reset          int64 `json:"reset"`
	Timeout        int64 `json:"timeout"`
	TLS            int64 `json:"tls"`
	HTTPStatus     int64 `json:"http_status"`
	Other          int64 `json:"other"`
}

func errorsOf(c *[numKinds]int64) Errors {
	return Errors{c[ConnectRefused], c[Reset], c[Timeout], c[TLS], c[HTTPStatus], c[Other]}
}

// Total is the number of errors of every kind.
func (e Errors) Total() int64 {
	return e.ConnectRefused + e.Reset + e.Timeout + e.TLS + e.HTTPStatus + e.Other
}

// counts is e as the recorder's array (errorsOf's inverse).
func (e Errors) counts() [numKinds]int64 {
	var c [numKinds]int64
	c[ConnectRefused], c[Reset], c[Timeout], c[TLS], c[HTTPStatus], c[Other] = e.ConnectRefused, e.Reset, e.Timeout, e.TLS, e.HTTPStatus, e.Other
	return c
}
