package realtime

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/tun/tuntest"

	"github.com/wirelab/wirelab/engine/internal/pkttest"
	"github.com/wirelab/wirelab/engine/internal/timebound"
	"github.com/wirelab/wirelab/engine/link"
)

// fakeLink is a test double of the link model: fixed delay plus per-origin extra delay, and a
// loss pattern (every dropEvery-th packet).
type fakeLink struct {
	delay      time.Duration
	extra      map[int]time.Duration
	dropEvery  int // drop every dropEvery-th packet on arrival (loss)
	laterEvery int // hand every laterEvery-th packet back dropped by the queue, at its due time
	markEvery  int // hand every markEvery-th packet back marked
	dupEvery   int // hand every dupEvery-th packet's handle back twice (a bug of the link)
	n          int
	q          pq
	seq        int
}

type item struct {
	due  time.Duration
	seq  int
	h    Handle
	fate link.Fate
}
type pq []item

func (q pq) Len() int { return len(q) }
func (q pq) Less(i, j int) bool {
	return q[i].due < q[j].due || (q[i].due == q[j].due && q[i].seq < q[j].seq)
}
func (q pq) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *pq) Push(x any)   { *q = append(*q, x.(item)) }
func (q *pq) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

func (l *fakeLink) Push(now time.Duration, pkt []byte, origin int, h Handle) link.Fate {
	l.n++
	if l.dropEvery > 0 && l.n%l.dropEvery == 0 {
		return link.DroppedLoss
	}
	l.seq++
	fate := link.Delivered
	switch {
	case l.laterEvery > 0 && l.n%l.laterEvery == 0:
		fate = link.DroppedAQM
	case l.markEvery > 0 && l.n%l.markEvery == 0:
		fate = link.Marked
	}
	heap.Push(&l.q, item{due: now + l.delay + l.extra[origin], seq: l.seq, h: h, fate: fate})
	if l.dupEvery > 0 && l.n%l.dupEvery == 0 {
		l.seq++
		heap.Push(&l.q, item{due: now + l.delay + l.extra[origin], seq: l.seq, h: h, fate: fate})
	}
	return link.Accepted
}

func (l *fakeLink) Pop(now time.Duration) (Out, bool) {
	if len(l.q) == 0 || l.q[0].due > now {
		return Out{}, false
	}
	it := heap.Pop(&l.q).(item)
	return Out{Handle: it.h, Fate: it.fate, At: it.due, Sojourn: it.due / 2}, true
}

func (l *fakeLink) NextDeadline() (time.Duration, bool) {
	if len(l.q) == 0 {
		return 0, false
	}
	return l.q[0].due, true
}

var _ Link = (*fakeLink)(nil)

// recorder is an Observer keeping every event.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) Observe(ev *Event) {
	e := *ev
	e.Data = append([]byte(nil), ev.Data...)
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) count(kind EventKind, dir Dir) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if e.Kind == kind && e.Dir == dir {
			n++
		}
	}
	return n
}

func originOf(a [4]byte) int {
	if a[0] == 10 && a[1] == 77 && a[2] == 1 {
		return int(a[3])
	}
	return 0
}

type harness struct {
	client, server *tuntest.ChannelTUN
	r              *Runner
	cancel         context.CancelFunc
	done           chan error
	obs            *recorder
}

func start(t *testing.T, up, down Link) *harness {
	t.Helper()
	h := &harness{client: tuntest.NewChannelTUN(), server: tuntest.NewChannelTUN(), obs: &recorder{}}
	r, err := New(Config{Client: h.client.TUN(), Server: h.server.TUN(), Up: up, Down: down, OriginOf: originOf, Observer: h.obs})
	if err != nil {
		t.Fatal(err)
	}
	h.r = r
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- r.Run(ctx) }()
	t.Cleanup(h.stop)
	return h
}

func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	// ChannelTUN reads cannot be interrupted: closing the devices ends them.
	h.client.TUN().Close()
	h.server.TUN().Close()
	<-h.done
}

func tcp(src, dst string, seq uint32, n int) []byte {
	return pkttest.TCP(netip.MustParseAddrPort(src), netip.MustParseAddrPort(dst), seq, 0, pkttest.ACK, make([]byte, n))
}

func seqOf(p []byte) uint32 { return binary.BigEndian.Uint32(p[24:]) }

