package mailbox

import (
	"reflect"
	"sync"
	"sync/atomic"
)

const (
	// minSegment is the capacity of the first segment of a queue, and of the segment a
	// producer installs after the consumer released the previous one with Shrink.
	minSegment = 4
	// maxSegment caps the doubling of segment capacities under a backlog.
	maxSegment = 256
	// closed is what Shrink stores in a caught-up segment's enq, so that every later
	// fetch-and-add lands far past the slots and its producer moves on. The counter
	// cannot wrap from there: a Push fails on a given segment at most twice (fast path,
	// then slow path) before it makes sure the tail has moved away from that segment
	// for good, so failures are bounded by the number of goroutines.
	closed = 1 << 62
)

// segment is one array of slots in the queue's linked list.
//
// Producers reserve slots with a fetch-and-add on enq; the consumer reads them in order
// with deq. The consumer may reset both to zero ("rewind") when it has caught up, so one
// segment can serve a queue forever without allocating.
//
// A segment whose next points to itself has been released by Shrink: no producer may
// use it again, and a producer that finds it helps to clear the queue's tail and
// installs a fresh segment. A self link stands in for a package-level sentinel, which
// Go cannot declare for a generic type.
//
// The fields share one cache line although producers write enq on every Push and the
// consumer writes deq on every Pop. Padding them apart (with a consumer copy of the
// slice header) made no difference beyond noise in BenchmarkQueueSPSC and
// BenchmarkQueueSPSCEnvelope on the 2-core machine measured, and it cost 48 bytes in
// every segment, including the one each active actor keeps.
type segment[T any] struct {
	next  atomic.Pointer[segment[T]]
	enq   atomic.Uint64 // producers: slot reservations; may run past len(slots), or hold closed+k
	deq   uint64        // consumer only: index of the next slot to read; len(slots) once spent
	slots []slot[T]
}

// slot holds one element. ready is 1 from the moment a producer has written val until
// the consumer rewinds the segment; the atomic store of ready publishes the plain write
// of val. The consumer never writes a slot one at a time: a rewind clears all the slots
// it has read at once, values and flags together, which is also what lets the garbage
// collector have the values.
type slot[T any] struct {
	ready atomic.Uint32
	val   T
}

// firstSegment puts a minimum-size segment and its slots in one allocation, so an actor
// that received a message costs one object, not two.
type firstSegment[T any] struct {
	seg   segment[T]
	slots [minSegment]slot[T]
}

// newSegment returns an unpublished segment of capacity n whose slot 0 already holds v,
// as if one producer had reserved and written it.
func newSegment[T any](n int, v T) *segment[T] {
	var s *segment[T]
	switch n {
	case minSegment:
		f := new(firstSegment[T])
		f.seg.slots = f.slots[:]
		s = &f.seg
	case maxSegment:
		s = &segment[T]{slots: fullSlots[T]()[:]}
	default:
		s = &segment[T]{slots: make([]slot[T], n)}
	}
	s.slots[0].val = v
	s.slots[0].ready.Store(1)
	s.enq.Store(1)
	return s
}

// reuse returns spare when it is an unpublished segment of capacity n (left over from a
// lost compare-and-swap, so it already holds v in slot 0), and a new segment otherwise.
func reuse[T any](spare *segment[T], n int, v T) *segment[T] {
	if spare != nil && len(spare.slots) == n {
		return spare
	}
	return newSegment(n, v)
}

// grow returns the capacity of the segment that follows a full one of capacity n.
func grow(n int) int {
	if n >= maxSegment/2 {
		return maxSegment
	}
	return 2 * n
}

// rewind resets a segment that the consumer has caught up with, at read index d, so that
// the next producers write from slot 0 again. Only the consumer calls it.
//
// enq == d means every reservation ever made in this segment has been written and
// consumed: no producer is between its fetch-and-add and its ready store here, and none
// can touch slots [0, d) until enq is reset. So the consumer first clears those slots
// (values for the garbage collector, ready flags for the next round), then moves enq
// from d to 0 with a compare-and-swap. A producer that reserved in the meantime made
// enq > d and the compare-and-swap fails harmlessly (the cleared slots stay behind the
// read index); a producer that reserves afterwards gets index 0, which is where the
// consumer reads next. Slots at d and beyond were never written since the last rewind,
// so they are clear already.
//
// A segment with a successor never rewinds: the successor was linked by a producer whose
// fetch-and-add took enq past len(slots), where only a rewind could bring it back, while
// d never exceeds len(slots). A closed segment's enq is likewise far above any d.
func (s *segment[T]) rewind(d uint64) {
	if d > 0 && s.enq.Load() == d {
		clear(s.slots[:d])
		if s.enq.CompareAndSwap(d, 0) {
			s.deq = 0
		}
	}
}

// Recycling full-size slots.
//
// A stream that keeps a queue's consumer a few elements behind its producers never lets
// the consumer rewind: each maxSegment elements a producer links a new segment, and
// the consumer steps past the spent one. Allocating those slots (some ten kilobytes for
// an actor's mailbox) was a third of a streaming sender's CPU, so the consumer gives a
// spent segment's slots back (recycle) and the next new full-size segment takes them.
//
// Only the slots are reused, never the segment: a producer may still hold the spent
// segment, having read the tail before it moved on, and its fetch-and-add on that
// segment's enq lands past the slots (the segment is spent: every slot was reserved),
// so it never touches them; it finds the successor and moves on. And no reservation
// in the spent segment is still unwritten: the consumer has read every slot (or closed
// the segment when nothing was reserved past its read index), and a producer writes
// nothing to a slot after it marks it ready. A segment header, by contrast, cannot be
// reused: a stale producer's fetch-and-add on a recycled header could land in it.

// slotPools holds, per element type, a sync.Pool of spent full-size slot arrays,
// cleared (the pool is per type because Go has no generic package variables).
var slotPools sync.Map // reflect.Type -> *sync.Pool of *[maxSegment]slot[T]

// slotPool returns the pool of full-size slot arrays of element type T.
func slotPool[T any]() *sync.Pool {
	key := reflect.TypeFor[T]()
	if p, ok := slotPools.Load(key); ok {
		return p.(*sync.Pool)
	}
	p, _ := slotPools.LoadOrStore(key, new(sync.Pool))
	return p.(*sync.Pool)
}

// fullSlots returns cleared slots for a full-size segment: recycled ones, or new.
func fullSlots[T any]() *[maxSegment]slot[T] {
	if a, ok := slotPool[T]().Get().(*[maxSegment]slot[T]); ok {
		return a
	}
	return new([maxSegment]slot[T])
}

// recycle gives the slots of s, a full-size segment the consumer has stepped past,
// back for a new segment (see above). The consumer calls it once, as it steps past s.
func (s *segment[T]) recycle() {
	if len(s.slots) != maxSegment {
		return
	}
	clear(s.slots) // the values for the garbage collector, the ready flags for reuse
	slotPool[T]().Put((*[maxSegment]slot[T])(s.slots))
}
