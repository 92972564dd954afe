package realtime

import "time"

// Stepper drives one direction of a Runner that is not running, in virtual time, through the
// same code as its reader and writer (ingest, collect, flush): for tests of the per-packet path.
type Stepper struct {
	p  *pipe
	in *intake
	o  *outbox
}

// Stepper returns a Stepper for direction d.
func (r *Runner) Stepper(d Dir) *Stepper {
	return &Stepper{p: r.pipes[d], in: newIntake(), o: newOutbox()}
}

// Push reads pkt as arriving at now (as the reader does after a read of one packet).
func (s *Stepper) Push(now time.Duration, pkt []byte) {
	s.p.pool.fill(s.in.bufs[:1], s.in.ids[:1])
	s.in.sizes[0] = copy(s.in.bufs[0][offset:], pkt)
	s.p.ingest(s.in, 1, now)
}

// Release takes everything the link is done with at now and writes the due packets out (as the
// writer does); it returns how many it wrote.
func (s *Stepper) Release(now time.Duration) int {
	written := 0
	for {
		s.p.mu.Lock()
		s.p.collect(now, s.o)
		n := len(s.o.batch)
		more := n > 0 || len(s.o.dropped) > 0
		s.p.mu.Unlock()
		if !more {
			return written
		}
		s.p.flush(s.o)
		written += n
	}
}
