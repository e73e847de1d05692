package mailbox

import (
	"runtime"
	"testing"
	"unsafe"
)

// segments lists the capacities of the segments reachable from the queue's head.
func segments[T any](q *Queue[T]) []int {
	var caps []int
	for s := q.head.Load(); s != nil; {
		caps = append(caps, len(s.slots))
		n := s.next.Load()
		if n == s {
			break
		}
		s = n
	}
	return caps
}

func TestQueueZeroValue(t *testing.T) {
	var q Queue[int]
	if got := unsafe.Sizeof(q); got != 16 {
		t.Errorf("Sizeof(Queue[int]) = %d, want 16", got)
	}
	if !q.Empty() {
		t.Error("zero queue not Empty")
	}
	if v, ok := q.Pop(); ok {
		t.Errorf("zero queue popped %d", v)
	}
	q.Shrink() // must not panic or allocate anything
	if q.head.Load() != nil || q.tail.Load() != nil {
		t.Error("Pop, Empty or Shrink on a zero queue installed a segment")
	}
	if allocs := testing.AllocsPerRun(100, func() {
		q.Pop()
		q.Empty()
		q.Shrink()
	}); allocs != 0 {
		t.Errorf("consumer calls on an empty queue allocate %v times", allocs)
	}
}

func TestQueueFirstSegmentMemory(t *testing.T) {
	// An actor's envelope: an interface and a pointer, 24 bytes. The first Push must be
	// one allocation holding the segment header and its four slots.
	type envelope struct {
		msg    any
		sender *int
	}
	if got := unsafe.Sizeof(firstSegment[envelope]{}); got != 176 {
		t.Errorf("first segment for a 24-byte element is %d bytes, want 176", got)
	}
	x := new(int)
	var q Queue[envelope]
	if allocs := testing.AllocsPerRun(100, func() {
		q.head.Store(nil) // back to the zero value
		q.tail.Store(nil)
		q.Push(envelope{msg: x, sender: x})
	}); allocs != 1 {
		t.Errorf("first Push allocates %v times, want 1", allocs)
	}
}

func TestQueueFIFO(t *testing.T) {
	for _, n := range []int{1, 3, 4, 5, 8, 12, 13, 100, 1000, 5000} {
		var q Queue[int]
		for i := range n {
			q.Push(i)
		}
		if q.Empty() {
			t.Fatalf("n=%d: Empty after pushes", n)
		}
		for i := range n {
			v, ok := q.Pop()
			if !ok || v != i {
				t.Fatalf("n=%d: Pop #%d = %d, %v; want %d, true", n, i, v, ok, i)
			}
		}
		if v, ok := q.Pop(); ok {
			t.Fatalf("n=%d: Pop after draining returned %d", n, v)
		}
		if !q.Empty() {
			t.Fatalf("n=%d: not Empty after draining", n)
		}
	}
}

func TestQueueInterleaved(t *testing.T) {
	// Pushes and pops in uneven batches, crossing segment ends at every offset.
	var q Queue[int]
	next, want := 0, 0
	for round := range 200 {
		for range round%7 + 1 {
			q.Push(next)
			next++
		}
		for range round%5 + 1 {
			v, ok := q.Pop()
			if want == next {
				if ok {
					t.Fatalf("round %d: popped %d from a drained queue", round, v)
				}
				break
			}
			if !ok || v != want {
				t.Fatalf("round %d: Pop = %d, %v; want %d, true", round, v, ok, want)
			}
			want++
		}
		if q.Empty() != (want == next) {
			t.Fatalf("round %d: Empty = %v with %d pending", round, q.Empty(), next-want)
		}
	}
}

func TestQueueGrowth(t *testing.T) {
	var q Queue[int]
	for i := range 2000 {
		q.Push(i)
	}
	want := []int{4, 8, 16, 32, 64, 128, 256, 256, 256, 256, 256, 256, 256} // 252 + 7*256 >= 2000
	got := segments(&q)
	if len(got) != len(want) {
		t.Fatalf("segment capacities %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("segment capacities %v, want %v", got, want)
		}
	}
	for i := range 2000 {
		if v, ok := q.Pop(); !ok || v != i {
			t.Fatalf("Pop #%d = %d, %v", i, v, ok)
		}
	}
	if got := segments(&q); len(got) != 1 || got[0] != 256 {
		t.Fatalf("after draining the head should be the last segment alone, got %v", got)
	}
}

