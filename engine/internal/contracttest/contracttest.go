// Package contracttest validates JSON against the trial contract's schemas — the files in the
// repository's schemas/ directory that the control plane's tests use too. For tests only.
package contracttest

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema names (files schemas/<name>.schema.json), and their $ids.
const (
	TrialSpec   = "trial-spec"
	LoadRecord  = "load-record"
	TrialResult = "trial-result"
)

var ids = map[string]string{
	TrialSpec:   "urn:wirelab:schema:trial-spec:1",
	LoadRecord:  "urn:wirelab:schema:load-record:1",
	TrialResult: "urn:wirelab:schema:trial-result:1",
}

// Dir finds the repository's schemas/ directory above the working directory.
func Dir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		cand := filepath.Join(dir, "schemas")
		if _, err := os.Stat(filepath.Join(cand, TrialSpec+".schema.json")); err == nil {
			return cand, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no schemas/trial-spec.schema.json above the working directory")
		}
		dir = parent
	}
}

// Schemas are the compiled contract schemas.
type Schemas struct{ byName map[string]*jsonschema.Schema }

// Load compiles every contract schema (each registered under its $id, so trial-result's reference
// to trial-spec resolves) or fails the test.
func Load(t testing.TB) *Schemas {
	t.Helper()
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	for name, id := range ids {
		b, err := os.ReadFile(filepath.Join(dir, name+".schema.json"))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := c.AddResource(id, doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	s := &Schemas{byName: map[string]*jsonschema.Schema{}}
	for name, id := range ids {
		sch, err := c.Compile(id)
		if err != nil {
			t.Fatalf("compile %s: %v", name, err)
		}
		s.byName[name] = sch
	}
	return s
}

// Validate checks data (JSON) against the named schema.
func (s *Schemas) Validate(name string, data []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return s.byName[name].Validate(inst)
}
