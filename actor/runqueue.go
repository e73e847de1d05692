package actor

import (
	"sync"
	"sync/atomic"
)

// runQueue holds the cells waiting for a worker, in submission order. Any goroutine may
// push; workers pop. A buffered channel would take its lock on every send and receive
// (a worker's select on it and on a done channel, two locks); this queue has instead:
//
//   - a ring of slots, each with a sequence number that says whose turn the slot is: a
//     producer claims the tail position with one CAS and publishes the cell by storing
//     the slot's sequence; a consumer claims the head position with one CAS. No lock on
//     either path;
//   - an overflow list behind a mutex for the cells that find the ring full (a burst of
//     spawns), so that push never blocks and never drops a cell;
//   - a stack of sleeping workers, and its length in an atomic that push reads: a push
//     wakes a worker only if one sleeps and no worker woken earlier is still on its
//     way, and otherwise costs two loads.
//
// Order: cells leave in the order they were pushed, except that two pushes racing for
// the tail or for the ring's last free slot are ordered by who wins, as with a channel.
// While any cell waits in the overflow list, pushes go behind it.
//
// Sleeping, and why no wake-up is lost. Only core workers sleep, in get (extra workers
// and drains after close only pop), and only after finding the queue empty, in three
// steps: the worker puts itself on the sleepers' stack (sleeping is then at least 1),
// looks at the queue once more, and only if that finds it empty parks on its own wake
// channel. A push publishes its cell, then reads sleeping. Go's atomics are
// sequentially consistent, so of the worker's store and look and the push's publish
// and read, either the look sees the cell (the worker takes it and does not park) or
// the read sees the sleeper (the push wakes one). A pop that finds the head slot
// claimed but not yet published reports the queue empty; the producer of that slot
// has not yet read sleeping, and will. The same holds for cells that go through the
// overflow list: spill adds to the list, moves what fits to the ring, then reads
// sleeping; a worker moves waiting cells itself (pop) whenever it finds the ring empty,
// so it never parks while cells wait, and in batches once the ring is half free.
//
// A wake-up takes one sleeper off the stack and, under the same lock, puts a token in
// its wake channel, whose capacity is one. A worker is on the stack at most once, and
// its channel holds a token only between a waker taking it off and the worker
// receiving: so the send never blocks. A worker that finds a cell on its second look
// takes itself off the stack, or, if a waker was first, receives the token the waker
// left. Every wake-up is thus received by the worker it was meant for, and a worker
// that returns from parking is off the stack.
//
// One wake-up at a time. A push does not wake a worker while another woken one has not
// yet run (waking > 0): that one will take the cell, and it wakes the next sleeper
// itself if it finds more cells waiting when it takes its first. Without this, a
// goroutine that hands cells to a hundred idle actors in a row woke a worker for each,
// and while both processors were busy, each woken worker waited its turn, pushed back
// by the next one woken: a sharding region delivering a batch from another node ran
// at a third of its usual rate in about half the runs. Go's scheduler wakes its own
// threads the same way (one spinning thread at a time). No wake-up is lost: a push
// that sees waking > 0 published its cell first, and the woken worker decreases
// waking before it looks at the queue, so it finds that cell (or a later push sees
// waking at zero and wakes a worker).
//
// A worker does not spin before it sleeps: yielding and looking again (4, 16 or 64
// times) or polling the ring (64 or 512 times) made no benchmark measurably faster,
// and 64 yields made ping-pong between two actors a third slower. An idle system's
// workers all sleep: no timer, no CPU.
type runQueue struct {
	tail atomic.Uint64 // next position to push; written by producers
	_    [56]byte
	head atomic.Uint64 // next position to pop; written by workers
	_    [56]byte

	// Read by every push, written seldom.
	slots    []slot // len is a power of two; slot i holds positions i, i+len, ...
	mask     uint64
	sleeping atomic.Int32 // len(sleepers)
	waking   atomic.Int32 // workers woken that have not yet looked at the queue
	overN    atomic.Int64 // cells in the overflow list
	closed   atomic.Bool
	_        [64]byte

	// Cells pushed while the ring is full wait here, oldest first, and move to the
	// ring as workers make room. overN drops only as they move, so a worker that
	// pops while any wait sees overN > 0 and moves them.
	overMu   sync.Mutex
	overflow []*cell // waiting cells from index overHead on
	overHead int

	sleepMu  sync.Mutex
	sleepers []*sleeper // newest last: the worker woken first has the warmest cache
}

