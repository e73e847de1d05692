package routing

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/supervision"
)

// Spawner is where a router actor is started: an *actor.System (a top-level actor
// under /user) or an actor's actor.Context (a child of that actor, which then stops
// with it).
type Spawner interface {
	Spawn(props *actor.Props, name string) (actor.Ref, error)
}

// PoolConfig configures NewPool.
type PoolConfig struct {
	// Name is the router actor's name; empty picks an anonymous one.
	Name string
	// Routee creates the routees, the router actor's children. Required.
	Routee *actor.Props
	// Size is how many routees the pool starts with; at least 1.
	Size int
	// Logic routes the messages; nil means RoundRobin().
	Logic Logic
	// Strategy supervises the routees: a routee that fails is resumed, restarted
	// (keeping its place among the routees) or stopped (and then removed) as it
	// decides. Nil means supervision.DefaultStrategy (restart).
	Strategy supervision.Strategy
	// Resizer, when set, resizes the pool with its load between its bounds; Size is
	// then the starting size (raised to the lower bound, and may be 0). A pool with a
	// resizer does not stop when it has no routees: the next message routed makes it
	// grow back to its lower bound.
	Resizer *Resizer
}

// Validate reports a missing or invalid Routee, a Size below 1 (below 0 with a
// Resizer) and an invalid Resizer, wrapping ErrInvalidConfig.
func (c PoolConfig) Validate() error {
	if c.Routee == nil {
		return fmt.Errorf("%w: pool needs Routee props", ErrInvalidConfig)
	}
	if err := c.Routee.Validate(); err != nil {
		return fmt.Errorf("%w: Routee: %w", ErrInvalidConfig, err)
	}
	if c.Resizer != nil {
		if err := c.Resizer.Validate(); err != nil {
			return err
		}
		if c.Size < 0 {
			return fmt.Errorf("%w: pool Size %d is negative", ErrInvalidConfig, c.Size)
		}
		return nil
	}
	if c.Size < 1 {
		return fmt.Errorf("%w: pool Size %d, want at least 1", ErrInvalidConfig, c.Size)
	}
	return nil
}

// GroupConfig configures NewGroup.
type GroupConfig struct {
	// Name is the router actor's name; empty picks an anonymous one.
	Name string
	// Routees are actors to route to, local or remote.
	Routees []actor.Ref
	// Paths are actor paths to route to, local ("/user/workers/w1") or full
	// ("troupe://sys@10.0.0.5:2552/user/w1"), resolved once when the router starts
	// (actor.System.Resolve). A local path with no actor is left out, with a warning
	// in the log; a remote path is not checked (resolving it needs no round trip), and
	// messages routed to a missing remote actor become dead letters on its node.
	Paths []string
	// Logic routes the messages; nil means RoundRobin().
	Logic Logic
}

// Validate reports zero Refs and empty paths, wrapping ErrInvalidConfig. A group
// with no routees at all is valid: routees can be added later (AddRoutee,
// UpdateRoutees).
func (c GroupConfig) Validate() error {
	for i, r := range c.Routees {
		if r.IsZero() {
			return fmt.Errorf("%w: Routees[%d] is the zero Ref", ErrInvalidConfig, i)
		}
	}
	for i, p := range c.Paths {
		if p == "" {
			return fmt.Errorf("%w: Paths[%d] is empty", ErrInvalidConfig, i)
		}
	}
	return nil
}

// Router is the handle of a running router: its Send, Tell and Ask choose the routee
// on the caller's goroutine, from a snapshot of the routees that the router actor
// replaces whenever they change, and send the message straight to it, so routing
// costs one Select and no extra hop. Management messages, Broadcast sent to Ref, and
// the requests of scatter-gather and tail-chopping go through the router actor. A
// Router is safe for concurrent use.
type Router struct {
	ref   actor.Ref
	sys   *actor.System
	snap  atomic.Pointer[snapshot]
	ready chan struct{}
	once  sync.Once

	// A resizable pool's senders count messages, and every perResize-th asks the router
	// actor to resize, unless a resize is already asked for.
	perResize uint64
	routed    paddedCounter
	resizing  atomic.Bool
}

// snapshot is what senders route with: an immutable set of routees and the Selector
// the logic prepared for them.
type snapshot struct {
	routees  []actor.Ref
	sel      Selector
	rr       *roundRobinSelector // sel, when it is round-robin with routees: a fast path
	ring     *ring               // sel, when it is consistent hashing with routees: another
	viaActor bool                // the logic's requests need the router actor (a collector)
	stopped  bool                // the router has stopped: everything is a dead letter
}

