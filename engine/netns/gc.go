package netns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/wirelab/wirelab/engine/internal/cgroup"
)

// GCReport says what GC did.
type GCReport struct {
	// Removed: namespaces, /etc/netns directories, state files, host-side objects and holds
	// (forwarding, uplink slots, "guest_halt_poll_ns hold of <id>") removed.
	Removed []string `json:"removed"`
	Kept    []string `json:"kept"` // runs left alone because their owner is alive ("<id> (pid N)")
	Runs    []string `json:"runs"` // ids of the dead runs whose state files were removed
}

// GC removes what crashed runs left behind: for every state file whose owner process is gone, the
// processes in its namespaces, the namespaces, its /etc/netns directories, what it owned (control
// groups with their processes, private directories) and the state file; then
// wirelab namespaces and /etc/netns directories that no state file claims; then the host-side
// holds of runs that are not live (forwarding and uplink slots, the guest halt-polling window —
// each holder's state file read again under its record's lock, so a run created while GC ran
// keeps them). A live run's objects are never touched.
func GC() (GCReport, error) {
	stateDir := StateDir
	var rep GCReport
	var errs []error
	// List namespaces BEFORE state files: a run writes its state file before it creates its
	// namespaces, so every namespace seen here whose run is live has its state file visible below.
	names, err := listNamed()
	if err != nil {
		return rep, err
	}
	etcDirs, _ := filepath.Glob(filepath.Join(etcNetnsDir, Prefix+"*"))
	states, bad, err := listStates(stateDir)
	if err != nil {
		return rep, err
	}
	claimed := map[string]bool{} // namespace names of live runs, and of dead runs handled below
	live := map[string]bool{}    // ids of live runs
	for _, st := range states {
		if alive(st.PID, st.PIDStart) {
			live[st.ID] = true
			for _, n := range st.Namespaces {
				claimed[n] = true
			}
			rep.Kept = append(rep.Kept, fmt.Sprintf("%s (pid %d)", st.ID, st.PID))
			continue
		}
		for _, n := range st.Namespaces {
			claimed[n] = true
		}
		errs = append(errs, removeRun(stateDir, st, &rep)...)
	}
	// A state file that cannot be parsed is left alone (with its namespaces) and reported.
	for _, p := range bad {
		id := strings.TrimSuffix(filepath.Base(p), ".json")
		claimed[NamespaceName(id, Client)] = true
		claimed[NamespaceName(id, Server)] = true
		errs = append(errs, fmt.Errorf("unreadable state file %s left alone", p))
	}
	// Orphans: wirelab namespaces whose state file is gone.
	for _, n := range names {
		if claimed[n] {
			continue
		}
		if err := removeNamespace(n, &rep); err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range etcDirs {
		base := filepath.Base(d)
		if claimed[base] || !namespacePattern.MatchString(base) {
			continue
		}
		if err := removeDir(d, &rep); err != nil {
			errs = append(errs, err)
		}
	}
	// The host side of egress runs that are not live: forwarding holds and slots without a live
	// holder, and veth ends and tables of this namespace that no live run claims.
	for _, p := range bad {
		live[strings.TrimSuffix(filepath.Base(p), ".json")] = true // left alone with the rest of it
	}
	errs = append(errs, gcUplinks(live, &rep)...)
	if err := gcHaltPoll(&rep); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, gcHostOrphans(live, &rep)...)
	return rep, errors.Join(errs...)
}

// removeRun removes everything dead run st recorded in its state file, then (when that all went)
// the state file itself. GC and GCOwner share it, so every kind of object a state file records is
// removed by the same code whichever way the run is collected.
func removeRun(stateDir string, st *state, rep *GCReport) []error {
	var errs []error
	for _, n := range st.Namespaces {
		if !namespacePattern.MatchString(n) {
			continue // never touch a name wirelab could not have made
		}
		if err := removeNamespace(n, rep); err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range st.EtcDirs {
		if filepath.Dir(d) != etcNetnsDir || !namespacePattern.MatchString(filepath.Base(d)) {
			continue
		}
		if err := removeDir(d, rep); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, removeOwned(st, rep)...)
	if len(errs) == 0 {
		p := statePath(stateDir, st.ID)
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		} else {
			rep.Removed = append(rep.Removed, p)
			rep.Runs = append(rep.Runs, st.ID)
		}
	}
	return errs
}

// GCOwner removes the leftovers of the runs whose owner was process pid, once that process is
// gone: what GC removes for them, and nothing of any other run (no orphan sweep). A caller that
// saw its child die calls it to clean up after that child alone (wirelab's runner, through
// `wirelab-engine gc --owner PID`). A live owner's runs are kept and reported.
func GCOwner(pid int) (GCReport, error) {
	var rep GCReport
	if pid <= 0 {
		return rep, fmt.Errorf("owner pid %d: must be a process id", pid)
	}
	states, _, err := listStates(StateDir)
	if err != nil {
		return rep, err
	}
	var errs []error
	for _, st := range states {
		if st.PID != pid {
			continue
		}
		if alive(st.PID, st.PIDStart) {
			rep.Kept = append(rep.Kept, fmt.Sprintf("%s (pid %d)", st.ID, st.PID))
			continue
		}
		errs = append(errs, removeRun(StateDir, st, &rep)...)
	}
	return rep, errors.Join(errs...)
}

// removeNamespace kills every process in the named namespace and deletes it.
func removeNamespace(name string, rep *GCReport) error {
	path := filepath.Join(netnsRunDir, name)
	if id, err := nsIDOf(path); err == nil {
		terminate(pidsIn(id), KillGrace)
	} else if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := deleteNamed(name); err != nil {
		return err
	}
	rep.Removed = append(rep.Removed, path)
	return nil
}

// ownedDirPattern is what a run's private directory is called (wirelab-<what>-<run id>).
var ownedDirPattern = regexp.MustCompile(`^wirelab-[a-z]+-[0-9a-f]{8}$`)

// removeOwned removes the objects a run recorded with Topology.Own…: its control groups (with
// any process still in them), its private directories, and the host side of an egress topology
// (removeHostSide); and it releases the run's hold on the guest halt-polling window
// (haltpoll.go). Close and GC both call it; it touches nothing that does not look like what a run
// creates. rep, when not nil, lists what was removed.
func removeOwned(st *state, rep *GCReport) []error {
	var errs []error
	if st.Host != nil {
		errs = append(errs, removeHostSide(st.ID, st.Host, rep)...)
	}
	if _, err := os.Stat(haltPollPath()); err == nil {
		if _, err := releaseHaltPoll(func(id string) bool { return id == st.ID }); err != nil {
			errs = append(errs, err)
		}
	}
	for _, cg := range st.Cgroups {
		if _, err := os.Stat(cg); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := cgroup.RemovePath(cg); err != nil {
			errs = append(errs, err)
		} else if rep != nil {
			rep.Removed = append(rep.Removed, cg)
		}
	}
	for _, d := range st.Dirs {
		base := filepath.Base(d)
		if !filepath.IsAbs(d) || !ownedDirPattern.MatchString(base) || !strings.HasSuffix(base, "-"+st.ID) {
			errs = append(errs, fmt.Errorf("state file of %s names %s, which is not a private directory of it; left alone", st.ID, d))
			continue
		}
		if rep == nil {
			if err := os.RemoveAll(d); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if err := removeDir(d, rep); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func removeDir(d string, rep *GCReport) error {
	if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := os.RemoveAll(d); err != nil {
		return err
	}
	rep.Removed = append(rep.Removed, d)
	return nil
}
