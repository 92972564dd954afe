package pktlog

import (
	"sort"
	"time"

	"github.com/wirelab/wirelab/engine/internal/rtlock"
)

// Log collects records in memory. It is safe for concurrent use: the emulator's real-time threads
// add records from both directions, so the lock is an rtlock.Mutex held only for O(1) work; readers
// scan a snapshot outside it (records are never modified once added).
type Log struct {
	mu   rtlock.Mutex
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

// snapshot is the records added so far; the returned slice is never written again by Add
// (appends go past its length, or to a new array).
func (l *Log) snapshot() []Record {
	l.mu.Lock()
	s := l.recs[:len(l.recs):len(l.recs)]
	l.mu.Unlock()
	return s
}

// Len is the number of records held.
func (l *Log) Len() int { return len(l.snapshot()) }

// Window returns (a copy of) the records whose ClientTime lies in [from, to), in the order the
// packets entered the emulator.
func (l *Log) Window(from, to time.Duration) []Record {
	var out []Record
	for _, r := range l.snapshot() {
		if t := r.ClientTime(); t >= from && t < to {
			out = append(out, r)
		}
	}
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
	snap := l.snapshot()
	kept := make([]Record, 0, len(snap))
	for _, r := range snap {
		if r.ClientTime() >= t {
			kept = append(kept, r)
		}
	}
	l.mu.Lock()
	// Keep what was added while we filtered (Take may have emptied the log meanwhile: then the
	// snapshot's records are gone already and only later ones count).
	if len(l.recs) >= len(snap) && (len(snap) == 0 || &l.recs[0] == &snap[0]) {
		l.recs = append(kept, l.recs[len(snap):]...)
	}
	l.mu.Unlock()
}

// SortByIn orders records by the time they entered the emulator (stable: records of one direction
// are added in the order the link delivered them).
func SortByIn(recs []Record) {
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].In < recs[j].In })
}