// NewPool starts a pool router under parent: a router actor that spawns cfg.Size
// routees from cfg.Routee as its children and supervises them with cfg.Strategy.
// A routee that stops is removed; when the last one is gone the router stops too.
// NewPool returns once the routees are spawned, or when ctx ends first (the router
// is then stopped and ctx's error returned). Called inside an actor (parent its
// actor.Context), it waits for the router actor's start, which runs on another of
// the dispatcher's goroutines, as a blocking Ask would.
func NewPool(ctx context.Context, parent Spawner, cfg PoolConfig) (*Router, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logic == nil {
		cfg.Logic = RoundRobin()
	}
	r := &Router{ready: make(chan struct{})}
	size := cfg.Size
	var resizer *Resizer
	if cfg.Resizer != nil {
		z := cfg.Resizer.withDefaults()
		resizer = &z
		size = min(max(size, z.LowerBound), z.UpperBound)
		r.perResize = uint64(z.MessagesPerResize)
	}
	props := &actor.Props{
		Producer: func() actor.Actor {
			return &routerActor{h: r, logic: cfg.Logic, pool: cfg.Routee, size: size, resizer: resizer}
		},
		Strategy: cfg.Strategy,
	}
	return r.start(ctx, parent, props, cfg.Name)
}

// NewGroup starts a group router under parent: a router actor that routes to
// cfg.Routees and the actors at cfg.Paths, which it watches but does not supervise. A
// routee that stops is removed; a group with no routees stays up (sends fail with
// ErrNoRoutees) until routees are added. NewGroup returns once the router has
// started, or when ctx ends first.
func NewGroup(ctx context.Context, parent Spawner, cfg GroupConfig) (*Router, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logic == nil {
		cfg.Logic = RoundRobin()
	}
	r := &Router{ready: make(chan struct{})}
	refs := append([]actor.Ref(nil), cfg.Routees...)
	paths := append([]string(nil), cfg.Paths...)
	props := actor.PropsOf(func() actor.Actor {
		return &routerActor{h: r, logic: cfg.Logic, initial: refs, paths: paths}
	})
	return r.start(ctx, parent, props, cfg.Name)
}

func (r *Router) start(ctx context.Context, parent Spawner, props *actor.Props, name string) (*Router, error) {
	if parent == nil {
		return nil, fmt.Errorf("%w: nil parent", ErrInvalidConfig)
	}
	ref, err := parent.Spawn(props, name)
	if err != nil {
		return nil, err
	}
	r.ref = ref
	select {
	case <-r.ready:
		return r, nil
	case <-ctx.Done():
		_ = ref.Tell(actor.PoisonPill{})
		return nil, fmt.Errorf("routing: starting router %v: %w", ref, context.Cause(ctx))
	}
}

// markReady publishes the first snapshot and lets NewPool or NewGroup return. Only
// the router actor calls it, from Started (or from Stopped, if it never started).
func (r *Router) markReady(sys *actor.System) {
	r.once.Do(func() {
		r.sys = sys
		close(r.ready)
	})
}

// Ref returns the router actor's Ref. Messages sent to it are routed by the router
// actor (one more hop than Send), management messages are handled there, and it can
// be passed in messages and to other nodes like any Ref. Watch it to learn when the
// router stops.
func (r *Router) Ref() actor.Ref { return r.ref }

// Routees returns the routees the router routes to now, in routing order: the
// snapshot senders use, read without a round trip. Send GetRoutees to Ref for an
// answer ordered after the management messages sent before it.
func (r *Router) Routees() []actor.Ref {
	s := r.snap.Load()
	if s == nil || s.stopped {
		return nil
	}
	return append([]actor.Ref(nil), s.routees...)
}

// Tell routes msg with no sender; see Send.
func (r *Router) Tell(msg any) error { return r.Send(msg, actor.Ref{}) }

// Send routes msg with sender as its sender, so that a routee's Respond reaches the
// sender directly. It never blocks. The routee is chosen on the caller's goroutine
// and msg sent straight to it; Broadcast sends msg.Msg to every routee the same way.
// Management messages, actor.PoisonPill and actor.Kill go to the router actor, and so
// does every message of a scatter-gather or tail-chopping router.
//
// A message that cannot be routed (no routees, no key for consistent hashing) is
// published as a dead letter of the router actor with the reason, which Send also
// returns; after the router has stopped, messages are dead letters
// (actor.ErrRecipientStopped) and Send returns nil, as actor.Ref.Send does. An error
// from the routee's Send (a bounded mailbox that rejects) is returned as it is.
func (r *Router) Send(msg any, sender actor.Ref) error {
	// The fast paths of round-robin and consistent hashing, for a message that is not
	// the router's own; the rest is send's.
	if s := r.snap.Load(); (s.rr != nil || s.ring != nil) && !routerMessage(msg) {
		if s.rr != nil {
			return s.routees[s.rr.pick()].Send(msg, sender)
		}
		if i, ok := s.ring.index(msg); ok {
			return s.routees[i].Send(msg, sender)
		}
	}
	return r.send(untraced, msg, sender)
}

// routerMessage reports whether msg is for the router itself, or nil: what send
// handles before routing.
func routerMessage(msg any) bool {
	switch msg.(type) {
	case nil, GetRoutees, AddRoutee, RemoveRoutee, AdjustPoolSize, UpdateRoutees,
		actor.PoisonPill, actor.Kill, Broadcast:
		return true
	}
	return false
}

