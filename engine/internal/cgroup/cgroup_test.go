package cgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/internal/roottest"
)

// A group measures a process tree: the CPU its members burn (also after they exit), their memory,
// and its members; Remove kills what is left and leaves nothing.
func TestGroupMeasuresAProcessTree(t *testing.T) {
	roottest.Require(t) // creates a control group
	if _, err := Available(); err != nil {
		t.Skip(err)
	}
	g, err := New("wirelab-0000beef-test")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	// A shell in the group forks a child that burns CPU for 200 ms and exits, then sleeps.
	cmd := exec.Command("sh", "-c", `read x; ( end=$(($(date +%s%N)+200000000)); while [ $(date +%s%N) -lt $end ]; do :; done ); sleep 60`)
	stdin, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if err := g.Add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	stdin.Write([]byte("go\n"))
	deadline := time.Now().Add(10 * time.Second)
	var u Usage
	for time.Now().Before(deadline) {
		if u, err = g.Usage(); err != nil {
			t.Fatal(err)
		}
		if u.CPUNs >= 150e6 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if u.CPUNs < 150e6 {
		t.Errorf("CPU %d ns, want ≥ 150 ms of the child's busy loop", u.CPUNs)
	}
	if u.Processes < 1 || u.Threads < u.Processes || u.MemoryBytes <= 0 || u.MemoryPeakBytes < u.MemoryBytes {
		t.Errorf("usage %+v", u)
	}
	paths := g.Paths()
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still exists", p)
		}
	}
	if err := cmd.Wait(); err == nil {
		t.Error("the shell survived Remove")
	}
}

func TestRemovePathRefusesOtherDirectories(t *testing.T) {
	for _, p := range []string{"/tmp/x", filepath.Join(Root, "memory"), filepath.Join(Root, "memory", "user.slice")} {
		if err := RemovePath(p); err == nil {
			t.Errorf("RemovePath(%s) accepted", p)
		}
	}
}
