package tcpplus

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/internal/roottest"
)

// Tests named *Root need root and a kernel with BPF struct_ops; they are skipped otherwise.
// They use n values no other test package uses (the backoff package uses 1 and 6), because
// `go test ./...` runs packages concurrently and registrations are global.

const helperEnv = "WIRELAB_TCPPLUS_HELPER"

// TestMain doubles as a helper process for tests that need a second process: with helperEnv
// set to "leak:N" it registers n = N and exits without unregistering (a crash); with
// "cycle:N:K" it registers and unregisters K times.
func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		os.Exit(helper(h))
	}
	os.Exit(m.Run())
}

func helper(spec string) int {
	parts := strings.Split(spec, ":")
	n, _ := strconv.Atoi(parts[1])
	switch parts[0] {
	case "leak":
		if _, _, err := Register(n); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("registered")
		return 0
	case "cycle":
		k, _ := strconv.Atoi(parts[2])
		for range k {
			_, un, err := Register(n)
			if err == nil {
				err = un()
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		return 0
	}
	return 2
}

func registered(t *testing.T, name string) bool {
	t.Helper()
	ok, err := Registered(name)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// assertGone checks that nothing of registration name is left: not in the kernel, no pin, no
// state file.
func assertGone(t *testing.T, name string) {
	t.Helper()
	if registered(t, name) {
		t.Errorf("%s still registered", name)
	}
	if _, err := os.Stat(pinPath(name)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pin %s left behind (%v)", pinPath(name), err)
	}
	if _, err := os.Stat(defaultRegistry.statePath(name)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state file of %s left behind (%v)", name, err)
	}
}

// socketCC opens a TCP socket with congestion control cc and returns its fd.
func socketCC(t *testing.T, cc string) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc); err != nil {
		t.Fatalf("setting TCP_CONGESTION %s: %v", cc, err)
	}
	return fd
}

func TestRegisterUnregisterRoot(t *testing.T) {
	roottest.Require(t)
	const n = 7
	name, un1, err := Register(n)
	if err != nil {
		t.Fatal(err)
	}
	if name != "wl_cubicp7" || !registered(t, name) {
		t.Fatalf("Register(%d) = %q; registered %v", n, name, registered(t, name))
	}
	name2, un2, err := Register(n)
	if err != nil || name2 != name {
		t.Fatalf("second Register: %q, %v", name2, err)
	}
	fd := socketCC(t, name)

	if err := un1(); err != nil {
		t.Fatal(err)
	}
	if !registered(t, name) {
		t.Fatal("unregistered while a user remains")
	}
	if err := un2(); err != nil {
		t.Fatal(err)
	}
	if err := un2(); err != nil {
		t.Fatalf("second call of the same unregister: %v", err)
	}
	assertGone(t, name)
	// A socket that already uses the congestion control keeps it.
	if got, err := unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION); err != nil || got != name {
		t.Errorf("existing socket's congestion control: %q, %v", got, err)
	}
	// And new sockets can no longer select it.
	fd2, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd2)
	if err := unix.SetsockoptString(fd2, unix.IPPROTO_TCP, unix.TCP_CONGESTION, name); err == nil {
		t.Error("an unregistered congestion control could still be selected")
	}
}

// The registration behaves as cubic's code: a connection over loopback with it transfers data.
func TestRegisteredCCCarriesTrafficRoot(t *testing.T) {
	roottest.Require(t)
	name, un, err := Register(9)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := un(); err != nil {
			t.Error(err)
		}
		assertGone(t, name)
	}()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const size = 4 << 20
	got := make(chan int, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		defer c.Close()
		n := 0
		r := bufio.NewReader(c)
		for {
			b, err := r.Discard(64 << 10)
			n += b
			if err != nil {
				break
			}
		}
		got <- n
	}()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
		})
		return errors.Join(err, serr)
	}}
	c, err := d.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if n := <-got; n != size {
		t.Errorf("received %d bytes, want %d", n, size)
	}
}

// Goroutines of this process and other processes register and unregister the same n at once.
func TestRegisterConcurrentRoot(t *testing.T) {
	roottest.Require(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"=cycle:8:10")
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("helper: %v: %s", err, out)
			}
		}()
	}
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				name, un, err := Register(n)
				if err == nil && !slices.Contains(mustAvailable(), name) {
					err = fmt.Errorf("%s not registered while held", name)
				}
				if err == nil {
					err = un()
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assertGone(t, Name(n))
}

func mustAvailable() []string {
	raw, _ := os.ReadFile(availableCCs)
	return strings.Fields(string(raw))
}

// A process that registered and died without unregistering leaves a registration that GC
// removes.
func TestGCRemovesLeftoverRegistrationRoot(t *testing.T) {
	roottest.Require(t)
	const n = 5
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=leak:5")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "registered") {
		t.Fatalf("helper: %v: %s", err, out)
	}
	if !registered(t, Name(n)) {
		t.Fatal("the helper's registration did not outlive it")
	}
	removed, err := GC()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(removed, "congestion control "+Name(n)) {
		t.Errorf("GC removed %v; want %s among them", removed, Name(n))
	}
	assertGone(t, Name(n))
}

func TestSupportedRoot(t *testing.T) {
	roottest.Require(t)
	if err := Supported(); err != nil {
		t.Fatalf("this lab's kernel should support wl_cubicp: %v", err)
	}
}
