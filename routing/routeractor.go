package routing

import (
	"errors"
	"slices"

	"go.uber.org/zap"

	"github.com/troupe-go/troupe/actor"
)

// routerActor is the router: it owns the routees (spawning and watching them), answers
// management messages, publishes each new set of routees to its Router handle for the
// senders, and routes the messages sent to its own Ref.
type routerActor struct {
	h     *Router
	logic Logic

	// A pool spawns size routees from pool; a group starts from initial and paths.
	pool    *actor.Props
	size    int
	resizer *Resizer // a resizable pool's, with its defaults filled in
	initial []actor.Ref
	paths   []string
	// feed, when set, is a child that sends UpdateRoutees as a source of routees
	// changes (a cluster's membership).
	feed *actor.Props

	routees  []actor.Ref            // in routing order; replaced, never modified, once published
	children map[actor.Ref]struct{} // the routees this pool spawned
}

func (a *routerActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case actor.Started:
		a.start(ctx)
	case actor.Stopping:
		a.h.publishStopped()
	case actor.Stopped:
		a.h.publishStopped()
		a.h.markReady(ctx.System())
	case actor.Terminated:
		if a.has(m.Ref) {
			delete(a.children, m.Ref)
			a.set(ctx, a.without(m.Ref))
		}
	case GetRoutees:
		_ = ctx.Respond(Routees{Refs: append([]actor.Ref(nil), a.routees...)})
	case AddRoutee:
		if !m.Ref.IsZero() && !a.has(m.Ref) {
			ctx.Watch(m.Ref)
			a.set(ctx, append(slices.Clip(a.routees), m.Ref))
		}
	case RemoveRoutee:
		if a.has(m.Ref) {
			a.remove(ctx, m.Ref)
			a.set(ctx, a.without(m.Ref))
		}
	case AdjustPoolSize:
		a.adjust(ctx, m.Change)
	case UpdateRoutees:
		a.update(ctx, m.Refs)
	case resizeCheck:
		a.resize(ctx)
	case Broadcast:
		if len(a.routees) == 0 {
			ctx.System().PublishDeadLetter(ctx.Self(), m, ctx.Sender(), ErrNoRoutees)
			return
		}
		for _, r := range a.routees {
			_ = r.SendContext(ctx.TraceContext(), m.Msg, ctx.Sender())
		}
	default:
		a.route(ctx, m)
	}
}

// start spawns a pool's routees or resolves a group's, publishes them and lets the
// constructor return.
func (a *routerActor) start(ctx actor.Context) {
	var routees []actor.Ref
	if a.pool != nil {
		a.children = make(map[actor.Ref]struct{}, a.size)
		for range a.size {
			if ref, ok := a.spawn(ctx); ok {
				routees = append(routees, ref)
			}
		}
	} else {
		for _, ref := range a.initial {
			if !slices.Contains(routees, ref) {
				ctx.Watch(ref)
				routees = append(routees, ref)
			}
		}
		for _, p := range a.paths {
			ref, err := ctx.System().Resolve(p)
			if err != nil {
				ctx.Logger().Warn("routing: group path left out", zap.String("routee_path", p), zap.Error(err))
				continue
			}
			if !slices.Contains(routees, ref) {
				ctx.Watch(ref)
				routees = append(routees, ref)
			}
		}
	}
	a.routees = routees
	a.h.publish(a.logic, routees)
	a.h.markReady(ctx.System())
	if a.feed != nil {
		if _, err := ctx.Spawn(a.feed, "feed"); err != nil && !errors.Is(err, actor.ErrStopping) {
			ctx.Logger().Error("routing: cannot start the group's source of routees", zap.Error(err))
		}
	}
	if a.pool != nil && len(routees) == 0 {
		_ = ctx.Stop(ctx.Self())
	}
}

