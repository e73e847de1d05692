package actor

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// dispatcher runs scheduled cells on a small set of worker goroutines, instead of one
// new goroutine per schedule: starting a goroutine costs about a microsecond here, a
// hand-off through a channel to a waiting worker about a third of that.
//
// GOMAXPROCS core workers take cells from the run queue, which is all the CPU there is.
// An actor that blocks in Receive holds its worker, so while cells wait in the queue
// and no worker has taken one for a monitor interval, the monitor adds a worker:
// blocked actors slow the others down by at most that interval, and never starve them.
// Extra workers exit when the queue is empty. An idle system holds its parked core
// workers and no ticking timer.
type dispatcher struct {
	runq    chan *cell
	taken   atomic.Uint64 // cells taken from runq, for the monitor
	monitor atomic.Bool

	// Cells submitted while runq is full wait in overflow, oldest first, and move to
	// runq as workers make room. overN counts them and drops only as they move, so a
	// worker that takes a cell while any wait sees overN > 0 and moves them.
	overMu   sync.Mutex
	overflow []*cell // waiting cells from index overHead on
	overHead int
	overN    atomic.Int64

	mu     sync.Mutex // guards closed against submit
	closed bool
	done   chan struct{} // closed by close: workers and monitor exit
	cores  int
}

// runQueueSize is the capacity of the run queue. A cell that finds it full (a burst of
// spawns does) waits in the overflow list instead, so submitting never blocks.
const runQueueSize = 1 << 14

// monitorInterval is how long queued cells may wait without progress before the
// monitor adds a worker.
const monitorInterval = time.Millisecond

func newDispatcher() *dispatcher {
	d := &dispatcher{
		runq:  make(chan *cell, runQueueSize),
		done:  make(chan struct{}),
		cores: runtime.GOMAXPROCS(0),
	}
	for range d.cores {
		go d.work(false)
	}
	return d
}

// submit queues a cell its caller owns (sched is running) to be run by a worker.
func (d *dispatcher) submit(c *cell) {
	if d.overN.Load() > 0 {
		d.spill(c) // after the cells already waiting, to keep the order
	} else {
		select {
		case d.runq <- c:
		default:
			d.spill(c) // queue full: never block a sender
		}
	}
	select {
	case <-d.done:
		// Closed meanwhile: make sure someone runs what is queued.
		go d.drainQueue()
		return
	default:
	}
	if !d.monitor.Load() && d.monitor.CompareAndSwap(false, true) {
		go d.watch()
	}
}

// spill puts c in the overflow list and moves what fits to runq.
func (d *dispatcher) spill(c *cell) {
	d.overMu.Lock()
	d.overflow = append(d.overflow, c)
	d.overN.Add(1)
	d.overMu.Unlock()
	d.refill()
}

// refill moves waiting cells from the overflow list to runq while it has room, and
// reports whether it moved any.
func (d *dispatcher) refill() bool {
	d.overMu.Lock()
	defer d.overMu.Unlock()
	moved := 0
loop:
	for _, c := range d.overflow[d.overHead:] {
		select {
		case d.runq <- c:
			d.overflow[d.overHead+moved] = nil
			moved++
		default:
			break loop
		}
	}
	if moved == 0 {
		return false
	}
	d.overHead += moved
	switch left := len(d.overflow) - d.overHead; {
	case left == 0:
		d.overflow, d.overHead = d.overflow[:0], 0
		if cap(d.overflow) > runQueueSize {
			d.overflow = nil // a burst is over: let its list go
		}
	case d.overHead >= left:
		// Compact once the taken part is as long as the rest: each cell is copied
		// O(1) times on average, where copying the rest on every move would make a
		// burst of a million cells take quadratic time.
		n := copy(d.overflow, d.overflow[d.overHead:])
		clear(d.overflow[n:])
		d.overflow, d.overHead = d.overflow[:n], 0
	}
	d.overN.Add(-int64(moved))
	return true
}

// queued returns how many cells wait to run.
func (d *dispatcher) queued() int { return len(d.runq) + int(d.overN.Load()) }

// work is a worker. Core workers park on the queue; extra workers exit once it is empty.
func (d *dispatcher) work(extra bool) {
	for {
		var c *cell
		if extra {
			select {
			case c = <-d.runq:
			default:
				return
			}
		} else {
			select {
			case c = <-d.runq:
			case <-d.done:
				d.drainQueue()
				return
			}
		}
		d.taken.Add(1)
		if d.overN.Load() > 0 {
			d.refill()
		}
		d.runSlice(c)
	}
}

// drainQueue runs whatever is left in the queue, after close.
func (d *dispatcher) drainQueue() {
	for {
		select {
		case c := <-d.runq:
			d.runAlone(c)
		default:
			if !d.refill() {
				return
			}
		}
	}
}

// runSlice runs a cell for one throughput slice; a cell with work left goes to the back
// of the queue, so that busy actors take turns. When no other cell waits, the worker
// goes on with the same one: sending it through the queue would only hand it to the
// other worker, parked on the queue, which costs a wake-up per slice and the parking
// of this worker (a trace of the tell scenario showed one of each per 300 messages).
func (d *dispatcher) runSlice(c *cell) {
	for {
		if c.drain(c.throughput()) {
			if d.queued() == 0 {
				continue
			}
			d.submit(c)
			return
		}
		if c.release() {
			return
		}
	}
}

// runAlone runs a cell on the current goroutine until it is idle.
func (d *dispatcher) runAlone(c *cell) {
	for {
		if c.drain(c.throughput()) {
			runtime.Gosched()
			continue
		}
		if c.release() {
			return
		}
	}
}

// watch adds a worker whenever cells have waited a whole interval with none taken, and
// exits once the queue is empty.
func (d *dispatcher) watch() {
	t := time.NewTicker(monitorInterval)
	defer t.Stop()
	last := d.taken.Load()
	for {
		select {
		case <-d.done:
			d.monitor.Store(false)
			return
		case <-t.C:
		}
		if d.queued() == 0 {
			d.monitor.Store(false)
			// A submit that saw the flag set just before we cleared it relies on us.
			if d.queued() == 0 || !d.monitor.CompareAndSwap(false, true) {
				return
			}
		}
		now := d.taken.Load()
		if now == last && d.queued() > 0 {
			go d.work(true)
		}
		last = now
	}
}

// close makes the workers run what is queued and exit.
func (d *dispatcher) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.closed {
		d.closed = true
		close(d.done)
	}
}
