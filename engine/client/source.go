package client

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// SourceAddrs spreads a loader's TCP connections over several local addresses, in turn: each
// (source address, server address, port) has its own ephemeral port range
// (net.ipv4.ip_local_port_range, 28,232 ports by default), so N addresses let one generator hold
// N times as many connections to one server. The socket is bound to its address with
// IP_BIND_ADDRESS_NO_PORT: the kernel picks the port at connect time, per 4-tuple, rather than at
// bind time from the ports free on every destination. One SourceAddrs is shared by every session
// of a Loader (Config.Sources); its methods are safe for concurrent use.
type SourceAddrs struct {
	addrs    []netip.Addr
	families [2]sourceRing // IPv4's, IPv6's
}

// sourceRing is the addresses of one family and the turn.
type sourceRing struct {
	addrs []netip.Addr
	next  atomic.Uint64
}

// NewSourceAddrs checks addrs: at least one, each a unicast address given once.
func NewSourceAddrs(addrs []netip.Addr) (*SourceAddrs, error) {
	if len(addrs) == 0 {
		return nil, errors.New("no source address")
	}
	seen := make(map[netip.Addr]bool, len(addrs))
	for _, a := range addrs {
		a = a.Unmap()
		if !a.IsValid() || a.IsUnspecified() || a.IsMulticast() {
			return nil, fmt.Errorf("%v: not a unicast address", a)
		}
		if seen[a] {
			return nil, fmt.Errorf("%v: given twice", a)
		}
		seen[a] = true
	}
	s := &SourceAddrs{}
	for _, a := range addrs {
		a = a.Unmap()
		s.addrs = append(s.addrs, a)
		f := &s.families[family(a)]
		f.addrs = append(f.addrs, a)
	}
	return s, nil
}

// Len is the number of addresses.
func (s *SourceAddrs) Len() int { return len(s.addrs) }

// pick is the next source address of dst's family, in turn (false: none of that family).
func (s *SourceAddrs) pick(dst netip.Addr) (netip.Addr, bool) {
	f := &s.families[family(dst.Unmap())]
	if len(f.addrs) == 0 {
		return netip.Addr{}, false
	}
	return f.addrs[(f.next.Add(1)-1)%uint64(len(f.addrs))], true
}

// family indexes SourceAddrs.families: 0 IPv4, 1 IPv6.
func family(a netip.Addr) int {
	if a.Is4() {
		return 0
	}
	return 1
}

// dialer is a net.Dialer whose connection to dst leaves from the next source address; the zero
// Dialer where s is nil.
func (s *SourceAddrs) dialer(dst netip.Addr) (*net.Dialer, error) {
	if s == nil {
		return &net.Dialer{}, nil
	}
	src, ok := s.pick(dst)
	if !ok {
		return nil, fmt.Errorf("no source address of %v's family among %v", dst, s.addrs)
	}
	return &net.Dialer{
		LocalAddr: &net.TCPAddr{IP: src.AsSlice()},
		Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			if err := c.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
			}); err != nil {
				return err
			}
			return serr
		},
	}, nil
}

// CheckOwned returns an error for each address this network namespace does not own (a socket
// cannot leave from it): it binds a socket to it without taking a port (IP_BIND_ADDRESS_NO_PORT),
// so the check works even when every ephemeral port is in use.
func (s *SourceAddrs) CheckOwned() error {
	for _, a := range s.addrs {
		domain, sa := unix.AF_INET, unix.Sockaddr(&unix.SockaddrInet4{Addr: a.As4()})
		if a.Is6() {
			domain, sa = unix.AF_INET6, &unix.SockaddrInet6{Addr: a.As16()}
		}
		fd, err := unix.Socket(domain, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("%v: %w", a, err)
		}
		err = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
		if err == nil {
			err = unix.Bind(fd, sa)
		}
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("%v: not an address of this namespace (bind: %w)", a, err)
		}
	}
	return nil
}
