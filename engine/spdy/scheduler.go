package spdy

// PriorityScheduler decides which stream's DATA goes out next: the highest priority (lowest
// number) stream that has something to send and send credit, round-robin among streams of the same
// priority. It is sans-IO: it only picks ids; the caller sends the chunk with Conn.SendData.
type PriorityScheduler struct {
	levels [MaxPriority + 1][]uint32 // ready streams per priority, in round-robin order
	prio   map[uint32]uint8
}

// NewPriorityScheduler returns an empty scheduler.
func NewPriorityScheduler() *PriorityScheduler {
	return &PriorityScheduler{prio: make(map[uint32]uint8)}
}

// Add registers stream id at priority (0 highest … 7 lowest; larger values count as 7). Adding a
// stream twice keeps its place.
func (s *PriorityScheduler) Add(id uint32, priority uint8) {
	if _, ok := s.prio[id]; ok {
		return
	}
	priority = min(priority, MaxPriority)
	s.prio[id] = priority
	s.levels[priority] = append(s.levels[priority], id)
}

// Remove forgets stream id.
func (s *PriorityScheduler) Remove(id uint32) {
	p, ok := s.prio[id]
	if !ok {
		return
	}
	delete(s.prio, id)
	l := s.levels[p]
	for i, v := range l {
		if v == id {
			s.levels[p] = append(l[:i], l[i+1:]...)
			return
		}
	}
}

// Len is the number of registered streams.
func (s *PriorityScheduler) Len() int { return len(s.prio) }

// Next returns the stream to serve: the first, in priority then round-robin order, for which
// ready(id) is true; that stream moves to the back of its level. ok is false if none is ready.
func (s *PriorityScheduler) Next(ready func(id uint32) bool) (id uint32, ok bool) {
	for p := range s.levels {
		l := s.levels[p]
		for i, v := range l {
			if ready(v) {
				copy(l[i:], l[i+1:])
				l[len(l)-1] = v
				return v, true
			}
		}
	}
	return 0, false
}