// SendContext is Send with the trace context of ctx, which the routed message carries
// to its routee as actor.Ref.SendContext does (inside an actor, pass
// ctx.TraceContext() to keep the trace of the message being handled).
func (r *Router) SendContext(ctx context.Context, msg any, sender actor.Ref) error {
	if ctx == nil {
		ctx = untraced
	}
	return r.send(ctx, msg, sender)
}

// untraced is the context of Send: deliver sends with Ref.Send when it gets it.
var untraced = context.Background()

// deliver sends msg to one routee, with ctx's trace unless ctx is untraced.
func deliver(ctx context.Context, to actor.Ref, msg any, sender actor.Ref) error {
	if ctx == untraced {
		return to.Send(msg, sender)
	}
	return to.SendContext(ctx, msg, sender)
}

func (r *Router) send(ctx context.Context, msg any, sender actor.Ref) error {
	switch m := msg.(type) {
	case nil:
		return actor.ErrNilMessage
	case GetRoutees, AddRoutee, RemoveRoutee, AdjustPoolSize, UpdateRoutees,
		actor.PoisonPill, actor.Kill:
		return deliver(ctx, r.ref, msg, sender)
	case Broadcast:
		if m.Msg == nil {
			return actor.ErrNilMessage
		}
		s := r.snap.Load()
		if s.stopped {
			r.sys.PublishDeadLetter(r.ref, msg, sender, actor.ErrRecipientStopped)
			return nil
		}
		if len(s.routees) == 0 {
			r.sys.PublishDeadLetter(r.ref, msg, sender, ErrNoRoutees)
			return ErrNoRoutees
		}
		return sendAll(ctx, s.routees, m.Msg, sender)
	}
	s := r.snap.Load()
	if s.rr != nil {
		return deliver(ctx, s.routees[s.rr.pick()], msg, sender)
	}
	if r.perResize > 0 {
		// Counted once sent, so that the resize sees the routee the message made busy.
		defer r.countForResize()
	}
	if s.viaActor {
		return deliver(ctx, r.ref, msg, sender)
	}
	to, err := s.sel.Select(msg)
	if err != nil {
		if s.stopped {
			r.sys.PublishDeadLetter(r.ref, msg, sender, actor.ErrRecipientStopped)
			return nil
		}
		r.sys.PublishDeadLetter(r.ref, msg, sender, err)
		return err
	}
	if len(to) == 1 {
		return deliver(ctx, to[0], msg, sender)
	}
	return sendAll(ctx, to, msg, sender)
}

// countForResize counts a routed message and asks the router actor to resize at every
// perResize-th, the first included.
func (r *Router) countForResize() {
	if (r.routed.Add(1)-1)%r.perResize == 0 && r.resizing.CompareAndSwap(false, true) {
		if err := r.ref.Tell(resizeCheck{}); err != nil {
			r.resizing.Store(false)
		}
	}
}

// sendAll sends msg to every ref, returning the first error.
func sendAll(ctx context.Context, to []actor.Ref, msg any, sender actor.Ref) error {
	var first error
	for _, ref := range to {
		if err := deliver(ctx, ref, msg, sender); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Ask routes msg as a request and returns the Future of its reply (see actor.Ref.Ask
// for how it completes and fails). For the logics that pick one routee, the ask goes
// straight to it; a message that cannot be routed fails the future with an error
// matching actor.ErrDeadLetter and the reason. Scatter-gather and tail-chopping
// complete it with the first reply of any routee. Management messages are asked of
// the router actor (GetRoutees answers Routees). For a message sent to several
// routees (ToAll, Broadcast), the first reply completes the future and the others
// become dead letters (actor.ErrLateReply).
func (r *Router) Ask(ctx context.Context, msg any) *actor.Future {
	switch msg.(type) {
	case nil, GetRoutees, AddRoutee, RemoveRoutee, AdjustPoolSize, UpdateRoutees,
		actor.PoisonPill, actor.Kill, Broadcast:
		return r.ref.Ask(ctx, msg)
	}
	s := r.snap.Load()
	if s.viaActor || s.stopped {
		return r.ref.Ask(ctx, msg)
	}
	if r.perResize > 0 {
		defer r.countForResize()
	}
	to, err := s.sel.Select(msg)
	if err != nil || len(to) != 1 {
		return r.ref.Ask(ctx, msg) // the router actor reports it, or sends to all
	}
	return to[0].Ask(ctx, msg)
}

// publish replaces the snapshot with one for routees (which it keeps: the caller must
// not modify it afterwards).
func (r *Router) publish(logic Logic, routees []actor.Ref) {
	_, via := logic.(collecting)
	s := &snapshot{routees: routees, sel: logic.Prepare(routees), viaActor: via}
	if len(routees) > 0 && r.perResize == 0 {
		switch sel := s.sel.(type) {
		case *roundRobinSelector:
			s.rr = sel
		case *ring:
			s.ring = sel
		}
	}
	r.snap.Store(s)
}

// publishStopped makes every later send a dead letter.
func (r *Router) publishStopped() {
	r.snap.Store(&snapshot{sel: allSelector(nil), stopped: true})
}
