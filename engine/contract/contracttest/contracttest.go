// Package contracttest checks JSON and Go structs against the contract's schemas
// (engine/contract) in tests.
package contracttest

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/contract"
)

// Schema names.
const (
	TrialSpec    = contract.TrialSpec
	LoadRecord   = contract.LoadRecord
	TrialResult  = contract.TrialResult
	LoadtestSpec = contract.LoadtestSpec
	ProbeRecord  = contract.ProbeRecord
	Page         = contract.Page
)

// Schemas validates against the contract's schemas.
type Schemas struct{}

// Load returns the contract's schemas (they are compiled once, on first use).
func Load(t testing.TB) *Schemas {
	t.Helper()
	if err := contract.Validate(contract.TrialSpec, map[string]any{"page": "x"}); err != nil {
		t.Fatalf("the contract's schemas: %v", err)
	}
	return &Schemas{}
}

// Validate checks data (JSON) against the named schema.
func (s *Schemas) Validate(name string, data []byte) error {
	v, err := contract.Decode("json", data)
	if err != nil {
		return err
	}
	return contract.Validate(name, v)
}

// MatchStruct checks that the Go struct typ is the view of the object at path in the named schema:
// every property is a field of the same JSON name and of a matching kind (objects recursively), and
// every field is a property, except those named in extra. An implementation table (a property
// marked "x-impl") is its implementation's to decode and is not looked for. Embedded structs
// contribute their fields, as encoding/json promotes them.
func MatchStruct(t testing.TB, schema string, typ reflect.Type, path []string, extra ...string) {
	t.Helper()
	props, err := contract.Properties(schema, path...)
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]reflect.Type{}
	jsonFields(t, typ, fields)
	where := strings.Join(path, ".")
	for _, p := range props {
		sub := append(slices.Clone(path), p)
		node, err := contract.Property(schema, sub...)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := node["x-impl"]; ok {
			continue
		}
		ft, ok := fields[p]
		if !ok {
			t.Errorf("schema property %s has no field in %s", strings.Join(sub, "."), typ.Name())
			continue
		}
		checkKind(t, schema, strings.Join(sub, "."), node, ft, sub)
	}
	for name := range fields {
		if !slices.Contains(props, name) && !slices.Contains(extra, name) {
			t.Errorf("%s field %q is not a property of the schema at %q", typ.Name(), name, where)
		}
	}
}

// jsonFields collects typ's fields by JSON name, entering embedded structs.
func jsonFields(t testing.TB, typ reflect.Type, out map[string]reflect.Type) {
	t.Helper()
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			jsonFields(t, ft, out)
			continue
		}
		if name == "" {
			t.Errorf("%s.%s: no json name", typ.Name(), f.Name)
			continue
		}
		out[name] = f.Type
	}
}

func checkKind(t testing.TB, schema, where string, node map[string]any, ft reflect.Type, path []string) {
	t.Helper()
	for ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	typ, _ := node["type"].(string)
	if typ == "" {
		if en, ok := node["enum"].([]any); ok && len(en) > 0 {
			if _, isStr := en[0].(string); isStr {
				typ = "string"
			}
		}
	}
	want := map[string][]reflect.Kind{
		"integer": {reflect.Int, reflect.Int64},
		"number":  {reflect.Float64},
		"string":  {reflect.String},
		"boolean": {reflect.Bool},
		"array":   {reflect.Slice},
		"object":  {reflect.Struct},
	}[typ]
	if !slices.Contains(want, ft.Kind()) {
		t.Errorf("%s: schema type %q, Go field kind %s", where, typ, ft.Kind())
		return
	}
	if typ == "object" {
		MatchStruct(t, schema, ft, path)
	}
}
