package profile

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/wirelab/wirelab/engine/internal/units"
	"github.com/wirelab/wirelab/engine/internal/userpath"
)

// A mahimahi trace file has one line per delivery opportunity: the time in whole milliseconds
// (from the start of the link) at which the link may deliver one 1500-byte packet's worth of
// bytes. Times are non-decreasing; the same time on several lines means several opportunities at
// that moment. The trace repeats with a period equal to its last timestamp, which must be > 0.
// Blank lines are ignored; anything else that is not a whole number is an error.

// TraceOpportunityBytes is what one delivery opportunity carries: one MTU-sized IP packet, like
// mahimahi's 1504 bytes of TUN frame (4 bytes of packet information + 1500 bytes of IP packet).
const TraceOpportunityBytes = 1500

// MaxTraceMS bounds timestamps (10^9 ms ≈ 11.6 days) so that times stay far from overflow.
const MaxTraceMS = 1_000_000_000

const traceAllowed = "a mahimahi trace has one delivery time per line, in whole ms, non-decreasing, ending after 0 ms"

// Trace is a parsed mahimahi trace: its opportunities grouped by timestamp.
type Trace struct {
	Name   string        // the path (or name) as given, for messages
	Period time.Duration // the last timestamp: the trace repeats with this period
	Slots  []TraceSlot   // distinct timestamps in increasing order
}

// TraceSlot is one distinct timestamp of a trace and how many opportunities it has.
type TraceSlot struct {
	At            time.Duration // offset from the start of each period
	Opportunities int
}

// Opportunities returns the number of delivery opportunities in one period.
func (t *Trace) Opportunities() int {
	n := 0
	for _, s := range t.Slots {
		n += s.Opportunities
	}
	return n
}

// BitsPerSecond returns the trace's average rate over one period.
func (t *Trace) BitsPerSecond() float64 {
	return float64(t.Opportunities()) * TraceOpportunityBytes * 8 / t.Period.Seconds()
}

// LoadTrace reads and validates the trace file at path. field names the profile key that named it
// (trace_up or trace_down) for the error, e.g. `trace_down: "x.trace" does not exist; …`.
func LoadTrace(field, path string) (*Trace, error) {
	// Only a regular file, never blocking on a FIFO or reading a device (docs/bad-input.md).
	f, err := userpath.Open(path, MaxTraceFileBytes)
	if p, ok := userpath.As(err); ok {
		return nil, newError(field, path, p.What, "give the path of "+p.Want+": a mahimahi trace ("+traceAllowed+")")
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseTrace(field, path, io.LimitReader(f, MaxTraceFileBytes))
}

// MaxTraceFileBytes bounds a trace file (about 25 million delivery opportunities: hours of a
// cellular link at tens of Mbit/s).
const MaxTraceFileBytes = 256 << 20

// ParseTrace reads a trace from r; name is used in errors (and kept as Trace.Name).
func ParseTrace(field, name string, r io.Reader) (*Trace, error) {
	t := &Trace{Name: name}
	sc := bufio.NewScanner(r)
	line := 0
	last := int64(-1)
	for sc.Scan() {
		line++
		text := trimBlank(sc.Text())
		if len(text) > 0 && text[len(text)-1] == '\r' {
			text = trimBlank(text[:len(text)-1])
		}
		if text == "" {
			continue
		}
		if !units.AllDigits(text) || len(text) > 10 {
			return nil, newError(field, name, fmt.Sprintf("line %d: %q is not a whole number of milliseconds", line, abbreviate([]byte(text))), traceAllowed)
		}
		ms, _ := strconv.ParseInt(text, 10, 64)
		if ms > MaxTraceMS {
			return nil, newError(field, name, fmt.Sprintf("line %d: %d ms is too late", line, ms), "timestamps are at most 10^9 ms")
		}
		if ms < last {
			return nil, newError(field, name, fmt.Sprintf("line %d: %d ms comes before the previous line's %d ms", line, ms, last), traceAllowed)
		}
		at := time.Duration(ms) * time.Millisecond
		if ms == last {
			t.Slots[len(t.Slots)-1].Opportunities++
		} else {
			t.Slots = append(t.Slots, TraceSlot{At: at, Opportunities: 1})
		}
		last = ms
	}
	if err := sc.Err(); err != nil {
		return nil, newError(field, name, fmt.Sprintf("cannot be read after line %d (%v)", line, err), traceAllowed)
	}
	if len(t.Slots) == 0 {
		return nil, newError(field, name, "has no delivery opportunities", traceAllowed)
	}
	if last == 0 {
		return nil, newError(field, name, "lasts 0 ms (its last timestamp is 0)", "the last timestamp is the period of the trace and must be > 0")
	}
	t.Period = time.Duration(last) * time.Millisecond
	return t, nil
}

// LoadTraces loads the traces that r names (nil where a direction has none).
func (r Resolved) LoadTraces() (up, down *Trace, err error) {
	if r.Up.Trace != "" {
		if up, err = LoadTrace("trace_up", r.Up.Trace); err != nil {
			return nil, nil, err
		}
	}
	if r.Down.Trace != "" {
		if down, err = LoadTrace("trace_down", r.Down.Trace); err != nil {
			return nil, nil, err
		}
	}
	return up, down, nil
}
