package actor

import (
	"context"
	"fmt"
)

// Ask sends msg to r with a temporary reply address and returns a Future completed by
// the first reply. The future fails with ErrTimeout at ctx's deadline (after the
// system's Config.AskTimeout when ctx has none), with ctx's error when ctx is
// cancelled, and at once with ErrDeadLetter when the request cannot be delivered.
// Deadlines have a resolution of 10ms. Ask never blocks; inside an actor, use
// Future.PipeTo to receive the reply as a message.
func (r Ref) Ask(ctx context.Context, msg any) *Future {
	if r.p == nil {
		return failedFuture(ErrNoRecipient)
	}
	f := newFuture(r.p.system())
	var err error
	if sc := f.startAsk(ctx, r, msg); sc.IsValid() && msg != nil {
		err = r.sendTraced(msg, Ref{f}, sc)
	} else {
		err = r.Send(msg, Ref{f})
	}
	if err != nil {
		f.complete(nil, err)
		return f
	}
	f.watchContext(ctx, r, msg)
	return f
}

// Ask sends msg to ref and waits for a reply of type T, until ctx ends (or, when ctx
// has no deadline, for the system's Config.AskTimeout). A Failure reply is returned as
// its error; a reply of another type yields ErrUnexpectedReply. It fails at once with
// ErrDeadLetter if the request cannot be delivered, and with an error matching
// ErrTimeout (and context.DeadlineExceeded) that names ref and msg's type when the
// deadline passes.
func Ask[T any](ctx context.Context, ref Ref, msg any) (T, error) {
	var zero T
	if ref.p == nil {
		return zero, ErrNoRecipient
	}
	res, err := ref.ask(ctx, msg).await(ctx, ref, msg)
	if err != nil {
		return zero, err
	}
	v, ok := res.(T)
	if !ok {
		return zero, fmt.Errorf("%w: got %T, want %T", ErrUnexpectedReply, res, zero)
	}
	return v, nil
}

// await waits for f's outcome. When ctx ends first it fails f as Ask does, with an
// error naming target and msg (unless the reply came at the same time). A future
// without its own deadline or context watch is waited for this way: ask adds a
// deadline only when ctx has none.
func (f *Future) await(ctx context.Context, target Ref, msg any) (any, error) {
	if !f.completed() {
		if done := ctx.Done(); done != nil {
			select {
			case <-f.Done():
			case <-done:
				f.complete(nil, contextError(ctx, target, msg))
			}
		}
		<-f.Done()
	}
	return f.res, f.err
}

// ask is Ask for a caller that waits for the reply right away (the generic Ask): when
// the recipient is a local idle actor, the caller runs it instead of handing it to a
// worker, since it would only wait. A caller with a cancellable ctx watches it itself,
// so the future needs a deadline only when ctx has none.
func (r Ref) ask(ctx context.Context, msg any) *Future {
	c, f, owned := r.queueAsk(ctx, msg)
	if f == nil {
		return r.Ask(ctx, msg)
	}
	if owned {
		c.runAsked()
	}
	if ctx.Done() == nil && f.state.Load() == 0 {
		f.sys.asks.add(f, r, msg, f.sys.cfg.AskTimeout)
	}
	return f
}

// askDeferred sends msg to r with a new future as its sender, as ask does, but leaves
// running an idle local recipient to the caller: when run is not nil the caller owns
// the recipient's cell and must call run, once, soon (it runs the recipient on the
// caller's goroutine, as ask does). With watch the future fails by itself when ctx
// ends; without, the caller waits with await (as Ask does, which spares the context
// watch). Sharding sends under a
// lock that orders the message before an entity's stop message, and runs the entity
// after releasing it.
func (r Ref) askDeferred(ctx context.Context, msg any, watch bool) (*Future, func()) {
	c, f, owned := r.queueAsk(ctx, msg)
	if f == nil {
		return r.Ask(ctx, msg), nil
	}
	if watch || ctx.Done() == nil {
		f.watchContext(ctx, r, msg)
	}
	if !owned {
		return f, nil
	}
	return f, c.runAsked
}

// queueAsk queues msg for a local actor with the default mailbox (no stateBox) that is
// starting or running, with a new future as its sender, and takes its cell when it was
// idle (owned: the caller must run it, runAsked). A nil future means the recipient is
// not such an actor: the caller sends through Ask.
func (r Ref) queueAsk(ctx context.Context, msg any) (c *cell, f *Future, owned bool) {
	c, local := r.p.(*cell)
	if !local || msg == nil {
		return nil, nil, false
	}
	// Other state flags than stateBox do not matter.
	if st := c.state.Load(); st&stateBox != 0 || st&stateMask != stateRunning && st&stateMask != stateNew {
		return nil, nil, false
	}
	f = newFuture(c.sys)
	if sc := f.startAsk(ctx, r, msg); sc.IsValid() {
		msg = &traced{msg: msg, sc: sc}
	}
	c.userq.Push(envelope{msg: msg, sender: Ref{f}})
	return c, f, c.acquire()
}

// runAsked runs a cell taken by queueAsk on the asking goroutine, within
// maxInlineAsks, or hands it to the dispatcher.
func (c *cell) runAsked() {
	if c.sys.inlining.Add(1) <= maxInlineAsks {
		c.runInline()
	} else {
		c.sys.disp.submit(c)
	}
	c.sys.inlining.Add(-1)
}

// maxInlineAsks bounds the blocking asks that run their recipient on the asking
// goroutine at one time. An actor that asks from its Receive, whose recipient asks the
// next, and so on, would otherwise nest one stack frame per actor on one goroutine
// until the stack overflowed; past the bound, recipients run on the dispatcher's
// workers (which the monitor adds as asks block them) and a chain too long for its
// deadline fails with ErrTimeout instead.
const maxInlineAsks = 64

// watchContext makes the future fail when ctx ends, or after the system's AskTimeout
// when ctx cannot end.
func (f *Future) watchContext(ctx context.Context, target Ref, msg any) {
	if f.state.Load() != 0 {
		return
	}
	if ctx.Done() == nil {
		f.sys.asks.add(f, target, msg, f.sys.cfg.AskTimeout)
		return
	}
	// complete takes f.stop under f.mu once it has settled.
	f.register(func() {
		f.stop = context.AfterFunc(ctx, func() { f.complete(nil, contextError(ctx, target, msg)) })
	})
}

// contextError is the error of an ask whose context ended.
func contextError(ctx context.Context, target Ref, msg any) error {
	if ctx.Err() == context.DeadlineExceeded {
		return timeoutError(target, msg, 0)
	}
	return fmt.Errorf("actor: ask %T to %v: %w", msg, target, context.Cause(ctx))
}
