package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/internal/rt"
)

// The benchmark's traffic comes from peers: a server in the server namespace and a client in the
// client namespace, run as `wirelab-engine bench-peer …` subprocesses so that the emulator
// process's CPU time is the emulator's alone. The protocol: the client connects and sends one
// command byte; 'S' asks the server to send until the client closes; anything else (or nothing) is
// a connect probe.

const (
	cmdSource = 'S'
	cmdProbe  = 'P'
)

// Serve accepts connections on ln until it fails (it is closed or the process is killed).
func Serve(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go serveConn(c)
	}
}

func serveConn(c net.Conn) {
	defer c.Close()
	var cmd [1]byte
	if _, err := io.ReadFull(c, cmd[:]); err != nil || cmd[0] != cmdSource {
		return
	}
	buf := make([]byte, 256<<10)
	for {
		if _, err := c.Write(buf); err != nil {
			return
		}
	}
}

// ConnectTimes makes count TCP connections to addr (IPv4), at most parallel at once, and returns
// each connect time and the kernel's own first RTT sample of the connection (TCP_INFO's rtt after
// the handshake, µs resolution). The connect time is measured around a blocking connect(2) on a
// thread of its own, so the measurement adds no more than a system call and a wake-up: a
// non-blocking connect with the Go netpoller added 0.15–0.2 ms here.
//
// With spacing > 0, connection i starts no earlier than spacing×i after the first, so that
// parallel handshakes are spread over the round trip instead of running in step: handshakes in
// step complete together, and each one's wake-up then waits for the CPU the others' packets and
// wake-ups take (docs/network.md, "What the runtime adds to a wake-up").
func ConnectTimes(addr string, count, parallel int, spacing, timeout time.Duration) (times, kernel []time.Duration, err error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Is4() {
		return nil, nil, fmt.Errorf("connect: %q is not an IPv4 address:port", addr)
	}
	sa := &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	if parallel < 1 {
		parallel = 1
	}
	// Every connect blocks in a system call holding its thread's P until sysmon retakes it (20 µs
	// to 10 ms later): a P per connection keeps a returning connect from waiting for one.
	if runtime.GOMAXPROCS(0) < parallel+2 {
		runtime.GOMAXPROCS(parallel + 2)
	}
	times = make([]time.Duration, count)
	kernel = make([]time.Duration, count)
	errs := make([]error, count)
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < count; i++ {
		if spacing > 0 {
			time.Sleep(time.Until(start.Add(time.Duration(i) * spacing)))
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			times[i], kernel[i], errs[i] = connectOnce(sa, timeout)
		}(i)
	}
	wg.Wait()
	return times, kernel, errors.Join(errs...)
}

func connectOnce(sa *unix.SockaddrInet4, timeout time.Duration) (took, kernelRTT time.Duration, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rt.Adopt() // a thread the runtime just created is not real-time until the janitor's next round
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, 0, err
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(int64(timeout))
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv) // bounds connect(2)
	t0 := time.Now()
	err = unix.Connect(fd, sa)
	for errors.Is(err, unix.EINTR) {
		// A signal (the Go runtime's preemption) interrupted the wait; the handshake goes on.
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		left := timeout - time.Since(t0)
		if left <= 0 {
			err = unix.ETIMEDOUT
			break
		}
		if _, err = unix.Poll(fds, int(left/time.Millisecond)+1); err == nil {
			var soErr int
			if soErr, err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR); err == nil && soErr != 0 {
				err = unix.Errno(soErr)
			}
		}
	}
	took = time.Since(t0)
	if err != nil {
		return took, 0, fmt.Errorf("connect: %w", err)
	}
	if info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
		kernelRTT = time.Duration(info.Rtt) * time.Microsecond
	}
	unix.Write(fd, []byte{cmdProbe})
	return took, kernelRTT, nil
}

// Goodput is what a bulk receiver measured.
type Goodput struct {
	Bytes       int64   `json:"bytes"`         // received after the warm-up
	Seconds     float64 `json:"seconds"`       // measured interval (after the warm-up)
	TotalBytes  int64   `json:"total_bytes"`   // including the warm-up
	FirstByteMs float64 `json:"first_byte_ms"` // connect → first byte
}

// BitsPerSecond is the goodput.
func (g Goodput) BitsPerSecond() float64 {
	if g.Seconds <= 0 {
		return 0
	}
	return float64(g.Bytes) * 8 / g.Seconds
}

