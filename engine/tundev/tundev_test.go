package tundev

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// superPacket builds an IPv4 TCP GSO packet as the kernel hands it over: headers with the
// timestamp option, payload, and the pseudo-header sum in the checksum field.
func superPacket(src, dst [4]byte, sport, dport uint16, seq uint32, flags uint8, payload []byte) []byte {
	const ipLen, tcpLen = 20, 32
	p := make([]byte, ipLen+tcpLen+len(payload))
	p[0] = 0x45
	binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
	binary.BigEndian.PutUint16(p[4:], 0x1234)
	p[6] = 0x40
	p[8] = 64
	p[9] = 6
	copy(p[12:], src[:])
	copy(p[16:], dst[:])
	setIPv4Checksum(p, ipLen)
	t := p[ipLen:]
	binary.BigEndian.PutUint16(t[0:], sport)
	binary.BigEndian.PutUint16(t[2:], dport)
	binary.BigEndian.PutUint32(t[4:], seq)
	binary.BigEndian.PutUint32(t[8:], 777)
	t[12] = tcpLen / 4 << 4
	t[13] = flags
	binary.BigEndian.PutUint16(t[14:], 512)
	t[20], t[21], t[22], t[23] = 1, 1, 8, 10 // NOP NOP TS
	binary.BigEndian.PutUint32(t[24:], 1000)
	binary.BigEndian.PutUint32(t[28:], 2000)
	copy(p[ipLen+tcpLen:], payload)
	in, _ := parse(p)
	binary.BigEndian.PutUint16(t[16:], pseudoSum(p, &in, len(p)-ipLen))
	return p
}

// validChecksum completes a partial checksum on a copy and verifies it as a receiver would.
func validChecksum(t *testing.T, pkt []byte) {
	t.Helper()
	c := append([]byte(nil), pkt...)
	in, ok := parse(c)
	if !ok {
		t.Fatal("unparseable segment")
	}
	if err := completeChecksum(c, in.ipLen, in.csumOffset()); err != nil {
		t.Fatal(err)
	}
	var pseudo [12]byte
	copy(pseudo[:8], c[12:20])
	pseudo[9] = in.proto
	binary.BigEndian.PutUint16(pseudo[10:], uint16(len(c)-in.ipLen))
	if fold(sum(c[in.ipLen:], sum(pseudo[:], 0))) != 0xffff {
		t.Error("transport checksum invalid after completion")
	}
	if fold(sum(c[:in.ipLen], 0)) != 0xffff {
		t.Error("IPv4 header checksum invalid")
	}
}

func fill(b []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

func buffers(n int) ([][]byte, []int) {
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = make([]byte, 16+1500+64)
	}
	return bufs, make([]int, n)
}

var (
	srvA = [4]byte{10, 77, 1, 1}
	cli  = [4]byte{10, 77, 0, 2}
)

func TestSplit(t *testing.T) {
	payload := make([]byte, 10000)
	fill(payload, 1)
	sp := superPacket(srvA, cli, 443, 40000, 5000, tcpACK|tcpPSH|tcpFIN, payload)
	h := vnetHdr{flags: vnetFlagNeedsCsum, gsoType: gsoTCPv4, hdrLen: 52, gsoSize: 1448, csumStart: 20, csumOffset: 16}
	bufs, sizes := buffers(128)
	n, err := split(sp, &h, bufs, sizes, 16)
	if err != nil || n != 7 {
		t.Fatalf("split: %d segments, %v", n, err)
	}
	var got []byte
	for i := 0; i < n; i++ {
		seg := bufs[i][16 : 16+sizes[i]]
		if bufs[i][15] != metaPartial {
			t.Errorf("segment %d not marked partial", i)
		}
		in, ok := parse(seg)
		if !ok {
			t.Fatalf("segment %d unparseable", i)
		}
		if want := 1448; i < n-1 && in.payload != want {
			t.Errorf("segment %d payload %d", i, in.payload)
		}
		if seq := binary.BigEndian.Uint32(seg[24:]); seq != 5000+uint32(i*1448) {
			t.Errorf("segment %d seq %d", i, seq)
		}
		flags := seg[33]
		if last := i == n-1; (flags&(tcpPSH|tcpFIN) != 0) != last {
			t.Errorf("segment %d flags %#x", i, flags)
		}
		if id := binary.BigEndian.Uint16(seg[4:]); id != 0x1234+uint16(i) {
			t.Errorf("segment %d IP id %#x", i, id)
		}
		validChecksum(t, seg)
		got = append(got, seg[52:]...)
	}
	if !bytes.Equal(got, payload) {
		t.Error("payload not preserved")
	}
}

