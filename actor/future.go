package actor

import (
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

func (f *Future) startTimer(timeout time.Duration) {
	if timeout <= 0 {
		f.complete(nil, fmt.Errorf("%w: timeout %v", ErrAskTimeout, timeout))
		return
	}
	f.sys.asks.add(f, timeout)
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
	pipes, watchers := f.pipes, f.watchers
	f.pipes, f.watchers = nil, nil
	f.mu.Unlock()
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
// of type Failure is returned as its error.
func (f *Future) Result() (any, error) {
	<-f.done
	return f.res, f.err
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

// Ask sends msg to ref and waits up to timeout for a reply of type T. A Failure reply is
// returned as its error; a reply of another type yields ErrUnexpectedReply. It fails at
// once with ErrDeadLetter if the request cannot be delivered. Timeouts have a resolution
// of 10ms.
func Ask[T any](ref Ref, msg any, timeout time.Duration) (T, error) {
	var zero T
	if ref.p == nil {
		return zero, ErrNoRecipient
	}
	res, err := ref.ask(msg, timeout).Result()
	if err != nil {
		return zero, err
	}
	v, ok := res.(T)
	if !ok {
		return zero, fmt.Errorf("%w: got %T, want %T", ErrUnexpectedReply, res, zero)
	}
	return v, nil
}

// The future is the process behind its temporary reply Ref.

func (f *Future) sendUser(msg any, sender Ref) error {
	if !f.complete(msg, nil) && f.sys != nil {
		f.sys.deadLetter(Ref{f}, msg, sender)
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
