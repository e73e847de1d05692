package sharding

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/troupe-go/troupe/actor"
)

// EntityRef is a typed reference to one entity: it sends messages of type M to the
// entity with the given ID through this node's region (or proxy) of its type, wherever
// the entity lives and whether or not it runs. When the region would route a message
// straight on (to the running entity on this node, or in a batch to the region of its
// node), the EntityRef does that itself, in the same order. It is a small value; copy
// it freely and use it from any goroutine, inside or outside actors. Two EntityRefs of
// one entity are equal. While any is held, the EntityRefs of an entity whose shard runs
// on this node share a small record (about 110 bytes) in which they remember where the
// entity runs, so that a tell does not look it up each time.
type EntityRef[M any] struct {
	region   actor.Ref
	typeName string
	id       EntityID
	direct   *entityRoute // nil: always through the region
}

// directRoute is how the EntityRefs of one shard's entities reach them without the
// region when the shard runs on this node (fastpath.go).
type directRoute struct {
	entry *typeEntry
	shard ShardID
	last  atomic.Pointer[fastPath] // the shard's fast path last found, until it is gone
	// viaRegion counts the messages EntityRefs sent this shard's entities through the
	// region (a refMessage each) that the region has not yet handed on. While it is not
	// zero, every EntityRef of the shard sends through the region too, behind them. A
	// message the region never handles (it stopped first) leaves the count up for good,
	// which is harmless: the route belongs to that region's type entry and goes with it.
	viaRegion atomic.Int64

	// entities holds the direct route of each entity of the shard that an EntityRef
	// refers to, weakly: a route lives as long as an EntityRef holds it, so that
	// EntityRefs of one entity made at different times stay equal, and the map
	// forgets an entity once no EntityRef of it is left (forget).
	mu       sync.Mutex
	entities map[EntityID]weak.Pointer[entityRoute]
}

// entityRoute is one entity's direct route: its shard's, and what the last look-up of
// the entity in the shard's fast path found, so that a send skips the look-up while
// nothing in that fast path has changed (fastPath.reach).
type entityRoute struct {
	shard *directRoute
	found atomic.Pointer[foundEntity]
}

// foundEntity is what a look-up found: the entity was reachable as ref when its fast
// path's epoch was epoch (which names that fast path too). It is never changed; a new
// look-up stores a new one.
type foundEntity struct {
	epoch uint64
	ref   actor.Ref
}

// entity returns the direct route of entity id of this shard: the one an EntityRef
// still holds, or a new one.
func (d *directRoute) entity(id EntityID) *entityRoute {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.entities[id].Value(); e != nil {
		return e
	}
	e := &entityRoute{shard: d}
	w := weak.Make(e)
	if d.entities == nil {
		d.entities = map[EntityID]weak.Pointer[entityRoute]{}
	}
	d.entities[id] = w
	runtime.AddCleanup(e, d.forget, forgotten{id: id, route: w})
	return e
}

// forgotten names an entity route the garbage collector has taken.
type forgotten struct {
	id    EntityID
	route weak.Pointer[entityRoute]
}

// forget removes a collected entity route from the map, unless a newer route of the
// same entity has replaced it there.
func (d *directRoute) forget(f forgotten) {
	d.mu.Lock()
	if d.entities[f.id] == f.route {
		delete(d.entities, f.id)
	}
	d.mu.Unlock()
}

// refMessage is what an EntityRef with a direct route sends through the region: the
// region places it as an Envelope, then counts it off its route.
type refMessage struct {
	route *directRoute
	env   Envelope
}

// UserMessage returns the Envelope the region places: a refMessage that becomes a dead
// letter (its region stopped first) is published as that Envelope, and an ask that
// fails with it names it (actor.MessageWrapper).
func (m refMessage) UserMessage() any { return m.env }

// CarriedMessage returns the entity's message, which an ask's span is named after
// (actor.MessageCarrier).
func (m refMessage) CarriedMessage() any { return m.env.Message }