func TestForwardsWithDelay(t *testing.T) {
	// The upper bounds (a packet's delay within 50 ms of the configured one) depend on the machine:
	// retried once (internal/timebound). The lower bounds are exact.
	timebound.Retry(t, func(a *timebound.Attempt) {
		const delayUp, delayDown = 20 * time.Millisecond, 30 * time.Millisecond
		h := start(t, &fakeLink{delay: delayUp}, &fakeLink{delay: delayDown})
		const n = 20
		type got struct {
			seq uint32
			at  time.Time
		}
		recv := func(ch chan []byte, out chan got) {
			for i := 0; i < n; i++ {
				p := <-ch
				out <- got{seqOf(p), time.Now()}
			}
		}
		upGot, downGot := make(chan got, n), make(chan got, n)
		go recv(h.server.Inbound, upGot)
		go recv(h.client.Inbound, downGot)
		sent := map[uint32]time.Time{}
		for i := 0; i < n; i++ {
			sent[uint32(i)] = time.Now()
			h.client.Outbound <- tcp("10.77.0.2:1000", "10.77.1.1:80", uint32(i), 100)
			sent[uint32(1000+i)] = time.Now()
			h.server.Outbound <- tcp("10.77.1.1:80", "10.77.0.2:1000", uint32(1000+i), 1000)
			time.Sleep(time.Millisecond)
		}
		check := func(ch chan got, delay time.Duration, base uint32) {
			for i := 0; i < n; i++ {
				g := <-ch
				if g.seq != base+uint32(i) {
					t.Fatalf("packet %d out of order: seq %d", i, g.seq)
				}
				d := g.at.Sub(sent[g.seq])
				// Lower bound exact; upper bound generous (loaded 2-core CI machines).
				if d < delay {
					t.Errorf("seq %d took %v, configured %v", g.seq, d, delay)
				} else if d > delay+50*time.Millisecond {
					a.Errorf("seq %d took %v, configured %v", g.seq, d, delay)
				}
			}
		}
		check(upGot, delayUp, 0)
		check(downGot, delayDown, 1000)
		s := h.r.Stats()
		if s.Up.Delivered != n || s.Down.Delivered != n || s.Up.Packets != n || s.Up.Unmatched != 0 {
			t.Errorf("stats %+v", s)
		}
		if s.Lateness.Count != 2*n {
			t.Errorf("lateness count %d", s.Lateness.Count)
		}
		t.Logf("lateness p50 %v p99 %v max %v", s.Lateness.P50, s.Lateness.P99, s.Lateness.Max)
		if h.obs.count(Arrived, link.Up) != n || h.obs.count(Delivered, link.Up) != n || h.obs.count(Delivered, link.Down) != n {
			t.Errorf("observer saw %d/%d/%d events", h.obs.count(Arrived, link.Up), h.obs.count(Delivered, link.Up), h.obs.count(Delivered, link.Down))
		}
		h.obs.mu.Lock()
		for _, e := range h.obs.events {
			if e.Kind == Delivered {
				want := delayUp
				if e.Dir == link.Down {
					want = delayDown
				}
				if e.Out-e.In < want {
					t.Errorf("delivered event %v after %v, before its delay %v", e.Dir, e.Out-e.In, want)
				}
			}
		}
		h.obs.mu.Unlock()
	})
}

func TestDropsAreReported(t *testing.T) {
	h := start(t, &fakeLink{delay: time.Millisecond, dropEvery: 3}, &fakeLink{})
	const n = 30
	go func() {
		for i := 0; i < n; i++ {
			h.client.Outbound <- tcp("10.77.0.2:1000", "10.77.1.1:80", uint32(i), 10)
		}
	}()
	for i := 0; i < n-n/3; i++ {
		p := <-h.server.Inbound
		if seqOf(p)%3 == 2 {
			t.Fatalf("packet %d should have been dropped", seqOf(p))
		}
	}
	s := h.r.Stats()
	if s.Up.DropsLoss != n/3 || s.Up.Delivered != n-n/3 {
		t.Errorf("stats %+v", s.Up)
	}
	if got := h.obs.count(Dropped, link.Up); got != n/3 {
		t.Errorf("%d drop events", got)
	}
}

