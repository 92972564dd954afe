package client

import (
	"context"
	"slices"
	"sync"
)

// streamSlots is a counting semaphore whose limit can change (an HTTP/2 peer's
// SETTINGS_MAX_CONCURRENT_STREAMS). Waiters are served in FIFO order. After fail, every pending
// and future acquire returns the failure.
type streamSlots struct {
	mu      sync.Mutex
	limit   int
	active  int
	waiters []chan struct{}
	err     error
}

func newStreamSlots(limit int) *streamSlots { return &streamSlots{limit: limit} }

// tryAcquire takes a slot if one is free at once.
func (s *streamSlots) tryAcquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil && len(s.waiters) == 0 && s.active < s.limit {
		s.active++
		return true
	}
	return false
}

// acquire waits for a slot.
func (s *streamSlots) acquire(ctx context.Context) error {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return s.err
	}
	if len(s.waiters) == 0 && s.active < s.limit {
		s.active++
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	s.waiters = append(s.waiters, ch)
	s.mu.Unlock()
	select {
	case <-ch:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.err // a slot was granted, or the connection failed
	case <-ctx.Done():
		s.mu.Lock()
		if i := slices.Index(s.waiters, ch); i >= 0 {
			s.waiters = slices.Delete(s.waiters, i, i+1)
			s.mu.Unlock()
			return ctx.Err()
		}
		s.mu.Unlock()
		if err := s.errOrNil(); err == nil {
			s.release() // granted while we gave up: hand it on
		}
		return ctx.Err()
	}
}

func (s *streamSlots) errOrNil() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// release frees a slot.
func (s *streamSlots) release() {
	s.mu.Lock()
	s.active--
	s.grantLocked()
	s.mu.Unlock()
}

// setLimit changes the limit; a larger one admits waiters at once.
func (s *streamSlots) setLimit(n int) {
	s.mu.Lock()
	s.limit = n
	s.grantLocked()
	s.mu.Unlock()
}

func (s *streamSlots) grantLocked() {
	for s.err == nil && len(s.waiters) > 0 && s.active < s.limit {
		s.active++
		close(s.waiters[0])
		s.waiters = s.waiters[1:]
	}
}

// fail makes every pending and future acquire return err.
func (s *streamSlots) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
		for _, ch := range s.waiters {
			close(ch)
		}
		s.waiters = nil
	}
	s.mu.Unlock()
}
