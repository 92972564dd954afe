package netns

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/internal/roottest"
)

// fakeHaltPoll points the haltpoll parameters, the cpuidle driver and the host records at a
// temporary directory, the machine's window starting at was ("" = no haltpoll driver).
func fakeHaltPoll(t *testing.T, was string) (read func() string) {
	t.Helper()
	params, host := t.TempDir(), t.TempDir()
	oldParams, oldHost, oldDriver, oldWrite := haltPollDir, hostDir, cpuidleDriverPath, writeHaltPollNs
	haltPollDir, hostDir, cpuidleDriverPath = params, host, filepath.Join(params, "current_driver")
	t.Cleanup(func() {
		haltPollDir, hostDir, cpuidleDriverPath, writeHaltPollNs = oldParams, oldHost, oldDriver, oldWrite
	})
	p := filepath.Join(params, "guest_halt_poll_ns")
	if was != "" {
		if err := os.WriteFile(p, []byte(was+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cpuidleDriverPath, []byte("haltpoll\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return func() string {
		b, _ := os.ReadFile(p)
		return strings.TrimSpace(string(b))
	}
}

// fakeRuns points runLive at a temporary state directory with live runs (owned by this process)
// of the given ids; deadRuns adds runs whose owner is gone.
func fakeRuns(t *testing.T, ids ...string) {
	t.Helper()
	old := liveStateDir
	liveStateDir = t.TempDir()
	t.Cleanup(func() { liveStateDir = old })
	start, err := processStartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if err := createState(liveStateDir, &state{ID: id, PID: os.Getpid(), PIDStart: start}); err != nil {
			t.Fatal(err)
		}
	}
}

func deadRuns(t *testing.T, ids ...string) {
	t.Helper()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if err := createState(liveStateDir, &state{ID: id, PID: dead.Process.Pid, PIDStart: 1}); err != nil {
			t.Fatal(err)
		}
	}
}

func release(t *testing.T, id string) {
	t.Helper()
	if _, err := releaseHaltPoll(func(h string) bool { return h == id }); err != nil {
		t.Fatal(err)
	}
}

func TestHaltPollHoldsTheLargestAndRestoresAfterTheLast(t *testing.T) {
	read := fakeHaltPoll(t, "0")
	fakeRuns(t, "aaaaaaaa", "bbbbbbbb")
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
	release(t, "bbbbbbbb")
	if got := read(); got != "50000" {
		t.Fatalf("window after the larger holder left %s, want the other's 50000", got)
	}
	release(t, "aaaaaaaa")
	if got := read(); got != "0" {
		t.Fatalf("window after the last holder %s, want the machine's own 0", got)
	}
	if _, err := os.Stat(haltPollPath()); !os.IsNotExist(err) {
		t.Fatalf("record left after the last holder: %v", err)
	}
}

func TestHaltPollNeverLowersTheMachinesOwn(t *testing.T) {
	read := fakeHaltPoll(t, "500000")
	fakeRuns(t, "aaaaaaaa")
	f, err := holdHaltPoll("aaaaaaaa", 200*time.Microsecond)
	if err != nil || f.Held || f.Ns != 500000 || f.WasNs != 500000 {
		t.Fatalf("hold below the machine's value: %+v, %v; want not held, the machine's 500000", f, err)
	}
	if got := read(); got != "500000" {
		t.Fatalf("window %s, want the machine's 500000 kept", got)
	}
	release(t, "aaaaaaaa")
	if got := read(); got != "500000" {
		t.Fatalf("window %s after the release, want the machine's 500000", got)
	}
	if _, err := os.Stat(haltPollPath()); !os.IsNotExist(err) {
		t.Fatalf("record left after the last holder: %v", err)
	}
}

func TestHaltPollWithoutDriverOrWhenLeftAlone(t *testing.T) {
	fakeHaltPoll(t, "")
	if f, err := holdHaltPoll("aaaaaaaa", DefaultHaltPoll); f != nil || err != nil {
		t.Fatalf("no driver: %+v, %v; want nothing held", f, err)
	}
	// The haltpoll module's parameters exist, but another cpuidle driver is active.
	read := fakeHaltPoll(t, "0")
	if err := os.WriteFile(cpuidleDriverPath, []byte("acpi_idle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err := holdHaltPoll("aaaaaaaa", DefaultHaltPoll); f != nil || err != nil || read() != "0" {
		t.Fatalf("another cpuidle driver: %+v, %v, window %s; want nothing held", f, err, read())
	}
	read = fakeHaltPoll(t, "0")
	f, err := holdHaltPoll("aaaaaaaa", 0)
	if err != nil || f == nil || f.Held || f.Ns != 0 {
		t.Fatalf("left alone: %+v, %v", f, err)
	}
	if _, err := os.Stat(haltPollPath()); !os.IsNotExist(err) || read() != "0" {
		t.Fatalf("left alone, yet a record or a change: %v %s", err, read())
	}
}

// A killed run's hold is dropped by GC, and the machine's value comes back once no live run holds.
// Liveness is read from each holder's state file under the lock, not from a list of live runs
// taken earlier: a run created after GC listed the states keeps its hold.
func TestGCDropsDeadRunsHaltPoll(t *testing.T) {
	read := fakeHaltPoll(t, "0")
	fakeRuns(t, "dead0001", "cafe0001")
	for _, id := range []string{"dead0001", "cafe0001", "beef0001"} {
		if _, err := holdHaltPoll(id, DefaultHaltPoll); err != nil {
			t.Fatal(err)
		}
	}
	// dead0001's owner dies; beef0001 never had a state file (a run killed before Create's end).
	if err := os.Remove(statePath(liveStateDir, "dead0001")); err != nil {
		t.Fatal(err)
	}
	deadRuns(t, "dead0001")
	var rep GCReport
	if err := gcHaltPoll(&rep); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "200000" {
		t.Fatalf("window %s while a live run holds it, want 200000", got)
	}
	slices.Sort(rep.Removed)
	if len(rep.Removed) != 2 || !strings.Contains(rep.Removed[0], "beef0001") || !strings.Contains(rep.Removed[1], "dead0001") {
		t.Fatalf("GC report %v, want the dead and the gone run's holds", rep.Removed)
	}
	// A run whose state file appeared after GC listed the states keeps its hold.
	if err := createState(liveStateDir, &state{ID: "fade0001", PID: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	if _, err := holdHaltPoll("fade0001", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(statePath(liveStateDir, "cafe0001")); err != nil {
		t.Fatal(err)
	}
	rep = GCReport{}
	if err := gcHaltPoll(&rep); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "1000000" || len(rep.Removed) != 1 || !strings.Contains(rep.Removed[0], "cafe0001") {
		t.Fatalf("window %s, GC report %v; want the late run's 1000000 kept, cafe0001 (state file gone) dropped", got, rep.Removed)
	}
	if err := os.Remove(statePath(liveStateDir, "fade0001")); err != nil {
		t.Fatal(err)
	}
	if err := gcHaltPoll(&rep); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "0" {
		t.Fatalf("window %s after GC with no live holder, want 0", got)
	}
}

// Every hold and release drops the holds of runs that are not live.
func TestHaltPollPrunesDeadHolders(t *testing.T) {
	read := fakeHaltPoll(t, "0")
	fakeRuns(t, "aaaaaaaa", "bbbbbbbb")
	if _, err := holdHaltPoll("aaaaaaaa", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(statePath(liveStateDir, "aaaaaaaa")); err != nil {
		t.Fatal(err)
	}
	f, err := holdHaltPoll("bbbbbbbb", DefaultHaltPoll)
	if err != nil || f.Ns != 200000 || read() != "200000" {
		t.Fatalf("hold next to a dead holder: %+v, %v, window %s; want the dead one's 1 ms dropped", f, err, read())
	}
}

// Holds and releases of many runs at once: every holder sees at least its window while it holds,
// and the machine's own value is back when all are gone (a value read outside the lock could be a
// holder's that was restored meanwhile, recorded as the machine's own).
func TestHaltPollConcurrentHoldAndRelease(t *testing.T) {
	read := fakeHaltPoll(t, "0")
	var ids []string
	for i := range 8 {
		ids = append(ids, fmt.Sprintf("c%07d", i))
	}
	fakeRuns(t, ids...)
	var wg sync.WaitGroup
	errs := make(chan error, len(ids))
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				f, err := holdHaltPoll(id, DefaultHaltPoll)
				if err == nil && (!f.Held || read() != "200000") {
					err = fmt.Errorf("%s holds %+v, window %s", id, f, read())
				}
				if err == nil {
					_, err = releaseHaltPoll(func(h string) bool { return h == id })
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := read(); got != "0" {
		t.Fatalf("window %s after every holder left, want the machine's own 0", got)
	}
}

// A value the machine refuses (read-only /sys, no capability) is no hold and no error: one line
// on stderr, no holder recorded; a release the machine refuses still drops the holder.
func TestHaltPollWriteRefused(t *testing.T) {
	read := fakeHaltPoll(t, "0")
	fakeRuns(t, "aaaaaaaa", "bbbbbbbb")
	write := writeHaltPollNs
	refuse := func(int64) error { return &os.PathError{Op: "open", Path: "guest_halt_poll_ns", Err: unix.EROFS} }
	writeHaltPollNs = refuse
	var warn bytes.Buffer
	haltPollWarn = &warn
	t.Cleanup(func() { haltPollWarn = os.Stderr })
	f, err := holdHaltPoll("aaaaaaaa", DefaultHaltPoll)
	if err != nil || f == nil || f.Held || f.Ns != 0 {
		t.Fatalf("refused hold: %+v, %v; want not held, no error", f, err)
	}
	if lines := strings.Count(warn.String(), "\n"); lines != 1 || !strings.Contains(warn.String(), "guest_halt_poll_ns") {
		t.Fatalf("warning %q, want one line naming guest_halt_poll_ns", warn.String())
	}
	if _, err := os.Stat(haltPollPath()); !os.IsNotExist(err) {
		t.Fatalf("record of a hold never applied: %v", err)
	}
	writeHaltPollNs = write
	if f, err := holdHaltPoll("bbbbbbbb", DefaultHaltPoll); err != nil || !f.Held {
		t.Fatalf("hold: %+v, %v", f, err)
	}
	writeHaltPollNs = refuse
	if _, err := releaseHaltPoll(func(h string) bool { return h == "bbbbbbbb" }); err != nil {
		t.Fatalf("refused restore: %v; want no error", err)
	}
	if _, err := os.Stat(haltPollPath()); !os.IsNotExist(err) || read() != "200000" {
		t.Fatalf("after a refused restore: record %v, window %s; want the record gone", err, read())
	}
}

// A record an engine before applied_ns left (a killed run's) is restored from as that engine would.
func TestHaltPollRecordWithoutApplied(t *testing.T) {
	read := fakeHaltPoll(t, "200000")
	fakeRuns(t)
	if err := os.WriteFile(haltPollPath(), []byte(`{"was_ns": 0, "holders": {"dead0001": 200000}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var rep GCReport
	if err := gcHaltPoll(&rep); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "0" || len(rep.Removed) != 1 {
		t.Fatalf("window %s, GC report %v; want the machine's own 0 restored", got, rep.Removed)
	}
}

// A value someone else set while runs held (an admin, tuned) is theirs: a release leaves it.
func TestHaltPollLeavesAValueSetMeanwhile(t *testing.T) {
	read := fakeHaltPoll(t, "0")
	fakeRuns(t, "aaaaaaaa")
	if _, err := holdHaltPoll("aaaaaaaa", DefaultHaltPoll); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(haltPollDir, "guest_halt_poll_ns"), []byte("300000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	release(t, "aaaaaaaa")
	if got := read(); got != "300000" {
		t.Fatalf("window %s after the release, want the 300000 set meanwhile", got)
	}
	if _, err := os.Stat(haltPollPath()); !os.IsNotExist(err) {
		t.Fatalf("record left: %v", err)
	}
}

func TestParseHaltPoll(t *testing.T) {
	for in, want := range map[string]time.Duration{"0": 0, "200us": 200 * time.Microsecond, "1ms": time.Millisecond} {
		if got, err := ParseHaltPoll(in); err != nil || got != want {
			t.Errorf("ParseHaltPoll(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "200", "-1us", "11ms", "fast"} {
		if _, err := ParseHaltPoll(in); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", in)) || !strings.Contains(err.Error(), MaxHaltPoll.String()) {
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
