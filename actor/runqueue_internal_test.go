package actor

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// testCells returns n cells whose ids are 0 .. n-1.
func testCells(n int) []*cell {
	cs := make([]*cell, n)
	for i := range cs {
		cs[i] = &cell{id: uint64(i)}
	}
	return cs
}

// lostWakeUpDeadline bounds the wait for a pushed cell in the tests below: a queue that
// loses a wake-up leaves the cell unrun forever, which the test reports instead of
// hanging until the test binary's timeout.
const lostWakeUpDeadline = 10 * time.Second

// Cells leave in the order they were pushed, through the ring and, once it is full,
// through the overflow list; len counts both.
func TestRunQueueOrderAcrossTheOverflow(t *testing.T) {
	q := newRunQueue(4)
	cs := testCells(50)
	for i, c := range cs[:30] {
		q.push(c)
		if got := q.len(); got != i+1 {
			t.Fatalf("len after %d pushes = %d", i+1, got)
		}
	}
	if q.overN.Load() == 0 {
		t.Fatal("30 cells in a ring of 4 and none in the overflow list")
	}
	// Pops and pushes interleaved: the new cells go behind the waiting ones.
	next := 0
	for _, c := range cs[30:] {
		if got := q.pop(); got != cs[next] {
			t.Fatalf("pop %d: got cell %v, want %d", next, idOf(got), next)
		}
		next++
		q.push(c)
	}
	for ; next < len(cs); next++ {
		if got := q.pop(); got != cs[next] {
			t.Fatalf("pop %d: got cell %v, want %d", next, idOf(got), next)
		}
	}
	if c := q.pop(); c != nil || q.len() != 0 {
		t.Fatalf("empty queue: pop = %v, len = %d", idOf(c), q.len())
	}
	if q.overflow != nil {
		t.Errorf("the overflow list of a finished burst is kept (cap %d)", cap(q.overflow))
	}
}

// A push while cells wait in the overflow list goes behind them, even when a worker
// has just made room in the ring and not yet moved them.
func TestRunQueuePushGoesBehindTheOverflow(t *testing.T) {
	q := newRunQueue(2)
	cs := testCells(5)
	for _, c := range cs[:4] {
		q.push(c) // 0 and 1 in the ring, 2 and 3 in the overflow list
	}
	if c := q.tryPop(); c != cs[0] { // room in the ring; nothing moved yet
		t.Fatalf("tryPop = %v, want 0", idOf(c))
	}
	q.push(cs[4])
	for i, want := range cs[1:] {
		if c := q.pop(); c != want {
			t.Fatalf("pop %d = %v, want %d", i+1, idOf(c), want.id)
		}
	}
}

func idOf(c *cell) any {
	if c == nil {
		return nil
	}
	return c.id
}

// Concurrent producers lose no cell and duplicate none, and each producer's cells leave
// in the order it pushed them, through a ring small enough to overflow often.
func TestRunQueueConcurrentProducers(t *testing.T) {
	const producers, per = 8, 5000
	q := newRunQueue(16)
	cs := testCells(producers * per) // producer p pushes cs[p*per : (p+1)*per]
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for _, c := range cs[p*per : (p+1)*per] {
				q.push(c)
			}
		})
	}
	got := make(chan []*cell, 1)
	go func() { // one worker, so that the order it sees is the queue's
		s := newSleeper()
		var seen []*cell
		for c := q.get(s); c != nil; c = q.get(s) {
			seen = append(seen, c)
			if len(seen) == len(cs) {
				break
			}
		}
		got <- seen
	}()
	wg.Wait()
	var seen []*cell
	select {
	case seen = <-got:
	case <-time.After(lostWakeUpDeadline):
		q.close() // the worker then takes what is left and returns
		t.Fatalf("the worker had not got all %d cells by the deadline: a wake-up was lost", len(cs))
	}
	q.close()
	last := make([]int, producers)
	for i := range last {
		last[i] = -1
	}
	count := make([]int, len(cs))
	for _, c := range seen {
		id := int(c.id)
		count[id]++
		p, i := id/per, id%per
		if i <= last[p] {
			t.Fatalf("producer %d: cell %d left after cell %d", p, i, last[p])
		}
		last[p] = i
	}
	for id, n := range count {
		if n != 1 {
			t.Fatalf("cell %d left the queue %d times", id, n)
		}
	}
}

// Workers that found the queue empty sleep, and a push wakes one of them; close wakes
// them all to return nil.
func TestRunQueueWakesASleepingWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers = 2
		q := newRunQueue(4)
		got := make(chan *cell)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				s := newSleeper()
				for c := q.get(s); c != nil; c = q.get(s) {
					got <- c
				}
			})
		}
		for _, c := range testCells(3) {
			synctest.Wait() // every worker is durably blocked: asleep on its channel
			if n := q.sleeping.Load(); n != workers {
				t.Fatalf("%d workers wait on an empty queue, and %d sleep", workers, n)
			}
			q.push(c)
			if c2 := <-got; c2 != c {
				t.Fatalf("got cell %v, want %d", idOf(c2), c.id)
			}
		}
		synctest.Wait()
		q.close()
		wg.Wait() // every worker's get returned nil
		if n := q.sleeping.Load(); n != 0 {
			t.Errorf("%d sleepers after close", n)
		}
	})
}

// No wake-up is lost: one producer pushes a cell and waits until a worker has taken it,
// again and again, so that nearly every push races with workers going to sleep. A push
// that found no sleeper while a worker went to sleep without seeing its cell would
// leave the cell unrun for good: with one producer, no later push rescues it. The
// producer watches an atomic counter rather than a channel so that it pushes the
// moment a worker has taken the cell, while that worker goes back to the queue and,
// finding it empty, to sleep.
func TestRunQueueNoLostWakeUp(t *testing.T) {
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			pingPong(t, newRunQueue(8), workers, 50_000)
		})
	}
}

