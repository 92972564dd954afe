package netns

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wirelab/wirelab/engine/internal/atomicfile"
)

// StateDir holds one state file per live (or crashed) run. It is fixed, not configurable: GC must
// see every run's state file to know which namespaces are claimed.
const StateDir = "/run/wirelab"

// state is the content of <StateDir>/<id>.json. It is written before any object is created and
// removed after every object is gone, so an object without a live owner's state file is garbage.
type state struct {
	ID         string    `json:"id"`
	PID        int       `json:"pid"`
	PIDStart   uint64    `json:"pid_start_ticks"` // with pid, identifies the owner across pid reuse
	Command    []string  `json:"command"`
	CreatedAt  time.Time `json:"created_at"`
	Namespaces []string  `json:"namespaces"`
	EtcDirs    []string  `json:"etc_dirs,omitempty"` // /etc/netns/<ns> directories (resolv.conf)
	TUNs       []string  `json:"tuns"`               // informational: TUN devices vanish with their owner
	// Objects the run's users create beside the topology (Topology.Own): removed by Close and, for
	// a dead owner, by GC — with the same code (removeOwned).
	Cgroups []string `json:"cgroups,omitempty"` // control groups (cgroup.RemovePath: members killed, directory removed)
	Dirs    []string `json:"dirs,omitempty"`    // private directories (certificates, keys, document roots)
	// Host is what an egress topology to the host made outside the run's namespaces (uplink.go).
	Host *hostState `json:"host,omitempty"`
}

func statePath(dir, id string) string { return filepath.Join(dir, id+".json") }

// createState writes the state file for a new id atomically and exclusively: it fails with
// os.ErrExist if a file for the id exists.
func createState(dir string, st *state) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Create(statePath(dir, st.ID), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("state file for %s: %w", st.ID, err)
	}
	return nil
}

// replaceState rewrites an existing state file atomically (a reader sees the old or the new one).
func replaceState(dir string, st *state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(statePath(dir, st.ID), append(b, '\n'), 0o600)
}

func readState(path string) (*state, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !idPattern.MatchString(st.ID) {
		return nil, fmt.Errorf("%s: bad id %q", path, st.ID)
	}
	return &st, nil
}

// listStates reads every state file in dir. Unreadable files are returned in bad.
func listStates(dir string) (states []*state, bad []string, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") || !idPattern.MatchString(strings.TrimSuffix(name, ".json")) {
			continue
		}
		st, err := readState(filepath.Join(dir, name))
		if err != nil {
			bad = append(bad, filepath.Join(dir, name))
			continue
		}
		states = append(states, st)
	}
	return states, bad, nil
}

// InRun reports whether this process lives in one of sides' namespaces of run id and that run is
// live (its state file names an owner process that still runs): what a child of a run's lab — a
// load generator told `--lab ID` — checks before it treats the lab's addresses as its own.
func InRun(id string, sides ...Side) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("run id %q: want 8 hex digits", id)
	}
	if len(sides) == 0 {
		return errors.New("netns: InRun needs a side")
	}
	st, err := readState(statePath(StateDir, id))
	if err != nil {
		return fmt.Errorf("run %s: no state file: %w", id, err)
	}
	if !alive(st.PID, st.PIDStart) {
		return fmt.Errorf("run %s: its owner (pid %d) is gone", id, st.PID)
	}
	own, err := nsIDOf("/proc/self/ns/net")
	if err != nil {
		return err
	}
	names := make([]string, len(sides))
	for i, side := range sides {
		names[i] = NamespaceName(id, side)
		want, err := nsIDOf(filepath.Join(netnsRunDir, names[i]))
		if err != nil {
			return fmt.Errorf("run %s: %w", id, err)
		}
		if own == want {
			return nil
		}
	}
	return fmt.Errorf("this process is not in %s", strings.Join(names, " or "))
}
