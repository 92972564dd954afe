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

// maxSuggestDistance is the largest edit distance at which an unknown name is answered with
// "did you mean …?". Documented in docs/profile-grammar.md (the Python twin uses the same rule).
const maxSuggestDistance = 2

// closest returns the candidate nearest to s by optimal-string-alignment distance (Levenshtein
// plus adjacent transpositions), if that distance is at most maxSuggestDistance and smaller than
// len(s). Ties go to the earlier candidate.
func closest(s string, candidates []string) (string, bool) {
	best, bestDist := "", maxSuggestDistance+1
	for _, c := range candidates {
		if diff := len(s) - len(c); diff > maxSuggestDistance || -diff > maxSuggestDistance {
			continue // the distance is at least the difference in length
		}
		if d := osaDistance(s, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	if bestDist > maxSuggestDistance || bestDist >= len(s) {
		return "", false
	}
	return best, true
}

// osaDistance is the optimal string alignment distance between a and b, counted in bytes.
func osaDistance(a, b string) int {
	// Three rolling rows: i-2, i-1, i.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
