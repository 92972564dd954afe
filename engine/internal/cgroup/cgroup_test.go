package cgroup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/internal/timebound"
)

// A group measures a process tree: the CPU its members burn (also after they exit), their memory,
// and its members; Remove kills what is left and leaves nothing.
//
// The child burns a fixed amount of CPU (200 ms by its own clock, /proc/self/stat), not a span of
// wall time: on a loaded machine a loop that spins for 200 ms of wall time gets a fraction of it.
// How soon the group sees it still depends on the machine, so that wait is a timing bound, retried
// once (internal/timebound).
func TestGroupMeasuresAProcessTree(t *testing.T) {
	roottest.Require(t) // creates a control group
	if _, err := Available(); err != nil {
		t.Skip(err)
	}
	timebound.Retry(t, func(a *timebound.Attempt) {
		g, err := New(fmt.Sprintf("wirelab-0000beef-test%d", a.N))
		if err != nil {
			t.Fatal(err)
		}
		defer g.Remove()
		// A shell in the group forks a child that burns 200 ms of CPU (utime + stime, in 10 ms
		// ticks, read with the shell's own read: no process per round) and exits, then sleeps.
		cmd := exec.Command("sh", "-c", `read x; sh -c 'while :; do read -r _ _ _ _ _ _ _ _ _ _ _ _ _ u s _ < /proc/$$/stat; [ $((u + s)) -ge 20 ] && exit; done'; sleep 60`)
		stdin, _ := cmd.StdinPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		if err := g.Add(cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		stdin.Write([]byte("go\n"))
		t0 := time.Now()
		deadline := t0.Add(20 * time.Second)
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
			a.Errorf("CPU %d ns after %v, want ≥ 150 ms of the child's busy loop", u.CPUNs, time.Since(t0).Round(time.Millisecond))
			return
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
	})
}

func TestRemovePathRefusesOtherDirectories(t *testing.T) {
	for _, p := range []string{"/tmp/x", filepath.Join(Root, "memory"), filepath.Join(Root, "memory", "user.slice")} {
		if err := RemovePath(p); err == nil {
			t.Errorf("RemovePath(%s) accepted", p)
		}
	}
}
