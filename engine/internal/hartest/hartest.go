// Package hartest gives tests the HAR 1.2 JSON schema that package har vendors
// (engine/har/testdata/har-schema), compiled: the HAR the loaders write (client, har) is checked
// against the format's own schema, not against what our reader accepts.
package hartest

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema compiles the vendored HAR 1.2 schema; it fails the test if the files are missing or do not
// compile.
func Schema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("hartest: no source path to find the schema from")
	}
	files, err := filepath.Glob(filepath.Join(filepath.Dir(self), "..", "..", "har", "testdata", "har-schema", "*.json"))
	if err != nil || len(files) < 10 {
		t.Fatalf("schema files: %v %v", files, err)
	}
	c := jsonschema.NewCompiler()
	const base = "https://har-schema.invalid/"
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := c.AddResource(base+filepath.Base(f), doc); err != nil {
			t.Fatal(err)
		}
	}
	c.AssertFormat()
	s, err := c.Compile(base + "har.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}