func pingPong(t *testing.T, q *runQueue, workers, rounds int) {
	var taken atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			s := newSleeper()
			for c := q.get(s); c != nil; c = q.get(s) {
				taken.Add(1)
			}
		})
	}
	defer func() {
		q.close()
		wg.Wait()
	}()
	c := &cell{}
	for i := range int64(rounds) {
		deadline := time.Now().Add(lostWakeUpDeadline)
		q.push(c)
		for n := 0; taken.Load() == i; n++ {
			if n%1024 == 1023 {
				if time.Now().After(deadline) {
					t.Fatalf("round %d: the cell was not taken, %d cells queued, %d workers asleep: a wake-up was lost",
						i, q.len(), q.sleeping.Load())
				}
				runtime.Gosched()
			}
		}
	}
}

// A stress test: many producers, core workers that sleep and extra ones that exit on
// an empty queue, as the dispatcher's monitor adds them; every cell is run exactly once.
func TestRunQueueStress(t *testing.T) {
	const producers, per, workers = 32, 3000, 3
	q := newRunQueue(64)
	cs := testCells(producers * per)
	runs := make([]atomic.Int32, len(cs))
	var ran atomic.Int64
	all := make(chan struct{})
	run := func(c *cell) {
		runs[c.id].Add(1)
		if ran.Add(1) == int64(len(cs)) {
			close(all)
		}
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			s := newSleeper()
			for c := q.get(s); c != nil; c = q.get(s) {
				run(c)
			}
		})
	}
	var extras sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i, c := range cs[p*per : (p+1)*per] {
				q.push(c)
				if i%500 == 0 {
					extras.Go(func() { // an extra worker, gone once the queue is empty
						for c := q.pop(); c != nil; c = q.pop() {
							run(c)
						}
					})
				}
			}
		})
	}
	select {
	case <-all:
	case <-time.After(lostWakeUpDeadline):
		t.Errorf("%d of %d cells ran, %d queued, %d workers asleep: a wake-up was lost",
			ran.Load(), len(cs), q.len(), q.sleeping.Load())
	}
	q.close()
	wg.Wait()
	extras.Wait()
	for id := range runs {
		if n := runs[id].Load(); n != 1 {
			t.Fatalf("cell %d ran %d times", id, n)
		}
	}
	if n := q.len(); n != 0 {
		t.Errorf("%d cells left in the queue", n)
	}
}

// Workers move waiting cells from the overflow list to the ring in batches: not while
// the ring is more than half full, then as many as fit. Order is kept throughout.
func TestRunQueueRefillsInBatches(t *testing.T) {
	q := newRunQueue(8)
	cs := testCells(14)
	for _, c := range cs {
		q.push(c) // 0 .. 7 in the ring, 8 .. 13 in the overflow list
	}
	waiting := []int64{6, 6, 6, 2, 2, 2, 2, 0} // in the list after each of the first pops
	for i, want := range waiting {
		if c := q.pop(); c != cs[i] {
			t.Fatalf("pop %d = %v, want %d", i, idOf(c), i)
		}
		if got := q.overN.Load(); got != want {
			t.Fatalf("after pop %d: %d cells wait in the list, want %d", i, got, want)
		}
	}
	for i := len(waiting); i < len(cs); i++ {
		if c := q.pop(); c != cs[i] {
			t.Fatalf("pop %d = %v, want %d", i, idOf(c), i)
		}
	}
	if c := q.pop(); c != nil || q.len() != 0 {
		t.Fatalf("empty queue: pop = %v, len = %d", idOf(c), q.len())
	}
}

// Cells pushed while a woken worker has not yet run wake no other: the first push
// wakes one worker, and that worker, finding more cells when it takes its first, wakes
// the next. Every cell is still taken, and by more than one worker.
func TestRunQueueWakesOneWorkerAtATime(t *testing.T) {
	// The pushes below must not run alongside the worker the first one wakes: with
	// two processors, the idle one took that worker at once and it woke the next
	// before the check (2 of 4 runs of the package under -race failed so). With
	// one, a worker readied by a push waits until this goroutine blocks.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	synctest.Test(t, func(t *testing.T) {
		const workers, cells = 3, 6
		q := newRunQueue(16)
		hold := make(chan struct{}) // a worker holds its cell until released
		got := make(chan *cell, cells)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				s := newSleeper()
				for c := q.get(s); c != nil; c = q.get(s) {
					got <- c
					<-hold
				}
			})
		}
		synctest.Wait() // all asleep
		cs := testCells(cells)
		for _, c := range cs {
			q.push(c) // no worker runs meanwhile: this goroutine does not yield
		}
		if s, w := q.sleeping.Load(), q.waking.Load(); s != workers-1 || w != 1 {
			t.Fatalf("after %d pushes: %d asleep, %d waking; want %d and 1", cells, s, w, workers-1)
		}
		synctest.Wait() // the woken worker took a cell and woke the next, which did too
		if s, w := q.sleeping.Load(), q.waking.Load(); s != 0 || w != 0 {
			t.Fatalf("after the first take: %d asleep, %d waking; want 0 and 0", s, w)
		}
		for range cells {
			hold <- struct{}{}
		}
		seen := map[*cell]bool{}
		for range cells {
			seen[<-got] = true
		}
		if len(seen) != cells {
			t.Fatalf("%d distinct cells taken, want %d", len(seen), cells)
		}
		synctest.Wait()
		q.close()
		wg.Wait()
	})
}
