package realtime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/tun"

	"github.com/wirelab/wirelab/engine/internal/rt"
	"github.com/wirelab/wirelab/engine/internal/rtlock"
	"github.com/wirelab/wirelab/engine/link"
)

// Runner forwards packets between two TUN devices through the link model in real time.
type Runner struct {
	start    time.Time
	priority int // SCHED_RR priority of the process while Run runs; ≤ 0: normal scheduling
	pipes    [2]*pipe
	ran      atomic.Bool
}

// New prepares a Runner; Run starts it. The runner's clock (Now) starts here.
func New(cfg Config) (*Runner, error) {
	if cfg.Client == nil || cfg.Server == nil || cfg.Up == nil || cfg.Down == nil {
		return nil, errors.New("realtime: Client, Server, Up and Down are required")
	}
	if cfg.MTU == 0 {
		cfg.MTU = 1500
	}
	if cfg.MTU < 0 || cfg.MTU > MaxMTU {
		return nil, fmt.Errorf("realtime: MTU %d out of range; use 1 to %d", cfg.MTU, MaxMTU)
	}
	if cfg.SpinWindow == 0 {
		cfg.SpinWindow = DefaultSpinWindow
	}
	r := &Runner{start: time.Now(), priority: cfg.RealtimePriority}
	if r.priority == 0 {
		r.priority = DefaultRealtimePriority
	}
	r.pipes[link.Up] = newPipe(r, link.Up, cfg.Client, cfg.Server, cfg.Up, cfg)
	r.pipes[link.Down] = newPipe(r, link.Down, cfg.Server, cfg.Client, cfg.Down, cfg)
	r.pipes[link.Up].other, r.pipes[link.Down].other = r.pipes[link.Down], r.pipes[link.Up]
	return r, nil
}

// Now is the runner's clock: monotonic time since New. Link deadlines and event times use it.
func (r *Runner) Now() time.Duration { return time.Since(r.start) }

// Start is the wall-clock time of Now() == 0.
func (r *Runner) Start() time.Time { return r.start }

