package realtime

import "github.com/wirelab/wirelab/engine/internal/rtlock"

// pool recycles packet buffers between a direction's reader (which takes them) and its writer
// (which returns them). It grows as needed and never shrinks: its size is the peak number of
// packets inside the link (queue plus delay line) plus a read batch.
type pool struct {
	mu    rtlock.Mutex
	free  [][]byte
	size  int
	total int
}

func newPool(size int) *pool { return &pool{size: size} }

// fill replaces the nil entries of bufs with buffers.
func (p *pool) fill(bufs [][]byte) {
	p.mu.Lock()
	for i := range bufs {
		if bufs[i] != nil {
			continue
		}
		if n := len(p.free); n > 0 {
			bufs[i] = p.free[n-1][:p.size]
			p.free[n-1] = nil
			p.free = p.free[:n-1]
		} else {
			bufs[i] = make([]byte, p.size)
			p.total++
		}
	}
	p.mu.Unlock()
}

func (p *pool) put(b []byte) {
	p.mu.Lock()
	p.free = append(p.free, b)
	p.mu.Unlock()
}

func (p *pool) putAll(bs [][]byte) {
	p.mu.Lock()
	p.free = append(p.free, bs...)
	p.mu.Unlock()
}

// allocated is how many buffers exist.
func (p *pool) allocated() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total
}
