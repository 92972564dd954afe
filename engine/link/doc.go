// Package link is wirelab's link model: one direction of an emulated network path as a sans-IO
// state machine. It never reads a clock, sleeps or touches a device; the caller passes the time
// (a time.Duration since the link started, virtual in tests, monotonic in the real-time runner)
// and gets packets back when they are due. docs/network.md describes the model in full.
//
// A Direction chains four stages, each a small type behind a narrow interface:
//
//	Push ─► LossModel ─► Queue ─► Serializer ─► DelayLine ─► Pop
//	        (none,       (drop-   (constant    (delay, jitter
//	        Bernoulli,   tail)    rate or      without reordering,
//	        Gilbert–             mahimahi     per-origin extra)
//	        Elliott)             trace)
//
// Loss acts before the queue, so a lost packet never occupies it. The queue holds a packet until
// its last bit has been serialised. The rate stage is FIFO and deterministic, so a packet's
// departure — and its due time — is computed when it is pushed; Pop only hands packets out in due
// order. With no rate (unlimited) packets skip the queue and go straight to the delay line.
//
// API:
//
//	func NewDirection(cfg Config) (*Direction, error)
//	func FromProfile(r profile.Resolved, seed uint64) (up, down *Direction, err error)
//	func Configs(r profile.Resolved, upTrace, downTrace *profile.Trace, seed uint64) (up, down Config, err error)
//	func (d *Direction) Push(now time.Duration, p *Packet) Fate   // Accepted, DroppedLoss, DroppedQueue
//	func (d *Direction) Pop(now time.Duration) (*Packet, bool)    // next packet due at or before now
//	func (d *Direction) NextDeadline() (time.Duration, bool)      // when Pop will next have one
//	func (d *Direction) Stats() Stats                             // offered, delivered, drops by cause, max queue
//	func (p *Packet) Due() time.Duration                          // when the link releases p
//
// Stages, usable on their own:
//
//	type LossModel interface{ Lose() bool }                              // NoLoss, *BernoulliLoss, *GilbertElliottLoss
//	type Queue interface{ Admit(now, size) bool; Hold(size, leave); Stats() QueueStats } // *DropTailQueue
//	type Serializer interface{ Depart(arrival, size) time.Duration }      // *ConstantRate, *TraceRate
//	type DelayLine interface{ Insert(departure, p); Pop(now); Next(); Len() } // *PathDelay
//
// Time must not run backwards between Push calls (a smaller now is treated as the latest one).
// Packets are pointers owned by the caller; the link keeps an accepted packet until Pop returns it.
// A Direction is not safe for concurrent use: the runner drives each direction from one
// goroutine. Once its ring buffers have grown to the steady-state depth, Push and Pop do not
// allocate.
package link
