package mailbox

import (
	"fmt"
	"sync"
)

// Priority is an unbounded mailbox that pops the element with the highest priority
// first, and among equal priorities the one offered first. It is safe for any number of
// concurrent Offer calls alongside one consumer; a mutex guards a binary heap ordered by
// priority and then by an arrival sequence number.
//
// Offer always accepts. Popped slots are zeroed so they do not keep garbage alive, and
// the heap's storage is released when a pop empties a large heap.
type Priority[T any] struct {
	priority func(T) int

	mu   sync.Mutex
	heap []prioritized[T]
	seq  uint64 // arrival counter; 2^64 offers do not happen
}

// prioritized is one heap entry.
type prioritized[T any] struct {
	val  T
	prio int
	seq  uint64
}

// releaseHeap is the heap capacity above which a Pop that empties the heap drops its
// storage instead of keeping it for reuse.
const releaseHeap = 64

// NewPriority returns an empty Priority mailbox that ranks elements by priority: a
// larger number pops earlier. priority is called once per Offer, outside the mailbox's
// lock, on the offering goroutine; it must be safe for concurrent use. A nil priority is
// an error wrapping ErrInvalidConfig.
func NewPriority[T any](priority func(T) int) (*Priority[T], error) {
	if priority == nil {
		return nil, fmt.Errorf("%w: priority mailbox needs a priority function", ErrInvalidConfig)
	}
	return &Priority[T]{priority: priority}, nil
}

// Offer queues v at the priority its function gives and returns Accepted; nothing is
// ever dropped. Any goroutine may call it.
func (p *Priority[T]) Offer(v T) (dropped T, r Result) {
	prio := p.priority(v) // outside the lock: user code must not hold up other senders
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	p.heap = append(p.heap, prioritized[T]{val: v, prio: prio, seq: p.seq})
	p.up(len(p.heap) - 1)
	return dropped, Accepted
}

// Pop removes and returns the element with the highest priority, the earliest offered
// among equals, or reports ok == false when the mailbox is empty. It is meant for the
// consumer but is safe from any goroutine.
func (p *Priority[T]) Pop() (v T, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.heap)
	if n == 0 {
		return v, false
	}
	v = p.heap[0].val
	last := n - 1
	p.heap[0] = p.heap[last]
	p.heap[last] = prioritized[T]{}
	p.heap = p.heap[:last]
	if last > 0 {
		p.down(0)
	} else if cap(p.heap) > releaseHeap {
		p.heap = nil
	}
	return v, true
}

// Empty reports whether the mailbox holds no element.
func (p *Priority[T]) Empty() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.heap) == 0
}

// Len returns the number of queued elements.
func (p *Priority[T]) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.heap)
}

// before reports whether entry i pops before entry j.
func (p *Priority[T]) before(i, j int) bool {
	a, b := &p.heap[i], &p.heap[j]
	if a.prio != b.prio {
		return a.prio > b.prio
	}
	return a.seq < b.seq
}

// up restores the heap order after entry i was appended.
func (p *Priority[T]) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !p.before(i, parent) {
			return
		}
		p.heap[i], p.heap[parent] = p.heap[parent], p.heap[i]
		i = parent
	}
}

// down restores the heap order after entry i was replaced.
func (p *Priority[T]) down(i int) {
	n := len(p.heap)
	for {
		first := i
		if l := 2*i + 1; l < n && p.before(l, first) {
			first = l
		}
		if r := 2*i + 2; r < n && p.before(r, first) {
			first = r
		}
		if first == i {
			return
		}
		p.heap[i], p.heap[first] = p.heap[first], p.heap[i]
		i = first
	}
}
