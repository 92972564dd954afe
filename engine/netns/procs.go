package netns

import (
	"errors"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// pidsIn lists the processes whose network namespace is ns (what `ip netns pids` prints).
// self is never listed.
func pidsIn(ns nsID) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		id, err := nsIDOf("/proc/" + e.Name() + "/ns/net")
		if err == nil && id == ns {
			pids = append(pids, pid)
		}
	}
	return pids
}

// terminate stops the given processes: SIGTERM, then SIGKILL for those still alive after grace.
// It waits (without polling sleeps: on pidfds) until each process has exited or been killed.
// Processes are addressed by pidfd, so a recycled pid is never signalled.
func terminate(pids []int, grace time.Duration) {
	type proc struct {
		pid int
		fd  int
	}
	var procs []proc
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // already gone
		}
		procs = append(procs, proc{pid, fd})
	}
	defer func() {
		for _, p := range procs {
			unix.Close(p.fd)
		}
	}()
	signal := func(sig unix.Signal) {
		for _, p := range procs {
			_ = unix.PidfdSendSignal(p.fd, sig, nil, 0)
		}
	}
	// waitExit waits until every pidfd is readable (its process exited) or the deadline passes;
	// it returns the processes still alive.
	waitExit := func(ps []proc, d time.Duration) []proc {
		deadline := time.Now().Add(d)
		for len(ps) > 0 {
			left := time.Until(deadline)
			if left <= 0 {
				break
			}
			fds := make([]unix.PollFd, len(ps))
			for i, p := range ps {
				fds[i] = unix.PollFd{Fd: int32(p.fd), Events: unix.POLLIN}
			}
			ms := int(left/time.Millisecond) + 1
			if _, err := unix.Poll(fds, ms); err != nil && !errors.Is(err, unix.EINTR) {
				break
			}
			var alive []proc
			for i, p := range ps {
				if fds[i].Revents == 0 {
					alive = append(alive, p)
				}
			}
			ps = alive
		}
		return ps
	}
	if len(procs) == 0 {
		return
	}
	signal(unix.SIGTERM)
	alive := waitExit(procs, grace)
	for _, p := range alive {
		_ = unix.PidfdSendSignal(p.fd, unix.SIGKILL, nil, 0)
	}
	waitExit(alive, killWait)
}

// processStartTime is the start time of a process in clock ticks since boot (field 22 of
// /proc/<pid>/stat); with the pid it identifies a process across pid reuse.
func processStartTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may contain spaces: skip past the last ')'.
	i := len(b) - 1
	for i >= 0 && b[i] != ')' {
		i--
	}
	if i < 0 {
		return 0, errors.New("malformed stat")
	}
	fields := splitFields(b[i+1:])
	// After ')' come fields 3, 4, …; field 22 is at index 19.
	if len(fields) < 20 {
		return 0, errors.New("malformed stat")
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

func splitFields(b []byte) []string {
	var out []string
	start := -1
	for i, c := range b {
		if c == ' ' || c == '\n' {
			if start >= 0 {
				out = append(out, string(b[start:i]))
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, string(b[start:]))
	}
	return out
}

// alive reports whether the process pid with the given start time still runs.
func alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	got, err := processStartTime(pid)
	if err != nil {
		return false
	}
	return start == 0 || got == start
}
