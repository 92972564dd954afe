package link

import (
	"fmt"
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// Config is everything one direction of the link needs.
type Config struct {
	Delay   time.Duration  // fixed one-way propagation delay (≥ 0)
	Jitter  time.Duration  // uniform ±Jitter on each packet's delay, never reordering (≥ 0)
	RateBPS int64          // bottleneck rate in bits/s; 0 = unlimited (no queue, no serialisation)
	Trace   *profile.Trace // delivery opportunities; replaces RateBPS (which must then be 0)
	Loss    profile.Loss   // loss model before the queue (zero value: none)
	Queue   profile.QueueLimit
	// Discipline is the queue's algorithm (zero value: drop-tail).
	Discipline profile.Discipline
	// ECN lets the discipline mark ECN-capable packets Congestion Experienced instead of dropping.
	ECN bool
	// OriginExtra is the extra one-way delay of packets whose Origin is N (1 … profile.MaxOrigin).
	OriginExtra map[int]time.Duration
	// Seed seeds the loss model, the jitter and the discipline (separate streams of one PCG seed).
	Seed uint64
}

// Direction is one direction of the emulated path: loss → queue → rate → delay.
//
// The queue is a Discipline and the rate stage takes packets from it one at a time: the next
// take happens when the rate stage can start sending (the previous packet's last bit has left,
// or a trace's next opportunity), at exactly that time in the model, whenever the caller's Push,
// Pop or NextDeadline happens to run — every event (arrival, take, discipline timer) is processed
// in time order before a later one, so a late caller never changes what the path does. A FIFO
// discipline that decides nothing at dequeue (drop-tail) is taken from at once, so each packet's
// due time is known at Push.
type Direction struct {
	loss   LossModel
	queue  Discipline // nil with an unlimited rate
	ahead  bool       // queue is a fifo: hand packets to the rate stage as they arrive
	tick   ticker     // the discipline's timer, or nil
	rate   Serializer // nil: unlimited rate, packets go straight to the delay line
	delay  DelayLine
	stats  Stats
	gw     gateway
	pushed time.Duration // latest Push time, so that time never runs backwards inside

	// The rate stage: packets taken and not yet sent to the last bit (departure > the last
	// Push's time), counted against drop-tail limits and in the queue's peak.
	wire      ring[wired]
	wireBytes int64
	// The next take, while the queue holds packets: when the rate stage can start the next one.
	nextTake    time.Duration
	takePending bool
	clock       time.Duration // the latest event time the discipline has seen
	minDelay    time.Duration // no packet is due sooner than this after its departure
	dropped     ring[*Packet] // packets the discipline dropped after accepting them, for Pop
}

type wired struct {
	departure time.Duration
	size      int64
}

// Stats counts what a direction did. JSON names follow the trial contract's emulator summary.
type Stats struct {
	Packets          uint64 `json:"packets"`           // packets offered (pushed)
	Bytes            uint64 `json:"bytes"`             // bytes offered
	DeliveredPackets uint64 `json:"delivered_packets"` // packets popped delivered (marked or not)
	DeliveredBytes   uint64 `json:"delivered_bytes"`
	DropsLoss        uint64 `json:"drops_loss"` // packets the loss model dropped
	DropsLossBytes   uint64 `json:"drops_loss_bytes"`
	DropsQueue       uint64 `json:"drops_queue"` // packets the queue stage dropped, any cause (Gateway breaks them down)
	DropsQueueBytes  uint64 `json:"drops_queue_bytes"`
	MaxQueuePackets  int    `json:"max_queue_packets"` // most packets in the queue and on the wire at once (0 when the rate is unlimited)
	MaxQueueBytes    int64  `json:"max_queue_bytes"`
	InFlight         int    `json:"in_flight"` // accepted and not yet popped
}

// NewDirection builds a direction from cfg, checking it first.
func NewDirection(cfg Config) (*Direction, error) {
	if cfg.Loss.Model == "" {
		cfg.Loss.Model = profile.LossNone
	}
	if cfg.Discipline.Name == "" {
		cfg.Discipline = profile.Discipline{Name: profile.DropTail}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	loss, err := NewLossModel(cfg.Loss, cfg.Seed)
	if err != nil {
		return nil, err
	}
	d := &Direction{
		loss:  loss,
		delay: NewPathDelay(cfg.Delay, cfg.Jitter, cfg.OriginExtra, cfg.Seed),
		gw:    newGateway(cfg.Discipline.Name),
	}
	d.minDelay = max(cfg.Delay-cfg.Jitter, 0)
	var meanBPS float64
	switch { // the one place where the rate stage is chosen
	case cfg.Trace != nil:
		d.rate = NewTraceRate(cfg.Trace)
		meanBPS = cfg.Trace.BitsPerSecond()
	case cfg.RateBPS > 0:
		d.rate = NewConstantRate(cfg.RateBPS)
		meanBPS = float64(cfg.RateBPS)
	}
	if d.rate == nil {
		return d, nil
	}
	d.queue, err = NewDiscipline(DisciplineConfig{Discipline: cfg.Discipline, Limit: cfg.Queue, ECN: cfg.ECN, Seed: cfg.Seed, RateBPS: meanBPS, Sink: d})
	if err != nil {
		return nil, err
	}
	_, d.ahead = d.queue.(fifo)
	d.tick, _ = d.queue.(ticker)
	d.wire = newRing[wired](16)
	d.dropped = newRing[*Packet](16)
	return d, nil
}

func (cfg Config) validate() error {
	switch {
	case cfg.Delay < 0:
		return fmt.Errorf("link: delay %v is negative", cfg.Delay)
	case cfg.Jitter < 0:
		return fmt.Errorf("link: jitter %v is negative", cfg.Jitter)
	case cfg.RateBPS < 0:
		return fmt.Errorf("link: rate %d bit/s is negative", cfg.RateBPS)
	case cfg.Trace != nil && cfg.RateBPS != 0:
		return fmt.Errorf("link: both a trace and a rate of %d bit/s; a trace replaces the rate", cfg.RateBPS)
	case cfg.Trace != nil && (cfg.Trace.Period <= 0 || len(cfg.Trace.Slots) == 0):
		return fmt.Errorf("link: trace %q has no opportunities or no period", cfg.Trace.Name)
	}
	if cfg.Trace != nil {
		prev := time.Duration(-1)
		for _, s := range cfg.Trace.Slots {
			if s.At <= prev || s.Opportunities < 1 {
				return fmt.Errorf("link: trace %q: slots must be increasing and non-empty", cfg.Trace.Name)
			}
			prev = s.At
		}
		if prev != cfg.Trace.Period {
			return fmt.Errorf("link: trace %q: period %v is not its last timestamp %v", cfg.Trace.Name, cfg.Trace.Period, prev)
		}
	}
	if err := cfg.Loss.Validate(); err != nil {
		return fmt.Errorf("link: %w", err)
	}
	if cfg.Queue.Packets < 0 || cfg.Queue.Bytes < 0 {
		return fmt.Errorf("link: queue limits %+v are negative", cfg.Queue)
	}
	if err := cfg.Discipline.Validate(); err != nil {
		return fmt.Errorf("link: %w", err)
	}
	for origin, extra := range cfg.OriginExtra {
		if origin < 1 || origin > profile.MaxOrigin || extra < 0 {
			return fmt.Errorf("link: origin %d extra delay %v: origins are 1 to %d, delays ≥ 0", origin, extra, profile.MaxOrigin)
		}
	}
	return nil
}

// Push offers p to the link at time now (time since the link started; never decreasing across
// calls). It returns Accepted, and then the link holds p until Pop returns it, or a drop, and
// then the link has forgotten p. p must not be pushed again before Pop has returned it. Push
// never allocates once the link's buffers have grown to the steady-state depth.
func (d *Direction) Push(now time.Duration, p *Packet) Fate {
	now = max(now, d.pushed)
	d.pushed = now
	size := len(p.Data)
	d.stats.Packets++
	d.stats.Bytes += uint64(size)
	p.fate, p.sojourn, p.due, p.ce = Accepted, 0, now, false
	if d.loss.Lose() {
		d.stats.DropsLoss++
		d.stats.DropsLossBytes += uint64(size)
		p.fate = DroppedLoss
		return DroppedLoss
	}
	if d.rate == nil {
		p.fate = Delivered
		d.delay.Insert(now, p)
		return Accepted
	}
	d.advance(now)
	p.arrival = now
	if f := d.queue.Enqueue(max(now, d.clock), p, d.onWire(now)); f != Accepted {
		d.countQueueDrop(p, f)
		p.fate = f
		return f
	}
	b := d.queue.Backlog()
	if n := b.Packets + d.wire.len(); n > d.stats.MaxQueuePackets {
		d.stats.MaxQueuePackets = n
	}
	if bytes := b.Bytes + d.wireBytes; bytes > d.stats.MaxQueueBytes {
		d.stats.MaxQueueBytes = bytes
	}
	if !d.takePending {
		d.takePending, d.nextTake = true, d.rate.Start(now)
	}
	if d.ahead {
		for d.takePending {
			d.take(d.nextTake)
		}
	}
	return Accepted
}

// onWire forgets the packets whose last bit left at or before now and returns the rest.
func (d *Direction) onWire(now time.Duration) Backlog {
	for d.wire.len() > 0 && d.wire.peek().departure <= now {
		d.wireBytes -= d.wire.pop().size
	}
	return Backlog{Packets: d.wire.len(), Bytes: d.wireBytes}
}

// advance processes, in time order, every take and discipline timer due at or before now.
func (d *Direction) advance(now time.Duration) {
	for {
		var tickAt time.Duration
		hasTick := d.tick != nil
		if hasTick {
			tickAt = d.tick.NextTick()
		}
		switch {
		case d.takePending && d.nextTake <= now && (!hasTick || d.nextTake <= tickAt):
			d.take(d.nextTake)
		case hasTick && tickAt <= now:
			d.clock = max(d.clock, tickAt)
			d.tick.Tick(d.clock)
		default:
			return
		}
	}
}

// take hands the rate stage the discipline's next packet at t.
func (d *Direction) take(t time.Duration) {
	d.clock = max(d.clock, t)
	p := d.queue.Dequeue(d.clock)
	if p == nil {
		d.takePending = false
		return
	}
	size := len(p.Data)
	p.sojourn = max(d.clock-p.arrival, 0)
	departure := d.rate.Depart(p.arrival, size)
	d.wire.push(wired{departure, int64(size)})
	d.wireBytes += int64(size)
	p.fate = Delivered
	if p.ce {
		p.fate = Marked
		d.gw.marks++
	}
	d.gw.sojourn(p.sojourn)
	d.delay.Insert(departure, p)
	if d.queue.Backlog().Packets > 0 {
		d.nextTake = d.rate.Start(t)
	} else {
		d.takePending = false
	}
}

// Drop implements Sink: the discipline dropped p, which it had accepted, at time at.
func (d *Direction) Drop(p *Packet, at time.Duration, why Fate) {
	p.fate, p.due, p.sojourn = why, at, max(at-p.arrival, 0)
	d.countQueueDrop(p, why)
	d.dropped.push(p)
}

func (d *Direction) countQueueDrop(p *Packet, why Fate) {
	d.stats.DropsQueue++
	d.stats.DropsQueueBytes += uint64(len(p.Data))
	d.gw.drop(why)
}

// Pop returns the next packet the link is done with at now: a packet due at or before now, in
// due order, or one the queue discipline dropped after accepting it (its Fate says why; its Due
// when), as soon as it was dropped. Call it until it reports false. Pop may be called with any
// now; a delivered packet comes out no earlier than its Due().
func (d *Direction) Pop(now time.Duration) (*Packet, bool) {
	if d.rate != nil {
		if d.dropped.len() == 0 {
			d.advance(now)
		}
		if d.dropped.len() > 0 {
			return d.dropped.pop(), true
		}
	}
	p, ok := d.delay.Pop(now)
	if ok {
		d.stats.DeliveredPackets++
		d.stats.DeliveredBytes += uint64(len(p.Data))
	}
	return p, ok
}

// NextDeadline reports when Pop will next have a packet (false: the link is empty). A Push can
// make it earlier, so the runner asks again after pushing; it sleeps until then or until the next
// packet arrives. While a discipline that decides at dequeue holds packets, the deadline is the
// earliest its next packet could be due (its take plus the delay less jitter), and Pop may then
// find nothing yet: ask again.
func (d *Direction) NextDeadline() (time.Duration, bool) {
	if d.rate != nil && d.dropped.len() > 0 {
		return d.dropped.peek().due, true
	}
	next, ok := d.delay.Next()
	if d.takePending {
		if t := d.nextTake + d.minDelay; !ok || t < next {
			next, ok = t, true
		}
	}
	return next, ok
}

// Stats returns the direction's counters.
func (d *Direction) Stats() Stats {
	s := d.stats
	s.InFlight = d.delay.Len()
	if d.queue != nil {
		s.InFlight += d.queue.Backlog().Packets + d.dropped.len()
	}
	return s
}

// Gateway returns what the queue stage did: drops by cause, ECN marks, sojourn times and, for
// FQ-CoDel, its flow queues.
func (d *Direction) Gateway() GatewayStats {
	g := d.gw.stats()
	if fr, ok := d.queue.(flowReporter); ok {
		f := fr.Flows()
		g.Flows = &f
	}
	return g
}

// Configs derives both directions' configurations from a resolved profile: delays, jitter, rates,
// loss, queues and their disciplines per direction, ECN for both; each origin's extra RTT split like rtt (half up, half down, an
// odd nanosecond down); upTrace/downTrace for the directions whose profile names a trace (load
// them with r.LoadTraces()). The up direction is seeded with seed, the down direction with a
// different seed derived from it.
func Configs(r profile.Resolved, upTrace, downTrace *profile.Trace, seed uint64) (up, down Config, err error) {
	if err := r.Validate(); err != nil {
		return Config{}, Config{}, err
	}
	if (r.Up.Trace != "") != (upTrace != nil) || (r.Down.Trace != "") != (downTrace != nil) {
		return Config{}, Config{}, fmt.Errorf("link: the traces given do not match the profile's trace_up %q and trace_down %q", r.Up.Trace, r.Down.Trace)
	}
	upExtra := make(map[int]time.Duration, len(r.OriginExtraRTT))
	downExtra := make(map[int]time.Duration, len(r.OriginExtraRTT))
	for n, rtt := range r.OriginExtraRTT {
		upExtra[n], downExtra[n] = profile.SplitRTT(rtt)
	}
	mk := func(d profile.Direction, t *profile.Trace, extra map[int]time.Duration, seed uint64) Config {
		return Config{Delay: d.Delay, Jitter: d.Jitter, RateBPS: d.RateBPS, Trace: t, Loss: d.Loss, Queue: d.Queue,
			Discipline: d.Discipline, ECN: r.ECN, OriginExtra: extra, Seed: seed}
	}
	return mk(r.Up, upTrace, upExtra, seed), mk(r.Down, downTrace, downExtra, downSeed(seed)), nil
}

// downSeed derives the down direction's seed (a splitmix64 step, so nearby seeds stay unrelated).
func downSeed(seed uint64) uint64 {
	z := seed + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// FromProfile loads the traces a resolved profile names and builds both directions.
func FromProfile(r profile.Resolved, seed uint64) (up, down *Direction, err error) {
	upTrace, downTrace, err := r.LoadTraces()
	if err != nil {
		return nil, nil, err
	}
	upCfg, downCfg, err := Configs(r, upTrace, downTrace, seed)
	if err != nil {
		return nil, nil, err
	}
	if up, err = NewDirection(upCfg); err != nil {
		return nil, nil, err
	}
	if down, err = NewDirection(downCfg); err != nil {
		return nil, nil, err
	}
	return up, down, nil
}
