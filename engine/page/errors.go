package page

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/wirelab/wirelab/engine/internal/fielderr"
	"github.com/wirelab/wirelab/engine/internal/suggest"
)

// FieldError is bad input: it names the field (a path such as objects[3].size), the value found
// and what is allowed. It prints as one line.
type FieldError = fielderr.Error

func fieldErr(field string, value any, allowed string, args ...any) *FieldError {
	return fielderr.New(field, value, allowed, args...)
}

// AsFieldError reports whether err is (or wraps) a FieldError.
func AsFieldError(err error) (*FieldError, bool) { return fielderr.As(err) }

// known fields of each JSON object of a page, by schema position.
var knownFields = map[string][]string{
	"page":     {"name", "description", "source", "seed", "root_dir", "origins", "objects", "activities"},
	"origin":   {"host"},
	"object":   {"id", "path", "origin", "size", "type", "content_type", "parent", "domain", "group", "file", "refs", "cache_control"},
	"ref":      {"offset", "length", "object"},
	"activity": {"id", "kind", "object", "duration_ms", "deps"},
	"dep":      {"on", "when"},
}

// checkFields walks the raw JSON and reports the first unknown field with its path and the
// closest known name.
func checkFields(data []byte) error {
	var raw any
	if err := json.Unmarshal(data, &raw); err != nil {
		return decodeError(err)
	}
	top, ok := raw.(map[string]any)
	if !ok {
		return &FieldError{Field: "page", Allowed: "must be a JSON object"}
	}
	if err := unknownIn("", "page", top); err != nil {
		return err
	}
	if err := walkList("", top, "origins", "origin", nil); err != nil {
		return err
	}
	if err := walkList("", top, "objects", "object", func(path string, m map[string]any) error {
		return walkList(path+".", m, "refs", "ref", nil)
	}); err != nil {
		return err
	}
	return walkList("", top, "activities", "activity", func(path string, m map[string]any) error {
		return walkList(path+".", m, "deps", "dep", nil)
	})
}

// walkList checks the fields of each element of the list in[key] (elements of kind, named
// prefix+key[i]), then each element's own (each: nil for none).
func walkList(prefix string, in map[string]any, key, kind string, each func(path string, m map[string]any) error) error {
	arr, _ := in[key].([]any)
	for i, el := range arr {
		m, ok := el.(map[string]any)
		if !ok {
			continue // the typed decode reports the wrong type
		}
		path := fmt.Sprintf("%s%s[%d]", prefix, key, i)
		if err := unknownIn(path+".", kind, m); err != nil {
			return err
		}
		if each != nil {
			if err := each(path, m); err != nil {
				return err
			}
		}
	}
	return nil
}

func unknownIn(prefix, kind string, m map[string]any) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !contains(knownFields[kind], k) {
			allowed := "unknown field; allowed: " + strings.Join(knownFields[kind], ", ")
			if s := suggest.Closest(k, knownFields[kind]); s != "" {
				allowed = "unknown field; did you mean " + s + "?"
			}
			return &FieldError{Field: prefix + k, Allowed: allowed}
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// decodeError turns encoding/json errors into FieldErrors where the field is known.
func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "page"
		}
		return &FieldError{Field: field, Value: te.Value, Allowed: "must be of type " + jsonType(te.Type.Kind().String())}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &FieldError{Field: "page", Allowed: fmt.Sprintf("invalid JSON at byte %d: %v", se.Offset, err)}
	}
	return &FieldError{Field: "page", Allowed: "invalid JSON: " + err.Error()}
}

func jsonType(kind string) string {
	switch kind {
	case "int", "int64", "uint64", "int32":
		return "integer"
	case "float64":
		return "number"
	case "slice":
		return "array"
	case "struct", "map":
		return "object"
	}
	return kind
}