// Run forwards packets until ctx is done, then stops reading and writing and returns. Packets
// still inside the link are discarded. Devices with a File are polled by the runner, which stops
// them itself; for devices without one (test doubles) the caller must close them to end Run.
// Run returns an error if a device fails for good. While it runs, the process is real-time (see
// Config.RealtimePriority) and GOMAXPROCS is at least NumCPU+8.
func (r *Runner) Run(ctx context.Context) error {
	if !r.ran.CompareAndSwap(false, true) {
		return errors.New("realtime: Run called twice")
	}
	// The readers and writers sleep in syscalls on their own locked threads, and the runtime leaves
	// a P with a thread in a syscall until sysmon retakes it (sysmon polls every 20 µs–10 ms, and
	// is an ordinary thread that a loaded machine delays further). A thread returning from its
	// syscall without its P takes an idle one, or else waits for the scheduler: spare Ps keep
	// every return immediate.
	if want := runtime.NumCPU() + 8; runtime.GOMAXPROCS(0) < want {
		runtime.GOMAXPROCS(want)
	}
	if prio := r.priority; prio > 0 {
		restore, _ := rt.Enable(prio) // not permitted: normal scheduling, silently
		defer restore()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for _, p := range r.pipes {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := p.readLoop(); err != nil {
				errs <- err
				cancel()
			}
		}()
		go func() {
			defer wg.Done()
			p.writeLoop()
		}()
	}
	<-ctx.Done()
	for _, p := range r.pipes {
		p.stop()
	}
	wg.Wait()
	for _, p := range r.pipes {
		p.releaseAll()
	}
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// MergeLateness adds the runner's timer-lateness samples (both directions) to h.
func (r *Runner) MergeLateness(h *Histogram) {
	for _, p := range r.pipes {
		h.Merge(&p.lateness)
	}
}

// WithLink runs fn while the direction's link is not in use by the runner (to read its stats).
func (r *Runner) WithLink(d Dir, fn func(Link)) {
	p := r.pipes[d]
	p.mu.Lock()
	defer p.mu.Unlock()
	fn(p.link)
}

// DirStats counts one direction's traffic through the runner.
type DirStats struct {
	Reads          int64 `json:"reads"`           // successful device reads (a GSO super-packet counts once)
	Packets        int64 `json:"packets"`         // packets (segments) pushed into the link
	Bytes          int64 `json:"bytes"`           // their IP bytes
	Delivered      int64 `json:"delivered"`       // packets written to the receiving device
	DeliveredBytes int64 `json:"delivered_bytes"` // their IP bytes
	DropsLoss      int64 `json:"drops_loss"`
	DropsQueue     int64 `json:"drops_queue"` // the queue's drops, any cause (the three below)
	DropsTail      int64 `json:"drops_tail"`  // a full drop-tail queue
	DropsAQM       int64 `json:"drops_aqm"`   // the discipline's early drops
	DropsOverflow  int64 `json:"drops_overflow"`
	Marks          int64 `json:"marks"`  // delivered marked Congestion Experienced
	Writes         int64 `json:"writes"` // write batches
	ReadErrors     int64 `json:"read_errors"`
	WriteErrors    int64 `json:"write_errors"` // batches the device refused (some packets of them lost)
	Unmatched      int64 `json:"unmatched"`    // handles the link returned that are no buffer of the runner's (a bug)
	// PickedUp counts the packets (of Packets) that the other direction's writer read right after
	// its write, as the receiving stack's immediate answers, while this direction's reader slept.
	PickedUp int64 `json:"picked_up"`
}

// Stats is a snapshot of the runner's counters and timer lateness.
type Stats struct {
	Up       DirStats    `json:"up"`
	Down     DirStats    `json:"down"`
	Lateness Percentiles `json:"lateness"` // release time − deadline, both directions
	Buffers  int         `json:"buffers"`  // packet buffers allocated (peak packets inside the link)
	LastErr  string      `json:"last_error,omitempty"`
}

// Stats returns a snapshot; it may be called while Run runs.
func (r *Runner) Stats() Stats {
	var s Stats
	var h Histogram
	for d, p := range r.pipes {
		ds := p.counters.snapshot()
		if Dir(d) == link.Up {
			s.Up = ds
		} else {
			s.Down = ds
		}
		h.Merge(&p.lateness)
		s.Buffers += p.pool.allocated()
		if e, ok := p.lastErr.Load().(string); ok && e != "" {
			s.LastErr = e
		}
	}
	s.Lateness = h.Summary()
	return s
}

type counters struct {
	reads, packets, bytes, delivered, deliveredBytes, marks atomic.Int64
	dropsLoss, dropsTail, dropsAQM, dropsOverflow           atomic.Int64
	writes, readErrors, writeErrors, unmatched, pickedUp    atomic.Int64
}

func (c *counters) drop(f link.Fate) {
	switch f {
	case link.DroppedLoss:
		c.dropsLoss.Add(1)
	case link.DroppedQueue:
		c.dropsTail.Add(1)
	case link.DroppedAQM:
		c.dropsAQM.Add(1)
	case link.DroppedOverflow:
		c.dropsOverflow.Add(1)
	}
}

func (c *counters) snapshot() DirStats {
	s := DirStats{
		Reads: c.reads.Load(), Packets: c.packets.Load(), Bytes: c.bytes.Load(),
		Delivered: c.delivered.Load(), DeliveredBytes: c.deliveredBytes.Load(), Marks: c.marks.Load(),
		DropsLoss: c.dropsLoss.Load(), DropsTail: c.dropsTail.Load(), DropsAQM: c.dropsAQM.Load(), DropsOverflow: c.dropsOverflow.Load(),
		Writes: c.writes.Load(), ReadErrors: c.readErrors.Load(), WriteErrors: c.writeErrors.Load(), Unmatched: c.unmatched.Load(),
		PickedUp: c.pickedUp.Load(),
	}
	s.DropsQueue = s.DropsTail + s.DropsAQM + s.DropsOverflow
	return s
}

// pipe is one direction: reader, link, writer.
type pipe struct {
	r        *Runner
	dir      Dir
	src, dst tun.Device
	link     Link
	originOf func([4]byte) int
	obs      Observer
	spin     time.Duration
	pool     *pool

	mu         rtlock.Mutex // not sync.Mutex: see internal/rtlock
	sleepUntil int64        // guarded by mu: while the writer waits, its wake-up target (MaxInt64: none); -1 while awake

	w        waker
	stopping atomic.Bool
	lateness Histogram
	counters counters
	lastErr  atomic.Value

	srcFd  int // the sending device's file descriptor, -1 for devices without one (test doubles)
	stopFd int // eventfd made readable by stop, -1 without srcFd

	readMu  rtlock.Mutex // held from a read of src to the end of its pushes (reader or pickUp)
	asleep  atomic.Bool  // the reader sleeps in ppoll
	other   *pipe        // the other direction: its source is this pipe's destination
	pickups *intake      // the writer's scratch space for other.pickUp

	spinBudget  spinBudget
	spinCal     spinCal       // the writer's spin window
	lastRelease time.Duration // the writer's last write (Now), for sparse
	streak      int           // releases in a row that closely followed their previous one
	ev          Event         // the writer's reused event

	readTick, writeTick schedTick // the reader's and the writer's passes through the Go scheduler
}

func newPipe(r *Runner, dir Dir, src, dst tun.Device, l Link, cfg Config) *pipe {
	p := &pipe{
		r: r, dir: dir, src: src, dst: dst, link: l, originOf: cfg.OriginOf, obs: cfg.Observer,
		spin: cfg.SpinWindow, pool: newPool(offset + cfg.MTU + 64), sleepUntil: -1, pickups: newIntake(),
	}
	p.srcFd, p.stopFd = -1, -1
	if f := src.File(); f != nil {
		if sc, err := f.SyscallConn(); err == nil {
			sc.Control(func(fd uintptr) { p.srcFd = int(fd) })
		}
		if p.srcFd >= 0 {
			efd, err := newEventFd()
			if err != nil {
				p.srcFd = -1
			} else {
				p.stopFd = efd
			}
		}
	}
	return p
}

// origin maps a packet to its origin: the destination of Up packets, the source of Down packets.
func (p *pipe) origin(pkt []byte) int {
	if p.originOf == nil || len(pkt) < 20 || pkt[0]>>4 != 4 {
		return 0
	}
	at := 16
	if p.dir == link.Down {
		at = 12
	}
	return p.originOf([4]byte(pkt[at : at+4]))
}

func (p *pipe) fail(err error) { p.lastErr.Store(fmt.Sprintf("%s: %v", p.dir, err)) }

func (p *pipe) readLoop() error {
	if p.srcFd >= 0 {
		// Its own thread, real-time at once: arrival times are taken here. (At the priority of the
		// rest of the process, never above it: see internal/rt.)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		rt.Adopt()
		p.readTick.locked = true
	}
	in := newIntake()
	idle := func() { p.readTick.due(p.r.Now(), schedTickEvery) } // between two sleeps
	consecutiveErrs := 0
	for {
		if err := p.pool.fill(in.bufs, in.ids); err != nil {
			return fmt.Errorf("%s: %w", p.dir, err)
		}
		// Sleeping in ppoll (not the netpoller) wakes this thread directly when the kernel queues
		// a packet, without a hop through another thread.
		if p.srcFd >= 0 {
			p.asleep.Store(true)
			ok := waitReadable(p.srcFd, p.stopFd, idle)
			p.asleep.Store(false)
			if !ok {
				return nil // stopping
			}
		}
		p.readMu.Lock()
		n, err := p.take(in)
		p.readMu.Unlock()
		if p.stopping.Load() {
			return nil
		}
		if err != nil {
			p.counters.readErrors.Add(1)
			p.fail(err)
			if errors.Is(err, os.ErrClosed) {
				return fmt.Errorf("%s: read: %w", p.dir, err)
			}
			if !errors.Is(err, tun.ErrTooManySegments) {
				if consecutiveErrs++; consecutiveErrs > 1000 {
					return fmt.Errorf("%s: read: %w", p.dir, err)
				}
				continue
			}
		}
		consecutiveErrs = 0
		if p.readTick.due(p.r.Now(), schedTickLate) {
			continue // its pass through the scheduler yielded the CPU too
		}
		if n > 0 && p.srcFd >= 0 {
			// Under a saturating load the device always has packets and this loop never sleeps. A
			// writer woken on this CPU has the same priority and would wait for the round-robin
			// slice (100 ms): yield after each batch so that it runs now.
			yield()
		}
	}
}

// intake is a reading thread's scratch space: the buffers of one read and the packets' fates.
type intake struct {
	bufs    [][]byte
	ids     []Handle // the buffers' ids in the pool (the handles their packets are pushed under)
	sizes   []int
	fates   [batchSize]link.Fate
	origins [batchSize]int
	ev      Event // reused: observers get a pointer valid during the call
}

func newIntake() *intake {
	return &intake{bufs: make([][]byte, batchSize), ids: make([]Handle, batchSize), sizes: make([]int, batchSize)}
}

// take reads once from src into in's buffers (filled by the caller) and pushes what it read into
// the link; it returns how many packets it pushed. The caller holds readMu: the reader and the
// other direction's writer (pickUp) both take from src, and the lock keeps the times pushed in
// order. The time is taken before the read: the packet that woke the reader was queued before it,
// and the read's system call is not part of the path. ErrTooManySegments comes with the valid
// first segments, which are pushed; other errors with none.
func (p *pipe) take(in *intake) (int, error) {
	now := p.r.Now()
	n, err := p.src.Read(in.bufs, in.sizes, offset)
	if n <= 0 || (err != nil && !errors.Is(err, tun.ErrTooManySegments)) {
		return 0, err
	}
	if p.srcFd < 0 {
		now = p.r.Now() // a test double's Read blocks until a packet comes
	}
	p.ingest(in, n, now)
	return n, err
}

// ingest pushes the n packets just read into the link as arriving at now. The caller holds
// readMu. Buffers the link keeps are taken out of in.bufs (the writer returns them to the pool).
func (p *pipe) ingest(in *intake, n int, now time.Duration) {
	var bytes int64
	for i := 0; i < n; i++ {
		pkt := in.bufs[i][offset : offset+in.sizes[i]]
		setMeta(in.bufs[i], now, len(pkt))
		bytes += int64(len(pkt))
		in.origins[i] = p.origin(pkt)
		if p.obs != nil {
			in.ev = Event{Kind: Arrived, Dir: p.dir, Fate: link.Accepted, In: now, Out: now, Data: pkt}
			p.obs.Observe(&in.ev)
		}
	}
	wake := false
	p.mu.Lock()
	for i := 0; i < n; i++ {
		in.fates[i] = p.link.Push(now, in.bufs[i][offset:offset+in.sizes[i]], in.origins[i], in.ids[i])
	}
	if p.sleepUntil >= 0 {
		if dl, ok := p.link.NextDeadline(); ok && int64(dl) < p.sleepUntil {
			p.sleepUntil = -1
			wake = true
		}
	}
	p.mu.Unlock()
	if wake {
		p.w.wake()
	}
	for i := 0; i < n; i++ {
		if in.fates[i] == link.Accepted {
			in.bufs[i] = nil // now owned by the link; the writer returns it to the pool
			continue
		}
		in.bufs[i][metaInside] = 0 // not inside the link: the reader reads into it again
		p.counters.drop(in.fates[i])
		if p.obs != nil {
			in.ev = Event{Kind: Dropped, Dir: p.dir, Fate: in.fates[i], In: now, Out: now, Data: in.bufs[i][offset : offset+in.sizes[i]]}
			p.obs.Observe(&in.ev)
		}
	}
	p.counters.reads.Add(1)
	p.counters.packets.Add(int64(n))
	p.counters.bytes.Add(bytes)
}

// maxPickUps bounds the reads one pickUp makes.
const maxPickUps = 8

// pickUpRoom: a writer picks up answers only when its own next release is at least this far off,
// so that a pick-up (a read or two, some µs) never makes it late. In a saturated stream the next
// release is always close, and the other reader, awake, takes the answers itself: picking up
// after every write there made the capacity benchmark's lateness p50 98–148 µs instead of 29–51.
const pickUpRoom = 200 * time.Microsecond

// pickUp is called by the other direction's writer after it wrote to this pipe's source device,
// before it sleeps. The receiving stack answers some packets inside that write — a SYN with a SYN-ACK,
// data with an ACK — and queues the answer on this device; the reader, asleep in ppoll, would
// take it (and time its arrival) only after its wake-up, which costs tens of µs when its CPU is
// idle (a halted vCPU: measured 36 µs of the 46 µs between a SYN-ACK's queueing and its read,
// docs/network.md "Scheduling"). So the writer reads it at once, on its own thread, and the
// reader finds the device empty. Only while the reader sleeps: a reader that is awake takes the
// answer as soon as it can anyway, and it keeps the busy paths' work on their own threads.
// readMu keeps the two readers' pushes in order.
func (p *pipe) pickUp(in *intake) {
	if p.srcFd < 0 || !p.asleep.Load() || !p.readMu.TryLock() {
		return
	}
	defer p.readMu.Unlock()
	for range maxPickUps {
		if p.pool.fill(in.bufs, in.ids) != nil {
			return // the reader meets it too and reports it
		}
		n, err := p.take(in)
		p.counters.pickedUp.Add(int64(n))
		if n == 0 || err != nil {
			return // nothing more, or an error the reader meets too and reports
		}
	}
}

func (p *pipe) writeLoop() {
	// Its own thread, real-time at once, at the priority of the rest of the process: a thread
	// above the others livelocks when the runtime makes it spin-wait for one of them (see
	// internal/rt). Its spin yields (sched_yield) to the process's other threads on its CPU.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rt.Adopt()
	p.writeTick.locked = true
	o := newOutbox()
	released := false // since the last wait
	for !p.stopping.Load() {
		p.mu.Lock()
		p.sleepUntil = -1
		now := p.r.Now()
		p.collect(now, o)
		var next time.Duration
		var hasNext bool
		seq := p.w.load()
		if len(o.batch) == 0 && len(o.dropped) == 0 {
			next, hasNext = p.link.NextDeadline()
			p.sleepUntil = math.MaxInt64
			if hasNext {
				p.sleepUntil = int64(next)
			}
		}
		p.mu.Unlock()
		dropsOnly := len(o.batch) == 0 && len(o.dropped) > 0
		if p.flush(o) {
			released = true
			// A saturated stream never sleeps: its pass through the scheduler comes late, here.
			p.writeTick.due(now, schedTickLate)
			continue
		}
		if dropsOnly {
			// Nothing due was left behind the drops, but the next deadline was not looked up: a
			// sleep without one would last until a reader's wake-up or maxSleep.
			continue
		}
		// About to sleep after writing: pick up what the receiving stack answered, unless this
		// direction's next release is too close for it.
		if released && (!hasNext || next-now >= pickUpRoom) {
			p.other.pickUp(p.pickups)
		}
		released = false
		p.wait(next, hasNext, seq)
	}
}

// outbox is a writer's scratch space: the packets the link is done with, to release or free.
type outbox struct {
	batch, dropped []entry
	wbufs          [][]byte
	ids            []Handle
	lat            []time.Duration
}

// entry is a packet the link is done with: its buffer (the packet at buf[offset:offset+n]) and
// what the link and the buffer's headroom (meta) say of it.
type entry struct {
	buf      []byte
	id       Handle
	n        int
	in       time.Duration // when it was read
	deadline time.Duration // when it was due (delivered) or dropped
	fate     link.Fate
	sojourn  time.Duration
}

func (e *entry) data() []byte { return e.buf[offset : offset+e.n] }

func newOutbox() *outbox {
	return &outbox{batch: make([]entry, 0, batchSize), dropped: make([]entry, 0, batchSize),
		wbufs: make([][]byte, 0, batchSize), ids: make([]Handle, 0, batchSize), lat: make([]time.Duration, 0, batchSize)}
}

// collect takes from the link what it is done with at now (due, or dropped after acceptance), up
// to a batch. The caller holds mu.
func (p *pipe) collect(now time.Duration, o *outbox) {
	for len(o.batch) < batchSize && len(o.dropped) < batchSize {
		if dl, ok := p.link.NextDeadline(); !ok || dl > now {
			return
		}
		out, ok := p.link.Pop(now)
		if !ok {
			return
		}
		buf, found := p.pool.buf(out.Handle)
		if !found {
			p.counters.unmatched.Add(1)
			continue
		}
		// The buffer's headroom (meta) is read later, for the whole batch at once (readMeta).
		e := entry{buf: buf, id: out.Handle, deadline: out.At, fate: out.Fate, sojourn: out.Sojourn}
		if out.Fate.Delivered() {
			o.batch = append(o.batch, e)
		} else {
			o.dropped = append(o.dropped, e)
		}
	}
}

// readMeta fills the entries' length and read time from their buffers' headroom and returns the
// entries whose packet was inside the link; the others (a handle the link handed back twice, or
// one of a buffer it did not hold) are counted as Unmatched and left out, in place. A packet that
// waited out the link's delay has left the caches; in one tight loop the loads of the whole batch
// are under way at once (as tundev's touch does for the headers in the same cache line), where
// reading each in collect, between two pops, made them one after the other.
func (p *pipe) readMeta(es []entry) []entry {
	k := 0
	for i := range es {
		b := es[i].buf
		if b[metaInside] != 1 {
			p.counters.unmatched.Add(1)
			continue
		}
		b[metaInside] = 0
		es[i].in, es[i].n = meta(b)
		es[k] = es[i]
		k++
	}
	clear(es[k:])
	return es[:k]
}

// flush frees what collect found dropped and writes out what it found due; it reports whether it
// wrote anything.
func (p *pipe) flush(o *outbox) bool {
	if len(o.dropped) > 0 {
		o.dropped = p.readMeta(o.dropped)
		p.drop(o.dropped)
		clear(o.dropped)
		o.dropped = o.dropped[:0]
	}
	if len(o.batch) == 0 {
		return false
	}
	if o.batch = p.readMeta(o.batch); len(o.batch) == 0 {
		return false
	}
	at := p.release(o.batch, o.wbufs[:0], o.ids[:0], o.lat[:0])
	if sparse(at, p.lastRelease, p.spinCal.window(p.spin)) {
		p.streak = 0
	} else {
		p.streak++
	}
	p.lastRelease = at
	clear(o.batch)
	o.batch = o.batch[:0]
	return true
}

// wait sleeps until target (or forever without one) unless a reader or stop bumps the waker.
func (p *pipe) wait(target time.Duration, has bool, seq uint32) {
	if !has {
		if p.writeTick.due(p.r.Now(), schedTickEvery) {
			return // the caller looks again
		}
		futexWait(&p.w.seq, seq, maxSleep) // the caller looks again, and sleeps again
		return
	}
	now := p.r.Now()
	for {
		if p.w.load() != seq {
			return
		}
		rem := target - now
		if rem <= 0 {
			return
		}
		if rem >= pickUpRoom && p.writeTick.due(now, schedTickEvery) {
			now = p.r.Now()
			continue
		}
		if p.spin < 0 {
			futexWait(&p.w.seq, seq, min(rem, maxSleep))
			now = p.r.Now()
			continue
		}
		win := p.spinCal.window(p.spin)
		spin := worthSpin(rem, win, target, p.lastRelease, p.streak)
		if rem > win || !spin {
			sleep := rem // a stream's release: all the way, in one sleep
			if spin {
				sleep = rem - win
			}
			sleep = min(sleep, maxSleep)
			futexWait(&p.w.seq, seq, sleep)
			after := p.r.Now()
			if p.w.load() == seq { // the timeout ended it, not a reader
				p.spinCal.observe(after - now - sleep)
			}
			now = after
			continue
		}
		if !p.spinBudget.allow(now) {
			futexWait(&p.w.seq, seq, rem)
			now = p.r.Now()
			continue
		}
		yield()
		t := p.r.Now()
		p.spinBudget.spent(t - now)
		now = t
	}
}

// sparse says whether a release at target is worth a spin of length spin (the window, or the
// time left when the deadline is closer): when the spin is at most a sparseGap-th of the time since
// the writer's previous release (last). The writer applies it once in a stream (worthSpin). A
// sparse release — a handshake, a request, the first packet after a pause — is what the spin is
// for, and keeps it. A release that closely follows another in a stream is a queue draining at the
// link's rate (120 µs apart at 100 Mbit/s), where a spin would cost most of the gap, or all of it,
// at every packet: before, such a stream spent the writer's whole budget (spinBudget) in the first
// 10 ms of each 100 ms and slept for the rest anyway. Such a release now sleeps all the way to its
// deadline in one sleep and ends as late as a sleep does — a few tens of µs (the spin window is
// the p99 of that lateness). A deadline at most spinMin away is spun regardless: on this VM a
// timed sleep costs more CPU than that (docs/network.md, "Where a rate-limited path's CPU goes").
func sparse(target, last, spin time.Duration) bool {
	return spin <= (target-last)/sparseGap
}

// worthSpin says whether the writer spins the last min(rem, win) before a release at target: a
// deadline at most spinMin off always (a timed sleep costs more), outside a stream always, in a
// stream (streak ≥ streamRun) only a sparse release.
func worthSpin(rem, win, target, last time.Duration, streak int) bool {
	return rem <= spinMin || streak < streamRun || sparse(target, last, min(rem, win))
}

// streamRun: a writer is in a stream after streamRun releases in a row that each closely followed
// the one before; only then does it stop spinning for releases that are not sparse. A handshake's
// packets come close together too — a connection's close and the next connect's SYN, pushed tens
// of µs apart — and must keep their precision: with the rule applied from the first close release,
// the RTT part of `bench link` saw its timer lateness p50 rise from 4 to 7–14 µs and its connect
// error p50 at 5 ms one way from +0.21–0.23 to +0.27–0.33 ms (three runs each, load 12–13).
const streamRun = 8

// sparseGap: a release is sparse when its spin takes at most 1/sparseGap of the time since the
// previous one. At 4, a stream of releases at least 4 spin windows apart is still spun (up to
// 20 Mbit/s of 1500-byte packets with the 150 µs window of a loaded machine, 60 Mbit/s with a quiet
// one's 50 µs), within spinBudget; one at 100 Mbit/s no longer is. At 10 (spinShare) 10 Mbit/s
// streams slept too: their lateness p99 rose from 57 to 459 µs at load 15–25 for 0.07 cores.
const sparseGap = 4

// spinCal sets the writer's spin window from how late its own futex sleeps end: the window is the
// sleeps' p99 lateness plus spinMargin, between spinMin and the configured SpinWindow, where it
// starts. A fixed window has to cover the worst machine: 150 µs, while a quiet one's sleeps end
// 5–40 µs late (DefaultSpinWindow) and every µs of window is spun at every release instant that
// follows a sleep. The p99 (not a lower quantile) keeps release precision what the fixed window
// gave where the two agree: on the loaded 2-vCPU machine of docs/network.md (load 30) the sleeps'
// lateness was p50 32–64 µs, p90 77–104, p99 135–168, and the window stays near 150 µs there.
type spinCal struct {
	q    time.Duration // running p99 estimate of a sleep's lateness
	init bool
}

const (
	spinMin    = 20 * time.Microsecond
	spinMargin = 10 * time.Microsecond
	// The estimate moves 99 steps up for a sleep later than it and 1 down for one earlier: it
	// settles where 1 % are later (a stochastic quantile estimate).
	spinStep = 250 * time.Nanosecond
)

// observe records one timed sleep's lateness (its end − its timeout).
func (c *spinCal) observe(late time.Duration) {
	if late > c.q {
		c.q += 99 * spinStep
	} else if c.q >= spinStep {
		c.q -= spinStep
	}
}

// window is the spin window now, at most limit.
func (c *spinCal) window(limit time.Duration) time.Duration {
	if !c.init {
		c.q, c.init = limit, true
	}
	return min(limit, max(spinMin, c.q+spinMargin))
}

// schedTick passes a reader's or writer's goroutine through the Go scheduler (runtime.Gosched)
// every schedTickEvery. They run on locked threads and never block in Go's sense (they sleep in
// system calls), so without it their Ps' scheduling tick never advances, and from 10 ms on the
// runtime's monitor thread (sysmon) treats them as goroutines that run too long: every time it
// finds one in a system call it takes its P ("sysretake", Go 1.26 retake), and having taken one
// it sleeps its shortest, 20 µs, again — about 40,000 wake-ups a second of a thread that is
// real-time like the rest of the process, above the peers' TCP stacks. Measured on the 10 ms
// capacity benchmark: sysmon's sleeps and wake-ups were 26 % of the emulator's CPU time. The pass
// unlocks the thread first: a locked goroutine's Gosched parks its thread and needs another thread
// to hand it the goroutine back (~12 µs, and on a loaded machine a thread that ran ordinary for a
// while — a new one, before internal/rt's janitor made it real-time — can take a round-robin slice
// of 100 ms; TestForwardsWithDelay saw such stalls), while an unlocked one is most often picked up
// again by the thread that ran it. The goroutine then locks whichever thread runs it, and makes
// it real-time if it is another. Once per schedTickEvery where the caller has room for it (before
// a sleep), and where it has none (a saturated stream that never sleeps) once per schedTickLate.
type schedTick struct {
	last   time.Duration
	locked bool // the goroutine runs locked to its thread (real-time, internal/rt)
}

const (
	schedTickEvery = 5 * time.Millisecond
	schedTickLate  = 8 * time.Millisecond // below the runtime's 10 ms (forcePreemptNS)
)

// due passes through the scheduler if the last pass is at least after ago, and says whether it did.
func (t *schedTick) due(now, after time.Duration) bool {
	if now-t.last < after {
		return false
	}
	t.last = now
	if !t.locked {
		runtime.Gosched()
		return true
	}
	tid := unix.Gettid()
	runtime.UnlockOSThread()
	runtime.Gosched()
	runtime.LockOSThread()
	if unix.Gettid() != tid {
		rt.Adopt()
	}
	return true
}

// maxSleep caps every sleep of the readers and writers in one system call. The Go runtime takes
// the P (its scheduling slot) from a thread that stays in a system call for 10 ms or more, and the
// thread then returns without one: it wakes the runtime's monitor thread and, when no P is free at
// once, hands its goroutine through the scheduler and another thread before it runs again —
// measured 150 µs, all of a writer's spin window, on a 250 ms path (docs/network.md,
// "Scheduling"). Shorter sleeps keep the P: a thread idle for long wakes every maxSleep, for a
// few µs.
const maxSleep = 5 * time.Millisecond

// spinBudget bounds the share of time a writer spins (at real-time priority, spinning keeps a
// CPU from everyone else): within each spinPeriod at most spinShare of it. Over budget, the
// writer sleeps in the futex all the way (releases then end some tens of µs late instead).
type spinBudget struct {
	periodStart time.Duration
	used        time.Duration
}

const (
	spinPeriod = 100 * time.Millisecond
	spinShare  = 0.10
)

func (b *spinBudget) allow(now time.Duration) bool {
	if now-b.periodStart >= spinPeriod {
		b.periodStart, b.used = now, 0
	}
	return b.used < time.Duration(spinShare*float64(spinPeriod))
}

func (b *spinBudget) spent(d time.Duration) { b.used += d }

// drop accounts for packets the link dropped after accepting them and returns their buffers.
func (p *pipe) drop(dropped []entry) {
	for i := range dropped {
		e := &dropped[i]
		p.counters.drop(e.fate)
		if p.obs != nil {
			p.ev = Event{Kind: Dropped, Dir: p.dir, Fate: e.fate, In: e.in, Out: e.deadline, Sojourn: e.sojourn, Data: e.data()}
			p.obs.Observe(&p.ev)
		}
		p.pool.put(e.id)
	}
}

// release writes a batch of due packets to the receiving device; it returns the time of the write.
func (p *pipe) release(batch []entry, wbufs [][]byte, ids []Handle, lat []time.Duration) time.Duration {
	now := p.r.Now()
	var bytes int64
	for i := range batch {
		e := &batch[i]
		lat = append(lat, now-e.deadline)
		bytes += int64(e.n)
		if e.fate == link.Marked {
			p.counters.marks.Add(1)
		}
		if p.obs != nil {
			p.ev = Event{Kind: Delivered, Dir: p.dir, Fate: e.fate, In: e.in, Out: now, Sojourn: e.sojourn, Data: e.data()}
			p.obs.Observe(&p.ev)
		}
	}
	p.lateness.RecordAll(lat)
	for i := range batch {
		wbufs = append(wbufs, batch[i].buf[:offset+batch[i].n])
		ids = append(ids, batch[i].id)
	}
	p.counters.writes.Add(1)
	p.counters.delivered.Add(int64(len(batch)))
	p.counters.deliveredBytes.Add(bytes)
	if _, err := p.dst.Write(wbufs, offset); err != nil {
		p.counters.writeErrors.Add(1)
		p.fail(err)
	}
	p.pool.putAll(ids)
	clear(wbufs)
	return now
}

func (p *pipe) stop() {
	p.stopping.Store(true)
	if p.stopFd >= 0 {
		signalEventFd(p.stopFd)
	}
	p.w.wake()
}

// releaseAll closes the stop descriptor after Run. The buffers still inside the link go with the
// runner (it runs once).
func (p *pipe) releaseAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopFd >= 0 {
		closeFd(p.stopFd)
		p.stopFd = -1
	}
}
