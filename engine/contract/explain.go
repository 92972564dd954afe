package contract

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/internal/suggest"
)

// explain turns the validator's error tree into the one problem a user is told about.
//
// The tree's leaves are the failed keywords. Wrappers (the schema, $ref, allOf) are entered;
// anyOf and oneOf are reported as a whole (their branches are alternatives, and the property's
// x-allowed says what they allow together). Of the leaves, the deepest instance location wins
// (the most specific field), then the first in document order. An unevaluatedProperties failure
// of a property the schema does know is a consequence of another error and is dropped.
func (c *compiled) explain(ve *jsonschema.ValidationError, inst any) error {
	var leaves []*jsonschema.ValidationError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		switch e.ErrorKind.(type) {
		case *kind.AnyOf, *kind.OneOf:
			leaves = append(leaves, e)
			return
		}
		if len(e.Causes) == 0 {
			leaves = append(leaves, e)
			return
		}
		for _, cause := range e.Causes {
			walk(cause)
		}
	}
	walk(ve)
	var kept []*jsonschema.ValidationError
	for _, e := range leaves {
		if _, ok := e.ErrorKind.(*kind.FalseSchema); ok && c.knownProperty(e) {
			continue
		}
		kept = append(kept, e)
	}
	if len(kept) == 0 {
		kept = leaves
	}
	// Deepest first; among problems as deep, the first by field path: the validator reports sibling
	// properties in map order, and the same spec must always get the same message (two problems of
	// one field: the first by schema location).
	sort.SliceStable(kept, func(i, j int) bool {
		li, lj := kept[i].InstanceLocation, kept[j].InstanceLocation
		if len(li) != len(lj) {
			return len(li) > len(lj)
		}
		if c := slices.Compare(li, lj); c != 0 {
			return c < 0
		}
		return kept[i].SchemaURL < kept[j].SchemaURL
	})
	return c.render(kept[0], inst)
}

// schemaNode returns the schema node an error's SchemaURL points at, and its document's id.
func (c *compiled) schemaNode(url string) (string, map[string]any) {
	id, frag, _ := strings.Cut(url, "#")
	n, _ := pointer(c.docs[id], frag).(map[string]any)
	return id, n
}

// knownProperty reports whether an unevaluatedProperties failure is about a property that the
// object's schema (the parent of "unevaluatedProperties") does declare.
func (c *compiled) knownProperty(e *jsonschema.ValidationError) bool {
	if len(e.InstanceLocation) == 0 {
		return false
	}
	id, parentPtr, _ := strings.Cut(e.SchemaURL, "#")
	parentPtr = strings.TrimSuffix(parentPtr, "/unevaluatedProperties")
	node := pointer(c.docs[id], parentPtr)
	name := e.InstanceLocation[len(e.InstanceLocation)-1]
	for _, p := range c.propertyNames(id, node) {
		if p == name {
			return true
		}
	}
	return false
}

