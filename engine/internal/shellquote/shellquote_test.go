package shellquote

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestJoin(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"wirelab-engine", "shell", "--net", "rtt=100ms,bw=1mbit,loss=0.5%"}, "wirelab-engine shell --net rtt=100ms,bw=1mbit,loss=0.5%"},
		{[]string{"echo", ""}, "echo ''"},
		{[]string{"sh", "-c", "echo it's $HOME"}, `sh -c 'echo it'\''s $HOME'`},
	} {
		if got := Join(tc.args); got != tc.want {
			t.Errorf("Join(%q) = %s, want %s", tc.args, got, tc.want)
		}
	}
}

// TestJoinRoundTrips: a shell splits the joined text back into the same arguments.
func TestJoinRoundTrips(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	args := []string{"a b", "", "it's", `back\slash`, "$HOME", "*", "tab\there", "new\nline", "ünïcode"}
	out, err := exec.Command(sh, "-c", `for a in `+Join(args)+`; do printf '%s\0' "$a"; done`).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if !slices.Equal(got, args) {
		t.Errorf("shell read %q, want %q", got, args)
	}
}
