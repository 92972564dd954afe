// Package altsvc parses the Alt-Svc header field (RFC 7838): the probe reads announcements with it,
// and the loader follows them (client.h3 = alt-svc).
package altsvc

import (
	"net/url"
	"strconv"
	"strings"
)

// AltService is one alternative of an Alt-Svc header field (RFC 7838 §3).
type AltService struct {
	ProtocolID string // e.g. h3 (percent-decoded)
	Host       string // "" = the same host
	Port       int
}

// Parse parses an Alt-Svc field value; "clear" and malformed entries give nothing.
func Parse(value string) []AltService {
	var out []AltService
	for _, entry := range splitOutsideQuotes(value, ',') {
		params := splitOutsideQuotes(entry, ';')
		if len(params) == 0 {
			continue
		}
		id, authority, ok := strings.Cut(strings.TrimSpace(params[0]), "=")
		if !ok {
			continue // "clear", or garbage
		}
		id, err := url.PathUnescape(strings.TrimSpace(id))
		if err != nil || id == "" {
			continue
		}
		authority = strings.TrimSpace(authority)
		if len(authority) < 2 || authority[0] != '"' || authority[len(authority)-1] != '"' {
			continue
		}
		authority = authority[1 : len(authority)-1]
		i := strings.LastIndexByte(authority, ':')
		if i < 0 {
			continue
		}
		port, err := strconv.Atoi(authority[i+1:])
		if err != nil || port < 1 || port > 65535 {
			continue
		}
		host := strings.Trim(authority[:i], "[]")
		out = append(out, AltService{ProtocolID: id, Host: strings.ToLower(host), Port: port})
	}
	return out
}

// splitOutsideQuotes splits s at sep except inside double quotes.
func splitOutsideQuotes(s string, sep byte) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && quoted:
			i++
		case s[i] == '"':
			quoted = !quoted
		case s[i] == sep && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
