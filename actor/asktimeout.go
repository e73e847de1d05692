package actor

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// askTick is the resolution of ask timeouts: a future fails between its timeout and its
// timeout plus one tick after it was created. Akka's scheduler uses the same resolution.
const askTick = 10 * time.Millisecond

// askTimeouts fails futures whose timeout has passed. One goroutine per system sweeps
// the pending futures every tick while there are any, and exits when there are none, so
// an idle system holds no goroutine for it and an Ask needs no timer of its own.
type askTimeouts struct {
	ticks atomic.Int64 // ticks since the first sweep: the clock deadlines count in

	mu      sync.Mutex
	pending []askDeadline
	running bool
	stopped bool
	done    chan struct{} // closed by stop: the sweeper exits at once
}

type askDeadline struct {
	f       *Future
	at      int64 // tick at which f fails
	timeout time.Duration
	target  Ref // what was asked of whom, for the error
	msg     any
}

// add schedules f, an ask of msg to target, to fail with ErrTimeout after timeout.
func (a *askTimeouts) add(f *Future, target Ref, msg any, timeout time.Duration) {
	n := int64((timeout + askTick - 1) / askTick)
	at := a.ticks.Load() + n + 1 // +1: the current tick is partly gone
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		f.complete(nil, fmt.Errorf("%w: system terminated", ErrTimeout))
		return
	}
	a.pending = append(a.pending, askDeadline{f: f, at: at, timeout: timeout, target: target, msg: msg})
	start := !a.running
	a.running = true
	a.mu.Unlock()
	if start {
		go a.loop()
	}
}

func (a *askTimeouts) loop() {
	t := time.NewTicker(askTick)
	defer t.Stop()
	var expired []askDeadline
	for {
		select {
		case <-a.done:
			return
		case <-t.C:
		}
		now := a.ticks.Add(1)
		a.mu.Lock()
		keep := a.pending[:0]
		for _, d := range a.pending {
			switch {
			case d.f.state.Load() != 0:
			case d.at <= now:
				expired = append(expired, d)
			default:
				keep = append(keep, d)
			}
		}
		clear(a.pending[len(keep):])
		a.pending = keep
		idle := len(keep) == 0
		if idle {
			a.running = false
		}
		a.mu.Unlock()
		for i, d := range expired {
			d.f.complete(nil, timeoutError(d.target, d.msg, d.timeout))
			expired[i] = askDeadline{}
		}
		expired = expired[:0]
		if idle {
			return
		}
	}
}

// stop fails every pending future at system termination.
func (a *askTimeouts) stop() {
	a.mu.Lock()
	if !a.stopped {
		close(a.done)
	}
	a.stopped = true
	pending := a.pending
	a.pending = nil
	a.mu.Unlock()
	for _, d := range pending {
		d.f.complete(nil, fmt.Errorf("%w: system terminated", ErrTimeout))
	}
}
