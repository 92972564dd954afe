package loadgen

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// A LimitError ends a run the moment a virtual user's connection fails on a limit of the machine
// the generator runs on — open files, local ports, socket memory — rather than of the server under
// test: every page timed after it would measure the generator's machine, and a run that went on
// would count its failures as the server's errors (docs/loadtest.md, "Limits of the generator's
// machine").
type LimitError struct {
	Limit string // which limit, with its value: "the open-files limit (RLIMIT_NOFILE 20000)"
	Hint  string // how to raise it
	Err   error  // the failure that reached it
	// ActiveVUs and OpenConnections when it was reached (OpenConnections −1: not counted).
	ActiveVUs       int64
	OpenConnections int64
}

func (e *LimitError) Error() string {
	at := fmt.Sprintf("%d active VUs", e.ActiveVUs)
	if e.OpenConnections >= 0 {
		at = fmt.Sprintf("%d open connections, %s", e.OpenConnections, at)
	}
	return fmt.Sprintf("stopped: the generator's machine reached %s at %s (%v); %s", e.Limit, at, e.Err, e.Hint)
}

func (e *LimitError) Unwrap() error { return e.Err }

// machineLimit is the limit of this machine err reports (nil if it reports none): the caller fills
// in the counts.
func machineLimit(err error) *LimitError {
	if err == nil {
		return nil
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return nil
	}
	le := &LimitError{Err: err, OpenConnections: -1}
	switch errno {
	case syscall.EMFILE:
		var rl unix.Rlimit
		_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &rl)
		le.Limit = fmt.Sprintf("the process's open-files limit (RLIMIT_NOFILE %d)", rl.Cur)
		le.Hint = "raise the hard limit (LimitNOFILE= in a systemd unit, /etc/security/limits.conf, prlimit) or spread the VUs over more generators; without --max-open-files the generator raises its soft limit to the hard one itself, and the hard one to fs.nr_open where it holds CAP_SYS_RESOURCE (docs/loadtest.md)"
	case syscall.ENFILE:
		le.Limit = fmt.Sprintf("the system's open-files limit (fs.file-max %s)", sysctl("fs/file-max"))
		le.Hint = "raise it: sysctl -w fs.file-max=N"
	case syscall.EADDRNOTAVAIL:
		le.Limit = fmt.Sprintf("its local ports (net.ipv4.ip_local_port_range %s)", sysctl("net/ipv4/ip_local_port_range"))
		le.Hint = `widen the range (sysctl -w net.ipv4.ip_local_port_range="1024 65535"), or give the client more addresses and open the connections from them in turn (loadgen --source IP,…): each has its own range per server address and port`
	case syscall.ENOBUFS, syscall.ENOMEM:
		le.Limit = "its socket memory (" + errno.Error() + ")"
		le.Hint = "raise net.core.wmem_max/rmem_max and net.ipv4.tcp_mem, or run fewer VUs per machine"
	default:
		return nil
	}
	return le
}

// sysctl is the value of /proc/sys/<name>, whitespace collapsed ("?" if unreadable).
func sysctl(name string) string {
	data, err := os.ReadFile("/proc/sys/" + name)
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(data)), " ")
}

// RaiseOpenFiles raises this process's RLIMIT_NOFILE as far as the machine allows: the soft limit
// to the hard one, and — with CAP_SYS_RESOURCE — both to fs.nr_open (a container may withhold the
// capability even from root). want > 0 instead sets the soft limit to want (at most the hard one):
// a cap on the generator's open files on purpose (--max-open-files). It returns the soft limit now
// in force.
func RaiseOpenFiles(want uint64) (uint64, error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 0, err
	}
	if want > 0 {
		next := unix.Rlimit{Cur: min(want, rl.Max), Max: rl.Max}
		return next.Cur, unix.Setrlimit(unix.RLIMIT_NOFILE, &next)
	}
	if n, err := strconv.ParseUint(sysctl("fs/nr_open"), 10, 64); err == nil && n > rl.Max {
		if unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: n, Max: n}) == nil {
			return n, nil
		}
	}
	next := unix.Rlimit{Cur: rl.Max, Max: rl.Max}
	return next.Cur, unix.Setrlimit(unix.RLIMIT_NOFILE, &next)
}

// GCPercent is the Go collector's target (GOGC) the generator runs spec with (the environment's
// GOGC wins). VUs that think (closed model, mean think time > 0) spend most of the run idle,
// holding their connections' state and allocating little: the heap is that state, and GOGC 100's
// headroom — the next collection at twice the live heap — was the largest share of the memory per
// VU (docs/loadtest.md, "Memory per VU"); ThinkingGCPercent halves it for a few more collections
// of a slowly growing heap. VUs without think time (the pages part of bench loadgen, a stress
// test) allocate fast over a small heap — a few connections' state —, where the collector's work
// per request is the cost: StressGCPercent collects a quarter as often. The open model keeps
// Go's default.
func GCPercent(s *Spec) int {
	switch {
	case s.Scenario.Model == "open":
		return 100
	case s.Think.MeanS > 0:
		return ThinkingGCPercent
	default:
		return StressGCPercent
	}
}

// The collector's targets of GCPercent.
const (
	ThinkingGCPercent = 50
	StressGCPercent   = 400
)
