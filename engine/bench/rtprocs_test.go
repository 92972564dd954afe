package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// stat is a /proc/PID/stat line with the fields otherRealtime reads: ppid (4), flags (9),
// rt_priority (40) and policy (41); the rest zero.
func stat(pid, ppid int, comm string, flags uint64, prio, policy int) string {
	f := make([]any, 0, 50)
	f = append(f, "S", ppid, 0, 0, 0, 0, flags) // fields 3–9
	for range 40 - 10 {
		f = append(f, 0) // fields 10–39
	}
	f = append(f, prio, policy, 0, 0) // fields 40–43
	line := fmt.Sprintf("%d (%s)", pid, comm)
	for _, v := range f {
		line += fmt.Sprintf(" %v", v)
	}
	return line + "\n"
}

func TestOtherRealtimeSkipsSelfChildrenKernelAndOrdinary(t *testing.T) {
	root := t.TempDir()
	write := func(pid int, line string) {
		d := filepath.Join(root, fmt.Sprint(pid))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(1, stat(1, 0, "init", 0, 0, 0))
	write(100, stat(100, 1, "wirelab-engine", 0, 2, policyRR))         // self
	write(101, stat(101, 100, "wirelab-engine", 0, 1, policyRR))       // its peer
	write(102, stat(102, 101, "sh", 0, 1, policyRR))                   // the peer's child
	write(200, stat(200, 1, "wirelab-engine.test", 0, 2, policyRR))    // another emulator
	write(201, stat(201, 1, "a (b) c", 0, 50, policyFIFO))             // parentheses in the command
	write(300, stat(300, 2, "migration/0", pfKthread, 99, policyFIFO)) // a kernel thread
	write(400, stat(400, 1, "make", 0, 0, 0))                          // ordinary
	if err := os.MkdirAll(filepath.Join(root, "500"), 0o755); err != nil {
		t.Fatal(err) // a process gone before its stat was read
	}
	// a process whose main thread is ordinary and one of whose threads is real-time (twice: the
	// higher priority is listed), and one with a SCHED_DEADLINE thread
	write(600, stat(600, 1, "pipewire", 0, 0, 0))
	writeTask := func(pid, tid int, line string) {
		d := filepath.Join(root, fmt.Sprint(pid), "task", fmt.Sprint(tid))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeTask(600, 600, stat(600, 1, "pipewire", 0, 0, 0))
	writeTask(600, 601, stat(601, 1, "data-loop", 0, 20, policyFIFO))
	writeTask(600, 602, stat(602, 1, "data-loop", 0, 88, policyRR))
	write(700, stat(700, 1, "dl", 0, 0, 0))
	writeTask(700, 701, stat(701, 1, "dl", 0, 0, policyDeadline))

	got := otherRealtime(root, 100)
	want := []string{
		"a (b) c (201) SCHED_FIFO 50", "dl (700) SCHED_DEADLINE 0", "pipewire (600) SCHED_RR 88",
		"wirelab-engine.test (200) SCHED_RR 2",
	}
	if !slices.Equal(got, want) {
		t.Errorf("otherRealtime = %q, want %q", got, want)
	}
}

func TestParseStatOfThisProcess(t *testing.T) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skip("no /proc")
	}
	s, ok := parseStat(string(b))
	if !ok || s.pid != os.Getpid() || s.ppid != os.Getppid() {
		t.Errorf("parseStat(/proc/self/stat) = %+v, %v; want pid %d ppid %d", s, ok, os.Getpid(), os.Getppid())
	}
}
