// Package suggest is the one "did you mean" rule of every engine error that names an unknown name (a
// profile key or preset, a spec field, an enum value, a metric). The control plane's twin is
// wirelab/_suggest.py; both are held to testdata/suggest_golden.json, and the rule is written down in
// docs/bad-input.md:
//
//  1. the case of ASCII letters does not count (BW → bw);
//  2. the candidate at the smallest optimal-string-alignment distance (insertions, deletions,
//     substitutions and swaps of two adjacent characters, one each), if that distance is at most
//     MaxDistance and smaller than the unknown name's length;
//  3. ties go to the candidate sharing the longest prefix with the name (h2s → h2, not h1s), then to
//     the earlier candidate;
//  4. a name longer than MaxName bytes gets no suggestion.
package suggest

import "strings"

// MaxDistance is the largest distance at which an unknown name is answered with a candidate.
const MaxDistance = 2

// MaxName is the longest name compared (bytes): an unknown name can be the user's whole value.
const MaxName = 64

// Closest returns the candidate the rule names for word, or "".
func Closest(word string, candidates []string) string {
	if len(word) > MaxName {
		return ""
	}
	runes := []rune(lowerASCII(word))
	best, bestDist, bestPrefix := "", MaxDistance+1, 0
	for _, c := range candidates {
		cr := []rune(lowerASCII(c))
		if diff := len(runes) - len(cr); diff > MaxDistance || -diff > MaxDistance {
			continue // the distance is at least the difference in length
		}
		d, p := distance(runes, cr), commonPrefix(runes, cr)
		if d <= MaxDistance && d < len([]rune(word)) && (d < bestDist || d == bestDist && p > bestPrefix) {
			best, bestDist, bestPrefix = c, d, p
		}
	}
	return best
}

// DidYouMean is "did you mean X? " for the candidate the rule names, or "".
func DidYouMean(word string, candidates []string) string {
	if c := Closest(word, candidates); c != "" {
		return "did you mean " + c + "? "
	}
	return ""
}

func lowerASCII(s string) string {
	return strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}, s)
}

// distance is the optimal string alignment distance of a and b (Levenshtein plus adjacent swaps).
func distance(a, b []rune) int {
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

func commonPrefix(a, b []rune) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