// Per-origin delays reorder packets across origins; the runner must still hand out the right bytes.
func TestOriginsReorder(t *testing.T) {
	h := start(t, &fakeLink{delay: time.Millisecond, extra: map[int]time.Duration{2: 30 * time.Millisecond}}, &fakeLink{})
	slow := tcp("10.77.0.2:1000", "10.77.1.2:80", 1, 50)
	fast := tcp("10.77.0.2:1000", "10.77.1.1:80", 2, 60)
	h.client.Outbound <- slow
	h.client.Outbound <- fast
	if p := <-h.server.Inbound; !bytes.Equal(p, fast) {
		t.Fatal("origin 1 packet not first")
	}
	if p := <-h.server.Inbound; !bytes.Equal(p, slow) {
		t.Fatal("origin 2 packet corrupted")
	}
	if s := h.r.Stats(); s.Up.Unmatched != 0 {
		t.Errorf("unmatched %d", s.Up.Unmatched)
	}
}

// An MTU whose packets' lengths do not fit the buffer's 16-bit record is refused.
func TestMTUBounded(t *testing.T) {
	dev := tuntest.NewChannelTUN()
	for _, mtu := range []int{-1, MaxMTU + 1, 70000} {
		if _, err := New(Config{Client: dev.TUN(), Server: dev.TUN(), Up: &fakeLink{}, Down: &fakeLink{}, MTU: mtu}); err == nil || !strings.Contains(err.Error(), "MTU") {
			t.Errorf("MTU %d: %v; want an error naming MTU", mtu, err)
		}
	}
	if _, err := New(Config{Client: dev.TUN(), Server: dev.TUN(), Up: &fakeLink{}, Down: &fakeLink{}, MTU: MaxMTU}); err != nil {
		t.Errorf("MTU %d: %v", MaxMTU, err)
	}
}

// A handle the link hands back twice is written out once and counted as unmatched; the second
// is no packet (its buffer may already hold another) and is not returned to the pool again.
func TestHandleReturnedTwiceIsUnmatched(t *testing.T) {
	const n = 40
	h := start(t, &fakeLink{delay: time.Millisecond, dupEvery: 2}, &fakeLink{})
	go func() {
		for i := 0; i < n; i++ {
			h.client.Outbound <- tcp("10.77.0.2:1000", "10.77.1.1:80", uint32(i), 10)
		}
	}()
	seen := map[uint32]bool{}
	for i := 0; i < n; i++ {
		p := <-h.server.Inbound
		if seen[seqOf(p)] {
			t.Fatalf("packet %d written twice", seqOf(p))
		}
		seen[seqOf(p)] = true
	}
	deadline := time.Now().Add(5 * time.Second)
	for h.r.Stats().Up.Unmatched < n/2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	select {
	case p := <-h.server.Inbound:
		t.Fatalf("packet %d written again", seqOf(p))
	case <-time.After(20 * time.Millisecond):
	}
	if s := h.r.Stats(); s.Up.Unmatched != n/2 || s.Up.Delivered != n {
		t.Errorf("unmatched %d, delivered %d; want %d and %d", s.Up.Unmatched, s.Up.Delivered, n/2, n)
	}
}

// An earlier deadline pushed while the writer sleeps towards a later one wakes it.
func TestEarlierDeadlineWakesWriter(t *testing.T) {
	timebound.Retry(t, func(a *timebound.Attempt) {
		h := start(t, &fakeLink{delay: time.Millisecond, extra: map[int]time.Duration{2: 500 * time.Millisecond}}, &fakeLink{})
		h.client.Outbound <- tcp("10.77.0.2:1000", "10.77.1.2:80", 1, 50)
		time.Sleep(5 * time.Millisecond) // let the writer go to sleep towards +500 ms
		t0 := time.Now()
		h.client.Outbound <- tcp("10.77.0.2:1000", "10.77.1.1:80", 2, 50)
		p := <-h.server.Inbound
		if seqOf(p) != 2 {
			t.Fatalf("seq %d first, want 2 (the earlier deadline)", seqOf(p))
		}
		if d := time.Since(t0); d > 100*time.Millisecond {
			a.Errorf("seq 2 after %v, want ≤ 100 ms", d)
		}
		h.stop()
	})
}

