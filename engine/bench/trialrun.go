package bench

import (
	"context"
	"path/filepath"

	"github.com/wirelab/wirelab/engine/trial"
)

// runTrial decodes, prepares and runs one trial spec into dir (trial.Options' OutDir is set here)
// and reads its records: the benchmarks that measure through real trials (loader, servers, why).
func runTrial(ctx context.Context, spec, dir string, o trial.Options) (*trial.Result, []trial.Record, error) {
	s, err := trial.DecodeSpec([]byte(spec))
	if err != nil {
		return nil, nil, err
	}
	p, err := trial.Prepare(s)
	if err != nil {
		return nil, nil, err
	}
	o.OutDir = dir
	r, err := trial.Run(ctx, p, o)
	if err != nil {
		return nil, nil, err
	}
	recs, err := readRecords(filepath.Join(dir, trial.LoadsFile))
	return r, recs, err
}
