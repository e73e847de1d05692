package actor

import (
	"sync"
	"time"
)

// janitor gives back the memory of actors that had a burst of messages and went quiet.
// A mailbox grows by segments under a backlog; releasing the grown segment every time
// the actor catches up would make a busy actor allocate it again and again, so the
// actor keeps it while it is busy, and the janitor releases it once the actor has been
// idle for a sweep interval. The janitor runs only while there are candidates.
//
// A cell stays a candidate (its stateJanitor flag set) from the drain that offers it
// until a sweep finds it idle and shrinks its mailbox: a sweep that finds it busy keeps
// it for the next one. So an owner offers a cell once per growth, not on every drain,
// and a cell that was busy at one sweep is not forgotten with a grown mailbox.
type janitor struct {
	mu      sync.Mutex
	cands   map[*cell]struct{}
	running bool
	closed  bool
	done    chan struct{}
}

// janitorInterval is how long a grown mailbox may stay grown after its actor went idle.
const janitorInterval = 200 * time.Millisecond

func newJanitor() *janitor { return &janitor{done: make(chan struct{})} }

// add makes c a candidate: its mailbox has grown. The caller has set c's stateJanitor.
func (j *janitor) add(d *dispatcher, c *cell) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return
	}
	if j.cands == nil {
		j.cands = make(map[*cell]struct{})
	}
	j.cands[c] = struct{}{}
	if !j.running {
		j.running = true
		go j.loop(d)
	}
}

// keep makes the busy cells of a sweep candidates for the next one.
func (j *janitor) keep(busy []*cell) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.cands == nil {
		j.cands = make(map[*cell]struct{}, len(busy))
	}
	for _, c := range busy {
		j.cands[c] = struct{}{}
	}
}

func (j *janitor) loop(d *dispatcher) {
	t := time.NewTicker(janitorInterval)
	defer t.Stop()
	for {
		select {
		case <-j.done:
			return
		case <-t.C:
		}
		j.mu.Lock()
		cands := j.cands
		j.cands = nil
		if len(cands) == 0 {
			j.running = false
			j.mu.Unlock()
			return
		}
		j.mu.Unlock()
		var busy []*cell
		for c := range cands {
			// Only an idle cell can be taken over; a busy one stays a candidate.
			if !c.sched.CompareAndSwap(schedIdle, schedRunning) {
				busy = append(busy, c)
				continue
			}
			c.userq.Shrink()
			// Cleared while the janitor owns the cell: the owner that next finds the
			// mailbox grown offers the cell again.
			c.state.And(^stateJanitor)
			if !c.release() {
				d.submit(c)
			}
		}
		if len(busy) > 0 {
			j.keep(busy)
		}
	}
}

func (j *janitor) close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.closed {
		j.closed = true
		close(j.done)
	}
}
