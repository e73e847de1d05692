package mailbox

import "sync/atomic"

// Queue is a lock-free, unbounded, multi-producer single-consumer FIFO. Its zero value
// is an empty queue that holds no memory beyond the struct itself (two pointers), so it
// is meant to be embedded by value.
//
// Push may be called from any goroutine. Pop, Empty and Shrink belong to the consumer:
// at most one goroutine may call them at a time, and calls by successive consumers must
// be ordered by the caller (for example by the atomic flag that hands an actor from one
// goroutine to the next). Elements pushed by one goroutine are popped in the order they
// were pushed; elements from different goroutines interleave in the order their Push
// calls reserved a place.
//
// A Push that has returned is visible to Pop, unless another Push that started earlier
// is still writing the element ahead of it; that Push makes both visible before it
// returns. A caller that wakes the consumer after every Push therefore never leaves an
// element behind. The consumer role must not outlive its hand-over: a goroutine that has
// given it up (say, by clearing a scheduled flag) must not call Empty to decide whether
// to take it back, because that call could run alongside the next consumer's; see the
// package documentation for a hand-over that needs no such check.
//
// Push does not allocate while the consumer keeps up: a consumer that has caught up
// with the producers when it reaches the end of the segment, or when it calls Shrink,
// rewinds the segment and producers fill it again from the start. Under a backlog the
// queue grows by linked segments of 4, 8, ... up to 256 elements, which Shrink lets go
// when the consumer turns idle. The first segment and its 4 slots are one allocation.
// A stream that keeps the consumer a few elements behind never lets it rewind: the
// queue then links a 256-element segment every 256 elements, whose slots are those of
// a segment the consumer has stepped past (recycled through a pool shared by the
// queues of one element type), so only the segment's small header is allocated.
type Queue[T any] struct {
	head, tail atomic.Pointer[segment[T]]
}

// How the pieces interleave.
//
// head is written by the consumer when it steps to the next segment and by Shrink, and
// once by the producer that installs a first segment into an empty (nil) tail. tail is
// only ever moved forward along next links, or from a released segment to nil, or from
// nil to a new segment, always by compare-and-swap, so a stale pointer never wins.
//
// Each element is placed by a fetch-and-add on the tail segment's enq: the index it
// returns is the element's place, and an index past the slots means "this segment is
// full or closed, go to next". The producer that links a new segment writes its own
// element into slot 0 before publishing it, so linking and placing are one step.
//
// The producer's head.Store after tail.CompareAndSwap(nil, s) cannot clobber live data:
// tail is nil only after Shrink released the consumer's caught-up head segment, so until
// that store the consumer sees nil or the released segment, both empty, and it cannot
// step anywhere else. Elements that other producers add to s meanwhile become visible
// with the store, before the installing Push returns.
//
// Shrink closes the head segment h only when it is caught up (enq == deq, so nobody
// holds an unwritten reservation in it): it moves enq to closed and marks h spent for
// the consumer (deq = len). Then it races producers for h.next:
//   - Shrink wins (next = h, "released"): it clears tail if tail is h and head if head
//     is h. A producer that still finds h (or a spent segment before it, if tail lagged)
//     steps to it, sees the self link, clears tail, and installs a fresh segment.
//   - A producer wins (it linked a successor after the close made its reservation fail):
//     h stays in the list as a spent segment, and Pop steps over it to the successor.
//
// Marking h spent on close is what makes the second case work: otherwise Pop would wait
// at slot deq, which no producer will ever write, and report the queue empty forever.

// Push appends v to the queue. It is safe for concurrent use by any number of
// goroutines and never blocks; it allocates only when the queue needs a new segment.
func (q *Queue[T]) Push(v T) {
	if t := q.tail.Load(); t != nil {
		if i := t.enq.Add(1) - 1; i < uint64(len(t.slots)) {
			e := &t.slots[i]
			e.val = v
			e.ready.Store(1)
			return
		}
	}
	q.pushSlow(v)
}

// pushSlow is Push when the tail segment is missing, full, closed or released.
func (q *Queue[T]) pushSlow(v T) {
	var spare *segment[T] // a built segment whose publication failed; it holds v
	for {
		t := q.tail.Load()
		if t == nil {
			s := reuse(spare, minSegment, v)
			if q.tail.CompareAndSwap(nil, s) {
				q.head.Store(s)
				return
			}
			spare = s
			continue
		}
		if i := t.enq.Add(1) - 1; i < uint64(len(t.slots)) {
			e := &t.slots[i]
			e.val = v
			e.ready.Store(1)
			return
		}
		n := t.next.Load()
		if n == nil {
			s := reuse(spare, grow(len(t.slots)), v)
			if t.next.CompareAndSwap(nil, s) {
				q.tail.CompareAndSwap(t, s)
				return
			}
			spare = s
			n = t.next.Load()
		}
		if n == t { // released by Shrink
			q.tail.CompareAndSwap(t, nil)
			continue
		}
		q.tail.CompareAndSwap(t, n) // help a slow linker, then retry on the successor
	}
}

// Offer is Push, reported in the Mailbox's terms: the element is always Accepted and
// nothing is dropped. It lets *Queue[T] serve as a Mailbox[T].
func (q *Queue[T]) Offer(v T) (dropped T, r Result) {
	q.Push(v)
	return dropped, Accepted
}

