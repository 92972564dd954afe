package loadgen

import (
	"container/heap"
	"sync"
	"sync/atomic"
	"time"
)

// sleepers are the closed model's thinking VUs (docs/loadtest.md, "Memory and CPU per VU"): one
// heap ordered by wake-up instant and one goroutine with one timer for the whole process, which
// wakes at the earliest instant (at most once per sleepTick) and hands every VU then due to a page
// worker. A page worker is a goroutine that loads a VU's pages until the VU thinks, then waits for
// the next due VU — at most maxIdleWorkers of them wait (a burst's extra workers end), so the
// workers are about as many as pages load at once, never one per VU. So a thinking VU holds no
// timer and no goroutine, and a page starts on a goroutine whose stack has already grown to a
// page's depth — not on a new goroutine per page (time.AfterFunc's), which grew its stack on
// every page (≈ 3 % of the generator's CPU in a 10⁴-VU hold) and took a context switch of its own.
type sleepers struct {
	mu   sync.Mutex
	h    sleepHeap
	wake chan struct{} // the dispatcher's timer must be earlier: a VU went to the heap's top
	work chan *closedVU
	quit chan struct{}
	done chan struct{} // the dispatcher has returned
	idle atomic.Int32  // page workers waiting for a VU
}

// maxIdleWorkers bounds the page workers that wait for a VU: a worker that finishes when this
// many wait ends (its stack goes with it).
const maxIdleWorkers = 32

// sleepTick is the shortest time between two of the dispatcher's wake-ups: VUs due within it start
// together. A think time ends up to this much late (the page's own time is measured from its
// actual start).
const sleepTick = time.Millisecond

func newSleepers() *sleepers {
	s := &sleepers{wake: make(chan struct{}, 1), work: make(chan *closedVU), quit: make(chan struct{}), done: make(chan struct{})}
	go s.dispatch()
	return s
}

// sleep puts vu to sleep until d from now. The caller holds vu.mu.
func (s *sleepers) sleep(vu *closedVU, d time.Duration) {
	s.mu.Lock()
	vu.due = time.Now().Add(d)
	heap.Push(&s.h, vu)
	top := vu.index == 0
	s.mu.Unlock()
	if top {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// remove takes vu out of the heap; false: it was not there (it is due and on its way to a worker,
// or was never asleep). The caller holds vu.mu.
func (s *sleepers) remove(vu *closedVU) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if vu.index < 0 {
		return false
	}
	heap.Remove(&s.h, vu.index)
	return true
}

// run starts loading vu's pages on a page worker: an idle one if there is one, else a new one.
func (s *sleepers) run(vu *closedVU) {
	select {
	case s.work <- vu:
	default:
		go s.worker(vu)
	}
}

func (s *sleepers) worker(vu *closedVU) {
	for {
		vu.loop()
		if s.idle.Add(1) > maxIdleWorkers {
			s.idle.Add(-1)
			return
		}
		select {
		case vu = <-s.work:
			s.idle.Add(-1)
		case <-s.quit:
			return
		}
	}
}

func (s *sleepers) dispatch() {
	defer close(s.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var due []*closedVU
	for {
		now := time.Now()
		s.mu.Lock()
		for len(s.h) > 0 && !s.h[0].due.After(now) {
			due = append(due, heap.Pop(&s.h).(*closedVU))
		}
		next := time.Hour
		if len(s.h) > 0 {
			next = max(s.h[0].due.Sub(now), sleepTick)
		}
		s.mu.Unlock()
		for i, vu := range due {
			s.run(vu)
			due[i] = nil
		}
		due = due[:0]
		timer.Reset(next)
		select {
		case <-timer.C:
		case <-s.wake: // (Reset discards a stale expiry: Go ≥ 1.23 timers)
			time.Sleep(sleepTick) // at most one wake-up per tick: VUs due within it start together
		case <-s.quit:
			return
		}
	}
}

// stop ends the dispatcher and the idle page workers (every VU has left: the heap is empty).
func (s *sleepers) stop() {
	close(s.quit)
	<-s.done
}

// sleepHeap orders thinking VUs by due instant; each knows its index (-1: not in the heap).
type sleepHeap []*closedVU

func (h sleepHeap) Len() int           { return len(h) }
func (h sleepHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h sleepHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *sleepHeap) Push(x any) {
	vu := x.(*closedVU)
	vu.index = len(*h)
	*h = append(*h, vu)
}
func (h *sleepHeap) Pop() any {
	old := *h
	vu := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	vu.index = -1
	return vu
}
