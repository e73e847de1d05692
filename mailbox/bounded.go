package mailbox

import (
	"fmt"
	"sync"
)

// initialRing is the ring size a Bounded mailbox starts with on its first Offer; the ring
// doubles from there up to the capacity, so a large capacity costs nothing until used.
const initialRing = 8

// Bounded is a FIFO mailbox that holds at most a fixed number of elements and applies an
// Overflow policy when an element arrives while it is full. It is safe for any number of
// concurrent Offer calls alongside one consumer; a mutex guards a ring buffer, which is
// fine for a mailbox that is not on the default path.
//
// Memory grows with use: a new Bounded holds no buffer, and its ring grows by doubling
// up to the capacity. Popped slots are zeroed so they do not keep garbage alive.
type Bounded[T any] struct {
	mu       sync.Mutex
	ring     []T // len(ring) is the current ring size, at most capacity
	start    int // index of the oldest element
	n        int // number of queued elements
	capacity int
	overflow Overflow
}

// NewBounded returns an empty Bounded mailbox that holds at most capacity elements and
// applies overflow when full. It returns an error wrapping ErrInvalidConfig when capacity
// is below one or overflow is not one of DropNewest, DropOldest and Reject.
func NewBounded[T any](capacity int, overflow Overflow) (*Bounded[T], error) {
	if capacity < 1 {
		return nil, fmt.Errorf("%w: bounded capacity %d, want at least 1", ErrInvalidConfig, capacity)
	}
	if !overflow.valid() {
		return nil, fmt.Errorf("%w: unknown overflow policy %v", ErrInvalidConfig, overflow)
	}
	return &Bounded[T]{capacity: capacity, overflow: overflow}, nil
}

// Offer queues v if there is room and returns Accepted. When the mailbox is full it
// applies the policy: DropNewest returns v as dropped with DroppedNewest, DropOldest
// queues v and returns the oldest element as dropped with DroppedOldest, and Reject
// leaves the mailbox unchanged and returns Rejected. Any goroutine may call it.
func (b *Bounded[T]) Offer(v T) (dropped T, r Result) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n == b.capacity {
		switch b.overflow {
		case DropOldest:
			i := b.start
			dropped = b.ring[i]
			b.ring[i] = v // the oldest slot becomes the newest
			b.start = b.wrap(i + 1)
			return dropped, DroppedOldest
		case Reject:
			return dropped, Rejected
		default:
			return v, DroppedNewest
		}
	}
	if b.n == len(b.ring) {
		b.grow()
	}
	b.ring[b.wrap(b.start+b.n)] = v
	b.n++
	return dropped, Accepted
}

// Pop removes and returns the oldest element, or reports ok == false when the mailbox is
// empty. It is meant for the consumer but is safe from any goroutine.
func (b *Bounded[T]) Pop() (v T, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n == 0 {
		return v, false
	}
	var zero T
	v = b.ring[b.start]
	b.ring[b.start] = zero
	b.start = b.wrap(b.start + 1)
	b.n--
	return v, true
}

// Empty reports whether the mailbox holds no element.
func (b *Bounded[T]) Empty() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n == 0
}

// Len returns the number of queued elements.
func (b *Bounded[T]) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

// Cap returns the capacity the mailbox was created with.
func (b *Bounded[T]) Cap() int { return b.capacity }

// Overflow returns the policy the mailbox applies when full.
func (b *Bounded[T]) Overflow() Overflow { return b.overflow }

// wrap maps i, which is below 2*len(ring), onto the ring.
func (b *Bounded[T]) wrap(i int) int {
	if i >= len(b.ring) {
		i -= len(b.ring)
	}
	return i
}

// grow enlarges a full ring (n == len(ring) < capacity), keeping the elements in order.
func (b *Bounded[T]) grow() {
	size := min(max(2*len(b.ring), initialRing), b.capacity)
	ring := make([]T, size)
	k := copy(ring, b.ring[b.start:])
	copy(ring[k:], b.ring[:b.start])
	b.ring, b.start = ring, 0
}