// path returns the fast path of the entity's shard when a sender may take it now: the
// shard has a fast path on this node and no EntityRef message for the shard is still
// queued in the region; nil otherwise.
func (d *directRoute) path() *fastPath {
	if d.viaRegion.Load() != 0 {
		return nil
	}
	fp := d.last.Load()
	if fp == nil || fp.gone.Load() {
		v, ok := d.entry.fast.Load(d.shard)
		if !ok {
			return nil
		}
		fp = v.(*fastPath)
		d.last.Store(fp)
	}
	return fp
}

// sendRemote adds msg for entity id to the batch of the shard's home on another node,
// when no message of the shard is on its way through the region and the region would
// forward it there now (outbox.sendDirect); it reports whether it did.
func (d *directRoute) sendRemote(id EntityID, msg any, sender actor.Ref) bool {
	if d.viaRegion.Load() != 0 {
		return false
	}
	o := d.entry.outbox.Load()
	return o != nil && o.sendDirect(d.shard, id, msg, sender)
}

// viaRegionSend sends msg to entity id through the region, counted on the route, in
// the trace context of ctx.
func (d *directRoute) viaRegionSend(ctx context.Context, region actor.Ref, id EntityID, msg any, sender actor.Ref) error {
	d.viaRegion.Add(1)
	err := region.SendContext(ctx, refMessage{route: d, env: Envelope{EntityID: id, Message: msg}}, sender)
	if err != nil {
		d.viaRegion.Add(-1) // not queued
	}
	return err
}

// viaRegionAsk asks entity id through the region, counted on the route.
func (d *directRoute) viaRegionAsk(ctx context.Context, region actor.Ref, id EntityID, msg any) *actor.Future {
	d.viaRegion.Add(1)
	return region.Ask(ctx, refMessage{route: d, env: Envelope{EntityID: id, Message: msg}})
}

// send tries the fast path of the entity's shard; it reports whether msg was sent.
func (e *entityRoute) send(id EntityID, msg any, sender actor.Ref) bool {
	fp := e.shard.path()
	return fp != nil && fp.trySend(e, id, msg, sender)
}

// ask tries the fast path for an ask (see fastPath.tryAsk); a nil future when it
// cannot be taken.
func (e *entityRoute) ask(ctx context.Context, id EntityID, msg any, watch bool) (*actor.Future, actor.Ref) {
	if fp := e.shard.path(); fp != nil {
		return fp.tryAsk(ctx, e, id, msg, watch)
	}
	return nil, actor.Ref{}
}

// EntityRefFor returns a reference to entity id of typeName. The type must be started
// on this node (Sharding.Start or StartProxy); otherwise the error wraps ErrUnknownType
// (or ErrNotStarted without the extension). The region's extractor gives the entity's
// shard; the entity receives the messages as they are.
func EntityRefFor[M any](sys *actor.System, typeName string, id EntityID) (EntityRef[M], error) {
	s := Get(sys)
	if s == nil {
		return EntityRef[M]{}, ErrNotStarted
	}
	if id == "" {
		return EntityRef[M]{}, fmt.Errorf("%w: empty entity ID", ErrUnplaceable)
	}
	s.mu.Lock()
	e, ok := s.types[typeName]
	s.mu.Unlock()
	if !ok || e.region.IsZero() {
		return EntityRef[M]{}, fmt.Errorf("%w: %q", ErrUnknownType, typeName)
	}
	ref := EntityRef[M]{region: e.region, typeName: typeName, id: id}
	if shard, ok := extractShard(e, id); ok && !e.proxy {
		ref.direct = e.entityRoute(shard, id)
	}
	return ref, nil
}

// entityRoute returns the direct route of entity id of shard: one route per shard,
// and per entity while EntityRefs hold it, so that two EntityRefs of one entity stay
// equal.
func (e *typeEntry) entityRoute(shard ShardID, id EntityID) *entityRoute {
	r, ok := e.routes.Load(shard)
	if !ok {
		r, _ = e.routes.LoadOrStore(shard, &directRoute{entry: e, shard: shard})
	}
	return r.(*directRoute).entity(id)
}

