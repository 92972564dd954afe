package link

import (
	"fmt"
	"time"

	"github.com/wirelab/wirelab/engine/link/profile"
)

// Discipline is the gateway's queue: it holds packets between their arrival and the moment the
// rate stage takes one to send, and decides what to drop (or mark) on the way — at arrival
// (drop-tail, PIE, RED) or when the rate stage takes the next packet (CoDel, FQ-CoDel), when the
// sojourn time is known. Disciplines are siblings: DropTailQueue, CoDelQueue, FQCoDelQueue,
// PIEQueue (PIE and DOCSIS-PIE) and REDQueue, each built in one place (NewDiscipline).
//
// Time comes in as arguments and never runs backwards between calls. A Discipline is driven by
// its Direction, from one goroutine.
type Discipline interface {
	// Enqueue offers p, arriving at now. wire is what the rate stage still holds (the packet
	// being sent; a drop-tail queue counts it against its limit). It returns Accepted — p is
	// queued, and marked already if the discipline marks on arrival — or the drop that refused p.
	// It may also drop packets it had accepted (FQ-CoDel making room), through its Sink.
	Enqueue(now time.Duration, p *Packet, wire Backlog) Fate
	// Dequeue hands the rate stage the next packet at now, or nil when the queue is empty.
	// Packets it drops on the way (CoDel) go to its Sink.
	Dequeue(now time.Duration) *Packet
	// Backlog is what the queue holds now.
	Backlog() Backlog
}

// Backlog is an amount of queued traffic: packets and their IP bytes.
type Backlog struct {
	Packets int
	Bytes   int64
}

// Sink receives the packets a discipline drops after accepting them, with when and why
// (DroppedAQM or DroppedOverflow). The Direction is every discipline's Sink.
type Sink interface {
	Drop(p *Packet, at time.Duration, why Fate)
}

// fifo is implemented by disciplines whose Dequeue takes the head and decides nothing: the
// Direction may then hand packets to the rate stage as soon as they arrive, so each packet's
// departure and due time are known at Push (drop-tail: exactly the model before disciplines).
type fifo interface{ fifo() }

// ticker is implemented by disciplines with a periodic timer (PIE's probability update, Adaptive
// RED's): the Direction calls Tick at each NextTick, in time order with arrivals and dequeues.
type ticker interface {
	NextTick() time.Duration
	Tick(now time.Duration)
}

// flowReporter is implemented by disciplines with flow queues (FQ-CoDel).
type flowReporter interface {
	Flows() FlowStats
}

// DisciplineConfig is what a discipline is built from: the profile's discipline and limit, and
// what the direction knows about itself.
type DisciplineConfig struct {
	Discipline profile.Discipline
	Limit      profile.QueueLimit
	ECN        bool   // mark Congestion Experienced instead of dropping where the discipline can
	Seed       uint64 // the direction's seed: random draws (PIE, RED) and FQ-CoDel's flow hash
	// RateBPS is the rate stage's mean rate in bits/s (a trace's average); 0 when unlimited.
	// DOCSIS-PIE estimates its queueing delay from it, RED its idle decay, and docsis_pie's
	// default buffer is 100 ms of it.
	RateBPS float64
	Sink    Sink
}

// disciplines is the one place disciplines are chosen by name.
var disciplines = map[string]func(DisciplineConfig) Discipline{
	profile.DropTail:  func(c DisciplineConfig) Discipline { return NewDropTailQueue(c.Limit) },
	profile.CoDel:     func(c DisciplineConfig) Discipline { return NewCoDelQueue(c) },
	profile.FQCoDel:   func(c DisciplineConfig) Discipline { return NewFQCoDelQueue(c) },
	profile.PIE:       func(c DisciplineConfig) Discipline { return NewPIEQueue(c) },
	profile.DOCSISPIE: func(c DisciplineConfig) Discipline { return NewPIEQueue(c) },
	profile.RED:       func(c DisciplineConfig) Discipline { return NewREDQueue(c) },
}

var (
	_ Discipline = (*DropTailQueue)(nil)
	_ fifo       = (*DropTailQueue)(nil)
)

// NewDiscipline builds the discipline c names (the zero name is drop-tail). c.Sink must be set
// for every discipline but drop-tail.
func NewDiscipline(c DisciplineConfig) (Discipline, error) {
	name := c.Discipline.Name
	if name == "" {
		name = profile.DropTail
		c.Discipline = profile.Discipline{Name: name}
	}
	mk, ok := disciplines[name]
	if !ok {
		return nil, fmt.Errorf("link: unknown queue discipline %q", name)
	}
	if err := c.Discipline.Validate(); err != nil {
		return nil, fmt.Errorf("link: %w", err)
	}
	if name != profile.DropTail && c.Sink == nil {
		return nil, fmt.Errorf("link: queue discipline %s needs a Sink", name)
	}
	return mk(c), nil
}

// overLimit reports whether a queue holding b plus one packet of size bytes exceeds limit
// (0 = no limit in that dimension).
func overLimit(limit profile.QueueLimit, b Backlog, size int) bool {
	return (limit.Packets > 0 && int64(b.Packets)+1 > limit.Packets) || (limit.Bytes > 0 && b.Bytes+int64(size) > limit.Bytes)
}
