package realtime

import "time"

// entry is the runner's bookkeeping for a packet inside the link.
type entry struct {
	buf      []byte        // the whole buffer; the packet is buf[offset:offset+n]
	n        int           // packet length
	in       time.Duration // when it was read
	deadline time.Duration // set when popped: the deadline it was due at
}

func (e *entry) data() []byte { return e.buf[offset : offset+e.n] }

// ring is a FIFO of entries.
type ring struct {
	items      []entry
	head, size int
}

func (r *ring) push(e entry) {
	if r.size == len(r.items) {
		n := len(r.items) * 2
		if n == 0 {
			n = 64
		}
		items := make([]entry, n)
		for i := 0; i < r.size; i++ {
			items[i] = r.items[(r.head+i)%len(r.items)]
		}
		r.items, r.head = items, 0
	}
	r.items[(r.head+r.size)%len(r.items)] = e
	r.size++
}

// take removes and returns the entry whose packet is pkt. The link keeps each origin's packets in
// order, so this is the head; anything else is searched for (a model that reorders stays correct).
func (r *ring) take(pkt []byte) (entry, bool) {
	for i := 0; i < r.size; i++ {
		j := (r.head + i) % len(r.items)
		e := r.items[j]
		if len(pkt) == e.n && &e.buf[offset] == &pkt[0] {
			// Close the gap by shifting the entries before it one place towards the tail.
			for k := i; k > 0; k-- {
				r.items[(r.head+k)%len(r.items)] = r.items[(r.head+k-1)%len(r.items)]
			}
			r.items[r.head] = entry{}
			r.head = (r.head + 1) % len(r.items)
			r.size--
			return e, true
		}
	}
	return entry{}, false
}

// inflight tracks the packets inside one direction's link, one FIFO per origin.
type inflight struct {
	byOrigin []*ring // index = origin
}

func (f *inflight) ring(origin int) *ring {
	if origin < 0 {
		origin = 0
	}
	for len(f.byOrigin) <= origin {
		f.byOrigin = append(f.byOrigin, &ring{})
	}
	return f.byOrigin[origin]
}

func (f *inflight) push(origin int, e entry) { f.ring(origin).push(e) }

func (f *inflight) take(origin int, pkt []byte) (entry, bool) {
	if origin >= 0 && origin < len(f.byOrigin) {
		if e, ok := f.byOrigin[origin].take(pkt); ok {
			return e, true
		}
	}
	// The link reported another origin than it was given: search everywhere.
	for _, r := range f.byOrigin {
		if e, ok := r.take(pkt); ok {
			return e, true
		}
	}
	return entry{}, false
}

// all returns every entry still inside (for releasing buffers at shutdown).
func (f *inflight) all() []entry {
	var out []entry
	for _, r := range f.byOrigin {
		for i := 0; i < r.size; i++ {
			out = append(out, r.items[(r.head+i)%len(r.items)])
		}
	}
	return out
}