func TestPlanAndAssembleRoundTrip(t *testing.T) {
	payload := make([]byte, 20000)
	fill(payload, 2)
	sp := superPacket(srvA, cli, 443, 40000, 1, tcpACK|tcpPSH, payload)
	orig := append([]byte(nil), sp...)
	h := vnetHdr{flags: vnetFlagNeedsCsum, gsoType: gsoTCPv4, hdrLen: 52, gsoSize: 1448, csumStart: 20, csumOffset: 16}
	bufs, sizes := buffers(128)
	n, _ := split(sp, &h, bufs, sizes, 16)
	wb := make([][]byte, n)
	for i := range wb {
		wb[i] = bufs[i][:16+sizes[i]]
	}
	groups, next := plan(wb, 16, true, nil, nil)
	if len(groups) != 1 || groups[0].count != n {
		t.Fatalf("%d groups (first has %d segments), want 1 of %d", len(groups), groups[0].count, n)
	}
	var parts [][]byte
	wh := assemble(wb, 16, &groups[0], next, func(b []byte) { parts = append(parts, b) })
	joined := bytes.Join(parts[1:], nil)
	if wh.gsoType != gsoTCPv4 || wh.gsoSize != 1448 || wh.hdrLen != 52 || wh.flags != vnetFlagNeedsCsum {
		t.Errorf("virtio header %+v", wh)
	}
	// Identical to what the kernel handed over (the checksum field aside: both are pseudo sums).
	if len(joined) != len(orig) || !bytes.Equal(joined[:36], orig[:36]) || !bytes.Equal(joined[38:], orig[38:]) {
		t.Error("coalesced packet differs from the original super-packet")
	}
	validChecksum(t, joined)
}

func TestPlanGroups(t *testing.T) {
	seg := func(src [4]byte, sport uint16, seq uint32, flags uint8, n int) []byte {
		b := make([]byte, 16, 16+52+n)
		b[15] = metaPartial
		return append(b, superPacket(src, cli, sport, 40000, seq, flags, make([]byte, n))...)
	}
	srvB := [4]byte{10, 77, 1, 2}
	syn := seg(srvA, 443, 0, 0x12, 0)[:16+52]
	bufs := [][]byte{
		seg(srvA, 443, 1, tcpACK, 1000), // A1
		seg(srvB, 443, 1, tcpACK, 1000), // B1
		seg(srvA, 443, 1001, tcpACK, 1000),
		seg(srvB, 443, 1001, tcpACK, 1000),
		seg(srvA, 443, 2001, tcpACK|tcpPSH, 500), // A ends (PSH)
		seg(srvA, 443, 2501, tcpACK, 1000),       // A: new group
		syn,                                      // not a candidate
		seg(srvB, 443, 5001, tcpACK, 1000),       // B: gap, new group
		seg(srvB, 443, 6001, tcpACK, 1200),       // larger than the head: new group
	}
	groups, next := plan(bufs, 16, false, nil, nil)
	var got [][]int
	for _, g := range groups {
		var idx []int
		for i := g.first; i >= 0; i = next[i] {
			idx = append(idx, i)
		}
		got = append(got, idx)
	}
	want := [][]int{{0, 2, 4}, {1, 3}, {5}, {6}, {7}, {8}}
	if len(got) != len(want) {
		t.Fatalf("groups %v, want %v", got, want)
	}
	for i := range want {
		if !equalInts(got[i], want[i]) {
			t.Fatalf("groups %v, want %v", got, want)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func FuzzParseSplit(f *testing.F) {
	f.Add(superPacket(srvA, cli, 1, 2, 3, tcpACK, make([]byte, 3000)), uint16(1448))
	f.Fuzz(func(t *testing.T, pkt []byte, gso uint16) {
		bufs, sizes := buffers(128)
		h := vnetHdr{gsoType: gsoTCPv4, gsoSize: gso, csumStart: 20, csumOffset: 16}
		split(pkt, &h, bufs, sizes, 16)
		plan([][]byte{append(make([]byte, 16), pkt...)}, 16, true, nil, nil)
	})
}

func BenchmarkSplit(b *testing.B) {
	sp := superPacket(srvA, cli, 443, 40000, 1, tcpACK, make([]byte, 44*1448))
	h := vnetHdr{flags: vnetFlagNeedsCsum, gsoType: gsoTCPv4, hdrLen: 52, gsoSize: 1448, csumStart: 20, csumOffset: 16}
	bufs, sizes := buffers(128)
	b.SetBytes(int64(len(sp)))
	for i := 0; i < b.N; i++ {
		split(sp, &h, bufs, sizes, 16)
	}
}