func TestQueueRewind(t *testing.T) {
	var q Queue[int]
	q.Push(0)
	first := q.head.Load()
	for i := range 10_000 {
		if i > 0 {
			q.Push(i)
		}
		if v, ok := q.Pop(); !ok || v != i {
			t.Fatalf("Pop #%d = %d, %v", i, v, ok)
		}
	}
	if q.head.Load() != first || q.tail.Load() != first {
		t.Fatal("a consumer that keeps up moved off its first segment")
	}
	if got := segments(&q); len(got) != 1 || got[0] != minSegment {
		t.Fatalf("segments %v, want one of %d", got, minSegment)
	}

	// Batches that fill the segment exactly still rewind at its end.
	for round := range 100 {
		for i := range minSegment {
			q.Push(round*minSegment + i)
		}
		for i := range minSegment {
			if v, ok := q.Pop(); !ok || v != round*minSegment+i {
				t.Fatalf("round %d: Pop = %d, %v", round, v, ok)
			}
		}
	}
	if q.head.Load() != first {
		t.Fatal("full batches moved the consumer off its segment")
	}
}

func TestQueueShrinkReleasesGrownSegment(t *testing.T) {
	var q Queue[int]
	for i := range 100 {
		q.Push(i)
	}
	q.Shrink() // elements pending: nothing happens
	for i := range 100 {
		if v, ok := q.Pop(); !ok || v != i {
			t.Fatalf("Pop #%d = %d, %v", i, v, ok)
		}
	}
	if got := segments(&q); len(got) != 1 || got[0] <= minSegment {
		t.Fatalf("before Shrink: segments %v, want one grown segment", got)
	}
	old := q.head.Load()
	q.Shrink()
	if q.head.Load() != nil || q.tail.Load() != nil {
		t.Fatal("Shrink of a drained grown segment left head or tail set")
	}
	if old.next.Load() != old {
		t.Fatal("released segment not marked released")
	}
	if !q.Empty() {
		t.Fatal("not Empty after Shrink")
	}
	q.Push(7)
	q.Push(8)
	if got := segments(&q); len(got) != 1 || got[0] != minSegment {
		t.Fatalf("after Shrink and Push: segments %v, want one of %d", got, minSegment)
	}
	for _, want := range []int{7, 8} {
		if v, ok := q.Pop(); !ok || v != want {
			t.Fatalf("Pop = %d, %v; want %d", v, ok, want)
		}
	}
}

func TestQueueShrinkRewindsMinimumSegment(t *testing.T) {
	var q Queue[*int]
	for i := range 3 {
		q.Push(&i)
	}
	for range 3 {
		if _, ok := q.Pop(); !ok {
			t.Fatal("Pop failed")
		}
	}
	h := q.head.Load()
	if h.slots[0].val == nil {
		t.Fatal("test assumption: taken values stay until a rewind")
	}
	q.Shrink()
	if q.head.Load() != h {
		t.Fatal("Shrink released a minimum-size segment")
	}
	if h.deq != 0 || h.enq.Load() != 0 {
		t.Fatalf("Shrink did not rewind: deq %d, enq %d", h.deq, h.enq.Load())
	}
	for i := range h.slots {
		if h.slots[i].val != nil || h.slots[i].ready.Load() != 0 {
			t.Fatalf("slot %d not cleared by the rewind", i)
		}
	}
}