// extractShard returns the shard of id by the type's extractor, as the region computes it
// for an Envelope; false when the extractor gives none (or panics: the region will
// report it).
func extractShard(e *typeEntry, id EntityID) (shard ShardID, ok bool) {
	defer func() {
		if recover() != nil {
			shard, ok = "", false
		}
	}()
	shard = e.cfg.Extractor.ShardID(id)
	return shard, shard != ""
}

// EntityID returns the entity's ID.
func (r EntityRef[M]) EntityID() EntityID { return r.id }

// TypeName returns the entity's type.
func (r EntityRef[M]) TypeName() string { return r.typeName }

// Tell sends msg to the entity with no sender. It never blocks; it returns an error only
// when the message could not be handed to the region (see actor.Ref.Tell).
func (r EntityRef[M]) Tell(msg M) error {
	return r.Send(msg, actor.Ref{})
}

// Send sends msg to the entity with sender as its sender, so that the entity's
// ctx.Respond reaches sender.
func (r EntityRef[M]) Send(msg M, sender actor.Ref) error {
	if r.region.IsZero() {
		return actor.ErrNoRecipient
	}
	if r.direct == nil {
		return r.region.Send(Envelope{EntityID: r.id, Message: msg}, sender)
	}
	if r.direct.send(r.id, msg, sender) || r.direct.shard.sendRemote(r.id, msg, sender) {
		return nil
	}
	return r.direct.shard.viaRegionSend(context.Background(), r.region, r.id, msg, sender)
}

// SendContext is Send in the trace context of ctx (see actor.Ref.SendContext): when
// the system has a TracerProvider and ctx carries a span, the entity handles msg in
// that trace, on whichever node it lives. Inside an actor, pass ctx.TraceContext().
// A message in a context with a span goes through the region rather than straight to
// the entity, in order with the others.
func (r EntityRef[M]) SendContext(ctx context.Context, msg M, sender actor.Ref) error {
	if r.region.IsZero() {
		return actor.ErrNoRecipient
	}
	if !hasSpan(ctx) {
		return r.Send(msg, sender)
	}
	if r.direct == nil {
		return r.region.SendContext(ctx, Envelope{EntityID: r.id, Message: msg}, sender)
	}
	return r.direct.shard.viaRegionSend(ctx, r.region, r.id, msg, sender)
}

// TellContext is SendContext with no sender.
func (r EntityRef[M]) TellContext(ctx context.Context, msg M) error {
	return r.SendContext(ctx, msg, actor.Ref{})
}

// Ask sends msg to the entity and returns the Future of its reply, without blocking
// (inside an actor, PipeTo turns the reply into a message).
func (r EntityRef[M]) Ask(ctx context.Context, msg M) *actor.Future {
	if r.direct == nil {
		return r.region.Ask(ctx, Envelope{EntityID: r.id, Message: msg})
	}
	if fut, _ := r.direct.ask(ctx, r.id, msg, true); fut != nil {
		return fut
	}
	return r.direct.shard.viaRegionAsk(ctx, r.region, r.id, msg)
}

// Ask sends msg to the entity and waits, until ctx ends, for a reply of type R (see
// actor.Ask: a Failure reply is returned as its error, a reply of another type as
// actor.ErrUnexpectedReply). Go infers M from ref and msg together, so when M is an
// interface (the usual command type of an entity) name both types:
//
//	n, err := sharding.Ask[int, CounterCommand](ctx, counter, Get{})
func Ask[R, M any](ctx context.Context, ref EntityRef[M], msg M) (R, error) {
	if ref.region.IsZero() {
		var zero R
		return zero, actor.ErrNoRecipient
	}
	if ref.direct == nil {
		return actor.Ask[R](ctx, ref.region, Envelope{EntityID: ref.id, Message: msg})
	}
	fut, target := ref.direct.ask(ctx, ref.id, msg, false)
	if fut == nil {
		fut, target = ref.direct.shard.viaRegionAsk(ctx, ref.region, ref.id, msg), ref.region
	}
	res, err := fut.Await(ctx, target, msg)
	var zero R
	if err != nil {
		return zero, err
	}
	v, ok := res.(R)
	if !ok {
		return zero, fmt.Errorf("%w: got %T, want %T", actor.ErrUnexpectedReply, res, zero)
	}
	return v, nil
}
