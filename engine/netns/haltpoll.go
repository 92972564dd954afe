package netns

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/internal/atomicfile"
)

// Guest halt polling: the one host setting a run changes outside its own namespaces for latency
// (docs/network.md, "Host latency"). On a virtual machine whose cpuidle driver is haltpoll, an idle
// vCPU polls for up to guest_halt_poll_ns before it halts; with 0 (a boot default of some VM
// images) it halts at once, and every packet that wakes the emulator's threads or a peer's on an
// idle vCPU pays a VM exit and the host's wake-up. While a topology exists, its run holds the
// window at at least Config.HaltPoll; the first holder records the machine's own value in
// HostDir/haltpoll.json, the last one restores it, and GC drops the holds of dead runs (restoring
// the value when none is left) — the forwarding holds' scheme (uplink.go) for a machine-wide knob.
// The poll counts as the idle task's time, not the run's (getrusage, /proc/stat idle).

// HostDir holds the records of machine-wide settings runs hold (haltpoll.json and its lock).
const HostDir = StateDir + "/host"

// haltPollDir is the haltpoll governor's parameters, cpuidleDriverPath the active cpuidle driver,
// hostDir HostDir (variables for tests).
var (
	haltPollDir       = "/sys/module/haltpoll/parameters"
	cpuidleDriverPath = "/sys/devices/system/cpu/cpuidle/current_driver"
	hostDir           = HostDir
	liveStateDir      = StateDir // where runLive finds the runs' state files
)

// DefaultHaltPoll is the guest halt-polling window a run holds unless told otherwise (HaltPollEnv,
// `bench link --halt-poll`): longer than the emulator's usual gap between a packet and the next
// wake-up of an idle thread (a reply within a round trip of the loopback stacks), far shorter than
// its 5 ms sleeps, so vCPUs idle between loads still halt.
const DefaultHaltPoll = 200 * time.Microsecond

// HaltPollEnv overrides DefaultHaltPoll for every run of the process: a Go duration ("50us",
// "1ms"); "0" leaves the machine's setting alone.
const HaltPollEnv = "WIRELAB_HALT_POLL"

// MaxHaltPoll bounds the window a run may ask for (the kernel takes any value; beyond a few ms an
// idle vCPU mostly burns the host's CPU).
const MaxHaltPoll = 10 * time.Millisecond

// ParseHaltPoll parses a window as HaltPollEnv and `--halt-poll` take it: a Go duration from 0
// ("leave the machine's setting alone") to MaxHaltPoll.
func ParseHaltPoll(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if s == "0" {
		d, err = 0, nil
	}
	if err != nil || d < 0 || d > MaxHaltPoll {
		return 0, fmt.Errorf("%q is not a halt-polling window; use a duration from 0 (leave the machine's setting) to %v, e.g. 200us", s, MaxHaltPoll)
	}
	return d, nil
}

// HaltPollFromEnv is the window runs hold: HaltPollEnv when set, else DefaultHaltPoll; 0 means
// leave the machine's setting alone.
func HaltPollFromEnv() (time.Duration, error) {
	v, ok := os.LookupEnv(HaltPollEnv)
	if !ok || v == "" {
		return DefaultHaltPoll, nil
	}
	d, err := ParseHaltPoll(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", HaltPollEnv, err)
	}
	return d, nil
}

// HaltPollFact is what a run found and held: its machine facts (the emulator's summary, bench
// link's machine), recorded when Create took the hold.
type HaltPollFact struct {
	// Ns is guest_halt_poll_ns while the run held it; WasNs the machine's own value before the
	// first holder (what is restored).
	Ns    int64 `json:"ns"`
	WasNs int64 `json:"was_ns"`
	// Held: the run's window is above the machine's own and was applied (false: the machine's own
	// value already reaches it, the run was told to leave it alone, or the value could not be
	// written — then Ns is the machine's value).
	Held bool `json:"held"`
}

// haltPollRecord is HostDir/haltpoll.json: who holds the window, the machine's own value before
// the first of them, and the value the holders last applied (a release writes only while the
// machine still runs with it: a value someone else set meanwhile is theirs and left alone).
type haltPollRecord struct {
	Was     int64            `json:"was_ns"`
	Applied int64            `json:"applied_ns"`
	Holders map[string]int64 `json:"holders"` // run id → the window it asked for (ns)
}

func haltPollPath() string { return filepath.Join(hostDir, "haltpoll.json") }

