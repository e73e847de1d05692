package actor

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Future is the pending result of an Ask. It completes once, with the first reply or an
// error; later replies go to dead letters.
type Future struct {
	sys   *System
	id    uint64
	done  chan struct{}
	state atomic.Uint32 // 0 pending, 1 completing, 2 completed
	named atomic.Bool   // the path was handed out: the future is in sys.temps
	res   any
	err   error

	stop func() bool // unregisters the context watch, when there is one

	mu       sync.Mutex
	pipes    []Ref
	watchers []Ref
}

func newFuture(sys *System) *Future {
	return &Future{sys: sys, id: sys.nextID.Add(1), done: make(chan struct{})}
}

func failedFuture(err error) *Future {
	f := &Future{done: make(chan struct{})}
	f.complete(nil, err)
	return f
}

// complete settles the future once; it reports whether this call settled it.
func (f *Future) complete(res any, err error) bool {
	if !f.state.CompareAndSwap(0, 1) {
		return false
	}
	if fl, ok := res.(Failure); ok && err == nil {
		res, err = nil, fl.Err
	}
	f.res, f.err = res, err
	f.mu.Lock()
	f.state.Store(2)
	pipes, watchers, stop := f.pipes, f.watchers, f.stop
	f.pipes, f.watchers, f.stop = nil, nil, nil
	f.mu.Unlock()
	if stop != nil {
		stop()
	}
	close(f.done)
	if f.named.Load() {
		f.sys.temps.Delete(f.id)
	}
	for _, p := range pipes {
		f.pipe(p)
	}
	for _, w := range watchers {
		w.p.sendSystem(sysDeath{ref: Ref{f}})
	}
	return true
}

func (f *Future) pipe(to Ref) {
	if f.err != nil {
		_ = to.Tell(Failure{Err: f.err})
		return
	}
	_ = to.Tell(f.res)
}

// Done is closed when the future has completed.
func (f *Future) Done() <-chan struct{} { return f.done }

// Result waits for the future to complete and returns the reply or the error. A reply
// of type Failure is returned as its error. If ctx ends first, Result returns ctx's
// error and the future stays pending (its own deadline still applies).
func (f *Future) Result(ctx context.Context) (any, error) {
	if done := ctx.Done(); done != nil {
		select {
		case <-f.done:
		case <-done:
			return nil, ctx.Err()
		}
	}
	<-f.done
	return f.res, f.err
}

// timeoutError is the error of an ask whose deadline passed: it names the target and
// the message's type, and matches ErrTimeout and context.DeadlineExceeded.
func timeoutError(target Ref, msg any, after time.Duration) error {
	if after > 0 {
		return fmt.Errorf("%w after %v: %T to %v: %w", ErrTimeout, after, msg, target, context.DeadlineExceeded)
	}
	return fmt.Errorf("%w: %T to %v: %w", ErrTimeout, msg, target, context.DeadlineExceeded)
}

// PipeTo sends the reply to ref when the future completes, or a Failure if it fails.
// Use it inside an actor to turn an Ask into a message instead of blocking.
func (f *Future) PipeTo(ref Ref) {
	f.mu.Lock()
	if f.state.Load() != 2 {
		f.pipes = append(f.pipes, ref)
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	f.pipe(ref)
}

// The future is the process behind its temporary reply Ref.

func (f *Future) sendUser(msg any, sender Ref) error {
	if !f.complete(msg, nil) && f.sys != nil {
		f.sys.deadLetter(Ref{f}, msg, sender, ErrLateReply)
	}
	return nil
}

func (f *Future) sendSystem(m sysMsg) {
	w, ok := m.(sysWatch)
	if !ok {
		return
	}
	f.mu.Lock()
	if f.state.Load() != 2 {
		f.watchers = append(f.watchers, w.watcher)
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	w.watcher.p.sendSystem(sysDeath{ref: Ref{f}})
}

// path registers the future so that System.Resolve finds it until it completes: a
// transport asks for the path when the future is the sender of a remote message.
func (f *Future) path() string {
	if f.sys != nil && f.state.Load() == 0 && !f.named.Load() && f.named.CompareAndSwap(false, true) {
		f.sys.temps.Store(f.id, f)
		if f.state.Load() != 0 { // completed meanwhile: complete may have missed the flag
			f.sys.temps.Delete(f.id)
		}
	}
	var buf [32]byte
	return string(strconv.AppendUint(append(buf[:0], "/temp/$"...), f.id, 36))
}

func (f *Future) system() *System { return f.sys }
func (f *Future) isDead() bool    { return f.state.Load() != 0 }