// slot is one place in the ring. seq says what the slot is ready for: a push at
// position p when seq == p, a pop at position p when seq == p+1 (the cell is
// published). A pop at p sets seq to p+len, ready for the push one lap later.
type slot struct {
	seq atomic.Uint64
	c   *cell // written before seq is stored, read after it is loaded
}

// sleeper is where one worker parks.
type sleeper struct{ wake chan struct{} }

func newSleeper() *sleeper { return &sleeper{wake: make(chan struct{}, 1)} }

// newRunQueue returns a queue whose ring holds size cells, rounded up to a power of two.
func newRunQueue(size int) *runQueue {
	n := 1
	for n < size {
		n <<= 1
	}
	q := &runQueue{slots: make([]slot, n), mask: uint64(n - 1)}
	for i := range q.slots {
		q.slots[i].seq.Store(uint64(i))
	}
	return q
}

// push queues c. It never blocks: a cell that finds the ring full waits in the
// overflow list. It wakes a sleeping worker if there is one.
func (q *runQueue) push(c *cell) {
	if q.overN.Load() > 0 || !q.tryPush(c) {
		q.spill(c) // behind the cells already waiting, or the ring is full
	}
	if q.sleeping.Load() > 0 && q.waking.Load() == 0 {
		q.wakeOne()
	}
}

// pop takes the oldest cell, or returns nil if there is none (or its producer has not
// finished publishing it). While cells wait in the overflow list, a worker that finds
// the ring empty or at least half free moves them to the ring: in batches of half a
// ring or more, not one per pop, which under a burst of spawns kept the workers and the
// spawning goroutine taking turns at the list's lock for every cell.
func (q *runQueue) pop() *cell {
	c := q.tryPop()
	if q.overN.Load() > 0 && (c == nil || q.halfFree()) && q.refill() {
		if c == nil {
			c = q.tryPop()
		}
		if q.sleeping.Load() > 0 {
			q.wakeOne() // the cells it moved can keep another worker busy
		}
	}
	return c
}

// get takes the oldest cell, sleeping while the queue is empty. It returns nil once
// the queue is closed and was found empty; the caller must then drain the queue
// (cells pushed after close are drained by their pusher, see dispatcher.submit).
// s is the calling worker's own sleeper.
func (q *runQueue) get(s *sleeper) *cell {
	woken := false
	for {
		if c := q.pop(); c != nil {
			if woken && q.sleeping.Load() > 0 && q.len() > 0 {
				q.wakeOne() // more cells wait: the next worker, one at a time
			}
			return c
		}
		q.addSleeper(s)
		// Closed is read before the last look, as the drain that follows must come
		// after it: a push that read closed as false published before close.
		if q.closed.Load() {
			q.removeSleeper(s)
			return nil
		}
		if c := q.pop(); c != nil {
			q.removeSleeper(s)
			return c
		}
		<-s.wake
		q.waking.Add(-1) // before the next look (see "One wake-up at a time")
		woken = true
	}
}

// halfFree reports whether at least half the ring's slots are free.
func (q *runQueue) halfFree() bool {
	h := q.head.Load() // before tail: tail >= h then
	return q.tail.Load()-h <= uint64(len(q.slots)/2)
}

// len returns how many cells wait: exact when no push or pop runs meanwhile.
func (q *runQueue) len() int {
	h := q.head.Load() // before tail: tail >= h then
	return int(q.tail.Load()-h) + int(q.overN.Load())
}

// taken returns how many cells have been popped so far.
func (q *runQueue) taken() uint64 { return q.head.Load() }

// close makes get return nil instead of sleeping, and wakes every sleeper.
func (q *runQueue) close() {
	q.closed.Store(true)
	q.sleepMu.Lock()
	defer q.sleepMu.Unlock()
	for _, s := range q.sleepers {
		q.waking.Add(1)
		s.wake <- struct{}{}
	}
	q.sleepers = nil
	q.sleeping.Store(0)
}

// isClosed reports whether close has been called.
func (q *runQueue) isClosed() bool { return q.closed.Load() }

