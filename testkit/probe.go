package testkit

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
)

// Received is one message a Probe got, with its sender.
type Received struct {
	Msg    any
	Sender actor.Ref
}

// Probe is an actor that records what it receives, for tests to assert on. Every Expect
// waits up to a timeout (DefaultTimeout when none is given, dilated by
// TROUPE_TEST_TIME_FACTOR) and fails the test with what arrived instead.
type Probe struct {
	t   testing.TB
	sys *actor.System
	ref actor.Ref

	mu     sync.Mutex
	queue  []Received
	signal chan struct{}
	last   Received

	deadline time.Time // set inside Within
}

type probeWatch struct {
	ref   actor.Ref
	watch bool
	done  chan struct{}
}

// NewProbe spawns a probe in sys. It stops with the system.
func NewProbe(t testing.TB, sys *actor.System) *Probe {
	t.Helper()
	p := &Probe{t: t, sys: sys, signal: make(chan struct{}, 1)}
	ref, err := sys.Spawn(actor.PropsFunc(p.receive), "")
	if err != nil {
		t.Fatalf("testkit: spawn probe: %v", err)
	}
	p.ref = ref
	return p
}

func (p *Probe) receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case actor.Started, actor.Stopping, actor.Stopped:
		return
	case probeWatch:
		if m.watch {
			ctx.Watch(m.ref)
		} else {
			ctx.Unwatch(m.ref)
		}
		close(m.done)
		return
	}
	p.mu.Lock()
	p.queue = append(p.queue, Received{Msg: ctx.Message(), Sender: ctx.Sender()})
	p.mu.Unlock()
	select {
	case p.signal <- struct{}{}:
	default:
	}
}

// Ref is the probe's Ref: send to it, or use it as a sender.
func (p *Probe) Ref() actor.Ref { return p.ref }

// Send sends msg to to with the probe as the sender, failing the test on error.
func (p *Probe) Send(to actor.Ref, msg any) {
	p.t.Helper()
	if err := to.Send(msg, p.ref); err != nil {
		p.t.Fatalf("testkit: send %T to %v: %v", msg, to, err)
	}
}

// Watch makes the probe watch ref; ExpectTerminated then waits for its end.
func (p *Probe) Watch(ref actor.Ref) { p.watchCmd(ref, true) }

// Unwatch undoes Watch.
func (p *Probe) Unwatch(ref actor.Ref) { p.watchCmd(ref, false) }

func (p *Probe) watchCmd(ref actor.Ref, watch bool) {
	p.t.Helper()
	done := make(chan struct{})
	if err := p.ref.Tell(probeWatch{ref: ref, watch: watch, done: done}); err != nil {
		p.t.Fatalf("testkit: watch: %v", err)
	}
	select {
	case <-done:
	case <-time.After(Dilated(DefaultTimeout)):
		p.t.Fatalf("testkit: probe did not process watch of %v", ref)
	}
}

// LastSender is the sender of the last message taken by an Expect.
func (p *Probe) LastSender() actor.Ref { return p.last.Sender }

// Reply sends msg to the sender of the last message taken.
func (p *Probe) Reply(msg any) {
	p.t.Helper()
	if p.last.Sender.IsZero() {
		p.t.Fatalf("testkit: Reply(%T): the last message had no sender", msg)
	}
	p.Send(p.last.Sender, msg)
}

// Forward sends the last message taken to to, keeping its original sender.
func (p *Probe) Forward(to actor.Ref) {
	p.t.Helper()
	if err := to.Send(p.last.Msg, p.last.Sender); err != nil {
		p.t.Fatalf("testkit: forward: %v", err)
	}
}

// next waits up to d for the next message.
func (p *Probe) next(d time.Duration) (Received, bool) {
	deadline := time.Now().Add(d)
	if !p.deadline.IsZero() && p.deadline.Before(deadline) {
		deadline = p.deadline
	}
	for {
		p.mu.Lock()
		if len(p.queue) > 0 {
			r := p.queue[0]
			p.queue[0] = Received{}
			p.queue = p.queue[1:]
			p.mu.Unlock()
			p.last = r
			return r, true
		}
		p.mu.Unlock()
		wait := time.Until(deadline)
		if wait <= 0 {
			return Received{}, false
		}
		t := time.NewTimer(wait)
		select {
		case <-p.signal:
		case <-t.C:
		}
		t.Stop()
	}
}

// Drain removes and returns every message received so far, without waiting.
func (p *Probe) Drain() []any {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]any, len(p.queue))
	for i, r := range p.queue {
		out[i] = r.Msg
	}
	p.queue = nil
	return out
}

