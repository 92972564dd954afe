// Package link is wirelab's link model: one direction of an emulated network path as a sans-IO
// state machine. It never reads a clock, sleeps or touches a device; the caller passes the time
// (a time.Duration since the link started, virtual in tests, monotonic in the real-time runner)
// and gets packets back when they are due. docs/network.md describes the model in full.
//
// A Direction chains four stages, each a small type behind a narrow interface:
//
//	Push ─► LossModel ─► Discipline ─► Serializer ─► DelayLine ─► Pop
//	        (none,       (drop-tail,   (constant    (delay, jitter
//	        Bernoulli,   CoDel,        rate or      without reordering,
//	        Gilbert–     FQ-CoDel,     mahimahi     per-origin extra)
//	        Elliott)     PIE, DOCSIS-  trace)
//	                     PIE, RED)
//
// Loss acts before the queue, so a lost packet never occupies it. The queue discipline holds
// packets until the rate stage takes one — when the previous packet's last bit has left, or at a
// trace's next opportunity — and decides at arrival (drop-tail, PIE, RED) or at that dequeue
// (CoDel, FQ-CoDel, knowing each packet's sojourn time) what to drop or, with ECN, mark. Every
// event — arrival, dequeue, a discipline's timer — is processed in time order at its exact time,
// whenever the caller's Push, Pop or NextDeadline runs, so a late caller never changes what the
// path does. With no rate (unlimited) packets skip the queue and go straight to the delay line.
//
// API:
//
//	func NewDirection(cfg Config) (*Direction, error)
//	func FromProfile(r profile.Resolved, seed uint64) (up, down *Direction, err error)
//	func Configs(r profile.Resolved, upTrace, downTrace *profile.Trace, seed uint64) (up, down Config, err error)
//	func (d *Direction) Push(now time.Duration, p *Packet) Fate   // Accepted, DroppedLoss, or the queue's drop
//	func (d *Direction) Pop(now time.Duration) (*Packet, bool)    // the next packet the link is done with
//	func (d *Direction) NextDeadline() (time.Duration, bool)      // when Pop may next have one
//	func (d *Direction) Stats() Stats                             // offered, delivered, drops, max queue
//	func (d *Direction) Gateway() GatewayStats                    // drops by cause, marks, sojourn times, flows
//	func (p *Packet) Due() time.Duration                          // when the link releases p (or dropped it)
//	func (p *Packet) Fate() Fate                                  // Delivered, Marked, or a drop
//	func (p *Packet) Sojourn() time.Duration                      // time p waited in the queue
//
// Fate and Dir are the path's one vocabulary: the real-time runner (engine/realtime) and the
// packet log (engine/pktlog) use them as they are.
//
// Stages, usable on their own:
//
//	type LossModel interface{ Lose() bool }                                 // NoLoss, *BernoulliLoss, *GilbertElliottLoss
//	type Discipline interface{ Enqueue(now, p, wire) Fate; Dequeue(now) *Packet; Backlog() Backlog }
//	                                                                        // *DropTailQueue, *CoDelQueue, *FQCoDelQueue, *PIEQueue, *REDQueue
//	type Serializer interface{ Start(arrival); Depart(arrival, size) }      // *ConstantRate, *TraceRate
//	type DelayLine interface{ Insert(departure, p); Pop(now); Next(); Len() } // *PathDelay
//
// Disciplines are chosen by name in one place (NewDiscipline); profile.Disciplines holds each
// one's defaults and keys.
//
// Time must not run backwards between Push calls (a smaller now is treated as the latest one).
// Packets are pointers owned by the caller; the link keeps an accepted packet until Pop returns it.
// A Direction is not safe for concurrent use: the runner drives each direction from one
// goroutine. Once its buffers have grown to the steady-state depth, Push and Pop do not allocate.
package link
