// Package offmachine tells a test whether it runs where no route leads off the machine. A test
// that gives a guard a target off the machine (a public name, a documentation address) runs only
// there, so that even a broken guard cannot send a packet anywhere; `make test` runs every test in
// such a namespace (unshare --net). It needs no root, so a package that uses it stays among those
// run under the race detector.
package offmachine

import (
	"net"
	"testing"
)

// NoRouteOff reports whether this process's network namespace has no route off the machine: its
// only interfaces are loopback ones.
func NoRouteOff() bool {
	ifs, err := net.Interfaces()
	if err != nil {
		return false
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 {
			return false
		}
	}
	return true
}

// Require skips t unless NoRouteOff.
func Require(t testing.TB) {
	t.Helper()
	if !NoRouteOff() {
		t.Skip("gives a guard a target off the machine: runs only in a network namespace with no route off the machine (make test runs every test in one)")
	}
}
