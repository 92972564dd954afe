// Package cgroup measures a process tree — a server under test and every process it forks — with
// a control group of its own: CPU time (user + system, of live and exited members), memory in use
// and its peak, and the members (processes, threads). It works with the hierarchy the machine has:
// cgroup v2 when the unified hierarchy offers the cpu and memory controllers, else cgroup v1's
// cpuacct and memory controllers (this project's CI machine: v1, its v2 mount has only hugetlb).
//
// Groups are created below the cgroup this process is in (delegation: never above it), named by
// the caller (wirelab-<run id>-<what>); Remove kills what is left in a group and removes it. The
// paths a group uses are returned by Paths, so that a run can record them for garbage collection
// (netns state files; GC removes the groups of dead runs with RemovePath).
package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Root is where the hierarchies are mounted.
const Root = "/sys/fs/cgroup"

// Source says how a group measures: "cgroup-v2", "cgroup-v1".
type Source string

// The sources.
const (
	V2 Source = "cgroup-v2"
	V1 Source = "cgroup-v1"
)

// NamePattern is what a group's name must look like (it is a path element created as root).
var NamePattern = regexp.MustCompile(`^wirelab-[0-9a-f]{8}-[a-z0-9-]{1,24}$`)

// Group is one control group (v2) or one directory in each of v1's cpuacct and memory hierarchies.
type Group struct {
	source Source
	v2     string // the group's directory (v2)
	cpu    string // v1 cpuacct directory
	mem    string // v1 memory directory
}

// Usage is what a group has used so far.
type Usage struct {
	Source          Source `json:"source"`
	CPUNs           int64  `json:"cpu_ns"`            // user + system CPU of every member, live or exited
	MemoryBytes     int64  `json:"memory_bytes"`      // memory charged now (anonymous + page cache the members brought in)
	MemoryPeakBytes int64  `json:"memory_peak_bytes"` // highest MemoryBytes since the group was made or ResetPeak
	Processes       int    `json:"processes"`
	Threads         int    `json:"threads"`
}

// Available reports which source New would use, or why none can be used.
func Available() (Source, error) {
	if ok, _ := v2Usable(); ok {
		return V2, nil
	}
	for _, c := range []string{"cpuacct", "memory"} {
		if _, err := v1Dir(c); err != nil {
			return "", fmt.Errorf("cgroup: neither a v2 hierarchy with cpu and memory nor v1 %s: %w", c, err)
		}
	}
	return V1, nil
}

// v2Usable reports whether the unified hierarchy has the cpu and memory controllers.
func v2Usable() (bool, string) {
	for _, mount := range []string{Root, filepath.Join(Root, "unified")} {
		b, err := os.ReadFile(filepath.Join(mount, "cgroup.controllers"))
		if err != nil {
			continue
		}
		ctl := strings.Fields(string(b))
		if contains(ctl, "cpu") && contains(ctl, "memory") {
			return true, mount
		}
	}
	return false, ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ownPath returns this process's cgroup path in the hierarchy named by its controller (v1) or
// "" (v2).
func ownPath(controller string) (string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if controller == "" && parts[0] == "0" {
			return parts[2], nil
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == controller {
				return parts[2], nil
			}
		}
	}
	return "", fmt.Errorf("cgroup: %q not in /proc/self/cgroup", controller)
}

// v1Dir is the directory of this process's cgroup in a v1 controller's hierarchy (mounted at
// Root/<controller>, or at Root/cpu,cpuacct where cpu and cpuacct share one).
func v1Dir(controller string) (string, error) {
	own, err := ownPath(controller)
	if err != nil {
		return "", err
	}
	mounts := []string{filepath.Join(Root, controller)}
	if controller == "cpuacct" {
		mounts = append(mounts, filepath.Join(Root, "cpu,cpuacct"))
	}
	for _, mount := range mounts {
		if st, err := os.Stat(filepath.Join(mount, own)); err == nil && st.IsDir() {
			return filepath.Join(mount, own), nil
		}
	}
	return "", fmt.Errorf("cgroup: no %s hierarchy at %s", controller, Root)
}

// plan says where New would create the group name.
func plan(name string) (*Group, error) {
	if !NamePattern.MatchString(name) {
		return nil, fmt.Errorf("cgroup: bad name %q", name)
	}
	if ok, mount := v2Usable(); ok {
		own, err := ownPath("")
		if err != nil {
			return nil, err
		}
		return &Group{source: V2, v2: filepath.Join(mount, own, name)}, nil
	}
	cpuBase, err := v1Dir("cpuacct")
	if err != nil {
		return nil, err
	}
	memBase, err := v1Dir("memory")
	if err != nil {
		return nil, err
	}
	return &Group{source: V1, cpu: filepath.Join(cpuBase, name), mem: filepath.Join(memBase, name)}, nil
}

// Plan returns the directories New(name) would create, so that a run can record them before
// they exist.
func Plan(name string) ([]string, error) {
	g, err := plan(name)
	if err != nil {
		return nil, err
	}
	return g.Paths(), nil
}

