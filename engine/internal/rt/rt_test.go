package rt

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/wirelab/wirelab/engine/internal/roottest"
)

func policyOf(t *testing.T, pid string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + pid + "/sched")
	if err != nil {
		t.Skip(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "policy") {
			return strings.TrimSpace(l[strings.Index(l, ":")+1:])
		}
	}
	return ""
}

func TestEnableRestore(t *testing.T) {
	roottest.Require(t) // real-time scheduling: a root test (CAP_SYS_NICE), as make test classifies them
	restore, ok := Enable(1)
	if !ok {
		restore()
		t.Skip("real-time scheduling not permitted")
	}
	if p := policyOf(t, "self"); p != "2" {
		t.Errorf("policy %q while enabled, want 2 (SCHED_RR)", p)
	}
	// Children start with normal scheduling (SCHED_RESET_ON_FORK).
	out, err := exec.Command("sh", "-c", "grep ^policy /proc/$$/sched").Output()
	if err == nil && !strings.Contains(string(out), ": 0") && !strings.HasSuffix(strings.TrimSpace(string(out)), "0") {
		t.Errorf("child: %s", out)
	}
	inner, _ := Enable(1) // nested
	inner()
	if p := policyOf(t, "self"); p != "2" {
		t.Errorf("policy %q after the inner restore, want 2", p)
	}
	restore()
	restore() // idempotent
	if p := policyOf(t, "self"); p != "0" {
		t.Errorf("policy %q after restore, want 0", p)
	}
}
