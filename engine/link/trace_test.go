package link

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

const ms = time.Millisecond

func traceDirection(t *testing.T, text string) *Direction {
	t.Helper()
	return newDirection(t, Config{Trace: mustTrace(t, text), Queue: profile.QueueLimit{}})
}

// TestTraceOnePerLineIs12Mbit: a trace with one opportunity every millisecond delivers one
// 1500-byte packet per millisecond: exactly 12 Mbit/s, forever.
func TestTraceOnePerLineIs12Mbit(t *testing.T) {
	d := traceDirection(t, "1\n")
	const n = 12_000 // 12 s of saturated link
	for i := 0; i < n; i++ {
		d.Push(0, packet(1500))
	}
	delivered := 0
	for sec := 1; sec <= 12; sec++ {
		bytes := 0
		for {
			p, ok := d.Pop(time.Duration(sec) * time.Second)
			if !ok {
				break
			}
			if want := time.Duration(delivered+1) * ms; p.Due() != want {
				t.Fatalf("packet %d due at %v, want %v", delivered+1, p.Due(), want)
			}
			delivered++
			bytes += len(p.Data)
		}
		if bits := bytes * 8; bits != 12_000_000 {
			t.Fatalf("second %d carried %d bits, want 12000000", sec, bits)
		}
	}
	if delivered != n {
		t.Fatalf("delivered %d of %d", delivered, n)
	}
}

// TestTraceWithGaps: a burst drains exactly at the trace's opportunities, looping with the
// period, and over a long run the link delivers what its opportunities allow and no more.
func TestTraceWithGaps(t *testing.T) {
	d := traceDirection(t, "5\n5\n20\n100\n")
	for i := 0; i < 8; i++ {
		d.Push(0, packet(1500))
	}
	want := []time.Duration{5 * ms, 5 * ms, 20 * ms, 100 * ms, 105 * ms, 105 * ms, 120 * ms, 200 * ms}
	for i, p := range popAll(d) {
		if p.Due() != want[i] {
			t.Errorf("packet %d due at %v, want %v", i, p.Due(), want[i])
		}
	}
	// Saturate for 10 s: 4 opportunities per 100 ms = 400 packets by t = 10 s.
	d = traceDirection(t, "5\n5\n20\n100\n")
	for i := 0; i < 1000; i++ {
		d.Push(0, packet(1500))
	}
	got := 0
	for {
		if _, ok := d.Pop(10 * time.Second); !ok {
			break
		}
		got++
	}
	if got != 400 {
		t.Errorf("10 s of a 4-per-100ms trace delivered %d packets, want 400", got)
	}
}

// TestTracePacketSharing: an opportunity carries parts of packets and several small packets;
// capacity left when the queue empties is lost; arrival at an opportunity's time catches it.
func TestTracePacketSharing(t *testing.T) {
	type step struct {
		at   time.Duration
		size int
		want time.Duration
	}
	cases := []struct {
		name  string
		trace string
		steps []step
	}{
		{"100 small packets share one opportunity", "1", func() []step {
			var s []step
			for i := 0; i < 100; i++ {
				s = append(s, step{0, 15, ms})
			}
			return append(s, step{0, 15, 2 * ms})
		}()},
		{"a large packet spans opportunities", "1", []step{{0, 3000, 2 * ms}, {0, 1, 3 * ms}, {0, 4501, 6 * ms}}},
		{"packets split across opportunities", "1", []step{
			{0, 1000, ms},                           // 500 bytes left in the 1 ms opportunity
			{0, 1000, 2 * ms},                       // 500 at 1 ms, 500 at 2 ms: 1000 left there
			{1500 * time.Microsecond, 1000, 2 * ms}, // arrived before 2 ms: fits in what is left
			{1500 * time.Microsecond, 1, 3 * ms},
		}},
		{"unused capacity is lost", "1", []step{
			{0, 100, ms},                            // 1400 bytes unused at 1 ms …
			{1500 * time.Microsecond, 1400, 2 * ms}, // … and gone: this one arrived after 1 ms
		}},
		{"unused capacity serves earlier arrivals", "1", []step{
			{0, 100, ms},
			{500 * time.Microsecond, 1400, ms}, // arrived before the 1 ms opportunity
		}},
		{"arrival at an opportunity's time catches it", "1", []step{{ms, 1500, ms}, {ms, 1500, 2 * ms}, {3 * ms, 1, 3 * ms}}},
		{"several opportunities at one time", "3\n3\n3\n10", []step{{0, 4500, 3 * ms}, {0, 1, 10 * ms}}},
		{"the loop's end and start coincide", "0\n10", []step{
			{0, 1500, 0}, // opportunity at 0
			{time.Nanosecond, 1500, 10 * ms},
			{10 * ms, 1500, 10 * ms}, // 10 ms holds two: the end of loop 0 and the start of loop 1
			{10 * ms, 1500, 20 * ms}, // the end of loop 1 …
			{20 * ms, 3000, 30 * ms}, // … so only the start of loop 2 is left at 20 ms
			{45 * ms, 3000, 50 * ms}, // a seek: the end of loop 4 and the start of loop 5
		}},
		{"seeking lands on the first of coinciding opportunities", "0\n10", []step{{20 * ms, 3000, 20 * ms}}},
		{"a long idle skips whole periods", "3\n10", []step{
			{0, 1500, 3 * ms},
			{1_000_000*time.Second + 4*ms, 1500, 1_000_000*time.Second + 10*ms},
			{1_000_000*time.Second + 10*ms, 1499, 1_000_000*time.Second + 13*ms},
			{1_000_000*time.Second + 13*ms, 1, 1_000_000*time.Second + 13*ms},
		}},
	}
	for _, c := range cases {
		r := NewTraceRate(mustTrace(t, c.trace))
		for i, s := range c.steps {
			if got := r.Depart(s.at, s.size); got != s.want {
				t.Errorf("%s: step %d (%d B at %v) departs at %v, want %v", c.name, i, s.size, s.at, got, s.want)
				break
			}
		}
	}
}

