package link

import (
	"math"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// TestCoDelControlLaw: the next drop is interval/√count later, exactly, in CoDel's 1.024 µs units.
func TestCoDelControlLaw(t *testing.T) {
	interval := toCodelTime(100 * time.Millisecond) // 97656 units
	for count := uint32(1); count <= 100_000; count = count*3 + 1 {
		got := codelControlLaw(1000, interval, count) - 1000
		want := math.Floor(float64(interval) / math.Sqrt(float64(count)))
		if float64(got) != want {
			t.Errorf("count %d: %d units, want %v", count, got, want)
		}
	}
	// Wrapping: the law works across the 32-bit clock's wrap, and comparisons with it.
	near := codelTime(math.MaxUint32 - 10)
	if next := codelControlLaw(near, interval, 1); !next.after(near) || next != near+interval {
		t.Errorf("across the wrap: %d after %d", next, near)
	}
}

// TestCoDelNothingBelowTarget: a queue whose sojourn times stay below target never loses a packet
// to CoDel, however long it stands.
func TestCoDelNothingBelowTarget(t *testing.T) {
	// 10 Mbit/s: a 1500-byte packet takes 1.2 ms. Bursts of 4 every 4.8 ms keep the link exactly
	// busy; the last of each burst waits 3.6 ms < 5 ms.
	var arrivals []arrival
	for at := time.Duration(0); at < 20*time.Second; at += 4800 * time.Microsecond {
		for range 4 {
			arrivals = append(arrivals, arrival{at: at, size: 1500, flow: 1})
		}
	}
	out, d := runLink(t, aqm(profile.CoDel, 10_000_000), arrivals, 0)
	if n := countFate(out, DroppedAQM); n != 0 {
		t.Fatalf("%d CoDel drops below target", n)
	}
	g := d.Gateway()
	if g.Sojourn.Max < 3.5 || g.Sojourn.Max >= 5 || g.DropsAQM != 0 {
		t.Errorf("gateway %+v: want sojourn max 3.6 ms and no drops", g)
	}
	// Five per burst every 6 ms: sojourn up to 4.8 ms, still below 5 ms.
	arrivals = arrivals[:0]
	for at := time.Duration(0); at < 20*time.Second; at += 6 * time.Millisecond {
		for range 5 {
			arrivals = append(arrivals, arrival{at: at, size: 1500, flow: 1})
		}
	}
	if out, d := runLink(t, aqm(profile.CoDel, 10_000_000), arrivals, 0); countFate(out, DroppedAQM) != 0 || d.Gateway().Sojourn.Max < 4.7 {
		t.Errorf("bursts of 5: %d drops, gateway %+v", countFate(out, DroppedAQM), d.Gateway())
	}
}

// codelRecorder is a Sink that records CoDel's drops with the count at each.
type codelRecorder struct {
	q     *CoDelQueue
	at    []time.Duration
	count []uint32
}

func (r *codelRecorder) Drop(p *Packet, at time.Duration, why Fate) {
	r.at = append(r.at, at)
	r.count = append(r.count, r.q.v.count)
}

// TestCoDelDropSpacing: under a standing overload, CoDel starts dropping once the sojourn time has
// been above target for an interval, and spaces its drops interval/√count apart: each drop comes
// at the first dequeue at or after the control law's time.
func TestCoDelDropSpacing(t *testing.T) {
	const rate = 10_000_000
	tx := TransmissionTime(1500, rate) // 1.2 ms: the dequeue grid while the queue is busy
	rec := &codelRecorder{}
	info, _ := profile.LookupDiscipline(profile.CoDel)
	q := NewCoDelQueue(DisciplineConfig{Discipline: info.Defaults, Limit: info.DefaultLimit, Sink: rec})
	rec.q = q
	// Arrivals at 1.5 × the rate; the queue is served every 1.2 ms from time 0.
	now, arrive := time.Duration(0), time.Duration(0)
	firstAbove := time.Duration(-1)
	for now < 3*time.Second {
		for ; arrive <= now; arrive += tx * 2 / 3 {
			q.Enqueue(arrive, &Packet{Data: ipPacket(1500, 1, 0, true), arrival: arrive}, Backlog{})
		}
		p := q.Dequeue(now)
		if p != nil && firstAbove < 0 && toCodelTime(now)-toCodelTime(p.arrival) >= toCodelTime(5*time.Millisecond) {
			firstAbove = now
		}
		now += tx
	}
	if len(rec.at) < 20 {
		t.Fatalf("only %d drops in 3 s of 50 %% overload", len(rec.at))
	}
	rec.count[0] = 1 // the drop that enters the dropping state happens before CoDel sets count = 1
	// The first drop: the first dequeue after an interval above target (Linux: strictly after).
	if first := rec.at[0]; first <= firstAbove+100*time.Millisecond || first > firstAbove+100*time.Millisecond+tx {
		t.Errorf("first drop at %v; the sojourn went above 5 ms at %v", first, firstAbove)
	}
	// Then each drop at the first dequeue at or after the control law's time: interval/√count after
	// the previous drop, count being the number of drops so far in this dropping state.
	interval := 100 * time.Millisecond
	for k := 1; k < 20; k++ {
		law := interval.Seconds() / math.Sqrt(float64(rec.count[k-1]))
		gap := (rec.at[k] - rec.at[k-1]).Seconds()
		if rec.count[k] != rec.count[k-1]+1 {
			t.Fatalf("drop %d: count %d after %d (the episode ended?)", k, rec.count[k], rec.count[k-1])
		}
		// The previous drop happened up to one dequeue after its scheduled time, this one too.
		if math.Abs(gap-law) > tx.Seconds()+2e-6 {
			t.Errorf("drop %d: %.4f s after drop %d (count %d), want interval/√count = %.4f s (± one dequeue, %v)", k, gap, k-1, rec.count[k-1], law, tx)
		}
	}
}

// TestCoDelECNMarks: with ECN, ECN-capable packets are marked instead of dropped — as many marks
// as drops would have been, the header rewritten to CE with a valid checksum — and Not-ECT
// packets are still dropped.
func TestCoDelECNMarks(t *testing.T) {
	overload := cbr(0, 5*time.Second, 15_000_000, 1500, 1, ecnECT0)
	plain, _ := runLink(t, aqm(profile.CoDel, 10_000_000), overload, 0)
	cfg := aqm(profile.CoDel, 10_000_000)
	cfg.ECN = true
	marked, d := runLink(t, cfg, overload, 0)
	if n := countFate(marked, DroppedAQM); n != 0 {
		t.Errorf("%d AQM drops of ECN-capable packets with ECN on", n)
	}
	drops, marks := countFate(plain, DroppedAQM), countFate(marked, Marked)
	if drops < 50 || marks < drops/2 {
		t.Errorf("%d drops without ECN, %d marks with it", drops, marks)
	}
	if g := d.Gateway(); g.Marks != uint64(marks) || g.DropsAQM != 0 {
		t.Errorf("gateway %+v, %d marks", g, marks)
	}
	// A Not-ECT stream under the same overload is dropped even with ECN on.
	notECT, _ := runLink(t, cfg, cbr(0, 5*time.Second, 15_000_000, 1500, 1, ecnNotECT), 0)
	if countFate(notECT, Marked) != 0 || countFate(notECT, DroppedAQM) != drops {
		t.Errorf("Not-ECT with ECN on: %d marks, %d drops (want 0 and %d)", countFate(notECT, Marked), countFate(notECT, DroppedAQM), drops)
	}
}

// TestMarkCE: marking rewrites the ECN field and keeps the IPv4 header checksum valid; CE stays
// CE; Not-ECT and non-IP packets are not marked; IPv6's traffic class is marked.
func TestMarkCE(t *testing.T) {
	for _, ecn := range []uint8{ecnECT0, ecnECT1, ecnCE} {
		p := &Packet{Data: ipPacket(100, 7, ecn, true)}
		p.Data[1] |= 0xb8 // DSCP EF stays
		p.Data[10], p.Data[11] = 0, 0
		copy(p.Data[10:], []byte{byte(ipv4Checksum(p.Data[:20]) >> 8), byte(ipv4Checksum(p.Data[:20]))})
		if !markCE(p) || ECNField(p.Data) != ecnCE || p.Data[1]&^3 != 0xb8 || !p.ce {
			t.Fatalf("ECN %d: not marked: %x", ecn, p.Data[:2])
		}
		if got, want := uint16(p.Data[10])<<8|uint16(p.Data[11]), ipv4Checksum(p.Data[:20]); got != want {
			t.Errorf("ECN %d: checksum %04x after marking, want %04x", ecn, got, want)
		}
	}
	if p := (&Packet{Data: ipPacket(100, 7, ecnNotECT, true)}); markCE(p) || p.ce {
		t.Error("a Not-ECT packet was marked")
	}
	v6 := make([]byte, 60)
	v6[0], v6[1] = 0x60, 0x20 // traffic class ECT(0)
	if p := (&Packet{Data: v6}); !markCE(p) || ECNField(v6) != ecnCE || v6[0] != 0x60 {
		t.Errorf("IPv6: %x", v6[:2])
	}
	if p := (&Packet{Data: []byte{0x45}}); markCE(p) {
		t.Error("a truncated packet was marked")
	}
}
