package tundev

import (
	"errors"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The device's descriptor must stay out of the Go runtime's netpoller: the runner polls it itself,
// and an epoll registration wakes the runtime's netpoller thread (real-time while the emulator
// runs) for every packet that arrives. A file the runtime does not poll has no deadlines.
func TestFileIsNotPolledByTheRuntime(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[1])
	d, err := New(p[0], "test", 1500, false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.File().SetReadDeadline(time.Now()); !errors.Is(err, os.ErrNoDeadline) {
		t.Fatalf("SetReadDeadline = %v, want os.ErrNoDeadline (the file is registered with the netpoller)", err)
	}
	// The descriptor itself is non-blocking: an empty device reads 0 packets at once.
	fl, err := unix.FcntlInt(uintptr(p[0]), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fl&unix.O_NONBLOCK == 0 {
		t.Fatal("descriptor is blocking")
	}
	bufs, sizes := [][]byte{make([]byte, 1600)}, []int{0}
	if n, err := d.Read(bufs, sizes, 16); n != 0 || err != nil {
		t.Fatalf("Read on an empty device = %d, %v; want 0, nil", n, err)
	}
	// And it reads what arrives.
	if _, err := unix.Write(p[1], []byte{0x45, 1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if n, err := d.Read(bufs, sizes, 16); n != 1 || err != nil || sizes[0] != 4 {
		t.Fatalf("Read = %d, %v (size %d); want 1 packet of 4 bytes", n, err, sizes[0])
	}
}
