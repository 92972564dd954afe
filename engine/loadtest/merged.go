package loadtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/wirelab/wirelab/engine/loadgen"
	"github.com/wirelab/wirelab/engine/trial"
)

// A run whose generators ran elsewhere (docs/loadtest.md, "A Dask cluster"): their lines merged
// (loadgen.Merge) and the server's samples, written as the directory a lab run writes, so that
// the control plane stores it the same way.

// ReadSamples reads a server.jsonl (one Sample per line; a last line cut short is left out).
func ReadSamples(path string) ([]Sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var out []Sample
	var bad error
	for n := 1; sc.Scan(); n++ {
		if bad != nil {
			return nil, bad // a bad line that was not the last
		}
		var s Sample
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			bad = fmt.Errorf("%s line %d: not a server sample: %v", path, n, err)
			continue
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

// WriteMerged writes dir's intervals.jsonl (the merged intervals), server.jsonl (the samples)
// and, last, loadtest.json, and returns the record. An error when no generator left a summary
// (nothing can be said of the run). The error of a degraded run is a *DegradedError, after
// everything is written.
func WriteMerged(dir string, spec *loadgen.Spec, m *loadgen.Merged, samples []Sample, command []string, started time.Time) (*Result, error) {
	if m.Summary == nil || len(m.Summary.Generators) == len(m.Summary.GeneratorsLost) {
		return nil, fmt.Errorf("every generator was lost: nothing of the run can be merged")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, ResultFile)); err == nil {
		return nil, fmt.Errorf("%s already holds %s of another run", dir, ResultFile)
	}
	// The server is sampled until it is stopped, after the generators ended: a sample past the
	// last interval describes no load and is left out (server.jsonl line k is interval k's).
	if len(samples) > len(m.Intervals) {
		samples = samples[:len(m.Intervals)]
	}
	if err := writeLines(filepath.Join(dir, IntervalsFile), m.Intervals); err != nil {
		return nil, err
	}
	if err := writeLines(filepath.Join(dir, ServerFile), samples); err != nil {
		return nil, err
	}
	// A lab server's samples carry its CPU; an external target's (its status page, sampled by one
	// generator) do not.
	res := Assemble(spec, m.Summary, samples, len(m.Intervals), m.Summary.Interrupted, spec.Target == nil)
	res.ServerMeasured = len(samples) > 0
	res.Provenance = trial.NewProvenance(command, started)
	res.Provenance.Finish()
	if err := trial.WriteJSON(filepath.Join(dir, ResultFile), res); err != nil {
		return nil, err
	}
	if res.Degraded {
		return res, &DegradedError{Lost: m.Summary.GeneratorsLost, Generators: m.Summary.Generators}
	}
	return res, nil
}

func writeLines[T any](path string, items []T) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
