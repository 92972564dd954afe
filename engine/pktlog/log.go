package pktlog

import (
	"bytes"
	"cmp"
	"sort"
	"time"

	"github.com/wirelab/wirelab/engine/internal/rtlock"
	"github.com/wirelab/wirelab/engine/link"
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

// Add records a packet: its direction, fate, when it entered and left the emulator (or was
// dropped: a drop on arrival records In for both, as the loss model and a full drop-tail queue
// drop), how long it waited in the gateway's queue, and its header facts parsed from pkt (which
// is not retained).
func (l *Log) Add(dir Dir, fate link.Fate, in, out, sojourn time.Duration, pkt []byte) {
	r := Record{In: int64(in), Out: int64(out), Dir: dir, Fate: fate, SojournUS: uint32(min(max(sojourn/time.Microsecond, 0), 1<<32-1))}
	if fate == link.DroppedLoss || fate == link.DroppedQueue {
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

// SortByIn orders records by the time they entered the emulator. Records that entered at the same
// instant — packets the runner read in one batch, such as the segments of one GSO super-packet —
// keep their flow's sending order: a drop is logged when the link decides it and a delivery only
// when the packet leaves, so the log alone would put a dropped segment before the segments sent
// just ahead of it, and those would look like retransmissions. Among them a TCP flow's segments
// are ordered by sequence number (records of different flows by their addresses and ports, which
// does not matter to anything derived per flow).
func SortByIn(recs []Record) {
	sort.SliceStable(recs, func(i, j int) bool {
		a, b := &recs[i], &recs[j]
		if a.In != b.In {
			return a.In < b.In
		}
		if a.Proto != b.Proto || a.Proto != ProtoTCP {
			return false
		}
		if c := compareFlow(a, b); c != 0 {
			return c < 0
		}
		return seqBefore(a.Seq, b.Seq)
	})
}

// compareFlow orders two records by their directional flow (addresses, then ports).
func compareFlow(a, b *Record) int {
	if c := bytes.Compare(a.Src[:], b.Src[:]); c != 0 {
		return c
	}
	if c := bytes.Compare(a.Dst[:], b.Dst[:]); c != 0 {
		return c
	}
	if a.SrcPort != b.SrcPort {
		return cmp.Compare(a.SrcPort, b.SrcPort)
	}
	return cmp.Compare(a.DstPort, b.DstPort)
}
