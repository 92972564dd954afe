// Package tundev is the emulator's TUN device: a golang.zx2c4.com/wireguard/tun.Device over a
// Linux TUN file descriptor opened with IFF_VNET_HDR and TSO/USO/checksum offloads.
//
// Like wireguard-go's tun package it splits the kernel's GSO super-packets into MTU-sized segments
// on read (the link model must see real packets) and coalesces segments into super-packets on
// write (GRO). Unlike it, no checksum is ever computed or verified over a payload: segments keep
// the kernel's partial checksum (CHECKSUM_PARTIAL: the field holds the pseudo-header sum) from the
// sending stack to the receiving one, and payloads are written with writev straight from the
// segments' buffers. Measured on the 10 ms capacity benchmark, wireguard-go's split-then-verify
// checksums were a quarter of the emulator's CPU time.
//
// Packets whose checksum is partial are marked in the byte before them (bufs[i][offset-1]); the
// runner's buffers carry the mark from Read to Write. Captures of such packets show the
// pseudo-header sum in the checksum field, as captures on hosts with checksum offload do.
package tundev

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/tun"
)

// Device is one TUN device. Read and Write may be called concurrently with each other, but
// each by one goroutine at a time.
type Device struct {
	file *os.File
	fd   int
	name string
	mtu  int
	vnet bool // IFF_VNET_HDR with offloads
	uso  bool // UDP segmentation offload accepted by the kernel

	rbuf []byte // one read: virtio header + up to 64 KB

	whdr   [vnetHdrLen]byte // the virtio header of the group being written
	iov    []unix.Iovec
	groups []group
	next   []int
	events chan tun.Event

	touched byte // see touch
}

var _ tun.Device = (*Device)(nil)

// TUN offload flags (linux/if_tun.h).
const (
	tunFCsum = 0x01
	tunFTSO4 = 0x02
	tunFTSO6 = 0x04
	tunFUSO4 = 0x20
	tunFUSO6 = 0x40
)

// New wraps the file descriptor of a TUN device created with IFF_TUN|IFF_NO_PI (and IFF_VNET_HDR
// when vnet). With vnet it turns on the checksum, TSO and (if the kernel has it) USO offloads. The
// Device owns fd from then on.
func New(fd int, name string, mtu int, vnet bool) (*Device, error) {
	// The file is made while the descriptor blocks, so that the Go runtime does not register it
	// with its netpoller: the runner polls the descriptor itself (ppoll on its own thread), and an
	// epoll registration would also wake the runtime's netpoller thread for every packet that
	// arrives — a real-time thread woken for nothing, which delays the processes on either side
	// of the link (measured in docs/network.md, "Scheduling").
	if err := unix.SetNonblock(fd, false); err != nil {
		return nil, err
	}
	file := os.NewFile(uintptr(fd), "/dev/net/tun")
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, err
	}
	d := &Device{fd: fd, name: name, mtu: mtu, vnet: vnet, events: make(chan tun.Event)}
	if vnet {
		if err := unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, tunFCsum|tunFTSO4|tunFTSO6|tunFUSO4|tunFUSO6); err == nil {
			d.uso = true
		} else if err := unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, tunFCsum|tunFTSO4|tunFTSO6); err != nil {
			return nil, fmt.Errorf("TUNSETOFFLOAD: %w", err)
		}
		d.rbuf = make([]byte, vnetHdrLen+65535)
	} else {
		d.rbuf = make([]byte, 65535)
	}
	d.file = file
	return d, nil
}

// File returns the device's file (the runner polls its descriptor).
func (d *Device) File() *os.File { return d.file }

// MTU is the MTU the device was created with.
func (d *Device) MTU() (int, error) { return d.mtu, nil }

// Name is the interface name.
func (d *Device) Name() (string, error) { return d.name, nil }

// Events never delivers anything: the topology manages the link state.
func (d *Device) Events() <-chan tun.Event { return d.events }

// BatchSize is the most segments one Read returns (a 64 KB super-packet of small segments).
func (d *Device) BatchSize() int { return 128 }

// Close closes the file descriptor, which removes the (non-persistent) device.
func (d *Device) Close() error { return d.file.Close() }

// Read reads one packet, or one GSO super-packet split into segments, into bufs at offset. It
// returns 0 packets without error when nothing is queued (the descriptor is non-blocking; poll it).
func (d *Device) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	if offset < 1 {
		return 0, errors.New("tundev: offset must leave room for the packet mark")
	}
	n, err := unix.Read(d.fd, d.rbuf)
	if err != nil {
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			return 0, nil
		}
		if errors.Is(err, unix.EBADF) || errors.Is(err, unix.EBADFD) {
			return 0, os.ErrClosed
		}
		return 0, err
	}
	if !d.vnet {
		if n > len(bufs[0])-offset {
			return 0, fmt.Errorf("tundev: %d-byte packet does not fit a %d-byte buffer", n, len(bufs[0])-offset)
		}
		sizes[0] = copy(bufs[0][offset:], d.rbuf[:n])
		bufs[0][offset-1] = 0
		return 1, nil
	}
	if n < vnetHdrLen {
		return 0, errShort
	}
	var h vnetHdr
	h.decode(d.rbuf)
	pkt := d.rbuf[vnetHdrLen:n]
	if h.gsoType != gsoNone {
		return split(pkt, &h, bufs, sizes, offset)
	}
	if len(pkt) > len(bufs[0])-offset {
		return 0, fmt.Errorf("tundev: %d-byte packet does not fit a %d-byte buffer", len(pkt), len(bufs[0])-offset)
	}
	out := bufs[0][offset : offset+len(pkt)]
	copy(out, pkt)
	sizes[0] = len(pkt)
	bufs[0][offset-1] = 0
	if h.flags&vnetFlagNeedsCsum != 0 {
		in, ok := parse(out)
		if ok && int(h.csumStart) == in.ipLen && int(h.csumOffset) == in.csumOffset() {
			bufs[0][offset-1] = metaPartial
		} else if err := completeChecksum(out, int(h.csumStart), int(h.csumOffset)); err != nil {
			return 0, err
		}
	}
	return 1, nil
}

