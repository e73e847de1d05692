package mailbox

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	stressProducers = 4
	stressPerProd   = 100_000
)

// sequenced encodes a producer id and its sequence number in one value.
func sequenced(producer, seq int) uint64 { return uint64(producer)<<32 | uint64(seq) }

// checker verifies that every value arrives exactly once and each producer's values
// arrive in the order they were pushed. It belongs to the consumer.
type checker struct {
	t    *testing.T
	next [stressProducers]int
	got  int
}

func (c *checker) see(v uint64) {
	p, seq := int(v>>32), int(uint32(v))
	if p >= stressProducers {
		c.t.Fatalf("value %#x from unknown producer %d", v, p)
	}
	if seq != c.next[p] {
		c.t.Fatalf("producer %d: got seq %d, want %d (lost, duplicated or reordered)", p, seq, c.next[p])
	}
	c.next[p]++
	c.got++
}

// produce starts the producers; each pushes stressPerProd sequenced values, yielding
// after every burst values when burst > 0 so that the consumer catches up often.
func produce(q *Queue[uint64], wg *sync.WaitGroup, burst int) {
	for p := range stressProducers {
		wg.Go(func() {
			for i := range stressPerProd {
				q.Push(sequenced(p, i))
				if burst > 0 && i%burst == burst-1 {
					runtime.Gosched()
				}
			}
		})
	}
}

// stallLimit is how long the stress consumer may go without receiving anything before
// the test fails instead of hanging: a value stranded in the queue looks like a stall.
const stallLimit = 10 * time.Second

// stress runs the producers against one consumer; onEmpty is called each time the
// consumer finds the queue empty.
func stress(t *testing.T, burst int, onEmpty func(q *Queue[uint64])) {
	var q Queue[uint64]
	var wg sync.WaitGroup
	produce(&q, &wg, burst)
	c := checker{t: t}
	lastGot, lastProgress, misses := 0, time.Now(), 0
	for c.got < stressProducers*stressPerProd {
		v, ok := q.Pop()
		if !ok {
			onEmpty(&q)
			if misses++; misses%1024 == 0 {
				if c.got != lastGot {
					lastGot, lastProgress = c.got, time.Now()
				} else if time.Since(lastProgress) > stallLimit {
					wg.Wait()
					t.Fatalf("stalled with %d of %d values received", c.got, stressProducers*stressPerProd)
				}
			}
			continue
		}
		c.see(v)
	}
	wg.Wait()
	if v, ok := q.Pop(); ok {
		t.Fatalf("extra value %#x after all were received", v)
	}
}

func TestQueueStressMPSC(t *testing.T) {
	stress(t, 0, func(*Queue[uint64]) { runtime.Gosched() })
}

// shrinkCounting calls Shrink and counts the calls that released a segment.
func shrinkCounting(q *Queue[uint64], released *int) {
	h := q.head.Load()
	q.Shrink()
	if h != nil && h.next.Load() == h {
		*released++
	}
}

func TestQueueStressShrinkWhenEmpty(t *testing.T) {
	released := 0
	stress(t, 50, func(q *Queue[uint64]) {
		if q.Empty() {
			shrinkCounting(q, &released)
		}
		runtime.Gosched()
	})
	t.Logf("%d segments released", released)
}

func TestQueueStressShrinkEveryTime(t *testing.T) {
	// Shrink is documented as safe whenever the consumer calls it, not only when
	// empty; call it without checking Empty first, to widen the races with producers.
	released := 0
	stress(t, 20, func(q *Queue[uint64]) {
		shrinkCounting(q, &released)
		runtime.Gosched()
	})
	t.Logf("%d segments released", released)
}

// Values of the scheduling flag in TestQueueStressWakeups, as in the actor runtime.
const (
	idle     int32 = iota // no consumer goroutine
	running               // a consumer goroutine owns the queue
	notified              // as running, and a value was pushed since it last looked
)

// TestQueueStressWakeups runs the queue the way the actor runtime does: a consumer
// goroutine exists only while the flag is not idle, and a producer starts one after its
// Push if none runs, or marks the running one notified. The consumer drains, shrinks,
// and goes idle only if nobody notified it meanwhile. A value that Pop failed to see
// after its producer's Push and notification returned would be left behind.
//
// The consumer never inspects the queue after giving up ownership: clearing the flag
// and then checking Empty would let that check run alongside the next consumer.
func TestQueueStressWakeups(t *testing.T) {
	var (
		q         Queue[uint64]
		sched     atomic.Int32
		consumers sync.WaitGroup
		producers sync.WaitGroup
		c         = checker{t: t}
		runs      atomic.Int64
	)
	run := func() {
		runs.Add(1)
		for {
			for !q.Empty() {
				v, ok := q.Pop()
				if !ok {
					t.Error("Pop found nothing after Empty reported false")
					return
				}
				c.see(v)
			}
			q.Shrink()
			if sched.CompareAndSwap(running, idle) {
				return
			}
			sched.Store(running) // notified: look again
		}
	}
	wake := func() {
		for {
			switch sched.Load() {
			case idle:
				if sched.CompareAndSwap(idle, running) {
					consumers.Go(run)
					return
				}
			case running:
				if sched.CompareAndSwap(running, notified) {
					return
				}
			default:
				return
			}
		}
	}
	const perProd = stressPerProd / 4
	for p := range stressProducers {
		producers.Go(func() {
			for i := range perProd {
				q.Push(sequenced(p, i))
				wake()
				if i%64 == 0 {
					runtime.Gosched() // let the consumer go idle now and then
				}
			}
		})
	}
	producers.Wait()
	consumers.Wait()
	if c.got != stressProducers*perProd {
		t.Fatalf("consumer saw %d of %d values: a wake-up was lost", c.got, stressProducers*perProd)
	}
	if runs.Load() < 2 {
		t.Logf("the consumer never went idle (%d runs); the test was weak this time", runs.Load())
	}
}
