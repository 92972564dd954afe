// Package priority is the RFC 9218 priority signal as wirelab's client sends and its server reads
// it: the urgency (u, 0 highest … 7 lowest, default 3) and incremental (i, default false)
// parameters of the Priority header field and of PRIORITY_UPDATE frames, a Structured Fields
// dictionary (RFC 8941).
package priority

import (
	"strconv"
	"strings"
)

// Urgency limits and default (RFC 9218 §4.1).
const (
	MaxUrgency     = 7
	DefaultUrgency = 3
)

// Priority is an RFC 9218 priority.
type Priority struct {
	Urgency     uint8 // 0 (highest) … 7 (lowest)
	Incremental bool  // the response is useful piece by piece: share bandwidth with its peers
}

// Default is RFC 9218's priority of a request that signals none: u=3, not incremental.
var Default = Priority{Urgency: DefaultUrgency}

// String is the field value: "u=N" and ", i" when incremental (defaults are written out for u).
func (p Priority) String() string {
	s := "u=" + strconv.Itoa(int(min(p.Urgency, MaxUrgency)))
	if p.Incremental {
		s += ", i"
	}
	return s
}

// Parse reads a Priority field value (or PRIORITY_UPDATE's Priority Field Value). Parameters it
// does not know are ignored, as are u values outside 0–7 and non-boolean i values (RFC 9218 §4);
// absent parameters keep their defaults. ok is false when the value is not a valid Structured
// Fields dictionary: p is then Default.
func Parse(value string) (p Priority, ok bool) {
	p = Default
	members, ok := splitMembers(value)
	if !ok {
		return Default, false
	}
	for _, m := range members {
		m, _, _ = strings.Cut(m, ";") // member parameters are not used
		key, item, hasValue := strings.Cut(strings.TrimSpace(m), "=")
		if !validKey(key) || hasValue && item == "" {
			return Default, false
		}
		switch key {
		case "u":
			if !hasValue {
				continue // a bare key is Boolean true: not an Integer, ignored
			}
			n, err := strconv.Atoi(item)
			if err != nil {
				if !validItem(item) {
					return Default, false
				}
				continue
			}
			if n >= 0 && n <= MaxUrgency {
				p.Urgency = uint8(n)
			}
		case "i":
			switch {
			case !hasValue || item == "?1":
				p.Incremental = true
			case item == "?0":
				p.Incremental = false
			case !validItem(item):
				return Default, false
			}
		default:
			if hasValue && !validItem(item) {
				return Default, false
			}
		}
	}
	return p, true
}

// splitMembers splits a dictionary at the commas outside strings.
func splitMembers(s string) ([]string, bool) {
	var out []string
	inString, start := false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case !inString && c == ',':
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if inString {
		return nil, false
	}
	out = append(out, s[start:])
	if len(out) == 1 && strings.TrimSpace(out[0]) == "" {
		return nil, true // an empty field: no members
	}
	for _, m := range out {
		if strings.TrimSpace(m) == "" {
			return nil, false // an empty member ("u=1,,i")
		}
	}
	return out, true
}

// validKey: a Structured Fields key (lcalpha or "*", then lcalpha, digits, "_-.*").
func validKey(k string) bool {
	if k == "" || !(k[0] >= 'a' && k[0] <= 'z' || k[0] == '*') {
		return false
	}
	for i := 1; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("_-.*", c) >= 0) {
			return false
		}
	}
	return true
}

// validItem accepts the bare items a member may carry that are not used here: integers,
// decimals, strings, tokens, byte sequences, booleans (a loose check: no spaces or controls
// outside strings).
func validItem(v string) bool {
	if v == "" {
		return false
	}
	if v[0] == '"' {
		return len(v) >= 2 && v[len(v)-1] == '"'
	}
	for i := 0; i < len(v); i++ {
		if v[i] <= ' ' || v[i] >= 0x7f {
			return false
		}
	}
	return true
}