func TestQueueShrinkWithPendingOrReservedElements(t *testing.T) {
	var q Queue[int]
	for i := range 20 {
		q.Push(i)
	}
	for range 19 {
		q.Pop()
	}
	before := segments(&q)
	q.Shrink()
	if after := segments(&q); len(after) != len(before) {
		t.Fatalf("Shrink with an element pending changed segments %v -> %v", before, after)
	}
	if v, ok := q.Pop(); !ok || v != 19 {
		t.Fatalf("Pop = %d, %v; want 19", v, ok)
	}

	// A reservation whose element is not written yet: enq is ahead of deq.
	h := q.head.Load()
	h.enq.Add(1)
	q.Shrink()
	if h.enq.Load() >= closed || q.head.Load() != h {
		t.Fatal("Shrink closed a segment with an outstanding reservation")
	}
	if !q.Empty() {
		t.Fatal("a reserved but unwritten slot must read as empty")
	}
	// Finish the simulated producer's write.
	i := h.enq.Load() - 1
	h.slots[i].val = 42
	h.slots[i].ready.Store(1)
	if v, ok := q.Pop(); !ok || v != 42 {
		t.Fatalf("Pop = %d, %v; want 42", v, ok)
	}
}

// TestQueueShrinkLosesLinkRace replays, step by step, the interleaving in which a
// producer links a successor to a segment that Shrink has just closed: Shrink must leave
// the list alone and Pop must step over the closed segment to the new element.
func TestQueueShrinkLosesLinkRace(t *testing.T) {
	var q Queue[int]
	for i := range 10 {
		q.Push(i)
	}
	for range 10 {
		q.Pop()
	}
	h := q.head.Load()
	if len(h.slots) <= minSegment {
		t.Fatalf("test assumption: head segment grown, has %d slots", len(h.slots))
	}
	// Shrink, first half: close the caught-up segment.
	if !h.close(h.deq) {
		t.Fatal("close failed")
	}
	// A producer arrives: its reservation fails, and it links a successor holding 99.
	q.Push(99)
	n := h.next.Load()
	if n == nil || n == h {
		t.Fatal("the producer did not link a successor to the closed segment")
	}
	// Shrink, second half: it loses the race for next and leaves the list alone.
	q.release(h)
	if h.next.Load() != n || q.head.Load() != h || q.tail.Load() != n {
		t.Fatal("release changed the list although a successor was linked")
	}
	if q.Empty() {
		t.Fatal("Empty missed the element in the successor")
	}
	if q.head.Load() != n {
		t.Fatal("Empty did not step over the closed segment")
	}
	if v, ok := q.Pop(); !ok || v != 99 {
		t.Fatalf("Pop = %d, %v; want 99", v, ok)
	}
}

// TestQueueStaleTailAfterShrink covers a tail that lags behind a released segment: the
// producer that linked the released segment has not yet moved the tail onto it.
func TestQueueStaleTailAfterShrink(t *testing.T) {
	var q Queue[int]
	for i := range 4 {
		q.Push(i)
	}
	first := q.tail.Load()
	q.Push(4) // links an 8-slot successor and moves the tail onto it
	second := first.next.Load()
	q.tail.Store(first) // as if that producer had not moved the tail yet
	for i := range 5 {
		if v, ok := q.Pop(); !ok || v != i {
			t.Fatalf("Pop #%d = %d, %v", i, v, ok)
		}
	}
	if q.head.Load() != second {
		t.Fatal("consumer is not on the successor")
	}
	q.Shrink() // releases second; the tail still points at first
	if second.next.Load() != second {
		t.Fatal("successor not released")
	}
	if q.head.Load() != nil || q.tail.Load() != first {
		t.Fatal("unexpected head or tail after Shrink with a lagging tail")
	}
	q.Push(5) // walks first -> second (released) -> nil -> fresh segment
	if v, ok := q.Pop(); !ok || v != 5 {
		t.Fatalf("Pop = %d, %v; want 5", v, ok)
	}
	if got := segments(&q); len(got) != 1 || got[0] != minSegment {
		t.Fatalf("segments %v, want one fresh minimum segment", got)
	}
}

func TestQueueOffer(t *testing.T) {
	var q Queue[string]
	var m Mailbox[string] = &q
	dropped, r := m.Offer("a")
	if r != Accepted || dropped != "" {
		t.Fatalf("Offer = %q, %v; want \"\", Accepted", dropped, r)
	}
	if v, ok := m.Pop(); !ok || v != "a" {
		t.Fatalf("Pop = %q, %v", v, ok)
	}
	if !m.Empty() {
		t.Fatal("not Empty")
	}
}

