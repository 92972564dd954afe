package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"sync"
	"time"

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

// ConnectTimes makes count TCP connections to addr, at most parallel at once, and returns each
// connect time (SYN sent → SYN/ACK received, as the kernel's connect() reports it).
func ConnectTimes(addr string, count, parallel int, timeout time.Duration) ([]time.Duration, error) {
	if parallel < 1 {
		parallel = 1
	}
	times := make([]time.Duration, count)
	errs := make([]error, count)
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := 0; i < count; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			t0 := time.Now()
			c, err := net.DialTimeout("tcp4", addr, timeout)
			times[i] = time.Since(t0)
			if err != nil {
				errs[i] = err
				return
			}
			c.Write([]byte{cmdProbe})
			c.Close()
		}(i)
	}
	wg.Wait()
	return times, errors.Join(errs...)
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

// PeerMain is `wirelab-engine bench-peer [--rt] serve ADDR | connect ADDR COUNT PARALLEL |
// receive ADDR WARMUP DURATION`. Results are one JSON line on stdout; serve prints "ready" once it
// listens. --rt runs the peer with real-time priority (internal/rt), so that other load on a shared
// machine does not show up as emulator error.
func PeerMain(args []string) error {
	if len(args) > 0 && args[0] == "--rt" {
		restore, _ := rt.Enable(1)
		defer restore()
		args = args[1:]
	}
	if len(args) < 2 {
		return errors.New("usage: bench-peer serve ADDR | connect ADDR COUNT PARALLEL | receive ADDR WARMUP DURATION")
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	switch args[0] {
	case "serve":
		ln, err := net.Listen("tcp4", args[1])
		if err != nil {
			return err
		}
		fmt.Println("ready")
		return Serve(ln)
	case "connect":
		var count, parallel int
		if len(args) != 4 {
			return errors.New("connect ADDR COUNT PARALLEL")
		}
		fmt.Sscan(args[2], &count)
		fmt.Sscan(args[3], &parallel)
		times, err := ConnectTimes(args[1], count, parallel, 10*time.Second)
		if err != nil {
			return err
		}
		ms := make([]float64, len(times))
		for i, d := range times {
			ms[i] = float64(d) / 1e6
		}
		sort.Float64s(ms)
		return json.NewEncoder(out).Encode(map[string]any{"connect_ms": ms})
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