// Pop removes and returns the oldest fully written element, or reports ok == false when
// there is none. Only the consumer may call it.
//
// Pop writes nothing that producers read except at the end of a segment: there it
// rewinds the segment if the producers are caught up too, or steps to the successor.
// In particular it does not rewind when it finds the queue empty midway through a
// segment: with a consumer that polls, that contends with the producer for enq on every
// empty poll (BenchmarkQueueSPSCPolling went from about 130 to 150-175 ns/op), and with
// a consumer that blocks it gained nothing. Shrink rewinds when the consumer turns idle.
func (q *Queue[T]) Pop() (v T, ok bool) {
	if h := q.head.Load(); h != nil {
		if d := h.deq; d < uint64(len(h.slots)) {
			if e := &h.slots[d]; e.ready.Load() != 0 {
				return h.take(e, d), true
			}
			return v, false
		}
	}
	if h := q.current(); h != nil {
		if d := h.deq; d < uint64(len(h.slots)) {
			if e := &h.slots[d]; e.ready.Load() != 0 {
				return h.take(e, d), true
			}
		}
	}
	return v, false
}

// take returns the ready element e at read index d of the head segment and moves past
// it. The slot itself is cleared later, by rewind, or dropped with the segment.
func (s *segment[T]) take(e *slot[T], d uint64) T {
	v := e.val
	d++
	s.deq = d
	if d == uint64(len(s.slots)) {
		// Spent, unless the producers are caught up too: then start over from slot 0
		// before any of them overflows into a new segment.
		s.rewind(d)
	}
	return v
}

// Empty reports whether Pop would find nothing now: no fully written element is
// available. Only the consumer may call it. It consumes nothing, but like Pop it steps
// the head past a spent segment to its successor.
//
// An element whose Push has not returned may be missing; one whose Push, and every Push
// that began before it, has returned is never missing. That makes Empty a sound last
// check before a consumer goes idle, provided every producer wakes it after pushing.
func (q *Queue[T]) Empty() bool {
	h := q.current()
	if h == nil {
		return true
	}
	d := h.deq
	return d == uint64(len(h.slots)) || h.slots[d].ready.Load() == 0
}

// Len returns how many elements are queued: reserved by a Push, so an element still
// being written is counted. Only the consumer may call it. It walks the segments, so it
// costs one step per 256 queued elements at most: meant for sampling, not for every Pop.
func (q *Queue[T]) Len() int {
	n := 0
	for s := q.head.Load(); s != nil; {
		end := min(s.enq.Load(), uint64(len(s.slots)))
		if s.deq < end {
			n += int(end - s.deq)
		}
		next := s.next.Load()
		if next == s {
			break // released
		}
		s = next
	}
	return n
}

// current returns the head segment after stepping the head past spent segments that
// have a successor, or nil when the queue has no segment.
func (q *Queue[T]) current() *segment[T] {
	h := q.head.Load()
	for h != nil && h.deq == uint64(len(h.slots)) {
		n := h.next.Load()
		if n == nil || n == h {
			break // spent and no successor yet, or released
		}
		q.head.Store(n) // h is garbage once producers that still hold it let go
		h.recycle()     // its slots are not: they go to a new segment
		h = n
	}
	return h
}

// Shrink tells the queue that the consumer has drained it and is turning idle. If the
// consumer has caught up with every producer, it releases a segment that has grown past
// the minimum size (the next Push installs a fresh minimum-size one) or rewinds a
// minimum-size one, clearing the elements already taken so they can be collected. So an
// idle queue holds at most one minimum-size segment and no stale elements.
//
// Only the consumer may call it. It never loses an element: a producer racing it either
// moves on to a fresh segment or makes Shrink leave the list as it is. If elements are
// pending, or a producer is still writing, Shrink does nothing.
func (q *Queue[T]) Shrink() {
	h := q.current()
	if h == nil {
		return
	}
	d := h.deq
	if d == uint64(len(h.slots)) {
		return // spent, and a producer is linking its successor
	}
	if len(h.slots) <= minSegment {
		h.rewind(d)
		return
	}
	if h.close(d) {
		q.release(h)
	}
}

// Rewind is the cheap half of Shrink, for a consumer that has drained the queue but may
// be busy again soon: when the consumer has caught up with every producer it rewinds
// the head segment, clearing the elements already taken so they can be collected, and
// keeps the segment whatever its size, so a busy consumer does not allocate it again.
// It reports whether that segment has grown past the minimum size; the caller should
// then call Shrink once the consumer has stayed idle for a while.
//
// Only the consumer may call it. Like Shrink it never loses an element, and it does
// nothing while elements are pending or a producer is still writing.
func (q *Queue[T]) Rewind() (grown bool) {
	h := q.current()
	if h == nil {
		return false
	}
	if d := h.deq; d < uint64(len(h.slots)) {
		h.rewind(d)
	}
	return len(h.slots) > minSegment
}

// Grown reports whether the queue holds a segment larger than the minimum, which
// Shrink would give back. Only the consumer may call it.
func (q *Queue[T]) Grown() bool {
	h := q.current()
	return h != nil && len(h.slots) > minSegment
}

// close ends producers' use of a segment the consumer has caught up with at read index
// d, and reports whether it did. It fails if enq != d: elements are pending or a
// producer holds a reservation it has not written yet. On success every later
// fetch-and-add on enq lands past the slots, and the segment is marked spent for the
// consumer so that Pop steps to a successor if a producer links one (without this, Pop
// would wait forever at slot d, which no producer will write).
func (s *segment[T]) close(d uint64) bool {
	if !s.enq.CompareAndSwap(d, closed) {
		return false
	}
	s.deq = uint64(len(s.slots))
	return true
}

// release unlinks the closed head segment h unless a producer has linked a successor
// to it, in which case the successor carries on and h is dropped by the next Pop.
func (q *Queue[T]) release(h *segment[T]) {
	if h.next.CompareAndSwap(nil, h) {
		q.tail.CompareAndSwap(h, nil)
		q.head.CompareAndSwap(h, nil)
	}
}
