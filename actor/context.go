package actor

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// Context is the actor's view of the runtime while it handles a message. It is valid
// only inside Receive (and Behaviors) and only on the actor's goroutine: do not keep it
// or use it from other goroutines; keep Self() instead.
//
// Context is composed of small role interfaces, so that a helper function can ask for
// just the part it uses (a MessageContext to read the message, a SenderContext to
// reply, a TimerContext to schedule).
type Context interface {
	InfoContext
	MessageContext
	SenderContext
	SpawnerContext
	StopperContext
	WatcherContext
	TimerContext
	StashContext
	BehaviorContext
}

// InfoContext tells an actor who and where it is.
type InfoContext interface {
	// Self is this actor's Ref.
	Self() Ref
	// Parent is the parent's Ref (the guardian's for top-level actors).
	Parent() Ref
	// System is the actor system.
	System() *System
	// Logger returns the system logger with this actor's path as a field.
	Logger() *zap.Logger
}

// MessageContext gives the message being handled and who sent it.
type MessageContext interface {
	// Message is the message being handled.
	Message() any
	// Sender is the sender of the current message, or the zero Ref if none.
	Sender() Ref
	// TraceContext returns a context.Context carrying the trace of the current
	// message (see Config.TracerProvider and Props.Trace): pass it to Ask and to the
	// calls the actor makes so that they join the trace. It is
	// context.Background() when the message has no trace.
	TraceContext() context.Context
}

// SenderContext sends messages with this actor as the sender. Every send returns an
// error only when the message was not sent (see Ref.Send); it never blocks, unless a
// transport was configured for backpressure.
type SenderContext interface {
	// Send sends msg to to with this actor as the sender.
	Send(to Ref, msg any) error
	// Respond sends msg to the sender of the current message. Without a sender the
	// message goes to dead letters and Respond returns an error wrapping
	// ErrNoRecipient.
	Respond(msg any) error
	// Forward sends the current message to to, keeping the original sender.
	Forward(to Ref) error
}

// SpawnerContext starts and lists children.
type SpawnerContext interface {
	// Spawn starts a child. An empty name picks a unique anonymous one ("$" + id).
	// Names are unique among siblings; a duplicate is ErrNameTaken.
	Spawn(props *Props, name string) (Ref, error)
	// Children returns the Refs of the live children.
	Children() []Ref
	// Child returns the live child with the given name.
	Child(name string) (Ref, bool)
}

// StopperContext stops this actor or its children.
type StopperContext interface {
	// Stop stops this actor (ref == Self) or one of its children, asynchronously. Any
	// other Ref is ErrNotChild: send it PoisonPill, or use System.Stop.
	Stop(ref Ref) error
}

// WatcherContext watches other actors' termination.
type WatcherContext interface {
	// Watch asks to receive Terminated when ref stops; at once if it already has.
	Watch(ref Ref)
	// Unwatch cancels Watch; a Terminated already queued is then not delivered.
	Unwatch(ref Ref)
}

// TimerContext schedules messages to this actor: keyed timers and the receive
// timeout.
type TimerContext interface {
	// StartSingleTimer sends msg to this actor once after d. A timer with the same key
	// is replaced: the old one's message is never delivered, even if already queued.
	StartSingleTimer(key, msg any, d time.Duration)
	// StartPeriodicTimer sends msg every interval (fixed delay: each period starts when
	// the previous message is handled), until cancelled or the actor stops.
	StartPeriodicTimer(key, msg any, interval time.Duration)
	// CancelTimer cancels the timer with key; its message is never delivered afterwards.
	CancelTimer(key any)
	// IsTimerActive reports whether a timer with key is pending.
	IsTimerActive(key any) bool
	// CancelAllTimers cancels every timer of this actor.
	CancelAllTimers()
	// SetReceiveTimeout makes the actor receive ReceiveTimeout after d without an
	// influencing message (see NotInfluenceReceiveTimeout). d <= 0 cancels it.
	SetReceiveTimeout(d time.Duration)
	// CancelReceiveTimeout turns the receive timeout off.
	CancelReceiveTimeout()
}

