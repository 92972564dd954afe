package pktlog

import (
	"sort"
	"time"

	"github.com/wirelab/wirelab/engine/internal/rtlock"
)

// Log collects records in memory. It is safe for concurrent use: the emulator's real-time threads
// add records from both directions, so the lock is an rtlock.Mutex held only for O(1) work, and
// records live in fixed-size chunks that are never copied as the log grows (a growing slice of a
// million records would be copied under the lock, stalling the emulator for milliseconds).
// Readers scan a snapshot outside the lock; records are never modified once added.
type Log struct {
	mu     rtlock.Mutex
	chunks [][]Record // each of capacity chunkSize; only the last one is not full
}

const chunkSize = 4096 // records (192 KiB) per chunk

// Add records a packet: its direction, fate, when it entered and left the emulator, and its
// header facts parsed from pkt (which is not retained).
func (l *Log) Add(dir Dir, fate Fate, in, out time.Duration, pkt []byte) {
	r := Record{In: int64(in), Out: int64(out), Dir: dir, Fate: fate}
	if fate != Delivered {
		r.Out = r.In
	}
	Parse(pkt, &r)
	l.mu.Lock()
	if n := len(l.chunks); n == 0 || len(l.chunks[n-1]) == chunkSize {
		// Allocate outside the lock, then check again (another thread may have added a chunk).
		l.mu.Unlock()
		c := make([]Record, 0, chunkSize)
		l.mu.Lock()
		if n := len(l.chunks); n == 0 || len(l.chunks[n-1]) == chunkSize {
			l.chunks = append(l.chunks, c)
		}
	}
	last := &l.chunks[len(l.chunks)-1]
	*last = append(*last, r)
	l.mu.Unlock()
}

// snapshot returns the chunks as they are now: their lengths are fixed in the returned slice, and
// Add only writes past them.
func (l *Log) snapshot() [][]Record {
	l.mu.Lock()
	s := append([][]Record(nil), l.chunks...)
	l.mu.Unlock()
	return s
}

func count(chunks [][]Record) int {
	n := 0
	for _, c := range chunks {
		n += len(c)
	}
	return n
}

func flatten(chunks [][]Record) []Record {
	out := make([]Record, 0, count(chunks))
	for _, c := range chunks {
		out = append(out, c...)
	}
	return out
}

// Len is the number of records held.
func (l *Log) Len() int { return count(l.snapshot()) }

// Window returns (a copy of) the records whose ClientTime lies in [from, to), in the order the
// packets entered the emulator.
func (l *Log) Window(from, to time.Duration) []Record {
	var out []Record
	for _, c := range l.snapshot() {
		for _, r := range c {
			if t := r.ClientTime(); t >= from && t < to {
				out = append(out, r)
			}
		}
	}
	SortByIn(out)
	return out
}

// Take returns every record, in the order the packets entered the emulator, and empties the log:
// the next window starts.
func (l *Log) Take() []Record {
	l.mu.Lock()
	chunks := l.chunks
	l.chunks = nil
	l.mu.Unlock()
	out := flatten(chunks)
	SortByIn(out)
	return out
}

// DropBefore forgets records whose ClientTime is before t (bounds memory on long runs). Records
// added meanwhile are kept.
func (l *Log) DropBefore(t time.Duration) {
	snap := l.snapshot()
	if len(snap) == 0 {
		return
	}
	var kept [][]Record
	cur := make([]Record, 0, chunkSize)
	for _, c := range snap {
		for _, r := range c {
			if r.ClientTime() < t {
				continue
			}
			if len(cur) == chunkSize {
				kept = append(kept, cur)
				cur = make([]Record, 0, chunkSize)
			}
			cur = append(cur, r)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.chunks) < len(snap) || &l.chunks[0][:1][0] != &snap[0][:1][0] {
		return // Take emptied the log meanwhile: nothing of the snapshot is left to drop
	}
	// Records added since the snapshot: the rest of its last chunk, and any later chunks.
	n := len(snap)
	added := l.chunks[n-1][len(snap[n-1]):]
	for _, c := range l.chunks[n:] {
		added = append(added[:len(added):len(added)], c...)
	}
	for _, r := range added {
		if len(cur) == chunkSize {
			kept = append(kept, cur)
			cur = make([]Record, 0, chunkSize)
		}
		cur = append(cur, r)
	}
	l.chunks = append(kept, cur)
}

// SortByIn orders records by the time they entered the emulator (stable: records of one direction
// are added in the order the link delivered them).
func SortByIn(recs []Record) {
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].In < recs[j].In })
}