// referenceTrace is mahimahi's LinkQueue loop, written plainly: walk the opportunities in time
// order; before using one, queue every packet that has arrived by then; carry bytes from the head
// of the queue. It knows nothing of cursors or seeking.
func referenceTrace(msTimes []int, arrivals []time.Duration, sizes []int) []time.Duration {
	period := time.Duration(msTimes[len(msTimes)-1]) * ms
	departs := make([]time.Duration, len(sizes))
	next, head := 0, 0 // next packet to queue; head of the queue
	queued := 0
	left := 0 // bytes of the head packet still to send
	for loop := 0; head < len(sizes); loop++ {
		for _, m := range msTimes {
			at := time.Duration(loop)*period + time.Duration(m)*ms
			for next < len(sizes) && arrivals[next] <= at {
				next++
				queued++
			}
			spare := 1500
			for spare > 0 && head < next {
				if left == 0 {
					left = sizes[head]
				}
				use := min(spare, left)
				spare -= use
				left -= use
				if left == 0 {
					departs[head] = at
					head++
					queued--
				}
			}
			// A zero-byte head packet still needs to reach an opportunity: handled above since
			// left is set to 0 and it departs at the first opportunity it is queued for.
		}
	}
	return departs
}

// TestTraceMatchesReference: random traces and random traffic against the plain reference.
func TestTraceMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 200; round++ {
		// A random trace: 1-30 lines, gaps 0-20 ms, last > 0.
		n := 1 + rng.IntN(30)
		times := make([]int, n)
		cur := rng.IntN(3) // may start at 0
		for i := range times {
			times[i] = cur
			if rng.IntN(3) > 0 {
				cur += rng.IntN(20)
			}
		}
		if times[n-1] == 0 {
			times[n-1] = 1 + rng.IntN(5)
		}
		var text strings.Builder
		for _, m := range times {
			fmt.Fprintln(&text, m)
		}
		tr := mustTrace(t, text.String())
		// Random traffic: bursts and idle gaps, sizes 1-3000 bytes (some larger than an opportunity).
		k := 1 + rng.IntN(300)
		arrivals := make([]time.Duration, k)
		sizes := make([]int, k)
		now := time.Duration(0)
		for i := range arrivals {
			switch rng.IntN(4) {
			case 0: // same time
			case 1:
				now += time.Duration(rng.Int64N(int64(50 * ms)))
			default:
				now += time.Duration(rng.Int64N(int64(2 * ms)))
			}
			if rng.IntN(3) == 0 {
				now = now.Truncate(ms) // on the trace's grid: arrivals coincide with opportunities
			}
			now = max(now, arrivals[max(i-1, 0)])
			arrivals[i] = now
			sizes[i] = 1 + rng.IntN(3000)
		}
		want := referenceTrace(times, arrivals, sizes)
		r := NewTraceRate(tr)
		for i := range arrivals {
			if got := r.Depart(arrivals[i], sizes[i]); got != want[i] {
				t.Fatalf("round %d, trace %v: packet %d (%d B at %v) departs at %v, reference %v", round, times, i, sizes[i], arrivals[i], got, want[i])
			}
		}
	}
}
