package link

import (
	"testing"
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// burst pushes sizes at time now and returns the fates.
func burst(d *Direction, now time.Duration, sizes ...int) []Fate {
	fates := make([]Fate, len(sizes))
	for i, s := range sizes {
		fates[i] = d.Push(now, packet(s))
	}
	return fates
}

func repeat(size, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = size
	}
	return out
}

// TestDropTail257th: a burst into an idle 1 Mbit/s link with the default 256-packet queue: 256
// packets (the one on the wire included) are accepted, the 257th and later are dropped.
func TestDropTail257th(t *testing.T) {
	d := newDirection(t, Config{RateBPS: 1_000_000, Queue: profile.QueueLimit{Packets: 256}})
	fates := burst(d, 0, repeat(1500, 300)...)
	for i, f := range fates {
		want := Accepted
		if i >= 256 {
			want = DroppedQueue
		}
		if f != want {
			t.Fatalf("packet %d of the burst: %v, want %v", i+1, f, want)
		}
	}
	s := d.Stats()
	if s.DropsQueue != 44 || s.DropsQueueBytes != 44*1500 || s.MaxQueuePackets != 256 || s.MaxQueueBytes != 256*1500 {
		t.Errorf("stats %+v", s)
	}
	got := popAll(d)
	if len(got) != 256 || got[255].Due() != 256*12*time.Millisecond {
		t.Errorf("delivered %d packets, last at %v", len(got), got[len(got)-1].Due())
	}
}

// TestDropTailByBytes: a byte limit drops the packet that would exceed it, whatever the count.
func TestDropTailByBytes(t *testing.T) {
	d := newDirection(t, Config{RateBPS: 1_000_000, Queue: profile.QueueLimit{Bytes: 15000}})
	fates := burst(d, 0, 1500, 1500, 1500, 1500, 1500, 1500, 1500, 1500, 1500, 500, 1500, 1000, 40)
	want := []Fate{
		Accepted, Accepted, Accepted, Accepted, Accepted, Accepted, Accepted, Accepted, Accepted, // 13500 B
		Accepted,     // 14000 B
		DroppedQueue, // 15500 > 15000
		Accepted,     // exactly 15000
		DroppedQueue, // a 40-byte packet no longer fits either
	}
	for i := range want {
		if fates[i] != want[i] {
			t.Errorf("packet %d: %v, want %v", i+1, fates[i], want[i])
		}
	}
	if s := d.Stats(); s.MaxQueueBytes != 15000 || s.MaxQueuePackets != 11 || s.DropsQueue != 2 || s.DropsQueueBytes != 1540 {
		t.Errorf("stats %+v", s)
	}
	// Both limits: whichever binds first.
	d = newDirection(t, Config{RateBPS: 1_000_000, Queue: profile.QueueLimit{Packets: 5, Bytes: 1_000_000}})
	if f := burst(d, 0, repeat(100, 6)...); f[4] != Accepted || f[5] != DroppedQueue {
		t.Errorf("packet limit 5 with a large byte limit: %v", f)
	}
	d = newDirection(t, Config{RateBPS: 1_000_000, Queue: profile.QueueLimit{Packets: 100, Bytes: 3000}})
	if f := burst(d, 0, 1500, 1500, 1); f[1] != Accepted || f[2] != DroppedQueue {
		t.Errorf("byte limit 3000 with a large packet limit: %v", f)
	}
}

