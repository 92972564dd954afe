package page

import (
	"mime"
	"strings"
)

// TypeFromMIME maps a media type to an object type (other when none fits).
func TypeFromMIME(ct string) Type {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(ct))
	}
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		return TypeHTML
	case mt == "text/css":
		return TypeCSS
	case mt == "text/javascript" || mt == "application/javascript" || mt == "application/x-javascript" || mt == "module":
		return TypeJS
	case strings.HasPrefix(mt, "image/"):
		return TypeImage
	case strings.HasPrefix(mt, "font/") || mt == "application/font-woff" || mt == "application/x-font-woff" || mt == "application/vnd.ms-fontobject":
		return TypeFont
	}
	return TypeOther
}

// DefaultContentType is the Content-Type given to an object of type t whose own is unknown.
func DefaultContentType(t Type) string {
	switch t {
	case TypeHTML:
		return "text/html; charset=utf-8"
	case TypeCSS:
		return "text/css"
	case TypeJS:
		return "text/javascript"
	case TypeImage:
		return "image/png"
	case TypeFont:
		return "font/woff2"
	}
	return "application/octet-stream"
}

// ValidContentType reports whether ct is acceptable as an object's content_type.
func ValidContentType(ct string) bool { return ctypeRE.MatchString(ct) }

// ValidDomain reports whether s is acceptable as an object's domain or group.
func ValidDomain(s string) bool { return domainRE.MatchString(s) }

// secondLevel are labels under which a country-code TLD sells names (example.co.uk).
var secondLevel = map[string]bool{"co": true, "com": true, "org": true, "net": true, "ac": true, "gov": true, "edu": true, "ne": true, "or": true}

// RegistrableDomain is a host's top-level-domain group for tld sharding: its last two labels, or
// three when the second-to-last is a common second-level label under a two-letter TLD (co.uk).
// A heuristic, not the Public Suffix List.
func RegistrableDomain(host string) string {
	labels := strings.Split(strings.TrimSuffix(strings.ToLower(host), "."), ".")
	n := 2
	if len(labels) >= 3 && len(labels[len(labels)-1]) == 2 && secondLevel[labels[len(labels)-2]] {
		n = 3
	}
	if len(labels) <= n {
		return strings.Join(labels, ".")
	}
	return strings.Join(labels[len(labels)-n:], ".")
}