func TestQueuePushPopDoesNotAllocate(t *testing.T) {
	var q Queue[*int]
	x := new(int)
	q.Push(x) // the first segment is the one allocation
	q.Pop()
	if allocs := testing.AllocsPerRun(10_000, func() {
		q.Push(x)
		q.Pop()
	}); allocs != 0 {
		t.Errorf("Push+Pop allocates %v times per run, want 0", allocs)
	}
	if allocs := testing.AllocsPerRun(1_000, func() {
		q.Push(x)
		q.Push(x)
		q.Push(x)
		q.Pop()
		q.Pop()
		q.Pop()
		q.Shrink()
	}); allocs != 0 {
		t.Errorf("batched Push+Pop with Shrink allocates %v times per run, want 0", allocs)
	}
}

func TestQueueRewindKeepsGrownSegment(t *testing.T) {
	var q Queue[int]
	for i := range 3 * minSegment {
		q.Push(i)
	}
	q.Rewind() // elements pending: nothing happens
	for i := range 3 * minSegment {
		if v, ok := q.Pop(); !ok || v != i {
			t.Fatalf("Pop = %v, %v; want %d", v, ok, i)
		}
	}
	grown := q.Rewind()
	h := q.head.Load()
	if !grown || h == nil || h.deq != 0 || h.enq.Load() != 0 {
		t.Fatalf("Rewind after draining: grown %v, head %v", grown, h)
	}
	allocs := testing.AllocsPerRun(100, func() {
		for i := range len(h.slots) {
			q.Push(i)
		}
		for range len(h.slots) {
			q.Pop()
		}
		q.Rewind()
	})
	if allocs != 0 {
		t.Fatalf("a rewound grown segment is reused: got %v allocations per burst", allocs)
	}
	q.Shrink()
	if q.head.Load() != nil {
		t.Fatal("Shrink after Rewind did not release the grown segment")
	}
}

// A stream whose consumer stays a few elements behind its producer never rewinds, so
// the queue links a full-size segment every 256 elements; the slots of the spent ones
// are reused, and every element still comes out once and in order, with nothing of an
// earlier pass left in a reused slot.
func TestStreamReusesSpentSlots(t *testing.T) {
	var q Queue[*int]
	vals := make([]int, 4096)
	next := 0
	stream := func(n int) {
		for range n {
			i := next
			vals[i%len(vals)] = i
			q.Push(&vals[i%len(vals)])
			next++
			if next > 10 { // the consumer stays ten behind
				v, ok := q.Pop()
				if !ok || *v != next-11 {
					t.Fatalf("popped %v (%v), want %d", v, ok, next-11)
				}
			}
		}
	}
	stream(4 * maxSegment) // grown to full-size segments
	if raceEnabled {
		stream(16 * maxSegment)
		return // sync.Pool drops items at random under the race detector
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	stream(64 * maxSegment)
	runtime.ReadMemStats(&after)
	if perElem := float64(after.TotalAlloc-before.TotalAlloc) / (64 * maxSegment); perElem > 4 {
		t.Errorf("%.1f bytes allocated per element streamed, want at most 4 (the segments' slots reused)", perElem)
	}
}

func TestQueueLenCountsAcrossSegments(t *testing.T) {
	var q Queue[int]
	if q.Len() != 0 {
		t.Fatalf("zero queue Len %d", q.Len())
	}
	for i := range 1000 { // spans segments of 4, 8, ... 256
		q.Push(i)
	}
	if q.Len() != 1000 {
		t.Fatalf("Len %d, want 1000", q.Len())
	}
	for i := range 700 {
		if v, _ := q.Pop(); v != i {
			t.Fatalf("popped %d, want %d", v, i)
		}
	}
	if q.Len() != 300 {
		t.Fatalf("Len %d after 700 pops, want 300", q.Len())
	}
	for range 300 {
		q.Pop()
	}
	q.Shrink()
	if q.Len() != 0 {
		t.Fatalf("Len %d when drained, want 0", q.Len())
	}
	q.Push(1)
	if q.Len() != 1 {
		t.Fatalf("Len %d after a push on a shrunk queue, want 1", q.Len())
	}
}
