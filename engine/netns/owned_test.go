package netns

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/wirelab/wirelab/engine/internal/cgroup"
	"github.com/wirelab/wirelab/engine/internal/roottest"
)

// makeOwned creates a private directory (with a key-like file) and a control group with a process
// in it, as a lab does, recording both in the topology's state first.
func makeOwned(t *testing.T, topo *Topology) (dir string, group *cgroup.Group, proc *exec.Cmd) {
	t.Helper()
	dir = filepath.Join(os.TempDir(), "wirelab-lab-"+topo.ID)
	if err := topo.OwnDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "key.pem"), []byte("secret"), 0o600)
	if _, err := cgroup.Available(); err != nil {
		return dir, nil, nil
	}
	name := "wirelab-" + topo.ID + "-s"
	g, err := cgroup.New(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := topo.OwnCgroups(g.Paths()...); err != nil {
		t.Fatal(err)
	}
	proc = exec.Command("sleep", "100")
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	if err := g.Add(proc.Process.Pid); err != nil {
		t.Fatal(err)
	}
	return dir, g, proc
}

func assertOwnedGone(t *testing.T, dir string, g *cgroup.Group, proc *exec.Cmd) {
	t.Helper()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("private directory %s left behind", dir)
	}
	if g == nil {
		return
	}
	for _, p := range g.Paths() {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("control group %s left behind", p)
		}
	}
	if err := proc.Wait(); err == nil {
		t.Error("the process in the control group survived")
	}
}

// What a run records with Own… is removed by Close.
func TestCloseRemovesOwnedObjects(t *testing.T) {
	roottest.RequireTUN(t)
	topo, err := Create(Config{})
	if err != nil {
		t.Fatal(err)
	}
	dir, g, proc := makeOwned(t, topo)
	if err := topo.OwnDir("/etc"); err == nil {
		t.Error("OwnDir accepted /etc")
	}
	if err := topo.Close(); err != nil {
		t.Fatal(err)
	}
	assertOwnedGone(t, dir, g, proc)
	assertGone(t, topo.ID)
}

// makeDead makes a live run look like a dead one's leftovers: its state file names a pid that has
// exited, and the topology lets go of what this process holds (TUN devices, namespace handles,
// the host namespace) without removing anything — GC must.
func makeDead(t *testing.T, topo *Topology) {
	t.Helper()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	st := *topo.st
	st.PID, st.PIDStart = dead.Process.Pid, 1
	if err := replaceState(StateDir, &st); err != nil {
		t.Fatal(err)
	}
	topo.mu.Lock()
	topo.closed = true
	topo.mu.Unlock()
	for _, dev := range topo.tuns {
		if dev != nil {
			dev.Close()
		}
	}
	for _, h := range topo.ns {
		if h != nil {
			h.Close()
		}
	}
	if topo.eg != nil {
		topo.eg.close()
	}
}

// ... and by GC when the owner died (the run's state file names them).
func TestGCRemovesOwnedObjectsOfDeadRuns(t *testing.T) {
	roottest.RequireTUN(t)
	topo, err := Create(Config{})
	if err != nil {
		t.Fatal(err)
	}
	dir, g, proc := makeOwned(t, topo)
	makeDead(t, topo)
	if _, err := GC(); err != nil {
		t.Logf("GC errors (may concern other runs): %v", err)
	}
	assertOwnedGone(t, dir, g, proc)
	assertGone(t, topo.ID)
}