// tryPush puts c in the ring at the tail, or reports false if the ring is full.
func (q *runQueue) tryPush(c *cell) bool {
	pos := q.tail.Load()
	for {
		s := &q.slots[pos&q.mask]
		seq := s.seq.Load()
		switch {
		case seq == pos:
			if q.tail.CompareAndSwap(pos, pos+1) {
				s.c = c
				s.seq.Store(pos + 1) // publish
				return true
			}
		case seq < pos:
			return false // the slot still holds the cell of the previous lap
		}
		pos = q.tail.Load() // another producer took pos
	}
}

// tryPop takes the cell at the head of the ring, or returns nil if the head slot holds
// no published cell.
func (q *runQueue) tryPop() *cell {
	pos := q.head.Load()
	for {
		s := &q.slots[pos&q.mask]
		seq := s.seq.Load()
		switch {
		case seq == pos+1:
			if q.head.CompareAndSwap(pos, pos+1) {
				c := s.c
				s.c = nil
				s.seq.Store(pos + q.mask + 1) // free for the next lap
				return c
			}
		case seq < pos+1:
			return nil // empty, or its producer has not published yet
		}
		pos = q.head.Load() // another worker took pos
	}
}

// spill puts c in the overflow list and moves what fits to the ring, under one lock.
func (q *runQueue) spill(c *cell) {
	q.overMu.Lock()
	q.overflow = append(q.overflow, c)
	q.overN.Add(1)
	q.move()
	q.overMu.Unlock()
}

// refill moves waiting cells from the overflow list to the ring while it has room,
// and reports whether it moved any.
func (q *runQueue) refill() bool {
	q.overMu.Lock()
	defer q.overMu.Unlock()
	return q.move()
}

// move is refill; the caller holds overMu.
func (q *runQueue) move() bool {
	moved := 0
	for _, c := range q.overflow[q.overHead:] {
		if !q.tryPush(c) {
			break
		}
		q.overflow[q.overHead+moved] = nil
		moved++
	}
	if moved == 0 {
		return false
	}
	q.overHead += moved
	switch left := len(q.overflow) - q.overHead; {
	case left == 0:
		q.overflow, q.overHead = q.overflow[:0], 0
		if cap(q.overflow) > len(q.slots) {
			q.overflow = nil // a burst is over: let its list go
		}
	case q.overHead >= left:
		// Compact once the taken part is as long as the rest: each cell is copied
		// O(1) times on average, where copying the rest on every move would make a
		// burst of a million cells take quadratic time.
		n := copy(q.overflow, q.overflow[q.overHead:])
		clear(q.overflow[n:])
		q.overflow, q.overHead = q.overflow[:n], 0
	}
	q.overN.Add(-int64(moved))
	return true
}

// addSleeper puts s on the sleepers' stack.
func (q *runQueue) addSleeper(s *sleeper) {
	q.sleepMu.Lock()
	q.sleepers = append(q.sleepers, s)
	q.sleeping.Store(int32(len(q.sleepers)))
	q.sleepMu.Unlock()
}

// removeSleeper takes s off the sleepers' stack, or, if a waker took it off already,
// takes the token the waker left.
func (q *runQueue) removeSleeper(s *sleeper) {
	q.sleepMu.Lock()
	for i := len(q.sleepers) - 1; i >= 0; i-- {
		if q.sleepers[i] == s {
			last := len(q.sleepers) - 1
			copy(q.sleepers[i:], q.sleepers[i+1:])
			q.sleepers[last] = nil
			q.sleepers = q.sleepers[:last]
			q.sleeping.Store(int32(last))
			q.sleepMu.Unlock()
			return
		}
	}
	q.sleepMu.Unlock()
	<-s.wake // sent under sleepMu when s was taken off: it is there
	q.waking.Add(-1)
}

// wakeOne wakes the sleeper that went to sleep last, if any.
func (q *runQueue) wakeOne() {
	q.sleepMu.Lock()
	defer q.sleepMu.Unlock()
	n := len(q.sleepers)
	if n == 0 {
		return
	}
	s := q.sleepers[n-1]
	q.sleepers[n-1] = nil
	q.sleepers = q.sleepers[:n-1]
	q.sleeping.Store(int32(n - 1))
	q.waking.Add(1)
	s.wake <- struct{}{}
}
