package netns

import (
	"encoding/json"
	"errors"
	"fmt"
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

// haltPollDir is the haltpoll governor's parameters, hostDir HostDir (variables for tests).
var (
	haltPollDir = "/sys/module/haltpoll/parameters"
	hostDir     = HostDir
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
// link's machine).
type HaltPollFact struct {
	// Ns is guest_halt_poll_ns while the run held it; WasNs the machine's own value before the
	// first holder (what is restored).
	Ns    int64 `json:"ns"`
	WasNs int64 `json:"was_ns"`
	// Held: the run holds the window (false: the machine's own value already reached it, or the
	// run was told to leave it alone — then Ns is the machine's value).
	Held bool `json:"held"`
}

// haltPollRecord is HostDir/haltpoll.json: who holds the window, at what value, and the machine's
// own value before the first of them.
type haltPollRecord struct {
	Was     int64            `json:"was_ns"`
	Holders map[string]int64 `json:"holders"` // run id → the window it asked for (ns)
}

func haltPollPath() string { return filepath.Join(hostDir, "haltpoll.json") }

// lockHost takes the host records' lock (flock on HostDir/lock) and returns its release.
func lockHost() (func(), error) {
	if err := os.MkdirAll(hostDir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(hostDir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
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

func writeHaltPollNs(ns int64) error {
	return os.WriteFile(filepath.Join(haltPollDir, "guest_halt_poll_ns"), []byte(strconv.FormatInt(ns, 10)), 0)
}

// HaltPollDriver reports whether this machine's idle vCPUs are governed by haltpoll.
func HaltPollDriver() bool {
	_, err := readHaltPollNs()
	return err == nil
}

// holdHaltPoll makes run id a holder of the window at want (> 0) and applies the largest of the
// holders' windows and the machine's own. nil, nil when the machine has no haltpoll driver.
func holdHaltPoll(id string, want time.Duration) (*HaltPollFact, error) {
	cur, err := readHaltPollNs()
	if err != nil {
		return nil, nil // no haltpoll driver (bare metal, another cpuidle driver): nothing to hold
	}
	if want <= 0 {
		return &HaltPollFact{Ns: cur, WasNs: cur}, nil
	}
	unlock, err := lockHost()
	if err != nil {
		return nil, err
	}
	defer unlock()
	rec, err := readHaltPollRecord()
	if err != nil {
		return nil, err
	}
	if rec == nil {
		rec = &haltPollRecord{Was: cur, Holders: map[string]int64{}}
	}
	rec.Holders[id] = int64(want)
	if err := writeHaltPollRecord(rec); err != nil {
		return nil, err
	}
	ns := rec.window()
	if ns != cur {
		if err := writeHaltPollNs(ns); err != nil {
			return nil, fmt.Errorf("guest_halt_poll_ns: %w", err)
		}
	}
	return &HaltPollFact{Ns: ns, WasNs: rec.Was, Held: true}, nil
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
	var rec haltPollRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", haltPollPath(), err)
	}
	if rec.Holders == nil {
		rec.Holders = map[string]int64{}
	}
	return &rec, nil
}

func writeHaltPollRecord(rec *haltPollRecord) error {
	b, _ := json.MarshalIndent(rec, "", "  ")
	return atomicfile.WriteFile(haltPollPath(), append(b, '\n'), 0o644)
}

// releaseHaltPoll drops the holders for which drop is true: the window shrinks to what the rest
// hold, and when none is left the machine's own value is restored and the record removed.
func releaseHaltPoll(drop func(id string) bool) error {
	unlock, err := lockHost()
	if err != nil {
		return err
	}
	defer unlock()
	rec, err := readHaltPollRecord()
	if err != nil || rec == nil {
		return err
	}
	n := len(rec.Holders)
	for id := range rec.Holders {
		if drop(id) {
			delete(rec.Holders, id)
		}
	}
	if len(rec.Holders) == n {
		return nil
	}
	if err := writeHaltPollNs(rec.window()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("restore guest_halt_poll_ns: %w", err)
	}
	if len(rec.Holders) > 0 {
		return writeHaltPollRecord(rec)
	}
	if err := os.Remove(haltPollPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// gcHaltPoll drops the holds of runs that are not live (live: the ids of live runs).
func gcHaltPoll(live map[string]bool, rep *GCReport) error {
	if _, err := os.Stat(haltPollPath()); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var dropped []string
	err := releaseHaltPoll(func(id string) bool {
		if live[id] {
			return false
		}
		dropped = append(dropped, id)
		return true
	})
	for _, id := range dropped {
		rep.Removed = append(rep.Removed, "guest_halt_poll_ns hold of "+id)
	}
	return err
}
