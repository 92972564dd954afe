package pktlog

import (
	"sort"
	"sync"
	"time"
)

// Log collects records in memory. It is safe for concurrent use: the emulator adds records from
// both directions' goroutines.
type Log struct {
	mu   sync.Mutex
	recs []Record
}

// Add records a packet: its direction, fate, when it entered and left the emulator, and its
// header facts parsed from pkt (which is not retained).
func (l *Log) Add(dir Dir, fate Fate, in, out time.Duration, pkt []byte) {
	r := Record{In: int64(in), Out: int64(out), Dir: dir, Fate: fate}
	if fate != Delivered {
		r.Out = r.In
	}
	Parse(pkt, &r)
	l.mu.Lock()
	l.recs = append(l.recs, r)
	l.mu.Unlock()
}

// Len is the number of records held.
func (l *Log) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.recs)
}

// Window returns (a copy of) the records whose ClientTime lies in [from, to), in the order the
// packets entered the emulator.
func (l *Log) Window(from, to time.Duration) []Record {
	l.mu.Lock()
	var out []Record
	for i := range l.recs {
		if t := l.recs[i].ClientTime(); t >= from && t < to {
			out = append(out, l.recs[i])
		}
	}
	l.mu.Unlock()
	SortByIn(out)
	return out
}

// Take returns every record, in the order the packets entered the emulator, and empties the log:
// the next window starts.
func (l *Log) Take() []Record {
	l.mu.Lock()
	out := l.recs
	l.recs = nil
	l.mu.Unlock()
	SortByIn(out)
	return out
}

// DropBefore forgets records whose ClientTime is before t (bounds memory on long runs).
func (l *Log) DropBefore(t time.Duration) {
	l.mu.Lock()
	kept := l.recs[:0]
	for _, r := range l.recs {
		if r.ClientTime() >= t {
			kept = append(kept, r)
		}
	}
	clear(l.recs[len(kept):])
	l.recs = kept
	l.mu.Unlock()
}

// SortByIn orders records by the time they entered the emulator (stable: records of one direction
// are added in the order the link delivered them).
func SortByIn(recs []Record) {
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].In < recs[j].In })
}
