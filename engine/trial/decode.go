package trial

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
)

// object is one JSON object of the spec being decoded, with its dotted path ("" for the top,
// "server." for the server object). Getters record the first error in *err and return the
// default after it, so a decoder reads straight through and checks err once.
type object struct {
	path string
	m    map[string]any
	err  *error
}

func (o *object) fail(e error) {
	if *o.err == nil {
		*o.err = e
	}
}

func (o *object) field(name string) string { return o.path + name }

// known reports the first key (in sorted order) that is not one of names, with the closest name.
func (o *object) known(names ...string) {
	keys := make([]string, 0, len(o.m))
	for k := range o.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if contains(names, k) {
			continue
		}
		allowed := "unknown field; allowed: " + strings.Join(names, ", ")
		if s := closest(k, names); s != "" {
			allowed = "unknown field; did you mean " + s + "?"
		}
		o.fail(&fielderr.Error{Field: o.field(k), Allowed: allowed})
		return
	}
}

// typeName describes a decoded JSON value's type for messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// show formats a value as the error messages quote it.
func show(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case json.Number:
		return x.String()
	case bool:
		return fmt.Sprint(x)
	}
	return typeName(v)
}

func (o *object) wrongType(name string, v any, want string) {
	o.fail(&fielderr.Error{Field: o.field(name), Value: show(v), Allowed: "must be " + want})
}

func (o *object) str(name, def string) string {
	v, ok := o.m[name]
	if !ok {
		return def
	}
	s, ok := v.(string)
	if !ok {
		o.wrongType(name, v, "a string")
		return def
	}
	return s
}

func (o *object) enum(name, def string, allowed ...string) string {
	s := o.str(name, def)
	if !contains(allowed, s) {
		o.fail(fielderr.New(o.field(name), s, "must be %s", orList(allowed)))
		return def
	}
	return s
}

func (o *object) boolean(name string, def bool) bool {
	v, ok := o.m[name]
	if !ok {
		return def
	}
	b, ok := v.(bool)
	if !ok {
		o.wrongType(name, v, "true or false")
		return def
	}
	return b
}

// integer reads an integer in [lo, hi]. JSON numbers with a fraction or exponent that are whole
// (3.0, 1e3) are accepted, as JSON Schema's "integer" does.
func (o *object) integer(name string, def, lo, hi int64) int64 {
	return o.integerAs(name, def, lo, hi, fmt.Sprintf("an integer %d–%d", lo, hi))
}

// integerAs is integer with the allowed values described as want ("an integer 1–64, or 0 …").
func (o *object) integerAs(name string, def, lo, hi int64, want string) int64 {
	v, ok := o.m[name]
	if !ok {
		return def
	}
	n, isNum := v.(json.Number)
	if !isNum {
		o.wrongType(name, v, want)
		return def
	}
	i, err := n.Int64()
	if err != nil {
		f, ferr := n.Float64()
		if ferr != nil || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
			o.fail(fielderr.New(o.field(name), json.Number(n), "must be %s", want))
			return def
		}
		i = int64(f)
	}
	if i < lo || i > hi {
		o.fail(fielderr.New(o.field(name), i, "must be %s", want))
		return def
	}
	return i
}

// number reads a finite number ≥ lo (> lo when exclusive).
func (o *object) number(name string, def, lo float64, exclusive bool) float64 {
	v, ok := o.m[name]
	if !ok {
		return def
	}
	want := fmt.Sprintf("a number ≥ %g", lo)
	if exclusive {
		want = fmt.Sprintf("a number > %g", lo)
	}
	n, isNum := v.(json.Number)
	if !isNum {
		o.wrongType(name, v, want)
		return def
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || f < lo || (exclusive && f == lo) {
		o.fail(fielderr.New(o.field(name), n, "must be %s", want))
		return def
	}
	return f
}

// child returns the nested object name ({} when absent).
func (o *object) child(name string) *object {
	c := &object{path: o.field(name) + ".", m: map[string]any{}, err: o.err}
	v, ok := o.m[name]
	if !ok {
		return c
	}
	m, ok := v.(map[string]any)
	if !ok {
		o.wrongType(name, v, "an object")
		return c
	}
	c.m = m
	return c
}

// strings reads a list of strings.
func (o *object) strings(name string, def []string) []string {
	v, ok := o.m[name]
	if !ok {
		return append([]string(nil), def...)
	}
	arr, ok := v.([]any)
	if !ok {
		o.wrongType(name, v, "a list of strings")
		return def
	}
	out := make([]string, 0, len(arr))
	for i, el := range arr {
		s, ok := el.(string)
		if !ok {
			o.fail(&fielderr.Error{Field: fmt.Sprintf("%s[%d]", o.field(name), i), Value: show(el), Allowed: "must be a string"})
			return def
		}
		out = append(out, s)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// orList renders a, b or c.
func orList(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// closest returns the candidate within edit distance 2 of s, if any; among equally close ones the
// one sharing the longest prefix with s (h2s → h2 rather than h1s).
func closest(s string, candidates []string) string {
	best, bestD, bestP := "", 3, -1
	for _, c := range candidates {
		d, p := editDistance(s, c), commonPrefix(s, c)
		if d <= 2 && (d < bestD || (d == bestD && p > bestP)) {
			best, bestD, bestP = c, d, p
		}
	}
	return best
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func editDistance(a, b string) int {
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
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
