// Package dnsserve serves one DNS handler on a UDP socket and a TCP listener at once: the lab's
// authoritative server (engine/dns) and the egress router's forwarder (engine/egress) both run on it.
package dnsserve

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	mdns "github.com/miekg/dns"
)

// listenAttempts bounds the tries for a port free on both UDP and TCP when the port is 0.
const listenAttempts = 10

// Listen opens a UDP socket and a TCP listener on the same address (host:port; with port 0, a
// port free for both: the kernel picks the UDP one, which TCP may have in use — then another).
func Listen(addr string) (net.PacketConn, net.Listener, error) {
	var err error
	for range listenAttempts {
		var pc net.PacketConn
		if pc, err = net.ListenPacket("udp", addr); err != nil {
			return nil, nil, fmt.Errorf("dns: %w", err)
		}
		var ln net.Listener
		if ln, err = net.Listen("tcp", pc.LocalAddr().String()); err == nil {
			return pc, ln, nil
		}
		pc.Close()
		if !strings.HasSuffix(addr, ":0") {
			break
		}
	}
	return nil, nil, fmt.Errorf("dns: %w", err)
}

// Servers is a handler served over UDP and TCP.
type Servers struct {
	udp, tcp *mdns.Server
	wg       sync.WaitGroup
	once     sync.Once
	err      error
}

// Start serves h on pc (UDP) and ln (TCP, each connection's reads and writes bounded by
// tcpTimeout) and returns once both serve. On error nothing is left serving.
func Start(pc net.PacketConn, ln net.Listener, h mdns.Handler, tcpTimeout time.Duration) (*Servers, error) {
	s := &Servers{}
	started := make(chan struct{}, 2)
	notify := func() { started <- struct{}{} }
	s.udp = &mdns.Server{PacketConn: pc, Handler: h, NotifyStartedFunc: notify}
	s.tcp = &mdns.Server{Listener: ln, Handler: h, NotifyStartedFunc: notify, ReadTimeout: tcpTimeout, WriteTimeout: tcpTimeout}
	errs := make(chan error, 2)
	for _, srv := range []*mdns.Server{s.udp, s.tcp} {
		s.wg.Go(func() {
			if err := srv.ActivateAndServe(); err != nil {
				errs <- err
			}
		})
	}
	for range 2 {
		select {
		case <-started:
		case err := <-errs:
			s.Close()
			return nil, fmt.Errorf("dns: %w", err)
		}
	}
	return s, nil
}

// Close shuts both servers down and waits for their goroutines; it is idempotent.
func (s *Servers) Close() error {
	s.once.Do(func() {
		s.err = errors.Join(s.udp.Shutdown(), s.tcp.Shutdown())
		s.wg.Wait()
	})
	return s.err
}
