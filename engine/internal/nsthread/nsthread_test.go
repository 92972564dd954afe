package nsthread_test

import (
	"net"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/internal/nsthread"
	"github.com/wirelab/wirelab/engine/internal/roottest"
)

// fresh is a new, unnamed network namespace (only a loopback, down), gone when the test ends.
func fresh(t *testing.T) *os.File {
	t.Helper()
	type result struct {
		f   *os.File
		err error
	}
	ch := make(chan result)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			ch <- result{err: err}
			return
		}
		f, err := os.Open("/proc/thread-self/ns/net")
		ch <- result{f, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { r.f.Close() })
	return r.f
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// In: fn runs in the namespace (its sysctls, its links), the thread comes back, and the namespace's
// sysctl is its own.
func TestInAndSysctlRoot(t *testing.T) {
	roottest.Require(t)
	ns := fresh(t)
	own, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	if err != nil {
		t.Fatal(err)
	}
	want := "1"
	if string(own) == "1\n" {
		want = "0"
	}
	if err := nsthread.SetSysctl(ns, "ipv4/ip_forward", want); err != nil {
		t.Fatal(err)
	}
	if got, err := nsthread.Sysctl(ns, "ipv4/ip_forward"); err != nil || got != want {
		t.Errorf("ip_forward in the namespace %q (%v), want %q", got, err, want)
	}
	if now, _ := os.ReadFile("/proc/sys/net/ipv4/ip_forward"); string(now) != string(own) {
		t.Errorf("the caller's ip_forward changed: %q → %q", own, now)
	}
	var links []net.Interface
	var inside uint64
	runtime.LockOSThread()
	before := inode(t, "/proc/thread-self/ns/net")
	err = nsthread.In(ns, func() (err error) {
		inside = inode(t, "/proc/thread-self/ns/net")
		links, err = net.Interfaces()
		return err
	})
	after := inode(t, "/proc/thread-self/ns/net")
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(ns.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if inside != st.Ino || after != before || before == inside {
		t.Errorf("namespace inodes: caller %d, inside %d (want %d), after %d", before, inside, st.Ino, after)
	}
	if len(links) != 1 || links[0].Name != "lo" {
		t.Errorf("links inside %v, want lo alone", links)
	}
}

// Once: fn may change its thread beyond the network namespace (here a private mount namespace);
// the caller's thread is untouched.
func TestOnceRoot(t *testing.T) {
	roottest.Require(t)
	ns := fresh(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	mnt, netBefore := inode(t, "/proc/thread-self/ns/mnt"), inode(t, "/proc/thread-self/ns/net")
	var innerMnt uint64
	err := nsthread.Once(ns, func() error {
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return err
		}
		innerMnt = inode(t, "/proc/thread-self/ns/mnt")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if innerMnt == mnt || inode(t, "/proc/thread-self/ns/mnt") != mnt || inode(t, "/proc/thread-self/ns/net") != netBefore {
		t.Errorf("mount namespace: caller %d, inside %d; the caller's mount or network namespace changed", mnt, innerMnt)
	}
}

func TestOpenUnknown(t *testing.T) {
	if _, err := nsthread.Open("wirelab-no-such-namespace"); err == nil {
		t.Error("opened a namespace that does not exist")
	}
}
