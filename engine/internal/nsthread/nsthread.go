// Package nsthread runs code in an existing network namespace: the engine's one way of entering
// one (netns's createNamed, which makes a new one, unshares instead). Each thread of a process
// has a network namespace; the sockets a thread opens and /proc/sys/net as it reads it are that
// namespace's. So code for another namespace runs on a locked OS thread that entered it:
//
//	err := nsthread.In(ns, fn)         // fn on a thread in ns, switched back afterwards
//	err := nsthread.Once(ns, fn)       // fn on a thread in ns that ends with fn (fn may change it further)
//	v, err := nsthread.Sysctl(ns, "ipv4/ip_forward")
//	err := nsthread.SetSysctl(ns, "ipv4/ip_forward", "1")
//
// ns is an open handle of the namespace (Open: one named by `ip netns`). Sockets fn creates stay
// in ns and may be used from any goroutine afterwards.
package nsthread

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// RunDir holds the named network namespaces (`ip netns`).
const RunDir = "/run/netns"

// Open opens the namespace named name (RunDir/name).
func Open(name string) (*os.File, error) { return os.Open(filepath.Join(RunDir, name)) }

// In runs fn on the calling goroutine's OS thread after entering ns, then switches the thread
// back to its own namespace. If that fails the thread stays locked, so the runtime retires it with
// the goroutine and no other goroutine ever runs in ns by accident.
func In(ns *os.File, fn func() error) error {
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open own network namespace: %w", err)
	}
	defer orig.Close()
	if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter network namespace %s: %w", ns.Name(), err)
	}
	fnErr := fn()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		return errors.Join(fnErr, fmt.Errorf("restore network namespace (thread retired): %w", err))
	}
	runtime.UnlockOSThread()
	return fnErr
}

// Once runs fn on a new OS thread that has entered ns and ends with fn (its goroutine never
// unlocks it, so the runtime ends the thread): for fn that changes the thread beyond its network
// namespace — a private mount namespace, say — which no switch back would undo.
func Once(ns *os.File, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("enter network namespace %s: %w", ns.Name(), err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// sysctlPath is /proc/sys/net/<key> (net.* sysctls are per namespace: /proc/sys/net shows the
// namespace of the thread that opens it).
func sysctlPath(key string) string { return "/proc/sys/net/" + key }

// Sysctl reads /proc/sys/net/<key> of ns, without its trailing newline.
func Sysctl(ns *os.File, key string) (string, error) {
	var v string
	err := In(ns, func() error {
		b, err := os.ReadFile(sysctlPath(key))
		v = strings.TrimSpace(string(b))
		return err
	})
	return v, err
}

// SetSysctl writes value to /proc/sys/net/<key> of ns.
func SetSysctl(ns *os.File, key, value string) error {
	return In(ns, func() error { return os.WriteFile(sysctlPath(key), []byte(value), 0) })
}
