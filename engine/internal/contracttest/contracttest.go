// Package contracttest validates JSON against the contract's schemas (engine/contract) in tests.
package contracttest

import (
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
