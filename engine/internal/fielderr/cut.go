package fielderr

import (
	"fmt"
	"unicode/utf8"
)

// MaxValueLen is how many bytes of a value a message echoes; a longer value is cut and its length
// given, so a 10 MB page name or a 130 kB unknown word stays one readable line.
const MaxValueLen = 60

// Cut returns s, or its first MaxValueLen bytes (at a character boundary) followed by "…" and
// the full length.
func Cut(s string) string {
	if len(s) <= MaxValueLen {
		return s
	}
	n := MaxValueLen
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:n], len(s))
}

// Quote quotes s as messages show strings (Go syntax), cut to MaxValueLen bytes.
func Quote(s string) string {
	if len(s) <= MaxValueLen {
		return fmt.Sprintf("%q", s)
	}
	n := MaxValueLen
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:n], len(s))
}