// fieldPath renders an instance location as the engine's messages name fields: a.b[3].c. A token
// is an index only where the instance holds an array there; an object's key that is not a plain
// name (empty, a number, with dots, brackets or spaces) is quoted: client[""], pages["0"].
func fieldPath(inst any, loc []string) string {
	var b strings.Builder
	for i, tok := range loc {
		if _, isList := valueAt(inst, loc[:i]).([]any); isList {
			b.WriteString("[" + tok + "]")
			continue
		}
		if !plainName(tok) {
			b.WriteString("[" + strconv.Quote(tok) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

// plainName: a key a dotted path can show as it is (a letter or _ first, then letters, digits, _ or -).
func plainName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case i > 0 && (r == '-' || r >= '0' && r <= '9'):
		default:
			return false
		}
	}
	return true
}

func valueAt(inst any, loc []string) any {
	n := inst
	for _, tok := range loc {
		switch x := n.(type) {
		case map[string]any:
			n = x[tok]
		case []any:
			i, _ := strconv.Atoi(tok)
			if i < 0 || i >= len(x) {
				return nil
			}
			n = x[i]
		default:
			return nil
		}
	}
	return n
}

// Show formats a JSON value as messages quote it (strings quoted, containers by their kind).
func Show(v any) string {
	switch x := v.(type) {
	case string:
		return fielderr.Quote(x)
	case json.Number:
		return fielderr.Cut(x.String())
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case int:
		return strconv.Itoa(x)
	}
	return typeName(v)
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64, int:
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

func (c *compiled) render(e *jsonschema.ValidationError, inst any) error {
	id, node := c.schemaNode(e.SchemaURL)
	loc := e.InstanceLocation
	value := valueAt(inst, loc)
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		names := c.propertyNames(id, node)
		// the first unknown name in order: the validator lists them in map order
		return unknownField(inst, append(append([]string{}, loc...), slices.Min(k.Properties)), names)
	case *kind.FalseSchema:
		// unevaluatedProperties: a property no branch of the object's schema declares.
		_, parentPtr, _ := strings.Cut(e.SchemaURL, "#")
		parentPtr = strings.TrimSuffix(parentPtr, "/unevaluatedProperties")
		return unknownField(inst, loc, c.propertyNames(id, pointer(c.docs[id], parentPtr)))
	case *kind.Required:
		if f, ok := node["x-field"].(string); ok {
			// a rule across fields (an if/then): the branch names the field it is about.
			fl := append(append([]string{}, loc...), strings.Split(f, ".")...)
			return &fielderr.Error{Field: fieldPath(inst, fl), Value: Show(valueAt(inst, fl)), Allowed: allowedText(node)}
		}
		fl := append(append([]string{}, loc...), k.Missing[0])
		what := "required"
		if p := c.child(id, node, k.Missing[0]); p != nil {
			if a, ok := p["x-allowed"].(string); ok {
				what = "required: " + strings.TrimPrefix(a, "must be ")
			}
		}
		return &fielderr.Error{Field: fieldPath(inst, fl), Allowed: what}
	case *kind.UniqueItems:
		fl := append(append([]string{}, loc...), strconv.Itoa(k.Duplicates[1]))
		return &fielderr.Error{Field: fieldPath(inst, fl), Value: Show(valueAt(inst, fl)),
			Allowed: fmt.Sprintf("listed twice (also at [%d]); each at most once", k.Duplicates[0])}
	case *kind.MinItems:
		return &fielderr.Error{Field: fieldPath(inst, loc), Value: "[]", Allowed: "must list at least " + describeItems(c.merged(id, node), k.Want)}
	}
	// A value the property does not allow: say what it allows.
	if ptr := ifThenBranch(e.SchemaURL); ptr != "" {
		// the error is inside a then/else branch: the branch's x-field and x-allowed, if any
		if b, ok := pointer(c.docs[id], ptr).(map[string]any); ok {
			if f, ok := b["x-field"].(string); ok {
				base := loc[:len(loc)-1]
				fl := append(append([]string{}, base...), strings.Split(f, ".")...)
				return &fielderr.Error{Field: fieldPath(inst, fl), Value: Show(valueAt(inst, fl)), Allowed: allowedText(b)}
			}
		}
	}
	prop := c.propertyNode(id, e.SchemaURL)
	allowed := "must be " + describe(prop)
	if a, ok := prop["x-allowed"].(string); ok {
		allowed = a
	}
	if en, ok := prop["enum"].([]any); ok {
		if s, ok := value.(string); ok {
			if near := suggest.Closest(s, enumStrings(en)); near != "" && near != s {
				allowed = "did you mean " + near + "? " + allowed
			}
		}
	}
	return &fielderr.Error{Field: fieldPath(inst, loc), Value: Show(value), Allowed: allowed}
}

// ifThenBranch returns the pointer of the then/else schema that holds the failed keyword, or "".
func ifThenBranch(url string) string {
	_, frag, _ := strings.Cut(url, "#")
	for _, b := range []string{"/then", "/else"} {
		if i := strings.LastIndex(frag, b); i >= 0 {
			rest := frag[i+len(b):]
			if rest == "" || strings.HasPrefix(rest, "/") {
				return frag[:i+len(b)]
			}
		}
	}
	return ""
}

// propertyNode is the property schema an error is about: the node at its URL, with the schemas
// it refers to, and lifted out of anyOf/oneOf branches to the property that holds them.
func (c *compiled) propertyNode(id, url string) map[string]any {
	_, frag, _ := strings.Cut(url, "#")
	for {
		i := strings.LastIndex(frag, "/")
		if i < 0 {
			break
		}
		parent := frag[:i]
		if strings.HasSuffix(parent, "/anyOf") || strings.HasSuffix(parent, "/oneOf") {
			frag = parent[:strings.LastIndex(parent, "/")]
			continue
		}
		break
	}
	return c.merged(id, pointer(c.docs[id], frag))
}

func (c *compiled) child(id string, node map[string]any, key string) map[string]any {
	for _, b := range c.branches(id, node) {
		if p, ok := asMap(b.node["properties"])[key]; ok {
			return c.merged(b.id, p)
		}
	}
	return nil
}

func allowedText(node map[string]any) string {
	if a, ok := node["x-allowed"].(string); ok {
		return a
	}
	return "not allowed here"
}

func unknownField(inst any, loc []string, known []string) error {
	name := loc[len(loc)-1]
	allowed := "unknown field; allowed: " + strings.Join(known, ", ")
	if s := suggest.Closest(name, known); s != "" {
		allowed = "unknown field; did you mean " + s + "?"
	}
	return &fielderr.Error{Field: fielderr.Cut(fieldPath(inst, loc)), Allowed: allowed}
}

// Describe says in words what a property schema allows ("an integer 1–64", "h1, h1s or h2").
func Describe(prop map[string]any) string { return describe(prop) }

func describe(p map[string]any) string {
	if a, ok := p["x-allowed"].(string); ok {
		return a
	}
	if en, ok := p["enum"].([]any); ok {
		return orList(enumStrings(en))
	}
	if cv, ok := p["const"]; ok {
		return Show(cv)
	}
	typ, _ := p["type"].(string)
	switch typ {
	case "integer", "number":
		word := "an integer"
		if typ == "number" {
			word = "a number"
		}
		lo, hasLo := num(p["minimum"])
		xlo, hasXlo := num(p["exclusiveMinimum"])
		hi, hasHi := num(p["maximum"])
		switch {
		case hasLo && hasHi:
			return fmt.Sprintf("%s %s–%s", word, lo, hi)
		case hasLo:
			return fmt.Sprintf("%s ≥ %s", word, lo)
		case hasXlo && hasHi:
			return fmt.Sprintf("%s > %s and ≤ %s", word, xlo, hi)
		case hasXlo:
			return fmt.Sprintf("%s > %s", word, xlo)
		case hasHi:
			return fmt.Sprintf("%s ≤ %s", word, hi)
		}
		return word
	case "boolean":
		return "true or false"
	case "string":
		if n, ok := num(p["minLength"]); ok && n != "0" {
			return "a non-empty string"
		}
		return "a string"
	case "array":
		if items, ok := p["items"].(map[string]any); ok {
			return "a list of " + describe(items)
		}
		return "a list"
	case "object":
		return "an object"
	}
	return "a valid value"
}

func describeItems(p map[string]any, n int) string {
	if items, ok := p["items"].(map[string]any); ok {
		if n == 1 {
			return "one of " + describe(items)
		}
		return fmt.Sprintf("%d of %s", n, describe(items))
	}
	return fmt.Sprintf("%d items", n)
}

// num renders a schema number (json.Number from the decoder) as written.
func num(v any) (string, bool) {
	switch x := v.(type) {
	case json.Number:
		r, ok := new(big.Rat).SetString(x.String())
		if !ok {
			return x.String(), true
		}
		if r.IsInt() {
			return r.Num().String(), true
		}
		return x.String(), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	}
	return "", false
}

func enumStrings(en []any) []string {
	out := make([]string, len(en))
	for i, v := range en {
		if s, ok := v.(string); ok {
			out[i] = s
		} else {
			out[i] = Show(v)
		}
	}
	return out
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

// OrList renders a, b or c, as field errors list what is allowed.
func OrList(items []string) string { return orList(items) }
