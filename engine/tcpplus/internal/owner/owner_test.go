package owner

import (
	"os/exec"
	"testing"
)

func TestParseStartTime(t *testing.T) {
	// Field 2 is the command name in parentheses; it may itself contain ") (" and spaces.
	line := "4242 (evil) (name x) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100 18446744073709551615"
	got, err := ParseStartTime(line)
	if err != nil || got != 987654 {
		t.Fatalf("ParseStartTime = %d, %v; want 987654", got, err)
	}
	for _, bad := range []string{"", "4242 no parens", "1 (x) S 1 2 3"} {
		if _, err := ParseStartTime(bad); err == nil {
			t.Errorf("ParseStartTime(%q) accepted", bad)
		}
	}
}

func TestSelfIsAliveAndAnExitedProcessIsNot(t *testing.T) {
	me, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if !Alive(me) {
		t.Fatal("this process is not alive")
	}
	if Alive(Process{PID: me.PID, Start: me.Start + 1}) {
		t.Error("a different start time (a reused pid) counted as alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if Alive(Process{PID: cmd.Process.Pid, Start: 1}) {
		t.Error("an exited, reaped process counted as alive")
	}
}
