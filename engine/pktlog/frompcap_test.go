package pktlog

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/pcap"
)

// clientCapture writes page's packets as the emulator's client.pcap has them: Up packets when they
// entered the link (dropped ones too), Down packets when they were delivered, in time order,
// stamped start + that instant.
func clientCapture(t *testing.T, start time.Time, snapLen int) []byte {
	t.Helper()
	type pkt struct {
		at   time.Duration
		data []byte
	}
	var pkts []pkt
	pageEvents(func(dir Dir, fate Fate, in, out time.Duration, p []byte) {
		switch {
		case dir == Up:
			pkts = append(pkts, pkt{in, p})
		case fate == Delivered:
			pkts = append(pkts, pkt{out, p})
		}
	})
	slices.SortStableFunc(pkts, func(a, b pkt) int { return int(a.at - b.at) })
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, snapLen)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkts {
		if err := w.WritePacket(start.Add(p.at), p.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestFromPcapToW: the capture of the client's side gives the packet log's ToW, first packet and
// last response to the nanosecond, through the same SummarizeUntil, with or without a limit.
func TestFromPcapToW(t *testing.T) {
	start := time.Unix(1_764_000_000, 123_456_789)
	for _, snap := range []int{0, 64} {
		recs, err := FromPcap(bytes.NewReader(clientCapture(t, start, snap)), cli.Addr())
		if err != nil {
			t.Fatal(err)
		}
		var l Log
		page(&l)
		logRecs := l.Take()
		base := time.Duration(start.UnixNano())
		for _, by := range []time.Duration{time.Duration(1 << 62), 180 * ms} {
			want := SummarizeUntil(logRecs, by)
			got := SummarizeUntil(recs, base+by)
			if got.FirstPacket-base != want.FirstPacket || got.FirstRequest-base != want.FirstRequest || got.LastResponse-base != want.LastResponse {
				t.Errorf("snap %d, by %v: capture first %v request %v last %v; log %v %v %v", snap, by,
					got.FirstPacket-base, got.FirstRequest-base, got.LastResponse-base, want.FirstPacket, want.FirstRequest, want.LastResponse)
			}
			gt, gok := got.ToW()
			wt, wok := want.ToW()
			if gt != wt || gok != wok {
				t.Errorf("snap %d, by %v: ToW from the capture %v %v, from the log %v %v", snap, by, gt, gok, wt, wok)
			}
			// Bytes and retransmissions are the log's but for what one side cannot see: the
			// dropped Down packets are absent, the dropped Up packets (none here) count as sent.
			if got.Up.Bytes != want.Up.Bytes || got.Down.Bytes != want.Down.Bytes || got.Down.Retransmissions != 1 {
				t.Errorf("snap %d: bytes up %d/%d down %d/%d, down retransmissions %d (want 1: the lost segment's resend)", snap,
					got.Up.Bytes, want.Up.Bytes, got.Down.Bytes, want.Down.Bytes, got.Down.Retransmissions)
			}
		}
	}
}

func TestFromPcapRefusesOtherFormats(t *testing.T) {
	if _, err := FromPcap(bytes.NewReader([]byte("not a capture at all, no")), cli.Addr()); err == nil {
		t.Error("a file that is not a capture was read")
	}
}
