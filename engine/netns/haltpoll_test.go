package netns

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/internal/roottest"
)

// fakeHaltPoll points the haltpoll parameters and the host records at a temporary directory, the
// machine's window starting at was ("" = no haltpoll driver).
func fakeHaltPoll(t *testing.T, was string) (read func() string) {
	t.Helper()
	params, host := t.TempDir(), t.TempDir()
	oldParams, oldHost := haltPollDir, hostDir
	haltPollDir, hostDir = params, host
	t.Cleanup(func() { haltPollDir, hostDir = oldParams, oldHost })
	p := filepath.Join(params, "guest_halt_poll_ns")
	if was != "" {
		if err := os.WriteFile(p, []byte(was+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return func() string {
		b, _ := os.ReadFile(p)
		return strings.TrimSpace(string(b))
	}
}

func TestHaltPollHoldsTheLargestAndRestoresAfterTheLast(t *testing.T) {
	read := fakeHaltPoll(t, "0")
	a, err := holdHaltPoll("aaaaaaaa", 50*time.Microsecond)
	if err != nil || a == nil || !a.Held || a.Ns != 50000 || a.WasNs != 0 {
		t.Fatalf("first hold: %+v, %v", a, err)
	}
	b, err := holdHaltPoll("bbbbbbbb", 200*time.Microsecond)
	if err != nil || b.Ns != 200000 || b.WasNs != 0 {
		t.Fatalf("second hold: %+v, %v", b, err)
	}
	if got := read(); got != "200000" {
		t.Fatalf("window with both holders %s, want 200000", got)
	}
	if err := releaseHaltPoll(func(id string) bool { return id == "bbbbbbbb" }); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "50000" {
		t.Fatalf("window after the larger holder left %s, want the other's 50000", got)
	}
	if err := releaseHaltPoll(func(id string) bool { return id == "aaaaaaaa" }); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "0" {
		t.Fatalf("window after the last holder %s, want the machine's own 0", got)
	}
	if _, err := os.Stat(haltPollPath()); !os.IsNotExist(err) {
		t.Fatalf("record left after the last holder: %v", err)
	}
}

func TestHaltPollNeverLowersTheMachinesOwn(t *testing.T) {
	read := fakeHaltPoll(t, "500000")
	f, err := holdHaltPoll("aaaaaaaa", 200*time.Microsecond)
	if err != nil || f.Ns != 500000 || f.WasNs != 500000 {
		t.Fatalf("hold below the machine's value: %+v, %v", f, err)
	}
	if got := read(); got != "500000" {
		t.Fatalf("window %s, want the machine's 500000 kept", got)
	}
}

func TestHaltPollWithoutDriverOrWhenLeftAlone(t *testing.T) {
	fakeHaltPoll(t, "")
	if f, err := holdHaltPoll("aaaaaaaa", DefaultHaltPoll); f != nil || err != nil {
		t.Fatalf("no driver: %+v, %v; want nothing held", f, err)
	}
	read := fakeHaltPoll(t, "0")
	f, err := holdHaltPoll("aaaaaaaa", 0)
	if err != nil || f == nil || f.Held || f.Ns != 0 {
		t.Fatalf("left alone: %+v, %v", f, err)
	}
	if _, err := os.Stat(haltPollPath()); !os.IsNotExist(err) || read() != "0" {
		t.Fatalf("left alone, yet a record or a change: %v %s", err, read())
	}
}

// A killed run's hold is dropped by GC (which knows the live runs by their state files), and the
// machine's value comes back once no live run holds.
func TestGCDropsDeadRunsHaltPoll(t *testing.T) {
	read := fakeHaltPoll(t, "0")
	for _, id := range []string{"dead0001", "live0001"} {
		if _, err := holdHaltPoll(id, DefaultHaltPoll); err != nil {
			t.Fatal(err)
		}
	}
	var rep GCReport
	if err := gcHaltPoll(map[string]bool{"live0001": true}, &rep); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "200000" {
		t.Fatalf("window %s while a live run holds it, want 200000", got)
	}
	if len(rep.Removed) != 1 || !strings.Contains(rep.Removed[0], "dead0001") {
		t.Fatalf("GC report %v, want the dead run's hold", rep.Removed)
	}
	if err := gcHaltPoll(map[string]bool{}, &rep); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "0" {
		t.Fatalf("window %s after GC with no live holder, want 0", got)
	}
}

func TestParseHaltPoll(t *testing.T) {
	for in, want := range map[string]time.Duration{"0": 0, "200us": 200 * time.Microsecond, "1ms": time.Millisecond} {
		if got, err := ParseHaltPoll(in); err != nil || got != want {
			t.Errorf("ParseHaltPoll(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "200", "-1us", "11ms", "fast"} {
		if _, err := ParseHaltPoll(in); err == nil || !strings.Contains(err.Error(), in) {
			t.Errorf("ParseHaltPoll(%q): %v; want an error naming the value", in, err)
		}
	}
	t.Setenv(HaltPollEnv, "bogus")
	if _, err := HaltPollFromEnv(); err == nil || !strings.Contains(err.Error(), HaltPollEnv) {
		t.Errorf("HaltPollFromEnv with a bad value: %v; want an error naming %s", err, HaltPollEnv)
	}
	t.Setenv(HaltPollEnv, "0")
	if d, err := HaltPollFromEnv(); d != 0 || err != nil {
		t.Errorf("HaltPollFromEnv with 0: %v, %v; want 0 (left alone)", d, err)
	}
}

// Through a topology's life: Create holds the window, a killed run's hold goes with its other
// leftovers (GCOwner, as `wirelab-engine gc --owner`), and the last Close restores the machine's
// value. The haltpoll parameters are a temporary file here, not the machine's.
func TestTopologyHoldsHaltPollRoot(t *testing.T) {
	read := fakeHaltPoll(t, "0")
	roottest.RequireTUN(t)
	live, err := Create(Config{HaltPoll: 200 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if f := live.HaltPoll(); f == nil || !f.Held || f.Ns != 200000 || f.WasNs != 0 || read() != "200000" {
		t.Fatalf("created: fact %+v, window %s; want 200000 held", f, read())
	}
	dead := deadRun(t)
	if _, err := holdHaltPoll(dead.ID, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "1000000" {
		t.Fatalf("window %s with the dead run's hold, want 1000000", got)
	}
	if _, err := GCOwner(dead.PID); err != nil {
		t.Fatal(err)
	}
	assertGone(t, dead.ID)
	if got := read(); got != "200000" {
		t.Fatalf("window %s after gc of the dead run, want the live run's 200000", got)
	}
	if err := live.Close(); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "0" {
		t.Fatalf("window %s after the last Close, want the machine's 0", got)
	}
	if _, err := os.Stat(live.StatePath()); !os.IsNotExist(err) {
		t.Fatalf("state file after Close: %v", err)
	}
}
