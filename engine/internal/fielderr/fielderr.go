// Package fielderr is the engine's error for bad input: it names the field (a path such as
// objects[3].size or server.max_concurrent_streams), the value found and what is allowed, and
// prints as one line. Commands map it to exit status 2.
package fielderr

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Error is bad input in one field.
type Error struct {
	Field   string // path of the field, e.g. "objects[3].size"
	Value   string // the offending value, formatted for humans (strings quoted); may be empty
	Allowed string // what is allowed instead
	// ValueShown says Value is shown as it is: it was cut already (QuotePath keeps a path's end).
	ValueShown bool
}

func (e *Error) Error() string {
	field := e.Field
	if len(field) > MaxField { // an unknown field's name is the user's text
		field = Cut(field)
	}
	if e.Value == "" {
		return fmt.Sprintf("%s: %s", field, e.Allowed)
	}
	v := e.Value
	if !e.ValueShown {
		v = shown(v)
	}
	return fmt.Sprintf("%s: got %s; %s", field, v, e.Allowed)
}

// MaxField is the longest field path shown whole (paths are short unless they hold user text).
const MaxField = 200

// shown cuts a formatted value that is too long, keeping a quoted one quoted.
func shown(v string) string {
	if len(v) <= MaxShown {
		return v
	}
	if s, err := strconv.Unquote(v); err == nil {
		return Quote(s)
	}
	return Cut(v)
}

// New builds an Error; strings values are quoted, nil means no value. allowed is a format.
// Values longer than MaxShown bytes are cut (Quote, Cut), so a 10 MB value makes a short line.
func New(field string, value any, allowed string, args ...any) *Error {
	v := ""
	switch x := value.(type) {
	case nil:
	case string:
		v = Quote(x)
	default:
		v = Cut(fmt.Sprint(x))
	}
	return &Error{Field: field, Value: v, Allowed: fmt.Sprintf(allowed, args...)}
}

// MaxShown is the longest value an error echoes whole; longer ones show their first ShownPrefix
// bytes (whole characters) and their length.
const (
	MaxShown    = 64
	ShownPrefix = 40
)

// Quote is s quoted for a message, cut to a readable length: "abc…" (131072 bytes).
func Quote(s string) string {
	if len(s) <= MaxShown {
		return strconv.Quote(s)
	}
	return strconv.Quote(prefix(s)) + fmt.Sprintf("… (%d bytes)", len(s))
}

// MaxPathShown is the longest file path shown whole; a longer one shows its last PathSuffix
// bytes — where its file's name is — after "…".
const (
	MaxPathShown = 256
	PathSuffix   = 120
)

// QuotePath is a file path quoted for a message: whole up to MaxPathShown bytes, else "…" and its
// last PathSuffix bytes (whole characters) with its length.
func QuotePath(p string) string {
	if len(p) <= MaxPathShown {
		return strconv.Quote(p)
	}
	n := len(p) - PathSuffix
	for n < len(p) && !utf8.RuneStart(p[n]) {
		n++
	}
	return strconv.Quote("…"+p[n:]) + fmt.Sprintf(" (%d bytes)", len(p))
}

// Path is an Error whose value is a file path (QuotePath).
func Path(field, path string, allowed string, args ...any) *Error {
	return &Error{Field: field, Value: QuotePath(path), Allowed: fmt.Sprintf(allowed, args...), ValueShown: true}
}

// Cut is s unquoted, cut to a readable length like Quote.
func Cut(s string) string {
	if len(s) <= MaxShown {
		return s
	}
	return prefix(s) + fmt.Sprintf("… (%d bytes)", len(s))
}

// prefix is s's first ShownPrefix bytes, not splitting a UTF-8 character.
func prefix(s string) string {
	n := ShownPrefix
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// As reports whether err is (or wraps) an Error.
func As(err error) (*Error, bool) {
	var fe *Error
	ok := errors.As(err, &fe)
	return fe, ok
}

// Prefix returns err with its field path prefixed (e.g. "page." + "objects[3].size"); other
// errors are returned unchanged.
func Prefix(prefix string, err error) error {
	if fe, ok := As(err); ok {
		c := *fe
		c.Field = prefix + c.Field
		return &c
	}
	return err
}