// pending describes queued messages, for failure reports.
func (p *Probe) pending() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) == 0 {
		return "nothing else queued"
	}
	parts := make([]string, 0, len(p.queue))
	for _, r := range p.queue {
		parts = append(parts, fmt.Sprintf("%T %+v", r.Msg, r.Msg))
	}
	return "also queued: " + strings.Join(parts, ", ")
}

// ExpectMsg waits for the next message and fails unless it equals want
// (reflect.DeepEqual). It returns the message.
func (p *Probe) ExpectMsg(want any, timeout ...time.Duration) any {
	p.t.Helper()
	d := timeoutOf(timeout)
	r, ok := p.next(d)
	if !ok {
		p.t.Fatalf("testkit: expected %T %+v within %v, got nothing", want, want, d)
	}
	if !reflect.DeepEqual(r.Msg, want) {
		p.t.Fatalf("testkit: expected %T %+v, got %T %+v (%s)", want, want, r.Msg, r.Msg, p.pending())
	}
	return r.Msg
}

// ExpectMsgType waits for the next message and fails unless it is a T; it returns it.
func ExpectMsgType[T any](p *Probe, timeout ...time.Duration) T {
	p.t.Helper()
	d := timeoutOf(timeout)
	r, ok := p.next(d)
	var zero T
	if !ok {
		p.t.Fatalf("testkit: expected a %T within %v, got nothing", zero, d)
		return zero
	}
	v, ok := r.Msg.(T)
	if !ok {
		p.t.Fatalf("testkit: expected a %T, got %T %+v (%s)", zero, r.Msg, r.Msg, p.pending())
	}
	return v
}

// ExpectNoMsgMatching fails if a message for which match returns true arrives within
// d; other messages are consumed and ignored. Use it to assert that something does not
// happen amid unrelated traffic.
func (p *Probe) ExpectNoMsgMatching(d time.Duration, match func(msg any) bool) {
	p.t.Helper()
	deadline := time.Now().Add(Dilated(d))
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		r, ok := p.next(left)
		if !ok {
			return
		}
		if match(r.Msg) {
			p.t.Fatalf("testkit: expected no matching message for %v, got %T %+v", d, r.Msg, r.Msg)
		}
	}
}

// ExpectNoMsg fails if a message arrives within d.
func (p *Probe) ExpectNoMsg(d time.Duration) {
	p.t.Helper()
	if r, ok := p.next(Dilated(d)); ok {
		p.t.Fatalf("testkit: expected no message for %v, got %T %+v", d, r.Msg, r.Msg)
	}
}

// ExpectTerminated waits for Terminated of ref (which the probe must Watch) and fails
// on any other message.
func (p *Probe) ExpectTerminated(ref actor.Ref, timeout ...time.Duration) actor.Terminated {
	p.t.Helper()
	term := ExpectMsgType[actor.Terminated](p, timeout...)
	if term.Ref != ref {
		p.t.Fatalf("testkit: expected Terminated of %v, got Terminated of %v", ref, term.Ref)
	}
	return term
}

// FishForMessage takes messages until match returns true and returns that message;
// the skipped ones are listed if none matches in time.
func (p *Probe) FishForMessage(match func(msg any) bool, timeout ...time.Duration) any {
	p.t.Helper()
	d := timeoutOf(timeout)
	deadline := time.Now().Add(d)
	var skipped []string
	for {
		r, ok := p.next(time.Until(deadline))
		if !ok {
			p.t.Fatalf("testkit: no matching message within %v; skipped: [%s]", d, strings.Join(skipped, ", "))
			return nil
		}
		if match(r.Msg) {
			return r.Msg
		}
		skipped = append(skipped, fmt.Sprintf("%T %+v", r.Msg, r.Msg))
	}
}

// ReceiveN waits for n messages and returns them in arrival order.
func (p *Probe) ReceiveN(n int, timeout ...time.Duration) []any {
	p.t.Helper()
	d := timeoutOf(timeout)
	deadline := time.Now().Add(d)
	out := make([]any, 0, n)
	for len(out) < n {
		r, ok := p.next(time.Until(deadline))
		if !ok {
			p.t.Fatalf("testkit: received %d of %d messages within %v: %+v", len(out), n, d, out)
		}
		out = append(out, r.Msg)
	}
	return out
}

// Within runs f, which must finish within d; Expects inside f wait no longer than the
// remainder of d.
func (p *Probe) Within(d time.Duration, f func()) {
	p.t.Helper()
	d = Dilated(d)
	start := time.Now()
	prev := p.deadline
	p.deadline = start.Add(d)
	defer func() { p.deadline = prev }()
	f()
	if took := time.Since(start); took > d {
		p.t.Fatalf("testkit: block took %v, more than %v", took, d)
	}
}