// Receive connects to addr, asks for bulk data and reads it for warmup+duration; goodput counts
// the bytes after the warm-up (slow start excluded).
func Receive(addr string, warmup, duration time.Duration) (Goodput, error) {
	c, err := net.DialTimeout("tcp4", addr, 10*time.Second)
	if err != nil {
		return Goodput{}, err
	}
	defer c.Close()
	t0 := time.Now()
	if _, err := c.Write([]byte{cmdSource}); err != nil {
		return Goodput{}, err
	}
	buf := make([]byte, 1<<20)
	var g Goodput
	var warmStart time.Time
	var warmBytes int64
	end := t0.Add(warmup + duration)
	c.SetReadDeadline(end)
	for {
		n, err := c.Read(buf)
		now := time.Now()
		if n > 0 && g.TotalBytes == 0 {
			g.FirstByteMs = float64(now.Sub(t0)) / 1e6
		}
		g.TotalBytes += int64(n)
		if warmStart.IsZero() && now.Sub(t0) >= warmup {
			warmStart, warmBytes = now, g.TotalBytes
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) || now.After(end) {
				break
			}
			return g, err
		}
	}
	if warmStart.IsZero() {
		return g, fmt.Errorf("no data after the %v warm-up", warmup)
	}
	g.Bytes = g.TotalBytes - warmBytes
	g.Seconds = time.Since(warmStart).Seconds()
	return g, nil
}

func discard(c net.PacketConn) {
	buf := make([]byte, 65536)
	for {
		if _, _, err := c.ReadFrom(buf); err != nil {
			return
		}
	}
}

// Blast sends count UDP datagrams of 200 bytes to addr at about pps per second (in 1 ms bursts).
func Blast(addr string, count, pps int) (int, error) {
	c, err := net.Dial("udp4", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	payload := make([]byte, 200)
	perMs := max(pps/1000, 1)
	start := time.Now()
	sent := 0
	for sent < count {
		for i := 0; i < perMs && sent < count; i++ {
			if _, err := c.Write(payload); err != nil {
				return sent, err
			}
			sent++
		}
		if ahead := time.Duration(sent/perMs)*time.Millisecond - time.Since(start); ahead > 0 {
			time.Sleep(ahead)
		}
	}
	return sent, nil
}

// PeerPriority is the peers' real-time priority with --rt: one below the emulator's
// (realtime.DefaultRealtimePriority), so that the emulator preempts them as it preempts a trial's
// ordinary servers and clients. At the emulator's own priority they competed with its threads as
// equals, and the kernel's RTT samples grew with the delay (p50 +0.12 / +0.34 / +0.40 ms at
// 10 / 100 / 500 ms RTT, 2026-11-24); see LinkOptions.Peers for which parts run them real-time.
const PeerPriority = 1

// PeerMain is `wirelab-engine bench-peer [--rt] serve ADDR | connect ADDR COUNT PARALLEL [SPACING] |
// receive ADDR WARMUP DURATION | blast ADDR COUNT PPS`. Results are one JSON line on stdout; serve prints "ready" once it
// listens. --rt runs the peer with real-time priority (internal/rt), so that other load on a shared
// machine does not show up as emulator error.
func PeerMain(args []string) error {
	if len(args) > 0 && args[0] == "--rt" {
		restore, _ := rt.Enable(PeerPriority)
		defer restore()
		args = args[1:]
	}
	if len(args) < 2 {
		return errors.New("usage: bench-peer serve ADDR | connect ADDR COUNT PARALLEL [SPACING] | receive ADDR WARMUP DURATION")
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	switch args[0] {
	case "serve":
		ln, err := net.Listen("tcp4", args[1])
		if err != nil {
			return err
		}
		// UDP on the same port: a sink for blast.
		uc, err := net.ListenPacket("udp4", args[1])
		if err != nil {
			return err
		}
		go discard(uc)
		fmt.Println("ready")
		return Serve(ln)
	case "blast":
		var count, pps int
		if len(args) != 4 {
			return errors.New("blast ADDR COUNT PPS")
		}
		fmt.Sscan(args[2], &count)
		fmt.Sscan(args[3], &pps)
		sent, err := Blast(args[1], count, pps)
		if err != nil {
			return err
		}
		return json.NewEncoder(out).Encode(map[string]any{"sent": sent})
	case "connect":
		var count, parallel int
		var spacing time.Duration
		if len(args) != 4 && len(args) != 5 {
			return errors.New("connect ADDR COUNT PARALLEL [SPACING]")
		}
		fmt.Sscan(args[2], &count)
		fmt.Sscan(args[3], &parallel)
		if len(args) == 5 {
			var err error
			if spacing, err = time.ParseDuration(args[4]); err != nil || spacing < 0 {
				return fmt.Errorf("connect: spacing %q is not a duration ≥ 0", args[4])
			}
		}
		times, kernel, err := ConnectTimes(args[1], count, parallel, spacing, 10*time.Second)
		if err != nil {
			return err
		}
		ms := func(ds []time.Duration) []float64 {
			out := make([]float64, len(ds))
			for i, d := range ds {
				out[i] = float64(d) / 1e6
			}
			sort.Float64s(out)
			return out
		}
		return json.NewEncoder(out).Encode(map[string]any{"connect_ms": ms(times), "kernel_rtt_ms": ms(kernel)})
	case "receive":
		if len(args) != 4 {
			return errors.New("receive ADDR WARMUP DURATION")
		}
		warm, err1 := time.ParseDuration(args[2])
		dur, err2 := time.ParseDuration(args[3])
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		g, err := Receive(args[1], warm, dur)
		if err != nil {
			return err
		}
		return json.NewEncoder(out).Encode(g)
	}
	return fmt.Errorf("bench-peer: unknown mode %q", args[0])
}
