package actor

import (
	"time"

	"go.uber.org/zap"
)

// Context is the actor's view of the runtime while it handles a message. It is valid
// only inside Receive (and Behaviors) and only on the actor's goroutine: do not keep it
// or use it from other goroutines; keep Self() instead.
type Context interface {
	// Message is the message being handled.
	Message() any
	// Sender is the sender of the current message, or the zero Ref if none.
	Sender() Ref
	// Self is this actor's Ref.
	Self() Ref
	// Parent is the parent's Ref (the guardian's for top-level actors).
	Parent() Ref
	// Children returns the Refs of the live children.
	Children() []Ref
	// Child returns the live child with the given name.
	Child(name string) (Ref, bool)
	// System is the actor system.
	System() *System
	// Logger returns the system logger with this actor's path as a field.
	Logger() *zap.Logger

	// Send sends msg to to with this actor as the sender.
	Send(to Ref, msg any) error
	// Respond sends msg to the current sender; without a sender it goes to dead letters.
	Respond(msg any)
	// Forward sends the current message to to, keeping the original sender.
	Forward(to Ref) error

	// Spawn starts a child. An empty name picks a unique anonymous one ("$" + id).
	// Names are unique among siblings; a duplicate is ErrNameTaken.
	Spawn(props *Props, name string) (Ref, error)
	// Stop stops this actor (ref == Self) or one of its children, asynchronously.
	// Other refs are ignored: ask them to stop with a message, or send PoisonPill.
	Stop(ref Ref)

	// Watch asks to receive Terminated when ref stops; at once if it already has.
	Watch(ref Ref)
	// Unwatch cancels Watch; a Terminated already queued is then not delivered.
	Unwatch(ref Ref)

	// SetReceiveTimeout makes the actor receive ReceiveTimeout after d without an
	// influencing message (see NotInfluenceReceiveTimeout). d <= 0 cancels it.
	SetReceiveTimeout(d time.Duration)
	// CancelReceiveTimeout turns the receive timeout off.
	CancelReceiveTimeout()

	// Stash puts the current message aside, up to the stash capacity (ErrStashFull).
	Stash() error
	// UnstashAll puts every stashed message back in front of the mailbox, in order.
	UnstashAll()

	// Become replaces the current behavior with b.
	Become(b Behavior)
	// BecomeStacked pushes b on top of the current behavior.
	BecomeStacked(b Behavior)
	// Unbecome pops the top behavior; with none left the actor's Receive handles
	// messages again.
	Unbecome()

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
}

func (c *cell) Message() any               { return c.cur.msg }
func (c *cell) Sender() Ref                { return c.cur.sender }
func (c *cell) Self() Ref                  { return Ref{c} }
func (c *cell) System() *System            { return c.sys }
func (c *cell) Logger() *zap.Logger        { return c.logger() }
func (c *cell) Send(to Ref, msg any) error { return to.Send(msg, Ref{c}) }

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
	k, ok := x.children[name]
	if !ok {
		return Ref{}, false
	}
	return Ref{k}, true
}

func (c *cell) Respond(msg any) {
	if c.cur.sender.p == nil {
		c.sys.deadLetter(Ref{}, msg, Ref{c})
		return
	}
	_ = c.cur.sender.Send(msg, Ref{c})
}

func (c *cell) Forward(to Ref) error {
	return to.Send(c.cur.msg, c.cur.sender)
}

func (c *cell) Spawn(props *Props, name string) (Ref, error) {
	return c.spawnChild(props, name)
}

func (c *cell) Stop(ref Ref) {
	k, ok := ref.p.(*cell)
	if !ok {
		return
	}
	if k == c {
		c.beginStop()
		return
	}
	if k.parent == c {
		k.sendSystem(sysStop{})
	}
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
	x.stash = append(x.stash, c.cur)
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