// Write writes bufs[i][offset:]: consecutive segments of a flow as one super-packet. It returns
// the number of packets written; on a write error the rest of the batch is still attempted and the
// first error returned.
func (d *Device) Write(bufs [][]byte, offset int) (int, error) {
	if offset < 1 {
		return 0, errors.New("tundev: offset must leave room for the packet mark")
	}
	if !d.vnet {
		return d.writePlain(bufs, offset)
	}
	d.touch(bufs, offset)
	d.groups, d.next = plan(bufs, offset, d.uso, d.groups, d.next)
	written := 0
	var firstErr error
	for gi := range d.groups {
		g := &d.groups[gi]
		h := assemble(bufs, offset, g, d.next, func(b []byte) { d.iov = append(d.iov, iovec(b)) })
		h.encode(d.whdr[:])
		d.iov[0] = iovec(d.whdr[:])
		err := d.writev()
		d.iov = d.iov[:0]
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		written += g.count
	}
	return written, firstErr
}

// assemble prepares group g for writing: it fixes the head's headers for the coalesced length and
// emits the parts to write after the virtio header (a placeholder first, then the head segment,
// then the payloads of the others), and returns the virtio header.
func assemble(bufs [][]byte, offset int, g *group, next []int, emit func([]byte)) vnetHdr {
	head := bufs[g.first][offset:]
	var h vnetHdr
	emit(nil) // the virtio header's place
	if g.count == 1 {
		if bufs[g.first][offset-1]&metaPartial != 0 {
			if in, ok := parse(head); ok {
				h = vnetHdr{flags: vnetFlagNeedsCsum, csumStart: uint16(in.ipLen), csumOffset: uint16(in.csumOffset())}
			}
		}
		emit(head)
		return h
	}
	in := &g.in
	h = vnetHdr{flags: vnetFlagNeedsCsum, hdrLen: uint16(in.ipLen + in.l4Len), gsoSize: uint16(g.gso),
		csumStart: uint16(in.ipLen), csumOffset: uint16(in.csumOffset())}
	switch {
	case in.proto == 17:
		h.gsoType = gsoUDPL4
	case in.v6:
		h.gsoType = gsoTCPv6
	default:
		h.gsoType = gsoTCPv4
	}
	if in.proto == 6 && bufs[g.last][offset+in.ipLen+13]&tcpPSH != 0 {
		head[in.ipLen+13] |= tcpPSH
	}
	setLengths(head, in, g.total)
	putUint16(head[in.ipLen+in.csumOffset():], pseudoSum(head, in, g.total-in.ipLen))
	emit(head)
	hdrLen := in.ipLen + in.l4Len
	for i := next[g.first]; i >= 0; i = next[i] {
		emit(bufs[i][offset+hdrLen:])
	}
	return h
}

func (d *Device) writePlain(bufs [][]byte, offset int) (int, error) {
	written := 0
	var firstErr error
	for i := range bufs {
		pkt := bufs[i][offset:]
		if bufs[i][offset-1]&metaPartial != 0 {
			if in, ok := parse(pkt); ok {
				_ = completeChecksum(pkt, in.ipLen, in.csumOffset())
			}
		}
		if _, err := unix.Write(d.fd, pkt); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		written++
	}
	return written, firstErr
}

func (d *Device) writev() error {
	for {
		_, _, e := syscall.Syscall(unix.SYS_WRITEV, uintptr(d.fd), uintptr(unsafe.Pointer(&d.iov[0])), uintptr(len(d.iov)))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}

func iovec(b []byte) unix.Iovec {
	v := unix.Iovec{Base: unsafe.SliceData(b)}
	v.SetLen(len(b))
	return v
}

func putUint16(b []byte, v uint16) { b[0], b[1] = byte(v>>8), byte(v) }

// touch reads the first byte of each packet's headers before plan parses them. A packet written
// out has waited in the link for its delay — at 2.4 Gbit/s and 10 ms, ~2,000 buffers (3 MB) in
// flight — and its headers are no longer in the CPU's caches. plan's parse of one packet decides
// what it reads of the next, so its misses come one after the other; these loads depend on nothing
// and the CPU has them all under way at once.
func (d *Device) touch(bufs [][]byte, offset int) {
	var x byte
	for _, b := range bufs {
		x ^= b[offset]
	}
	d.touched = x // keeps the loads from being removed as dead code
}