// New creates the group name below this process's own cgroup.
func New(name string) (*Group, error) {
	g, err := plan(name)
	if err != nil {
		return nil, err
	}
	if g.source == V2 {
		if err := os.Mkdir(g.v2, 0o755); err != nil {
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		return g, nil
	}
	if err := os.Mkdir(g.cpu, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	if err := os.Mkdir(g.mem, 0o755); err != nil {
		os.Remove(g.cpu)
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	return g, nil
}

// Source says how the group measures.
func (g *Group) Source() Source { return g.source }

// Paths are the group's directories (to record for garbage collection).
func (g *Group) Paths() []string {
	if g.source == V2 {
		return []string{g.v2}
	}
	return []string{g.cpu, g.mem}
}

// Add moves a process (with all its threads) into the group; what it forks from then on is in the
// group too.
func (g *Group) Add(pid int) error {
	for _, dir := range g.Paths() {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("cgroup: add %d to %s: %w", pid, dir, err)
		}
	}
	return nil
}

// Usage reads what the group has used.
func (g *Group) Usage() (Usage, error) {
	u := Usage{Source: g.source}
	var err error
	if g.source == V2 {
		var stat map[string]int64
		if stat, err = readKV(filepath.Join(g.v2, "cpu.stat")); err != nil {
			return u, err
		}
		u.CPUNs = stat["usage_usec"] * 1000
		if u.MemoryBytes, err = readInt(filepath.Join(g.v2, "memory.current")); err != nil {
			return u, err
		}
		if u.MemoryPeakBytes, err = readInt(filepath.Join(g.v2, "memory.peak")); err != nil {
			u.MemoryPeakBytes = u.MemoryBytes // memory.peak needs Linux 5.19
		}
	} else {
		if u.CPUNs, err = readInt(filepath.Join(g.cpu, "cpuacct.usage")); err != nil {
			return u, err
		}
		if u.MemoryBytes, err = readInt(filepath.Join(g.mem, "memory.usage_in_bytes")); err != nil {
			return u, err
		}
		if u.MemoryPeakBytes, err = readInt(filepath.Join(g.mem, "memory.max_usage_in_bytes")); err != nil {
			return u, err
		}
	}
	procs, err := readPids(filepath.Join(g.Paths()[0], "cgroup.procs"))
	if err != nil {
		return u, err
	}
	u.Processes = len(procs)
	threads := "tasks"
	if g.source == V2 {
		threads = "cgroup.threads"
	}
	tids, err := readPids(filepath.Join(g.Paths()[0], threads))
	if err != nil {
		return u, err
	}
	u.Threads = len(tids)
	return u, nil
}

// ResetPeak starts a new peak from the memory in use now (v1: max_usage_in_bytes; v2 from Linux
// 6.12: memory.peak). It reports whether the kernel could.
func (g *Group) ResetPeak() bool {
	path := filepath.Join(g.mem, "memory.max_usage_in_bytes")
	if g.source == V2 {
		path = filepath.Join(g.v2, "memory.peak")
	}
	return os.WriteFile(path, []byte("0"), 0) == nil
}

// Kill sends SIGKILL to every process of the group until none is left (or limit passes).
func (g *Group) Kill(limit time.Duration) error { return killAll(g.Paths()[0], limit) }

// Remove kills what is left in the group and removes its directories.
func (g *Group) Remove() error {
	var errs []error
	for _, dir := range g.Paths() {
		if err := RemovePath(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RemovePath kills the processes of the group at dir and removes it: what Remove does, for a
// directory recorded by a run that died (garbage collection). Only a directory below Root whose
// name matches NamePattern is touched; one that does not exist is not an error.
func RemovePath(dir string) error {
	clean := filepath.Clean(dir)
	if !strings.HasPrefix(clean, Root+"/") || !NamePattern.MatchString(filepath.Base(clean)) {
		return fmt.Errorf("cgroup: %s is not a wirelab group", dir)
	}
	if _, err := os.Stat(clean); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := killAll(clean, 5*time.Second); err != nil {
		return err
	}
	// rmdir fails with EBUSY while the kernel is still tearing the last member down.
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := syscall.Rmdir(clean)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("cgroup: remove %s: %w", clean, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// killAll SIGKILLs the processes listed in dir/cgroup.procs until the list is empty. A process
// cannot leave a cgroup by itself, so nothing escapes; pids are re-read each round, so a pid that
// was reused by a process outside the group is never signalled after its reuse is visible.
func killAll(dir string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		pids, err := readPids(filepath.Join(dir, "cgroup.procs"))
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup: %d processes still in %s after %s", len(pids), dir, limit)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(2 * time.Millisecond) // let the kernel reap them before reading the list again
	}
}

func readPids(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

func readKV(path string) (map[string]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 {
			if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				out[f[0]] = n
			}
		}
	}
	return out, nil
}
