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
	// OriginExtra is the extra one-way delay of packets whose Origin is N (1 … profile.MaxOrigin).
	OriginExtra map[int]time.Duration
	// Seed seeds the loss model and the jitter (separate streams of one PCG seed).
	Seed uint64
}

// Direction is one direction of the emulated path: loss → queue → rate → delay.
type Direction struct {
	loss   LossModel
	queue  Queue
	rate   Serializer // nil: unlimited rate, packets go straight to the delay line
	delay  DelayLine
	stats  Stats
	pushed time.Duration // latest Push time, so that time never runs backwards inside
}

// Stats counts what a direction did. JSON names follow the trial contract's emulator summary.
type Stats struct {
	Packets          uint64 `json:"packets"`           // packets offered (pushed)
	Bytes            uint64 `json:"bytes"`             // bytes offered
	DeliveredPackets uint64 `json:"delivered_packets"` // packets popped
	DeliveredBytes   uint64 `json:"delivered_bytes"`
	DropsLoss        uint64 `json:"drops_loss"` // packets the loss model dropped
	DropsLossBytes   uint64 `json:"drops_loss_bytes"`
	DropsQueue       uint64 `json:"drops_queue"` // packets the full queue refused
	DropsQueueBytes  uint64 `json:"drops_queue_bytes"`
	MaxQueuePackets  int    `json:"max_queue_packets"` // most packets in the queue at once (0 when the rate is unlimited)
	MaxQueueBytes    int64  `json:"max_queue_bytes"`
	InFlight         int    `json:"in_flight"` // accepted and not yet popped
}

// NewDirection builds a direction from cfg, checking it first.
func NewDirection(cfg Config) (*Direction, error) {
	if cfg.Loss.Model == "" {
		cfg.Loss.Model = profile.LossNone
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
		queue: NewDropTailQueue(cfg.Queue),
		delay: NewPathDelay(cfg.Delay, cfg.Jitter, cfg.OriginExtra, cfg.Seed),
	}
	switch { // the one place where the rate stage is chosen
	case cfg.Trace != nil:
		d.rate = NewTraceRate(cfg.Trace)
	case cfg.RateBPS > 0:
		d.rate = NewConstantRate(cfg.RateBPS)
	}
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
	for origin, extra := range cfg.OriginExtra {
		if origin < 1 || origin > profile.MaxOrigin || extra < 0 {
			return fmt.Errorf("link: origin %d extra delay %v: origins are 1 to %d, delays ≥ 0", origin, extra, profile.MaxOrigin)
		}
	}
	return nil
}

// Push offers p to the link at time now (time since the link started; never decreasing across
// calls). It returns Accepted, and then the link holds p until Pop returns it at p.Due(), or a
// drop, and then the link has forgotten p. p must not be pushed again before Pop has returned it.
// Push never allocates once the link's buffers have grown to the steady-state depth.
func (d *Direction) Push(now time.Duration, p *Packet) Fate {
	now = max(now, d.pushed)
	d.pushed = now
	size := len(p.Data)
	d.stats.Packets++
	d.stats.Bytes += uint64(size)
	if d.loss.Lose() {
		d.stats.DropsLoss++
		d.stats.DropsLossBytes += uint64(size)
		return DroppedLoss
	}
	departure := now
	if d.rate != nil {
		if !d.queue.Admit(now, size) {
			d.stats.DropsQueue++
			d.stats.DropsQueueBytes += uint64(size)
			return DroppedQueue
		}
		departure = d.rate.Depart(now, size)
		d.queue.Hold(size, departure)
	}
	d.delay.Insert(departure, p)
	return Accepted
}

// Pop returns the next packet due at or before now, in due order (call it until it reports
// false). Pop may be called with any now; a packet comes out no earlier than its Due().
func (d *Direction) Pop(now time.Duration) (*Packet, bool) {
	p, ok := d.delay.Pop(now)
	if ok {
		d.stats.DeliveredPackets++
		d.stats.DeliveredBytes += uint64(len(p.Data))
	}
	return p, ok
}

// NextDeadline reports when Pop will next have a packet (false: the link is empty). A Push can
// make it earlier, so the runner asks again after pushing; it sleeps until then or until the next
// packet arrives.
func (d *Direction) NextDeadline() (time.Duration, bool) { return d.delay.Next() }

// Stats returns the direction's counters.
func (d *Direction) Stats() Stats {
	s := d.stats
	q := d.queue.Stats()
	s.MaxQueuePackets, s.MaxQueueBytes = q.MaxPackets, q.MaxBytes
	s.InFlight = d.delay.Len()
	return s
}

// Configs derives both directions' configurations from a resolved profile: delays, jitter, rates,
// loss and queues per direction; each origin's extra RTT split like rtt (half up, half down, an
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
		return Config{Delay: d.Delay, Jitter: d.Jitter, RateBPS: d.RateBPS, Trace: t, Loss: d.Loss, Queue: d.Queue, OriginExtra: extra, Seed: seed}
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
