package link

// ring is a FIFO in a power-of-two slice that doubles when full. Once it has grown to the
// steady-state depth it never allocates again, which keeps the per-packet path allocation-free.
type ring[T any] struct {
	buf  []T
	head int // index of the oldest element
	n    int // number of elements
}

func newRing[T any](capacity int) ring[T] {
	size := 16
	for size < capacity {
		size *= 2
	}
	return ring[T]{buf: make([]T, size)}
}

func (r *ring[T]) len() int { return r.n }

func (r *ring[T]) push(v T) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = v
	r.n++
}

// peek returns the oldest element; the ring must not be empty.
func (r *ring[T]) peek() T { return r.buf[r.head] }

// pop removes and returns the oldest element; the ring must not be empty. The slot is cleared so
// that the ring does not keep packets (and their buffers) alive.
func (r *ring[T]) pop() T {
	var zero T
	v := r.buf[r.head]
	r.buf[r.head] = zero
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return v
}

func (r *ring[T]) grow() {
	buf := make([]T, max(2*len(r.buf), 16)) // the zero ring starts at 16

	k := copy(buf, r.buf[r.head:])
	copy(buf[k:], r.buf[:r.head])
	r.buf, r.head = buf, 0
}