// Stopping the runner while packets wait inside the link ends Run at once. A Run that does not
// end within 5 s is a miss with every goroutine's stack as its evidence; retried once, as a loaded
// machine's real-time threads (others' emulators) can hold the CPUs for long.
func TestStopWithPacketsInside(t *testing.T) {
	timebound.Retry(t, func(a *timebound.Attempt) {
		h := start(t, &fakeLink{delay: time.Hour}, &fakeLink{delay: time.Hour})
		for i := 0; i < 10; i++ {
			h.client.Outbound <- tcp("10.77.0.2:1000", "10.77.1.1:80", uint32(i), 10)
		}
		done := make(chan struct{})
		t0 := time.Now()
		go func() { h.stop(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			stacks := make([]byte, 1<<20)
			stacks = stacks[:runtime.Stack(stacks, true)]
			late := "not within 30 s either (a hang)"
			select { // slow, or stuck?
			case <-done:
				late = fmt.Sprintf("after %v", time.Since(t0).Round(time.Millisecond))
			case <-time.After(25 * time.Second):
			}
			a.Errorf("Run did not return within 5 s of its stop; it returned %s; goroutines 5 s after the stop:\n%s", late, stacks)
		}
	})
}

// A link may drop a packet after accepting it (an AQM at dequeue) and mark others: the runner frees
// the dropped packet's buffer, counts the drop by its cause and reports it with when it happened;
// marked packets are delivered and counted.
func TestDropsAfterAcceptanceAndMarks(t *testing.T) {
	h := start(t, &fakeLink{delay: 2 * time.Millisecond, laterEvery: 4, markEvery: 3}, &fakeLink{})
	const n = 40
	go func() {
		for i := 0; i < n; i++ {
			h.client.Outbound <- tcp("10.77.0.2:1000", "10.77.1.1:80", uint32(i), 10)
		}
	}()
	for i := 0; i < n-n/4; i++ {
		if p := <-h.server.Inbound; (seqOf(p)+1)%4 == 0 {
			t.Fatalf("packet %d should have been dropped after acceptance", seqOf(p))
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for h.obs.count(Dropped, link.Up) < n/4 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	s := h.r.Stats()
	if s.Up.DropsAQM != n/4 || s.Up.DropsQueue != n/4 || s.Up.DropsLoss != 0 || s.Up.Delivered != n-n/4 || s.Up.Marks != 13-3 || s.Up.Unmatched != 0 {
		t.Errorf("stats %+v", s.Up)
	}
	h.obs.mu.Lock()
	defer h.obs.mu.Unlock()
	for _, e := range h.obs.events {
		if e.Kind == Dropped && (e.Fate != link.DroppedAQM || e.Out-e.In < 2*time.Millisecond || e.Sojourn == 0) {
			t.Errorf("drop event %+v: want DroppedAQM at its due time, with its sojourn", e)
		}
		if e.Kind == Delivered && e.Fate != link.Delivered && e.Fate != link.Marked {
			t.Errorf("delivered event with fate %v", e.Fate)
		}
	}
}

// Packets due close together (two origins whose delays differ by 15 µs, sent in pairs 1 ms apart:
// each pair's second release follows the first closely, a stream's) leave no earlier than their
// deadlines. The lower bound is exact.
func TestCloseDeadlinesNeverEarly(t *testing.T) {
	const delay, skew = 5 * time.Millisecond, 15 * time.Microsecond
	h := start(t, &fakeLink{delay: delay, extra: map[int]time.Duration{2: skew}}, &fakeLink{})
	const pairs = 20
	go func() {
		for range 2 * pairs {
			<-h.server.Inbound
		}
	}()
	for i := range pairs {
		h.client.Outbound <- tcp("10.77.0.2:1000", "10.77.1.2:80", uint32(2*i), 100)
		h.client.Outbound <- tcp("10.77.0.2:1000", "10.77.1.1:80", uint32(2*i+1), 100)
		time.Sleep(time.Millisecond)
	}
	deadline := time.Now().Add(10 * time.Second)
	for h.obs.count(Delivered, link.Up) < 2*pairs && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	h.stop()
	h.obs.mu.Lock()
	defer h.obs.mu.Unlock()
	n := 0
	for _, e := range h.obs.events {
		if e.Kind != Delivered || e.Dir != link.Up {
			continue
		}
		n++
		want := delay
		if e.Data[19] == 2 { // destination 10.77.1.2
			want += skew
		}
		if e.Out-e.In < want {
			t.Errorf("delivered after %v, before its delay %v", e.Out-e.In, want)
		}
	}
	s := h.r.Stats()
	if n != 2*pairs || s.Up.Delivered != 2*pairs {
		t.Fatalf("delivered %d (stats %d) of %d", n, s.Up.Delivered, 2*pairs)
	}
	t.Logf("%d packets in %d writes; lateness p50 %v p99 %v", s.Up.Delivered, s.Up.Writes, s.Lateness.P50, s.Lateness.P99)
}