// spawn starts one pool routee and watches it.
func (a *routerActor) spawn(ctx actor.Context) (actor.Ref, bool) {
	ref, err := ctx.Spawn(a.pool, "")
	if err != nil {
		if !errors.Is(err, actor.ErrStopping) {
			ctx.Logger().Error("routing: cannot spawn a pool routee", zap.Error(err))
		}
		return actor.Ref{}, false
	}
	ctx.Watch(ref)
	a.children[ref] = struct{}{}
	return ref, true
}

// set installs routees as the new set and publishes it. A pool with no routee left
// stops: nothing would ever route again.
func (a *routerActor) set(ctx actor.Context, routees []actor.Ref) {
	a.routees = routees
	a.h.publish(a.logic, routees)
	if a.pool != nil && a.resizer == nil && len(routees) == 0 {
		_ = ctx.Stop(ctx.Self())
	}
}

// resize applies the resizer to the routees' load now.
func (a *routerActor) resize(ctx actor.Context) {
	defer a.h.resizing.Store(false)
	if a.resizer == nil {
		return
	}
	pressure := 0
	for _, r := range a.routees {
		if a.resizer.underPressure(r.Activity()) {
			pressure++
		}
	}
	if change := a.resizer.Change(len(a.routees), pressure); change != 0 {
		a.adjust(ctx, change)
	}
}

func (a *routerActor) has(ref actor.Ref) bool { return slices.Contains(a.routees, ref) }

// without returns a new slice of the routees without ref.
func (a *routerActor) without(ref actor.Ref) []actor.Ref {
	out := make([]actor.Ref, 0, len(a.routees))
	for _, r := range a.routees {
		if r != ref {
			out = append(out, r)
		}
	}
	return out
}

// remove stops watching ref and, if this pool spawned it, stops it once it has handled
// its queue.
func (a *routerActor) remove(ctx actor.Context, ref actor.Ref) {
	ctx.Unwatch(ref)
	if _, ok := a.children[ref]; ok {
		delete(a.children, ref)
		_ = ref.Tell(actor.PoisonPill{})
	}
}

// adjust grows or shrinks a pool.
func (a *routerActor) adjust(ctx actor.Context, change int) {
	if a.pool == nil {
		ctx.Logger().Warn("routing: AdjustPoolSize sent to a group router; ignored", zap.Int("change", change))
		return
	}
	routees := slices.Clone(a.routees)
	for ; change > 0; change-- {
		if ref, ok := a.spawn(ctx); ok {
			routees = append(routees, ref)
		}
	}
	for ; change < 0 && len(routees) > 0; change++ {
		last := routees[len(routees)-1]
		a.remove(ctx, last)
		routees = routees[:len(routees)-1]
	}
	a.set(ctx, routees)
}

// update replaces the routees with refs.
func (a *routerActor) update(ctx actor.Context, refs []actor.Ref) {
	next := make([]actor.Ref, 0, len(refs))
	for _, r := range refs {
		if !r.IsZero() && !slices.Contains(next, r) {
			next = append(next, r)
		}
	}
	for _, r := range a.routees {
		if !slices.Contains(next, r) {
			a.remove(ctx, r)
		}
	}
	for _, r := range next {
		if !a.has(r) {
			ctx.Watch(r)
		}
	}
	a.set(ctx, next)
}

// route sends a message that came to the router actor itself to its routees, with its
// original sender.
func (a *routerActor) route(ctx actor.Context, msg any) {
	if a.h.perResize > 0 {
		defer a.h.countForResize()
	}
	sel := a.h.snap.Load().sel
	to, err := sel.Select(msg)
	if err != nil {
		ctx.System().PublishDeadLetter(ctx.Self(), msg, ctx.Sender(), err)
		return
	}
	if c, ok := a.logic.(collecting); ok {
		a.collect(ctx, c, to, msg)
		return
	}
	if len(to) == 1 {
		_ = ctx.Forward(to[0])
		return
	}
	for _, r := range to {
		_ = ctx.Forward(r)
	}
}
