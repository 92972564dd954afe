package realtime

import (
	"time"

	"github.com/wirelab/wirelab/engine/link"
)

// entry is the runner's bookkeeping for a packet inside the link.
type entry struct {
	buf []byte        // the whole buffer; the packet is buf[offset:offset+n]
	n   int           // packet length
	in  time.Duration // when it was read
	// Set when the link hands it back.
	deadline time.Duration // when it was due (delivered) or dropped
	fate     link.Fate
	sojourn  time.Duration
	used     bool
}

func (e *entry) data() []byte { return e.buf[offset : offset+e.n] }

// slots holds the packets inside one direction's link, each under the Handle the link carries
// for it: the slot's index. Freed slots are reused, so once the table has grown to the peak
// number of packets inside it never allocates.
type slots struct {
	items []entry
	free  []Handle
}

// put stores e and returns its handle.
func (s *slots) put(e entry) Handle {
	e.used = true
	if n := len(s.free); n > 0 {
		h := s.free[n-1]
		s.free = s.free[:n-1]
		s.items[h] = e
		return h
	}
	s.items = append(s.items, e)
	return Handle(len(s.items) - 1)
}

// take removes and returns the entry under h; false when h holds none (a bug of the link).
func (s *slots) take(h Handle) (entry, bool) {
	if h >= Handle(len(s.items)) || !s.items[h].used {
		return entry{}, false
	}
	e := s.items[h]
	s.items[h] = entry{}
	s.free = append(s.free, h)
	return e, true
}

// all returns every entry still inside (for releasing buffers at shutdown).
func (s *slots) all() []entry {
	var out []entry
	for _, e := range s.items {
		if e.used {
			out = append(out, e)
		}
	}
	return out
}
