package profile

import (
	"strconv"
	"strings"
)

// Error is bad input in a profile, a resolved profile or a trace file. It prints as one line:
//
//	<field>: "<value>" <what is wrong>; <what is allowed>
//
// e.g. `rtt: "150" has no unit; use a number with us, ms or s (e.g. 150ms)`.
type Error struct {
	Field   string // the key as the user wrote it ("rtt"), "profile" for the string as a whole, or a JSON path ("up.delay_ns")
	Value   string // the offending value as written (quoted when printed)
	Problem string // what is wrong, e.g. "has no unit"
	Allowed string // what is allowed instead, e.g. "use a number with us, ms or s (e.g. 150ms)"
}

// maxQuotedValue bounds how much of a value an error message repeats.
const maxQuotedValue = 200

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Field)
	b.WriteString(": ")
	value := e.Value
	if len(value) > maxQuotedValue {
		value = value[:maxQuotedValue-3] + "..."
	}
	b.WriteString(strconv.Quote(value)) // quoting also keeps the message on one line
	b.WriteByte(' ')
	b.WriteString(e.Problem)
	if e.Allowed != "" {
		b.WriteString("; ")
		b.WriteString(e.Allowed)
	}
	return b.String()
}

// nameField returns word as an error's field when it looks like a name (ASCII letters, digits, _
// - and .), else fallback: a field is printed bare, so it must not carry spaces, colons or
// newlines.
func nameField(word, fallback string) string {
	if word == "" {
		return fallback
	}
	for i := 0; i < len(word); i++ {
		c := word[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fallback
		}
	}
	return word
}

func newError(field, value, problem, allowed string) *Error {
	return &Error{Field: field, Value: value, Problem: problem, Allowed: allowed}
}
