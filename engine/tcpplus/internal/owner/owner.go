// Package owner identifies processes in state files so that a later process can tell whether
// the owner of a leftover object is still alive: pid plus start time, since pids are reused.
package owner

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Process is one process, as recorded in a state file.
type Process struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"` // start time, clock ticks since boot (/proc/PID/stat field 22)
}

// Self is the calling process.
func Self() (Process, error) {
	pid := os.Getpid()
	start, err := startTime(pid)
	if err != nil {
		return Process{}, fmt.Errorf("owner: %w", err)
	}
	return Process{PID: pid, Start: start}, nil
}

// Alive reports whether p still runs: a process with its pid exists and started when p did.
func Alive(p Process) bool {
	start, err := startTime(p.PID)
	return err == nil && start == p.Start
}

func startTime(pid int) (uint64, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return ParseStartTime(string(raw))
}

// ParseStartTime extracts the start time from a /proc/PID/stat line. The command name (field 2)
// may contain spaces and parentheses, so fields are counted from the last ')'.
func ParseStartTime(stat string) (uint64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat line")
	}
	fields := strings.Fields(stat[i+1:])
	// fields[0] is field 3 (state), so field 22 (starttime) is fields[19].
	if len(fields) < 20 {
		return 0, fmt.Errorf("short /proc stat line: %d fields after the command name", len(fields))
	}
	v, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc stat starttime %q: %w", fields[19], err)
	}
	return v, nil
}
