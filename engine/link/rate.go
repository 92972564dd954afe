package link

import (
	"math/bits"
	"time"
)

// Serializer is the bottleneck that puts packets on the wire one after another (the "server" of
// the queue, in queueing terms): a constant bit rate or a mahimahi trace. The queue discipline
// chooses which packet goes next; the Direction asks Start when the rate stage can begin one and
// Depart when that packet's last bit leaves.
type Serializer interface {
	// Start returns when a packet that arrived at arrival can begin to be sent: at its arrival,
	// or once the previous packet has left (a trace: at the first opportunity with room). It does
	// not change the serialiser.
	Start(arrival time.Duration) time.Duration
	// Depart sends a size-byte packet that arrived at arrival and returns when its last bit has
	// left. Calls come in the order packets are sent; arrival may be earlier than a previous
	// call's when a discipline serves a later arrival first, but never later than the Start that
	// preceded the call. The result is ≥ arrival and never decreases.
	Depart(arrival time.Duration, size int) time.Duration
}

var (
	_ Serializer = (*ConstantRate)(nil)
	_ Serializer = (*TraceRate)(nil)
)

// ConstantRate serialises at a fixed rate of bits per second. A packet's departure is exact to the
// nanosecond (rounded up: a packet has left when its last bit has) and computed from the bits
// sent since the link last went busy, not by adding rounded per-packet times, so no error
// accumulates however long the link stays busy.
type ConstantRate struct {
	bps uint64
	// The current busy period: departure = epoch + ⌈bits·10⁹ / bps⌉ ns. Whole seconds' worth of
	// bits are moved into epoch, so bits stays below bps and the 128-bit quotient fits in 64 bits.
	epoch     time.Duration
	bits      uint64
	busyUntil time.Duration // departure of the last packet (its last bit, rounded up to the ns)
	exactEnd  bool          // whether that last bit left exactly at busyUntil
	started   bool
}

// NewConstantRate returns a serialiser at bps bits per second (bps > 0).
func NewConstantRate(bps int64) *ConstantRate {
	if bps <= 0 {
		panic("link: NewConstantRate needs a positive rate")
	}
	return &ConstantRate{bps: uint64(bps)}
}

// Start implements Serializer.
func (c *ConstantRate) Start(arrival time.Duration) time.Duration {
	if !c.started || arrival >= c.busyUntil {
		return arrival
	}
	return c.busyUntil
}

// Depart implements Serializer.
func (c *ConstantRate) Depart(arrival time.Duration, size int) time.Duration {
	if !c.started || arrival > c.busyUntil || (arrival == c.busyUntil && !c.exactEnd) {
		// The previous packet's last bit left before this packet arrived (busyUntil is rounded
		// up): the link was idle and a new busy period starts with this packet.
		c.started, c.epoch, c.bits = true, arrival, 0
	}
	c.bits += uint64(size) * 8
	if c.bits >= c.bps {
		secs := c.bits / c.bps
		c.bits -= secs * c.bps
		c.epoch += time.Duration(secs) * time.Second
	}
	hi, lo := bits.Mul64(c.bits, uint64(time.Second))
	ns, rem := bits.Div64(hi, lo, c.bps) // bits < bps now, so hi < bps and the quotient fits
	if rem != 0 {
		ns++
	}
	c.busyUntil, c.exactEnd = c.epoch+time.Duration(ns), rem == 0
	return c.busyUntil
}

// TransmissionTime is how long a packet of size bytes takes at bps bits per second, rounded up
// to the nanosecond.
func TransmissionTime(size int, bps int64) time.Duration {
	hi, lo := bits.Mul64(uint64(size)*8, uint64(time.Second))
	if hi >= uint64(bps) {
		panic("link: TransmissionTime overflows")
	}
	ns, rem := bits.Div64(hi, lo, uint64(bps))
	if rem != 0 {
		ns++
	}
	return time.Duration(ns)
}