// lockDir takes the lock of the records in dir (flock on dir/lock) and returns its release.
func lockDir(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

func readHaltPollNs() (int64, error) {
	b, err := os.ReadFile(filepath.Join(haltPollDir, "guest_halt_poll_ns"))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// writeHaltPollNs sets guest_halt_poll_ns (a variable for tests: a read-only /sys).
var writeHaltPollNs = func(ns int64) error {
	return os.WriteFile(filepath.Join(haltPollDir, "guest_halt_poll_ns"), []byte(strconv.FormatInt(ns, 10)), 0)
}

// haltPollWarn is where a hold that could not be applied is reported (one line).
var haltPollWarn io.Writer = os.Stderr

// HaltPollDriver reports whether this machine's idle vCPUs are governed by haltpoll: the active
// cpuidle driver (its parameters exist wherever the module is loaded, also under another driver).
func HaltPollDriver() bool {
	b, err := os.ReadFile(cpuidleDriverPath)
	return err == nil && strings.TrimSpace(string(b)) == "haltpoll"
}

// notPermitted: a write the machine refuses (read-only /sys, no capability) — a hold that cannot
// be had, not a failed run.
func notPermitted(err error) bool {
	return errors.Is(err, unix.EROFS) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)
}

// runLive reports whether run id is live: its state file exists and its owner runs (an
// unreadable state file counts as live, left alone as GC leaves it). Create writes the state file
// before it takes any hold, so a hold whose run is not live is a dead run's.
func runLive(id string) bool {
	st, err := readState(statePath(liveStateDir, id))
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	return err != nil || alive(st.PID, st.PIDStart)
}

// holdHaltPoll makes run id a holder of the window at want (> 0) and applies the largest of the
// holders' windows and the machine's own. nil, nil when the machine has no haltpoll driver. A
// value the machine refuses to take is no error: the run goes on without the hold (Held false,
// one line on stderr).
func holdHaltPoll(id string, want time.Duration) (*HaltPollFact, error) {
	if !HaltPollDriver() {
		return nil, nil // bare metal, another cpuidle driver: nothing to hold
	}
	if want <= 0 {
		cur, err := readHaltPollNs()
		if err != nil {
			return nil, fmt.Errorf("guest_halt_poll_ns: %w", err)
		}
		return &HaltPollFact{Ns: cur, WasNs: cur}, nil
	}
	unlock, err := lockDir(hostDir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Read under the lock: a value read before it may be a holder's that has since been restored.
	cur, err := readHaltPollNs()
	if err != nil {
		return nil, fmt.Errorf("guest_halt_poll_ns: %w", err)
	}
	rec, err := readHaltPollRecord()
	if err != nil {
		return nil, err
	}
	if rec == nil {
		rec = &haltPollRecord{Was: cur, Applied: cur, Holders: map[string]int64{}}
	}
	rec.prune(func(h string) bool { return h != id && !runLive(h) })
	if cur != rec.Applied {
		rec.Was, rec.Applied = cur, cur // set by someone else meanwhile: the machine's own now
	}
	rec.Holders[id] = int64(want)
	ns := rec.window()
	if ns != cur {
		if err := writeHaltPollNs(ns); err != nil {
			fmt.Fprintf(haltPollWarn, "wirelab: guest_halt_poll_ns left at %d ns, not held at %d: %v\n", cur, ns, err)
			delete(rec.Holders, id)
			return &HaltPollFact{Ns: cur, WasNs: rec.Was}, rec.save()
		}
		rec.Applied = ns
	}
	if err := rec.save(); err != nil {
		if ns != cur {
			_ = writeHaltPollNs(cur)
		}
		return nil, err
	}
	return &HaltPollFact{Ns: ns, WasNs: rec.Was, Held: int64(want) > rec.Was}, nil
}

// prune drops the holders for which drop is true and returns their ids.
func (r *haltPollRecord) prune(drop func(id string) bool) (dropped []string) {
	for id := range r.Holders {
		if drop(id) {
			delete(r.Holders, id)
			dropped = append(dropped, id)
		}
	}
	return dropped
}

// save writes the record, or removes it when no holder is left.
func (r *haltPollRecord) save() error {
	if len(r.Holders) > 0 {
		return writeHaltPollRecord(r)
	}
	if err := os.Remove(haltPollPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// window is what the machine runs with while rec's holders hold: the largest asked for, never
// below the machine's own.
func (r *haltPollRecord) window() int64 {
	ns := r.Was
	for _, v := range r.Holders {
		ns = max(ns, v)
	}
	return ns
}

func readHaltPollRecord() (*haltPollRecord, error) {
	b, err := os.ReadFile(haltPollPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rec := haltPollRecord{Applied: -1}
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", haltPollPath(), err)
	}
	if rec.Holders == nil {
		rec.Holders = map[string]int64{}
	}
	if rec.Applied < 0 {
		rec.Applied = rec.window() // a record of an engine before applied_ns: it always applied the window
	}
	return &rec, nil
}

func writeHaltPollRecord(rec *haltPollRecord) error {
	b, _ := json.MarshalIndent(rec, "", "  ")
	return atomicfile.WriteFile(haltPollPath(), append(b, '\n'), 0o644)
}

// releaseHaltPoll drops the holders for which drop is true and those of runs that are not live
// (runLive), and returns their ids: the window shrinks to what the rest hold, and when none is
// left the machine's own value is restored and the record removed. The value is written only while
// the machine still runs with what the holders applied; one someone else set meanwhile is left.
func releaseHaltPoll(drop func(id string) bool) ([]string, error) {
	unlock, err := lockDir(hostDir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rec, err := readHaltPollRecord()
	if err != nil || rec == nil {
		return nil, err
	}
	dropped := rec.prune(func(id string) bool { return drop(id) || !runLive(id) })
	if len(dropped) == 0 {
		return nil, nil
	}
	cur, err := readHaltPollNs()
	switch {
	case err != nil:
		// The driver went (module unloaded): nothing to restore.
	case cur != rec.Applied:
		rec.Was, rec.Applied = cur, cur // someone else's value now: left as it is
	default:
		if ns := rec.window(); ns != cur {
			if err := writeHaltPollNs(ns); err != nil && !notPermitted(err) && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("restore guest_halt_poll_ns: %w", err)
			} else if err == nil {
				rec.Applied = ns
			}
		}
	}
	return dropped, rec.save()
}

// gcHaltPoll drops the holds of runs that are not live. Each holder's liveness is read under the
// host lock from its state file (runLive), not from GC's earlier list of states: a run created
// after that list was taken holds with a state file GC has not seen.
func gcHaltPoll(rep *GCReport) error {
	if _, err := os.Stat(haltPollPath()); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	dropped, err := releaseHaltPoll(func(string) bool { return false })
	for _, id := range dropped {
		rep.Removed = append(rep.Removed, "guest_halt_poll_ns hold of "+id)
	}
	return err
}
