package browser

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Process ownership. Chromium is a tree of processes (browser, zygote, renderer, network and GPU
// utilities). The launcher:
//   - starts the browser in a process group of its own with a parent-death SIGKILL (tied to the
//     locked OS thread that started it, see chromedp's startCmd);
//   - makes this process a child subreaper (PR_SET_CHILD_SUBREAPER), so that a Chromium child
//     orphaned by the browser's death is re-parented here rather than to init;
//   - on every exit path (success, error, timeout, cancel) kills the process group and then every
//     remaining descendant of this process that Chromium started, found through
//     /proc/<pid>/task/*/children and signalled through pidfds (never by name), reaps them, and
//     removes the profile directory.
// A process killed with SIGKILL cannot clean up; its profile directory (named after its pid) is
// removed by GCProfiles (`wirelab-engine gc`), and in a trial the namespace's teardown kills
// whatever ran in it.

var subreaperOnce sync.Once

// browsers are the browser processes this process runs now: another load's browser (and its
// subtree) is never taken for an orphan.
var browsers = struct {
	sync.Mutex
	pids map[int]bool
}{pids: map[int]bool{}}

func trackBrowser(pid int, live bool) {
	browsers.Lock()
	defer browsers.Unlock()
	if live {
		browsers.pids[pid] = true
	} else {
		delete(browsers.pids, pid)
	}
}

func otherBrowser(pid, own int) bool {
	browsers.Lock()
	defer browsers.Unlock()
	return pid != own && browsers.pids[pid]
}

func becomeSubreaper() {
	subreaperOnce.Do(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) })
}

// ProfilePrefix starts the name of every per-load profile directory: wirelab-chromium-<pid>-….
const ProfilePrefix = "wirelab-chromium-"

// newProfile creates an empty profile directory with the preferences a lab load needs.
func newProfile(parent string) (string, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	dir, err := os.MkdirTemp(parent, fmt.Sprintf("%s%d-", ProfilePrefix, os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("chromium profile: %w", err)
	}
	// network_prediction_options 2 = never: no DNS prefetching and no preconnects (study E
	// disabled DNS prefetching so that lookups are part of the measured load).
	prefs := `{"net":{"network_prediction_options":2},"dns_prefetching":{"enabled":false},` +
		`"browser":{"check_default_browser":false},"safebrowsing":{"enabled":false}}`
	if err := os.MkdirAll(filepath.Join(dir, "Default"), 0o700); err == nil {
		err = os.WriteFile(filepath.Join(dir, "Default", "Preferences"), []byte(prefs), 0o600)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("chromium profile: %w", err)
	}
	return dir, nil
}

// killTree kills the browser's process group and every process below this one that belongs to the
// browser: its descendants, and Chromium processes re-parented here after it started (never
// another live load's browser). It waits until they are gone and reaps the re-parented ones
// (the browser itself is reaped by os/exec).
func killTree(browserPID int, started time.Time) {
	if browserPID > 0 {
		_ = unix.Kill(-browserPID, unix.SIGKILL) // the group (pgid = browser pid)
	}
	self := os.Getpid()
	for range 100 { // until none is left (a child forking meanwhile may add one)
		procs := chromiumDescendants(browserPID, started)
		if len(procs) == 0 {
			return
		}
		for _, pid := range procs {
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				continue // gone (and reaped) meanwhile
			}
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			if parentOf(pid) == self && pid != browserPID {
				// Re-parented to us (subreaper): wait for it and reap it.
				var info unix.Siginfo
				_ = unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED, nil)
			} else {
				fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
				_, _ = unix.Poll(fds, 2000) // readable once it has exited
			}
			unix.Close(fd)
		}
	}
}

// chromiumDescendants lists the processes below this one that belong to the browser, zombies
// included: the browser's own descendants, and children re-parented to this process (the
// subreaper) that run Chromium's binaries and started after the browser did. The browser process
// itself is listed only while alive (os/exec reaps it).
func chromiumDescendants(browserPID int, started time.Time) []int {
	self := os.Getpid()
	var out []int
	seen := map[int]bool{}
	var walk func(pid int, all bool)
	walk = func(pid int, all bool) {
		for _, c := range childrenOf(pid) {
			if seen[c] {
				continue
			}
			seen[c] = true
			if pid == self && otherBrowser(c, browserPID) {
				continue
			}
			mine := all || c == browserPID || (pid == self && isChromium(c) && startedAfter(c, started))
			if !mine {
				continue
			}
			if c != browserPID || !isZombie(c) {
				out = append(out, c)
			}
			walk(c, true)
		}
	}
	walk(self, false)
	return out
}

func childrenOf(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// statFields returns the fields of /proc/<pid>/stat after the command name.
func statFields(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

func parentOf(pid int) int {
	f := statFields(pid)
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

func isZombie(pid int) bool {
	f := statFields(pid)
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// isChromium reports whether pid is one of Chromium's processes (its command name, which a
// zombie keeps, starts with "chrom": chromium, chrome_crashpad_handler): a re-parented orphan of
// ours is only killed and reaped if it is.
func isChromium(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return err == nil && strings.HasPrefix(string(b), "chrom")
}

// startedAfter reports whether pid started at or after t (boot-time clock ticks from /proc).
func startedAfter(pid int, t time.Time) bool {
	f := statFields(pid)
	if len(f) < 20 {
		return false
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return false
	}
	var info unix.Sysinfo_t
	if unix.Sysinfo(&info) != nil {
		return false
	}
	const hz = 100 // USER_HZ on Linux
	boot := time.Now().Add(-time.Duration(info.Uptime) * time.Second)
	startedAt := boot.Add(time.Duration(ticks) * time.Second / hz)
	return !startedAt.Before(t.Add(-2 * time.Second)) // uptime has 1 s resolution
}

// GCProfiles removes per-load profile directories in dir (default os.TempDir()) whose owning
// process (the pid in the name) is gone. It returns the directories removed.
func GCProfiles(dir string) ([]string, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), ProfilePrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
			continue // owner alive
		}
		p := filepath.Join(dir, e.Name())
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, p)
	}
	return removed, errors.Join(errs...)
}
