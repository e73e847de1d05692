package actor

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// dispatcher runs scheduled cells on a small set of worker goroutines, instead of one
// new goroutine per schedule: starting a goroutine costs about a microsecond here, a
// hand-off through the run queue to a running worker a few atomic operations.
//
// GOMAXPROCS core workers take cells from the run queue, which is all the CPU there is.
// A core worker that finds the queue empty sleeps (see runQueue), and a submit wakes
// one only if one sleeps. An actor that blocks in Receive holds its worker, so while
// cells wait in the queue and no worker has taken one for a monitor interval, the
// monitor adds a worker: blocked actors slow the others down by at most that interval,
// and never starve them. Extra workers exit when the queue is empty. An idle system
// holds its sleeping core workers and no ticking timer.
type dispatcher struct {
	q       *runQueue
	monitor atomic.Bool

	mu     sync.Mutex // guards closed: close runs once
	closed bool
	done   chan struct{} // closed by close: the monitor exits
	cores  int
}

// runQueueSize is the capacity of the run queue's ring. A cell that finds it full (a
// burst of spawns does) waits in the overflow list instead, so submitting never blocks.
const runQueueSize = 1 << 14

// monitorInterval is how long queued cells may wait without progress before the
// monitor adds a worker.
const monitorInterval = time.Millisecond

func newDispatcher() *dispatcher {
	d := &dispatcher{
		q:     newRunQueue(runQueueSize),
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
	d.q.push(c)
	if d.q.isClosed() {
		// Closed meanwhile: make sure someone runs what is queued.
		go d.drainQueue()
		return
	}
	if !d.monitor.Load() && d.monitor.CompareAndSwap(false, true) {
		go d.watch()
	}
}

// queued returns how many cells wait to run.
func (d *dispatcher) queued() int { return d.q.len() }

// work is a worker. Core workers sleep while the queue is empty; extra workers exit.
func (d *dispatcher) work(extra bool) {
	var s *sleeper
	if !extra {
		s = newSleeper()
	}
	for {
		var c *cell
		if extra {
			if c = d.q.pop(); c == nil {
				return
			}
		} else if c = d.q.get(s); c == nil {
			d.drainQueue() // closed
			return
		}
		d.runSlice(c)
	}
}

// drainQueue runs whatever is left in the queue, after close.
func (d *dispatcher) drainQueue() {
	for c := d.q.pop(); c != nil; c = d.q.pop() {
		d.runAlone(c)
	}
}

// runSlice runs a cell for one throughput slice; a cell with work left goes to the back
// of the queue, so that busy actors take turns. When no other cell waits, the worker
// goes on with the same one: sending it through the queue would only hand it to the
// other worker, asleep, which costs a wake-up per slice and the sleep of this worker
// (a trace of the tell scenario showed one of each per 300 messages).
func (d *dispatcher) runSlice(c *cell) {
	for {
		if c.drain(c.throughput()) {
			if m := c.sys.metrics; m != nil {
				m.sampleDepth(c)
			}
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
	last := d.q.taken()
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
		now := d.q.taken()
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
		d.q.close()
		close(d.done)
	}
}
