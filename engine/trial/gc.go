package trial

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"

	"github.com/wirelab/wirelab/engine/netns"
)

// tempPrefix names a trial's private directory in os.TempDir(): wirelab-trial-<run id>, created
// (0700) once the topology — and so the run's state file — exists. It holds the run's certificates
// (the key 0600) and objects-mode URL lists; Run removes it, GC removes it after a SIGKILL.
const tempPrefix = "wirelab-trial-"

var tempRE = regexp.MustCompile(`^wirelab-trial-([0-9a-f]{8})$`)

func tempDir(runID string) string { return filepath.Join(os.TempDir(), tempPrefix+runID) }

// GC removes the private directories of trials that were killed: those whose run has no state file
// in netns.StateDir any more (netns.GC removes a dead run's state; run it first). A live run's
// directory always has its state file, which is written before the directory is created.
func GC() (removed []string, err error) {
	entries, err := os.ReadDir(os.TempDir())
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, e := range entries {
		m := tempRE.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(netns.StateDir, m[1]+".json")); !errors.Is(err, os.ErrNotExist) {
			continue // live (or unreadable: left alone)
		}
		path := filepath.Join(os.TempDir(), e.Name())
		if err := os.RemoveAll(path); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, path)
	}
	return removed, errors.Join(errs...)
}

// GCRuns removes the private directories of the given dead runs (ids from netns.GCOwner, whose
// state files are gone), and nothing else.
func GCRuns(ids []string) (removed []string, err error) {
	var errs []error
	for _, id := range ids {
		path := tempDir(id)
		if !tempRE.MatchString(filepath.Base(path)) {
			continue
		}
		if _, err := os.Stat(filepath.Join(netns.StateDir, id+".json")); !errors.Is(err, os.ErrNotExist) {
			continue // its state file is back or unreadable: not ours to remove
		}
		if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := os.RemoveAll(path); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, path)
	}
	return removed, errors.Join(errs...)
}
