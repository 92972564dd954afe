package emulator

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/wirelab/wirelab/engine/internal/roottest"
	"github.com/wirelab/wirelab/engine/internal/timebound"
	"github.com/wirelab/wirelab/engine/link/profile"
	"github.com/wirelab/wirelab/engine/netns"
	"github.com/wirelab/wirelab/engine/tcpplus"
)

// The profile's tcpplus range is the one engine/tcpplus registers.
func TestTCPPlusProfileLimits(t *testing.T) {
	if profile.MaxTCPPlus != tcpplus.MaxN {
		t.Errorf("profile allows tcpplus up to %d, tcpplus registers up to %d", profile.MaxTCPPlus, tcpplus.MaxN)
	}
	r := profile.MustParse("iw=4,irw=20,tcpplus=6")
	cfg, err := ConfigFromProfile(r, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Topology.TCPPlus != 6 || cfg.Topology.Server.InitCwnd != 4 || cfg.Topology.Server.InitRwnd != 20 {
		t.Errorf("topology config %+v: the topology multiplies the profile's windows itself", cfg.Topology)
	}
}

// sockopts reads a TCP socket's congestion control and TCP_INFO.
func sockopts(t *testing.T, c net.Conn) (string, *unix.TCPInfo) {
	t.Helper()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var cc string
	var info *unix.TCPInfo
	var serr error
	err = raw.Control(func(fd uintptr) {
		cc, serr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
		if serr == nil {
			info, serr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		}
	})
	if err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	return cc, info
}

// routeOf returns the route of a side towards the other.
func routeOf(t *testing.T, e *Emulator, side netns.Side) netlink.Route {
	t.Helper()
	var routes []netlink.Route
	err := e.Topo.Do(side, func() error {
		h, err := netlink.NewHandleAt(vnetns.None())
		if err != nil {
			return err
		}
		defer h.Close()
		routes, err = h.RouteList(nil, netlink.FAMILY_V4)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		if r.Dst != nil && r.Dst.IP.IsPrivate() {
			return r
		}
	}
	t.Fatalf("%s: no route to the lab: %+v", side, routes)
	return netlink.Route{}
}

// TestTCPPlusTopologyRoot (root): through a topology made from the profile tcpplus=6, the server's
// route carries initcwnd 60, initrwnd 60 and congctl wl_cubicp6 and the client's initrwnd 60; a
// connection accepted in the server namespace uses wl_cubicp6 and starts with a congestion window
// of 60 segments (TCP_INFO), where the client's connection keeps cubic and the kernel's 10. Once
// the emulator is stopped, the registration is gone (unless another run holds it).
func TestTCPPlusTopologyRoot(t *testing.T) {
	roottest.Require(t)
	if err := tcpplus.Supported(); err != nil {
		t.Skip(err)
	}
	name := tcpplus.Name(6)
	before, err := tcpplus.Registered(name)
	if err != nil {
		t.Fatal(err)
	}
	// The flight's bound depends on the machine: retried once with a new topology (internal/timebound).
	timebound.Retry(t, func(a *timebound.Attempt) {
		cfg, err := ConfigFromProfile(profile.MustParse("rtt=20ms,tcpplus=6"), 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		e, err := Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		stopped := false
		defer func() {
			if !stopped {
				e.Stop()
			}
		}()
		if r := routeOf(t, e, netns.Server); r.InitCwnd != 60 || r.InitRwnd != 60 || r.Congctl != name {
			t.Errorf("server route: initcwnd %d initrwnd %d congctl %q", r.InitCwnd, r.InitRwnd, r.Congctl)
		}
		if r := routeOf(t, e, netns.Client); r.InitRwnd != 60 || r.Congctl != "cubic" {
			t.Errorf("client route: initrwnd %d congctl %q", r.InitRwnd, r.Congctl)
		}
		ln := listen(t, e, "9001")
		accepted := make(chan net.Conn, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}()
		client, _ := dial(t, e, "10.77.1.1:9001")
		defer client.Close()
		srv, ok := <-accepted
		if !ok {
			t.Fatal("accept failed")
		}
		defer srv.Close()
		cc, info := sockopts(t, srv)
		if cc != name || info.Snd_cwnd != 60 {
			t.Errorf("server socket: congestion control %q, snd_cwnd %d; want %s and 60", cc, info.Snd_cwnd, name)
		}
		ccc, cinfo := sockopts(t, client)
		if ccc != "cubic" || cinfo.Snd_cwnd != tcpplus.KernelInitWindow {
			t.Errorf("client socket: congestion control %q, snd_cwnd %d; want cubic and %d", ccc, cinfo.Snd_cwnd, tcpplus.KernelInitWindow)
		}
		// The larger window is real: 40 full segments (the client's SYN can announce at most 64 KiB,
		// 45 segments, the unscaled window) leave in one flight, so they arrive back to back; with the
		// kernel's 10 they would need three round trips (10, 20, 10 segments), 40 ms at RTT 20 ms.
		buf := make([]byte, 40*int(info.Snd_mss))
		go srv.Write(buf)
		start := time.Now()
		got := 0
		client.SetReadDeadline(time.Now().Add(5 * time.Second))
		for got < len(buf) {
			n, err := client.Read(buf[got:])
			if got == 0 && n > 0 {
				start = time.Now()
			}
			got += n
			if err != nil {
				t.Fatal(err)
			}
		}
		flight := time.Since(start)
		t.Logf("server: %s, snd_cwnd %d, mss %d; 40 segments arrived within %v", cc, info.Snd_cwnd, info.Snd_mss, flight)
		if flight > 10*time.Millisecond {
			a.Errorf("40 segments took %v after the first arrived: more than one flight (RTT 20 ms)", flight)
		}
		client.Close()
		srv.Close()
		if _, err := e.Stop(); err != nil && !errors.Is(err, net.ErrClosed) {
			t.Fatal(err)
		}
		stopped = true
		if after, _ := tcpplus.Registered(name); after && !before {
			t.Errorf("%s still registered after the topology was closed", name)
		}
	})
}