// StashContext puts messages aside and brings them back.
type StashContext interface {
	// Stash puts the current message aside, up to the stash capacity (ErrStashFull).
	Stash() error
	// UnstashAll puts every stashed message back in front of the mailbox, in order.
	UnstashAll()
}

// BehaviorContext switches the function that handles messages.
type BehaviorContext interface {
	// Become replaces the current behavior with b.
	Become(b Behavior)
	// BecomeStacked pushes b on top of the current behavior.
	BecomeStacked(b Behavior)
	// Unbecome pops the top behavior; with none left the actor's Receive handles
	// messages again.
	Unbecome()
}

func (c *cell) Message() any               { return c.cur.msg }
func (c *cell) Sender() Ref                { return c.cur.sender }
func (c *cell) Self() Ref                  { return Ref{c} }
func (c *cell) System() *System            { return c.sys }
func (c *cell) Logger() *zap.Logger        { return c.logger() }
func (c *cell) Send(to Ref, msg any) error { return c.send(to, msg, Ref{c}) }

func (c *cell) Parent() Ref {
	if c.parent == nil {
		return Ref{}
	}
	return Ref{c.parent}
}

func (c *cell) Children() []Ref {
	kids := c.childCells()
	refs := make([]Ref, len(kids))
	for i, k := range kids {
		refs[i] = Ref{k}
	}
	return refs
}

func (c *cell) Child(name string) (Ref, bool) {
	x := c.x.Load()
	if x == nil {
		return Ref{}, false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	k := x.children.get(name)
	if k == nil {
		return Ref{}, false
	}
	return Ref{k}, true
}

func (c *cell) Respond(msg any) error {
	if c.cur.sender.p == nil {
		err := fmt.Errorf("%w: %T has no sender to respond to", ErrNoRecipient, c.cur.msg)
		c.sys.deadLetter(Ref{}, msg, Ref{c}, err)
		return err
	}
	return c.send(c.cur.sender, msg, Ref{c})
}

func (c *cell) Forward(to Ref) error {
	return c.send(to, c.cur.msg, c.cur.sender)
}

func (c *cell) Spawn(props *Props, name string) (Ref, error) {
	return c.spawnChild(props, name)
}

func (c *cell) Stop(ref Ref) error {
	k, ok := ref.p.(*cell)
	switch {
	case ok && k == c:
		c.beginStop()
		return nil
	case ok && k.parent == c:
		k.sendSystem(sysStop{})
		return nil
	}
	return fmt.Errorf("%w: %v is not %v or one of its children", ErrNotChild, ref, Ref{c})
}

func (c *cell) Become(b Behavior) {
	x := c.extras()
	if n := len(x.behaviors); n > 0 {
		x.behaviors[n-1] = b
		return
	}
	x.behaviors = append(x.behaviors, b)
}

func (c *cell) BecomeStacked(b Behavior) {
	x := c.extras()
	x.behaviors = append(x.behaviors, b)
}

func (c *cell) Unbecome() {
	x := c.x.Load()
	if x == nil || len(x.behaviors) == 0 {
		return
	}
	x.behaviors[len(x.behaviors)-1] = nil
	x.behaviors = x.behaviors[:len(x.behaviors)-1]
}

func (c *cell) Stash() error {
	if c.cur.msg == nil {
		return ErrNothingToStash
	}
	x := c.extras()
	if len(x.stash) >= c.stashCapacity() {
		return ErrStashFull
	}
	env := c.cur
	if x.trace.sc.IsValid() { // the context comes back with the message
		env.msg = &traced{msg: env.msg, sc: x.trace.sc}
	}
	x.stash = append(x.stash, env)
	return nil
}

func (c *cell) UnstashAll() { c.unstashAll() }

func (c *cell) unstashAll() {
	x := c.x.Load()
	if x == nil || len(x.stash) == 0 {
		return
	}
	x.unstashed = append(x.stash, x.unstashed...)
	x.stash = nil
}

func (c *cell) stashCapacity() int {
	if c.props.StashCapacity > 0 {
		return c.props.StashCapacity
	}
	return c.sys.cfg.StashCapacity
}
