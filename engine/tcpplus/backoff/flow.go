package backoff

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/tcpplus/internal/nspath"
)

// measureFlow runs one bulk TCP flow from the sender to the receiver with congestion control
// cc, reads the sender's TCP_INFO continuously, arms the dropper when cwnd reaches
// cfg.ArmCwnd, and returns the backoff the congestion control applied to that single loss.
func measureFlow(ctx context.Context, p *nspath.Path, d *dropper, ca *caReader, cc string, beta uint32, cfg Config) (Flow, error) {
	if err := d.Reset(); err != nil {
		return Flow{}, err
	}
	dst := netip.AddrPortFrom(nspath.ReceiverAddr, cfg.Port).String()

	var ln net.Listener
	err := p.Do(p.Receiver, func() error {
		var err error
		ln, err = net.Listen("tcp4", dst)
		return err
	})
	if err != nil {
		return Flow{}, fmt.Errorf("backoff: receiver: %w", err)
	}
	defer ln.Close()
	received := make(chan struct{})
	go func() {
		defer close(received)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(io.Discard, c) // ends with the sender's reset
	}()

	countersBefore, err := readUndoCounters(p, p.Sender)
	if err != nil {
		return Flow{}, err
	}
	var conn *net.TCPConn
	err = p.Do(p.Sender, func() error {
		dialer := net.Dialer{
			LocalAddr: &net.TCPAddr{IP: nspath.SenderAddr.AsSlice()},
			Control: func(_, _ string, rc syscall.RawConn) error {
				var serr error
				err := rc.Control(func(fd uintptr) {
					serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc)
				})
				return errors.Join(err, serr)
			},
		}
		c, err := dialer.DialContext(ctx, "tcp4", dst)
		if err != nil {
			return err
		}
		conn = c.(*net.TCPConn)
		return nil
	})
	if err != nil {
		return Flow{}, fmt.Errorf("backoff: sender with congestion control %s: %w", cc, err)
	}
	rc, err := conn.SyscallConn()
	if err != nil {
		conn.Close()
		return Flow{}, err
	}
	if got, err := congestionControl(rc); err != nil || got != cc {
		conn.Close()
		return Flow{}, fmt.Errorf("backoff: sender's congestion control is %q (%v), want %q", got, err, cc)
	}

	// The writer keeps the sender cwnd-limited until the connection is reset below.
	written := make(chan struct{})
	go func() {
		defer close(written)
		buf := make([]byte, 64<<10)
		for {
			if _, err := conn.Write(buf); err != nil {
				return
			}
		}
	}()

	localPort := uint16(conn.LocalAddr().(*net.TCPAddr).Port)
	cfg.progress("sending with %s", cc)

	t := tracker{armCwnd: cfg.ArmCwnd}
	start := time.Now()
	deadline := start.Add(cfg.Timeout)
	var loopErr error
	var minRTT uint32 // µs, TCP_INFO's tcpi_min_rtt at the last reading
	for {
		if err := ctx.Err(); err != nil {
			loopErr = err
			break
		}
		now := time.Now()
		if now.After(deadline) {
			loopErr = timeoutError(&t, cfg)
			if st, err := d.Stats(); err == nil {
				loopErr = fmt.Errorf("%w (last sample %+v; dropper %+v)", loopErr, t.prev, st)
			}
			break
		}
		info, err := tcpInfo(rc)
		if err != nil {
			loopErr = fmt.Errorf("backoff: TCP_INFO: %w", err)
			break
		}
		s := Sample{
			AtMicros:     now.Sub(start).Microseconds(),
			EndMicros:    time.Since(start).Microseconds(),
			CAState:      info.Ca_state,
			Cwnd:         info.Snd_cwnd,
			Ssthresh:     info.Snd_ssthresh,
			TotalRetrans: info.Total_retrans,
		}
		minRTT = info.Min_rtt
		act := t.observe(s)
		if act.ReadKernel {
			k, err := ca.read(p, localPort)
			if err != nil {
				loopErr = err
				break
			}
			t.setKernel(k)
		}
		if act.Arm {
			if err := d.Arm(); err != nil {
				loopErr = err
				break
			}
		}
		if act.Done {
			break
		}
	}
	var undos Undos
	if loopErr == nil {
		var countersAfter map[string]uint64
		if countersAfter, loopErr = readUndoCounters(p, p.Sender); loopErr == nil {
			undos = undosBetween(countersBefore, countersAfter)
		}
	}

	// Reset rather than close: a close would first send what the socket still holds.
	_ = conn.SetLinger(0)
	_ = conn.Close()
	<-written
	<-received
	if loopErr != nil {
		return Flow{}, loopErr
	}
	drop, err := d.Stats()
	if err != nil {
		return Flow{}, err
	}
	f := t.result(cc, beta, drop, undos)
	f.MinRTTMicros = minRTT
	return f, nil
}

func timeoutError(t *tracker, cfg Config) error {
	switch t.phase {
	case waitingForCwnd:
		return fmt.Errorf("backoff: cwnd reached %d, not %d, within %v (lower the cwnd to arm at, or raise the rate or the timeout)", t.prev.Cwnd, cfg.ArmCwnd, cfg.Timeout)
	case armed, armedAgain:
		return fmt.Errorf("backoff: no congestion window reduction within %v after arming the dropper (phase %d)", cfg.Timeout, t.phase)
	default:
		return fmt.Errorf("backoff: loss recovery did not end within %v", cfg.Timeout)
	}
}

func tcpInfo(rc syscall.RawConn) (*unix.TCPInfo, error) {
	var info *unix.TCPInfo
	var ierr error
	err := rc.Control(func(fd uintptr) {
		info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	})
	return info, errors.Join(err, ierr)
}

func congestionControl(rc syscall.RawConn) (string, error) {
	var name string
	var gerr error
	err := rc.Control(func(fd uintptr) {
		name, gerr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	})
	return name, errors.Join(err, gerr)
}
