package actor

import (
	"runtime"
	"sync"
	"time"
)

// dispatcher runs scheduled cells on a small set of worker goroutines, instead of one
// new goroutine per schedule: starting a goroutine costs about a microsecond here, a
// hand-off through the run queue about a third of that.
//
// Up to GOMAXPROCS core workers run at once, which is all the CPU there is. An actor
// that blocks in Receive holds its worker, so while cells wait in the queue and no
// worker has taken one for a monitor interval, the monitor adds a worker: blocked
// actors slow the others down by at most that interval, and never starve them. Workers
// above the core count exit when they find nothing to do, and idle core workers park;
// an idle system holds at most GOMAXPROCS parked goroutines and no ticking timer.
type dispatcher struct {
	mu       sync.Mutex
	cond     sync.Cond
	queue    []*cell // ring buffer
	head     int
	n        int
	workers  int
	idle     int    // parked workers
	spinning int    // workers yielding a little before they park
	taken    uint64 // cells taken from the queue, for the monitor
	monitor  bool
	closed   bool
	done     chan struct{} // closed by close: the monitor exits at once
	cores    int
}

// monitorInterval is how long queued cells may wait without progress before the
// monitor adds a worker.
const monitorInterval = time.Millisecond

func newDispatcher() *dispatcher {
	d := &dispatcher{queue: make([]*cell, 64), cores: runtime.GOMAXPROCS(0), done: make(chan struct{})}
	d.cond.L = &d.mu
	return d
}

// submit queues a cell its caller owns (sched is running) to be run by a worker.
func (d *dispatcher) submit(c *cell) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		go d.runAlone(c)
		return
	}
	d.push(c)
	switch {
	case d.spinning > 0:
		// A spinning worker looks at the queue again before it parks.
	case d.idle > 0:
		d.cond.Signal()
	case d.workers < d.cores:
		d.workers++
		go d.work()
	}
	// Every core worker may be blocked inside an actor: while cells are queued, the
	// monitor checks that they are being taken.
	if !d.monitor && d.workers >= d.cores {
		d.monitor = true
		go d.watch()
	}
	d.mu.Unlock()
}

func (d *dispatcher) push(c *cell) {
	if d.n == len(d.queue) {
		grown := make([]*cell, 2*len(d.queue))
		for i := range d.n {
			grown[i] = d.queue[(d.head+i)%len(d.queue)]
		}
		d.queue, d.head = grown, 0
	}
	d.queue[(d.head+d.n)%len(d.queue)] = c
	d.n++
}

func (d *dispatcher) pop() *cell {
	c := d.queue[d.head]
	d.queue[d.head] = nil
	d.head = (d.head + 1) % len(d.queue)
	d.n--
	d.taken++
	return c
}

// work is a worker: it runs queued cells until there are none, then yields a few times
// and parks (core workers), or exits (extra workers, and all workers once the
// dispatcher is closed). It takes one cell at a time: a cell held aside by a worker
// that then blocks inside an actor would be out of the monitor's sight.
func (d *dispatcher) work() {
	d.mu.Lock()
	for {
		for spins := 0; d.n == 0; spins++ {
			if d.closed || d.workers > d.cores {
				d.workers--
				d.mu.Unlock()
				return
			}
			if spins < workerSpins {
				d.spinning++
				d.mu.Unlock()
				runtime.Gosched()
				d.mu.Lock()
				d.spinning--
				continue
			}
			d.idle++
			d.cond.Wait()
			d.idle--
		}
		c := d.pop()
		d.mu.Unlock()
		d.runSlice(c)
		d.mu.Lock()
	}
}

// workerSpins is how many times a worker with nothing to do yields before it parks.
// Waking a parked worker costs a futex call, far more than the actor work a typical
// message needs, so a worker that will be needed again soon should not park at once.
const workerSpins = 20

// runSlice runs a cell for one throughput slice; a cell with work left goes to the back
// of the queue, so that busy actors take turns.
func (d *dispatcher) runSlice(c *cell) {
	for {
		if c.drain(c.throughput()) {
			d.submit(c)
			return
		}
		if c.release() {
			return
		}
	}
}

// runAlone runs a cell on its own goroutine, after the dispatcher has closed (late
// messages to stopped actors at shutdown).
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
	d.mu.Lock()
	last := d.taken
	d.mu.Unlock()
	for {
		select {
		case <-d.done:
			d.mu.Lock()
			d.monitor = false
			d.mu.Unlock()
			return
		case <-t.C:
		}
		d.mu.Lock()
		if d.n == 0 || d.closed {
			d.monitor = false
			d.mu.Unlock()
			return
		}
		if d.taken == last && d.idle == 0 {
			d.workers++
			go d.work()
		}
		last = d.taken
		d.mu.Unlock()
	}
}

// close lets workers exit once the queue is empty.
func (d *dispatcher) close() {
	d.mu.Lock()
	if !d.closed {
		d.closed = true
		close(d.done)
	}
	d.cond.Broadcast()
	d.mu.Unlock()
}
