package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// maxOtherRealtime bounds Machine.OtherRealtime.
const maxOtherRealtime = 20

// Scheduling policies (sched.h) and the kernel-thread flag (PF_KTHREAD).
const (
	policyFIFO     = 1
	policyRR       = 2
	policyDeadline = 6
	pfKthread      = 0x00200000
)

// policyNames names the real-time policies: otherRealtime reports them, realtimeTicks counts them.
var policyNames = map[int]string{policyFIFO: "SCHED_FIFO", policyRR: "SCHED_RR", policyDeadline: "SCHED_DEADLINE"}

// realtime says whether a user-space task runs under one of the real-time policies.
func (s procStat) realtime() bool { return policyNames[s.policy] != "" && s.flags&pfKthread == 0 }

// procStat is what otherRealtime needs of /proc/PID/stat.
type procStat struct {
	pid, ppid      int
	comm           string
	flags          uint64
	rtPrio, policy int
	cpuTicks       int64 // utime + stime, clock ticks (realtime.go)
}

// parseStat reads one /proc/PID/stat line (the command, in parentheses, may hold spaces and
// parentheses: the fields start after the last ')').
func parseStat(line string) (procStat, bool) {
	open, close := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 0 || close < open {
		return procStat{}, false
	}
	var s procStat
	var err error
	if s.pid, err = strconv.Atoi(strings.TrimSpace(line[:open])); err != nil {
		return procStat{}, false
	}
	s.comm = line[open+1 : close]
	f := strings.Fields(line[close+1:]) // f[0] is field 3 (state)
	if len(f) < 39 {
		return procStat{}, false
	}
	s.ppid, _ = strconv.Atoi(f[1])               // field 4
	s.flags, _ = strconv.ParseUint(f[6], 10, 64) // field 9
	utime, _ := strconv.ParseInt(f[11], 10, 64)  // field 14
	stime, _ := strconv.ParseInt(f[12], 10, 64)  // field 15
	s.cpuTicks = utime + stime
	s.rtPrio, _ = strconv.Atoi(f[37]) // field 40
	s.policy, _ = strconv.Atoi(f[38]) // field 41
	return s, true
}

// otherRealtime lists the user-space processes under procRoot (/proc) with a thread that runs
// real-time (SCHED_FIFO, SCHED_RR or SCHED_DEADLINE), other than self and its descendants (the
// benchmark's peers): other emulators, say. The policy lives per thread — a process may make only
// one thread real-time — so every task of a process is read (/proc/PID/task/TID/stat) and the
// process is listed once, with its highest real-time priority. Each is "command (pid) POLICY prio",
// sorted.
func otherRealtime(procRoot string, self int) []string {
	dirs, _ := filepath.Glob(filepath.Join(procRoot, "[0-9]*"))
	stats := map[int]procStat{}
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		if s, ok := parseStat(string(b)); ok {
			stats[s.pid] = s
		}
	}
	ours := func(pid int) bool {
		for hops := 0; pid > 1 && hops < 64; hops++ {
			if pid == self {
				return true
			}
			pid = stats[pid].ppid
		}
		return false
	}
	var out []string
	for pid, s := range stats {
		if s.flags&pfKthread != 0 || ours(pid) {
			continue
		}
		best, found := s, policyNames[s.policy] != ""
		tasks, _ := filepath.Glob(filepath.Join(procRoot, strconv.Itoa(pid), "task", "[0-9]*", "stat"))
		for _, path := range tasks {
			b, err := os.ReadFile(path)
			if err != nil {
				continue // the thread ended meanwhile
			}
			t, ok := parseStat(string(b))
			if !ok || !t.realtime() {
				continue
			}
			if !found || t.rtPrio > best.rtPrio {
				best, found = t, true
			}
		}
		if found {
			out = append(out, fmt.Sprintf("%s (%d) %s %d", s.comm, pid, policyNames[best.policy], best.rtPrio))
		}
	}
	slices.Sort(out)
	return out
}

// noteOtherRealtime adds the real-time processes running now to Machine.OtherRealtime.
func (b *linkBench) noteOtherRealtime() { b.res.Machine.noteOtherRealtime() }

// noteOtherRealtime adds the real-time processes running now to m.OtherRealtime (bench link's
// and bench loadgen's machine).
func (m *Machine) noteOtherRealtime() {
	for _, p := range otherRealtime("/proc", os.Getpid()) {
		if len(m.OtherRealtime) < maxOtherRealtime && !slices.Contains(m.OtherRealtime, p) {
			m.OtherRealtime = append(m.OtherRealtime, p)
		}
	}
}
