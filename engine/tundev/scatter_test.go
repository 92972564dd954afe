package tundev

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
)

// scatterDevice is a vnet Device over one end of a datagram socket pair (which, like a TUN
// descriptor, hands over one packet per read); send writes a virtio header and packet to it.
func scatterDevice(t *testing.T) (*Device, func(h vnetHdr, pkt []byte)) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	d := &Device{fd: fds[0], mtu: 1500, vnet: true, rbuf: make([]byte, vnetHdrLen+maxPacket), hdrLen: 52, gso: 1448}
	return d, func(h vnetHdr, pkt []byte) {
		t.Helper()
		b := make([]byte, vnetHdrLen, vnetHdrLen+len(pkt))
		h.encode(b)
		if _, err := unix.Write(fds[1], append(b, pkt...)); err != nil {
			t.Fatal(err)
		}
	}
}

// The scatter read hands over exactly what the copying path (split of the whole read) does, for
// super-packets of the expected layout (split in place), of another layout (gathered, after which
// the layout follows), and single packets that fit the first buffer or not.
func TestScatterReadMatchesCopyingPath(t *testing.T) {
	d, send := scatterDevice(t)
	tso := func(gso uint16) vnetHdr {
		return vnetHdr{flags: vnetFlagNeedsCsum, gsoType: gsoTCPv4, hdrLen: 52, gsoSize: gso, csumStart: 20, csumOffset: 16}
	}
	single := vnetHdr{flags: vnetFlagNeedsCsum, csumStart: 20, csumOffset: 16}
	cases := []struct {
		name    string
		h       vnetHdr
		payload int
		layout  int // the device's gso after the read
	}{
		{"one full segment", tso(1448), 1448, 1448},
		{"45 segments, short last", tso(1448), 45*1448 - 700, 1448},
		{"64 KB", tso(1448), maxPacket - 52, 1448},
		{"exact multiple", tso(1448), 7 * 1448, 1448},
		{"an ACK", single, 0, 1448},
		{"a full-sized single packet", single, 1448, 1448},
		{"another gso (gathered)", tso(1000), 20000, 1000},
		{"that gso again (in place)", tso(1000), 20500, 1000},
		{"a single packet beyond the first buffer (gathered)", single, 1448, 1000},
		{"small segments, spill unused", tso(200), 25000, 200},
		{"small segments in place", tso(200), 25400, 200},
		{"back to full segments", tso(1448), 30000, 1448},
	}
	for i, c := range cases {
		payload := make([]byte, c.payload)
		fill(payload, uint64(i+10))
		pkt := superPacket(srvA, cli, 443, 40000, uint32(1000*i), tcpACK|tcpPSH, payload)
		send(c.h, pkt)

		want, wsizes := buffers(128)
		var wn int
		if c.h.gsoType != gsoNone {
			n, err := split(append([]byte(nil), pkt...), &c.h, want, wsizes, 16)
			if err != nil {
				t.Fatalf("%s: split: %v", c.name, err)
			}
			wn = n
		} else {
			wn, wsizes[0] = 1, copy(want[0][16:], pkt)
			want[0][15] = metaPartial
		}

		got, gsizes := buffers(128)
		n, err := d.Read(got, gsizes, 16)
		if err != nil || n != wn {
			t.Fatalf("%s: Read = %d, %v; want %d packets", c.name, n, err, wn)
		}
		for k := 0; k < n; k++ {
			if gsizes[k] != wsizes[k] || !bytes.Equal(got[k][15:16+gsizes[k]], want[k][15:16+wsizes[k]]) {
				t.Fatalf("%s: segment %d differs from the copying path's (%d vs %d bytes)", c.name, k, gsizes[k], wsizes[k])
			}
		}
		if d.gso != c.layout {
			t.Errorf("%s: layout gso %d after the read, want %d", c.name, d.gso, c.layout)
		}
	}
	// Nothing queued: 0 packets, no error.
	if n, err := d.Read(make([][]byte, 128), make([]int, 128), 16); n != 0 || err != nil {
		t.Fatalf("empty Read = %d, %v", n, err)
	}
}

// Too many segments for the buffers is an error, as on the copying path, and the next packet
// reads normally.
func TestScatterReadTooManySegments(t *testing.T) {
	d, send := scatterDevice(t)
	h := vnetHdr{flags: vnetFlagNeedsCsum, gsoType: gsoTCPv4, hdrLen: 52, gsoSize: 1448, csumStart: 20, csumOffset: 16}
	send(h, superPacket(srvA, cli, 443, 40000, 1, tcpACK, make([]byte, 10*1448)))
	send(h, superPacket(srvA, cli, 443, 40000, 1, tcpACK, make([]byte, 2*1448)))
	bufs, sizes := buffers(4)
	if n, err := d.Read(bufs, sizes, 16); err == nil {
		t.Fatalf("Read of 10 segments into 4 buffers = %d, nil; want an error", n)
	}
	if n, err := d.Read(bufs, sizes, 16); n != 2 || err != nil {
		t.Fatalf("next Read = %d, %v; want 2 segments", n, err)
	}
}

// BenchmarkRead reads 44-segment super-packets (sent to a socket pair, which the figures include)
// the copying way and the scatter way, into buffers that rotate through 3 MB as the runner's pool
// does at 2.4 Gbit/s and 10 ms (cold in the cache, like the packets inside the link).
func BenchmarkRead(b *testing.B) {
	for _, mode := range []string{"copying", "scatter"} {
		b.Run(mode, func(b *testing.B) {
			d, send := scatterDevice(&testing.T{})
			if mode == "copying" {
				d.gso = 0
			}
			h := vnetHdr{flags: vnetFlagNeedsCsum, gsoType: gsoTCPv4, hdrLen: 52, gsoSize: 1448, csumStart: 20, csumOffset: 16}
			pkt := superPacket(srvA, cli, 443, 40000, 1, tcpACK, make([]byte, 44*1448))
			const sets = 48 // × 45 buffers of 1,580 bytes ≈ 3.4 MB
			var bufs [sets][][]byte
			for i := range bufs {
				bufs[i], _ = buffers(128)
			}
			sizes := make([]int, 128)
			b.SetBytes(int64(len(pkt)))
			for i := 0; i < b.N; i++ {
				send(h, pkt)
				if _, err := d.Read(bufs[i%sets], sizes, 16); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
