package actor

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Future is the pending result of an Ask. It completes once, with the first reply or an
// error; later replies go to dead letters.
//
// A Future is one allocation. Its Done channel is made only when someone needs to wait
// on it, so an Ask whose reply is there by the time its caller looks (the usual case
// when the recipient ran inline, see Ask) never makes one; its id, which names its
// temporary path, is drawn only when the path or the uid is asked for.
type Future struct {
	sys   *System
	id    atomic.Uint64 // 0 until drawn by uid
	state atomic.Uint32 // 0 pending, 1 completing, 2 completed
	named atomic.Bool   // the path was handed out: the future is in sys.temps
	// waiting is set before anything registers under mu (a Done channel, pipes,
	// watchers, a context watch), so that complete takes mu only when there is
	// something to hand over. Registration sets it, then checks state; complete stores
	// state, then checks it: whichever comes second sees the other.
	waiting atomic.Bool
	res     any
	err     error

	mu       sync.Mutex
	done     chan struct{} // made by Done while pending; closed by complete
	stop     func() bool   // unregisters the context watch, when there is one
	pipes    []Ref
	watchers []Ref
	span     trace.Span // an ask's client span, while tracing is on
}

// closedDone is the Done channel of every completed future that nobody waited on.
var closedDone = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func newFuture(sys *System) *Future {
	return &Future{sys: sys}
}

func failedFuture(err error) *Future {
	f := &Future{}
	f.complete(nil, err)
	return f
}

// uid returns the future's id, drawing it from the system on first use.
func (f *Future) uid() uint64 {
	if id := f.id.Load(); id != 0 || f.sys == nil {
		return id
	}
	f.id.CompareAndSwap(0, f.sys.nextID.Add(1))
	return f.id.Load()
}

// completed reports whether the future has settled; its res and err are then final.
func (f *Future) completed() bool { return f.state.Load() == 2 }

// complete settles the future once; it reports whether this call settled it.
func (f *Future) complete(res any, err error) bool {
	if !f.state.CompareAndSwap(0, 1) {
		return false
	}
	if fl, ok := res.(Failure); ok && err == nil {
		res, err = nil, fl.Err
	}
	f.res, f.err = res, err
	if f.span != nil {
		endSpan(f.span, err)
	}
	f.state.Store(2)
	if f.named.Load() {
		f.sys.temps.Delete(f.uid())
	}
	if !f.waiting.Load() {
		return true
	}
	f.mu.Lock()
	done, pipes, watchers, stop := f.done, f.pipes, f.watchers, f.stop
	f.done, f.pipes, f.watchers, f.stop = nil, nil, nil, nil
	f.mu.Unlock()
	if stop != nil {
		stop()
	}
	if done != nil {
		close(done)
	}
	for _, p := range pipes {
		f.pipe(p)
	}
	for _, w := range watchers {
		w.p.sendSystem(sysDeath{ref: Ref{f}})
	}
	return true
}

// register runs add under f.mu while the future is pending and reports true; once it
// has completed, it runs nothing and reports false.
func (f *Future) register(add func()) bool {
	if f.completed() {
		return false
	}
	f.waiting.Store(true)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.completed() {
		return false
	}
	add()
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
func (f *Future) Done() <-chan struct{} {
	var done chan struct{}
	if !f.register(func() {
		if f.done == nil {
			f.done = make(chan struct{})
		}
		done = f.done
	}) {
		return closedDone
	}
	return done
}

// Result waits for the future to complete and returns the reply or the error. A reply
// of type Failure is returned as its error. If ctx ends first, Result returns ctx's
// error and the future stays pending (its own deadline still applies).
func (f *Future) Result(ctx context.Context) (any, error) {
	if !f.completed() {
		select {
		case <-f.Done():
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return f.res, f.err
}

// timeoutError is the error of an ask whose deadline passed: it names the target and
// the message's type, and matches ErrTimeout and context.DeadlineExceeded.
func timeoutError(target Ref, msg any, after time.Duration) error {
	msg = userMessage(msg)
	if after > 0 {
		return fmt.Errorf("%w after %v: %T to %v: %w", ErrTimeout, after, msg, target, context.DeadlineExceeded)
	}
	return fmt.Errorf("%w: %T to %v: %w", ErrTimeout, msg, target, context.DeadlineExceeded)
}

// PipeTo sends the reply to ref when the future completes, or a Failure if it fails.
// Use it inside an actor to turn an Ask into a message instead of blocking.
func (f *Future) PipeTo(ref Ref) {
	if !f.register(func() { f.pipes = append(f.pipes, ref) }) {
		f.pipe(ref)
	}
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
	if !f.register(func() { f.watchers = append(f.watchers, w.watcher) }) {
		w.watcher.p.sendSystem(sysDeath{ref: Ref{f}})
	}
}

// path registers the future so that System.Resolve finds it until it completes: a
// transport asks for the path when the future is the sender of a remote message.
func (f *Future) path() string {
	id := f.uid()
	if f.sys != nil && f.state.Load() == 0 && !f.named.Load() && f.named.CompareAndSwap(false, true) {
		f.sys.temps.Store(id, f)
		if f.state.Load() != 0 { // completed meanwhile: complete may have missed the flag
			f.sys.temps.Delete(id)
		}
	}
	var buf [32]byte
	return string(strconv.AppendUint(append(buf[:0], "/temp/$"...), id, 36))
}

func (f *Future) system() *System { return f.sys }
func (f *Future) isDead() bool    { return f.state.Load() != 0 }
