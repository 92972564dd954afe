package link

import (
	"sort"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// TestFQCoDelSparseFlow: beside a bulk flow that keeps the link overloaded (and whose packets
// CoDel drops), a sparse flow's packets wait at most for the packet on the wire — near-zero
// sojourn — and none of them is dropped.
func TestFQCoDelSparseFlow(t *testing.T) {
	const bps = 10_000_000
	bulk := cbr(0, 10*time.Second, 20e6, 1500, 1, 0)
	sparse := cbr(3*time.Millisecond, 10*time.Second, 32_000, 200, 2, 0) // 200 B every 50 ms
	out, d := runLink(t, aqm(profile.FQCoDel, bps), merge(bulk, sparse), 0)
	onWire := TransmissionTime(1500, bps)
	var bulkDrops, sparseSeen int
	var bulkSojourn []time.Duration
	for _, o := range out {
		switch {
		case o.flow == 1 && o.fate.Dropped():
			bulkDrops++
		case o.flow == 1:
			bulkSojourn = append(bulkSojourn, o.sojourn)
		case o.fate != Delivered:
			t.Fatalf("sparse packet %d at %v: %v", o.index, o.at, o.fate)
		default:
			sparseSeen++
			if o.sojourn > onWire {
				t.Errorf("sparse packet at %v waited %v, more than one bulk packet's %v on the wire", o.at, o.sojourn, onWire)
			}
		}
	}
	sort.Slice(bulkSojourn, func(i, j int) bool { return bulkSojourn[i] < bulkSojourn[j] })
	median := bulkSojourn[len(bulkSojourn)/2]
	if sparseSeen < 190 || bulkDrops < 1000 || median < 100*onWire { // the unresponsive bulk flow queues for long
		t.Errorf("%d sparse packets, %d bulk drops, bulk median sojourn %v", sparseSeen, bulkDrops, median)
	}
	if f := d.Gateway().Flows; f == nil || f.WithDrops != 1 || f.Top[0].Drops != uint64(bulkDrops) || f.Queues != 1024 {
		t.Errorf("flow stats %+v (the bulk flow's queue alone dropped %d)", f, bulkDrops)
	}
}

// TestFQCoDelSharesWithinQuantum: two bulk flows that each could fill the link get equal bytes:
// at every moment both are backlogged, the bytes each has sent differ by at most one quantum —
// with equal packets, and with packets of different sizes (then by a quantum plus a packet, the
// deficit round robin's bound).
func TestFQCoDelSharesWithinQuantum(t *testing.T) {
	const bps = 10_000_000
	for _, sizes := range [][2]int{{1500, 1500}, {1500, 576}, {300, 1400}} {
		a := cbr(0, 6*time.Second, 10e6, sizes[0], 1, 0)
		b := cbr(0, 6*time.Second, 10e6, sizes[1], 2, 0)
		out, _ := runLink(t, aqm(profile.FQCoDel, bps), merge(a, b), 0)
		var sent []outcome
		for _, o := range out {
			if o.fate == Delivered {
				sent = append(sent, o)
			}
		}
		sort.SliceStable(sent, func(i, j int) bool { return sent[i].due < sent[j].due })
		bound := int64(1514)
		if sizes[0] != sizes[1] {
			bound += int64(max(sizes[0], sizes[1]))
		}
		var bytes [3]int64
		worst := int64(0)
		for _, o := range sent {
			bytes[o.flow] += int64(o.size)
			if o.due > time.Second && o.due < 5*time.Second { // both backlogged throughout
				worst = max(worst, abs64(bytes[1]-bytes[2]))
			}
		}
		if worst > bound {
			t.Errorf("sizes %v: the flows' bytes differed by up to %d, more than %d", sizes, worst, bound)
		}
		if bytes[1] < 3_000_000 || bytes[2] < 3_000_000 {
			t.Errorf("sizes %v: sent %d and %d bytes", sizes, bytes[1], bytes[2])
		}
	}
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestFQCoDelOverflowDropsFattest: past the limit, the drops come from the flow with the largest
// backlog — not from the short flows beside it — and count as overflow.
func TestFQCoDelOverflowDropsFattest(t *testing.T) {
	cfg := aqm(profile.FQCoDel, 1_000_000)
	cfg.Queue = profile.QueueLimit{Packets: 50}
	fat := cbr(0, 200*time.Millisecond, 20e6, 1500, 1, 0) // 333 packets in 0.2 s into 1 Mbit/s
	thin := cbr(time.Millisecond, 200*time.Millisecond, 200_000, 100, 2, 0)
	out, d := runLink(t, cfg, merge(fat, thin), 0)
	for _, o := range out {
		if o.flow == 2 && o.fate.Dropped() {
			t.Fatalf("the thin flow's packet at %v: %v", o.at, o.fate)
		}
	}
	if g := d.Gateway(); g.DropsOverflow < 200 || g.DropsTail != 0 {
		t.Errorf("gateway %+v", g)
	}
}
