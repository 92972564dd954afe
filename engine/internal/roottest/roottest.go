// Package roottest is the one place tests decide whether they can do what only root can
// (namespaces, TUN devices, BPF registration, real-time scheduling): they skip otherwise, so that
// `go test ./...` passes unprivileged and CI, which runs as root, runs them all.
package roottest

import (
	"os"
	"testing"
)

// Require skips t unless the process runs as root.
func Require(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}

// RequireTUN skips t unless the process runs as root and the kernel offers TUN devices
// (/dev/net/tun): what a network namespace topology needs.
func RequireTUN(t testing.TB) {
	t.Helper()
	Require(t)
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("no /dev/net/tun")
	}
}

// HaveTUN reports what RequireTUN requires, for a test whose last part alone needs a topology.
func HaveTUN() bool {
	_, err := os.Stat("/dev/net/tun")
	return os.Geteuid() == 0 && err == nil
}