// TestQueueFreesAsPacketsLeave: a packet leaves the queue when its last bit has been sent — at
// exactly that time, not before.
func TestQueueFreesAsPacketsLeave(t *testing.T) {
	ms := time.Millisecond
	d := newDirection(t, Config{RateBPS: 1_000_000, Queue: profile.QueueLimit{Packets: 2}})
	steps := []struct {
		at   time.Duration
		want Fate
	}{
		{0, Accepted},     // on the wire until 12 ms
		{0, Accepted},     // waiting, leaves at 24 ms
		{0, DroppedQueue}, // full
		{12*ms - 1, DroppedQueue},
		{12 * ms, Accepted}, // the first one has just left
		{12 * ms, DroppedQueue},
		{36 * ms, Accepted}, // both earlier ones left at 24 and 36 ms
		{36 * ms, Accepted},
	}
	for i, s := range steps {
		if got := d.Push(s.at, packet(1500)); got != s.want {
			t.Fatalf("step %d at %v: %v, want %v", i, s.at, got, s.want)
		}
	}
}

// TestInfiniteQueue never drops, and only when asked for.
func TestInfiniteQueue(t *testing.T) {
	d := newDirection(t, Config{RateBPS: 1_000_000, Queue: profile.QueueLimit{}})
	for _, f := range burst(d, 0, repeat(1500, 100_000)...) {
		if f != Accepted {
			t.Fatal("an infinite queue dropped a packet")
		}
	}
	if s := d.Stats(); s.MaxQueuePackets != 100_000 || s.DropsQueue != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestUnlimitedRateHasNoQueue: with no rate, packets go straight to the delay line; a tiny queue
// limit never drops anything.
func TestUnlimitedRateHasNoQueue(t *testing.T) {
	d := newDirection(t, Config{Delay: 10 * time.Millisecond, Queue: profile.QueueLimit{Packets: 1}})
	for _, f := range burst(d, 5, repeat(1500, 10_000)...) {
		if f != Accepted {
			t.Fatal("an unlimited link dropped a packet")
		}
	}
	if s := d.Stats(); s.MaxQueuePackets != 0 || s.InFlight != 10_000 {
		t.Errorf("stats %+v", s)
	}
	for _, p := range popAll(d) {
		if p.Due() != 10*time.Millisecond+5 {
			t.Fatalf("due %v, want 10ms+5ns", p.Due())
		}
	}
}

// TestDropTailQueueStage exercises the queue on its own, through the Discipline interface: the
// packets the rate stage holds count against the limit.
func TestDropTailQueueStage(t *testing.T) {
	var q Discipline = NewDropTailQueue(profile.QueueLimit{Packets: 3})
	for i := 0; i < 2; i++ {
		if f := q.Enqueue(0, packet(100), Backlog{Packets: 1, Bytes: 100}); f != Accepted {
			t.Fatalf("refused below the limit: %v", f)
		}
	}
	if f := q.Enqueue(0, packet(100), Backlog{Packets: 1, Bytes: 100}); f != DroppedQueue {
		t.Fatalf("above the limit: %v", f)
	}
	if f := q.Enqueue(0, packet(100), Backlog{}); f != Accepted {
		t.Fatalf("refused once the wire was free: %v", f)
	}
	if b := q.Backlog(); b != (Backlog{Packets: 3, Bytes: 300}) {
		t.Errorf("backlog %+v", b)
	}
	for i := 0; i < 3; i++ {
		if q.Dequeue(0) == nil {
			t.Fatal("empty too soon")
		}
	}
	if q.Dequeue(0) != nil || q.Backlog() != (Backlog{}) {
		t.Error("not empty")
	}
}

// TestRingGrowth: the FIFO keeps order across growth and wrap-around.
func TestRingGrowth(t *testing.T) {
	r := newRing[int](1)
	next, want := 0, 0
	for round := 0; round < 50; round++ {
		for i := 0; i < round*7%40+1; i++ {
			r.push(next)
			next++
		}
		for i := 0; i < round*5%37 && r.len() > 0; i++ {
			if got := r.pop(); got != want {
				t.Fatalf("pop = %d, want %d", got, want)
			}
			want++
		}
	}
	for r.len() > 0 {
		if got := r.pop(); got != want {
			t.Fatalf("pop = %d, want %d", got, want)
		}
		want++
	}
	if want != next {
		t.Fatalf("popped %d, pushed %d", want, next)
	}
}
