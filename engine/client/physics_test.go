package client

import (
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/internal/timebound"
)

// Phase boundaries checked against a path with a known delay. A user-space proxy adds a one-way
// delay to every byte (TCP) or datagram (UDP) in each direction. The TCP proxy cannot delay the
// kernel's handshake with the client, so over TCP the connect phase minus ssl is ~0 here; the TLS
// handshake, the request and the response cross the delayed path. The UDP proxy delays every
// QUIC packet, handshake included. Lower bounds are physics (nothing can beat the delay); upper
// bounds leave room for a loaded machine. The emulator's end-to-end checks (rtt = 200 ms) come
// with the trial.
//
// What is checked is the number of round trips in each phase: at least n RTT (minus 1 ms), less
// than n+1 RTT. A 200 ms RTT keeps that robust on a loaded machine (under -race, next to other
// tests' processes).

const physicsOneWay = 100 * time.Millisecond // RTT 200 ms

func TestPhysicsDelayedPath(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time delays")
	}
	rtt := 2 * physicsOneWay
	// Expected phases in RTTs: ssl (TLS or QUIC handshake), wait (request → first byte).
	for _, tc := range []struct {
		proto      Protocol
		ssl, wait  int
		plt        int
		connectTCP bool // connect minus ssl is not delayed (TCP proxy)
	}{
		{H1, 0, 1, 1, true},
		{H1S, 1, 1, 2, true},
		{H2, 1, 1, 2, true},
		{H2C, 0, 1, 1, true},
		{H3, 1, 1, 2, false},
	} {
		t.Run(string(tc.proto), func(t *testing.T) {
			// The upper bounds depend on the machine: retried once (internal/timebound).
			timebound.Retry(t, func(a *timebound.Attempt) {
				s := newSite(t, tc.proto, 1, 0, serverOpts{})
				// Root document only (~1 kB): serve the page's root at a root-only page.
				s.page.edit(func(objects map[string]*testObject) {
					objects["/"] = &testObject{contentType: "text/plain", body: make([]byte, 1000)}
				})
				var proxied netip.AddrPort
				if tc.proto == H3 {
					proxied = delayUDP(t, s.servers[0].addr, physicsOneWay)
				} else {
					proxied = delayTCP(t, s.servers[0].addr, physicsOneWay)
				}
				cfg := s.config()
				cfg.Resolver = StaticResolver{"s1.wirelab.test": proxied.Addr()}
				l, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				url := s.proto.Scheme() + "://s1.wirelab.test:" + strconv.Itoa(int(proxied.Port())) + "/"
				res, err := l.Load(t.Context(), url, nil)
				if err != nil || res.Err != nil {
					t.Fatal(err, res.Err)
				}
				e := res.Entries[0]
				t.Logf("plt %.1f ms; phases %+v", ms(res.PLT), e.Timings)
				msf := func(n int) float64 { return ms(time.Duration(n) * rtt) }
				within := func(name string, got float64, rtts int) {
					lo, hi := msf(rtts)-1, msf(rtts+1)-1
					if got < lo {
						t.Errorf("%s = %.1f ms, want %d RTT (%.0f ms): between %.0f and %.0f", name, got, rtts, msf(rtts), lo, hi)
					} else if got > hi {
						a.Errorf("%s = %.1f ms, want %d RTT (%.0f ms): between %.0f and %.0f", name, got, rtts, msf(rtts), lo, hi)
					}
				}
				if tc.ssl > 0 {
					within("ssl", e.Timings.SSL, tc.ssl)
				}
				within("wait", e.Timings.Wait, tc.wait)
				within("plt", ms(res.PLT), tc.plt)
				if tc.connectTCP && e.Timings.Connect-max(e.Timings.SSL, 0) > ms(rtt)/2 {
					a.Errorf("connect outside ssl took %.1f ms, but the proxy does not delay TCP's handshake", e.Timings.Connect-max(e.Timings.SSL, 0))
				}
				if !tc.connectTCP && e.Timings.Connect != e.Timings.SSL {
					t.Errorf("h3 connect %.1f != ssl %.1f", e.Timings.Connect, e.Timings.SSL)
				}
			})
		})
	}
}

// delayLine forwards chunks in order, each one oneWay after it was received.
type delayLine struct {
	ch chan delayed
}

type delayed struct {
	due  time.Time
	data []byte
}

func newDelayLine(out func([]byte) error) *delayLine {
	d := &delayLine{ch: make(chan delayed, 1024)}
	go func() {
		for p := range d.ch {
			time.Sleep(time.Until(p.due))
			if out(p.data) != nil {
				for range d.ch { // drain
				}
				return
			}
		}
	}()
	return d
}

func (d *delayLine) push(oneWay time.Duration, b []byte) {
	d.ch <- delayed{due: time.Now().Add(oneWay), data: append([]byte(nil), b...)}
}

// delayTCP accepts connections on 127.0.0.1 and relays them to target with oneWay delay per
// direction.
func delayTCP(t *testing.T, target netip.AddrPort, oneWay time.Duration) netip.AddrPort {
	return delayTCPOn(t, "127.0.0.1:0", target, oneWay)
}

// delayTCPOn is delayTCP listening on listen (host:port).
func delayTCPOn(t *testing.T, listen string, target netip.AddrPort, oneWay time.Duration) netip.AddrPort {
	ln, err := net.Listen("tcp4", listen)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	pump := func(dst, src net.Conn) {
		defer wg.Done()
		line := newDelayLine(func(b []byte) error { _, err := dst.Write(b); return err })
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				line.push(oneWay, buf[:n])
			}
			if err != nil {
				if err == io.EOF {
					time.Sleep(oneWay) // deliver what is in flight before closing
				}
				close(line.ch)
				dst.Close()
				src.Close()
				return
			}
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp4", target.String())
			if err != nil {
				c.Close()
				continue
			}
			t.Cleanup(func() { c.Close(); s.Close() })
			wg.Add(2)
			go pump(s, c)
			go pump(c, s)
		}
	}()
	return netip.MustParseAddrPort(ln.Addr().String())
}

// delayUDP relays datagrams between the first client and target with oneWay delay per direction.
func delayUDP(t *testing.T, target netip.AddrPort, oneWay time.Duration) netip.AddrPort {
	front, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	back, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(target))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { front.Close(); back.Close() })
	var mu sync.Mutex
	var client *net.UDPAddr
	up := newDelayLine(func(b []byte) error { _, err := back.Write(b); return err })
	down := newDelayLine(func(b []byte) error {
		mu.Lock()
		c := client
		mu.Unlock()
		_, err := front.WriteToUDP(b, c)
		return err
	})
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, from, err := front.ReadFromUDP(buf)
			if err != nil {
				close(up.ch)
				return
			}
			mu.Lock()
			client = from
			mu.Unlock()
			up.push(oneWay, buf[:n])
		}
	}()
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := back.Read(buf)
			if err != nil {
				close(down.ch)
				return
			}
			down.push(oneWay, buf[:n])
		}
	}()
	return netip.MustParseAddrPort(front.LocalAddr().String())
}
