package sharding

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/actorstate"
)

// The fast path: a region hands a message for a running entity of one of its own
// shards straight to the entity, skipping the shard actor (one mailbox and one wake-up
// fewer per message). The shard stays in charge of its entities; it shares with its
// region which of them may be reached directly, and the rules below keep every
// guarantee of the slow path:
//
//   - Order. The region counts the deliveries it sent the shard (sent, the region's
//     own) and the shard counts those it has handled (handled, written by the shard
//     after it passed each one on or kept it). The region goes direct only when the
//     two are equal: nothing it sent earlier is still on its way through the shard, so
//     a message sent direct cannot overtake one sent before it.
//   - Passivation, hand-off and stops. An entity is listed only while it is active in
//     the shard's bookkeeping and everything the shard held for it has been passed
//     on. The shard unlists it (under mu) before it sends it a stop message or stops
//     it, and the region sends direct only under mu: a direct message is in the
//     entity's mailbox before the stop message, or it is not sent direct at all (and
//     then goes through the shard, which keeps it for the next incarnation).
//   - Senders outside the region. An EntityRef whose entity lives in a local shard
//     goes direct too (trySend) when the region is idle, which means none of that
//     sender's earlier messages is still queued in the region, and the region would
//     deliver to the shard itself (local). The counts and the lock then hold as for
//     the region. Other senders' messages are not ordered against this sender's, as
//     between any actors.
//   - Idle passivation. A direct delivery marks the entity used; the shard takes the
//     marks into its bookkeeping before each idle check. With an active-entity limit
//     (least-recently-used passivation on every start) the shard does not open the
//     fast path at all.
type fastPath struct {
	handled atomic.Uint64 // deliveries the shard has handled; written by the shard only
	sent    atomic.Uint64 // deliveries the region sent the shard; written by the region only
	// local says the region itself would deliver this shard's messages to the shard now
	// (its home is here, the shard is ready, nothing is buffered for it, no hand-off):
	// senders outside the region may then go direct (see trySend). Written by the
	// region only.
	local atomic.Bool

	mu       sync.Mutex
	entities map[EntityID]*fastEntity // nil: closed
}

// fastEntity is a running entity that its region may reach directly.
type fastEntity struct {
	ref   actor.Ref
	boxed any  // ref as an interface value, made once (converting it allocates)
	used  bool // a direct delivery since the shard last looked (under mu)
}

// tryDeliver sends d straight to its entity and reports whether it did. Only the
// region calls it.
func (f *fastPath) tryDeliver(d *delivery) bool {
	if d.start || f.handled.Load() != f.sent.Load() {
		return false
	}
	f.mu.Lock()
	e := f.entities[d.entity]
	if e != nil {
		_ = e.ref.Send(d.msg, d.sender)
		e.used = true
	}
	f.mu.Unlock()
	return e != nil
}

// trySend sends msg straight to entity id for a sender outside the region (an
// EntityRef), and reports whether it did. The caller has seen the region idle: none of
// its own earlier messages is still queued there. The region must deliver this shard
// locally now and have nothing on its way through the shard; then the rules above
// hold for this sender as they do for the region.
func (f *fastPath) trySend(id EntityID, msg any, sender actor.Ref) bool {
	if !f.local.Load() || f.handled.Load() != f.sent.Load() {
		return false
	}
	f.mu.Lock()
	e := f.entities[id]
	if e != nil {
		_ = e.ref.Send(msg, sender)
		e.used = true
	}
	f.mu.Unlock()
	return e != nil
}

// tryAsk is trySend for an ask: it sends msg to entity id with a new future as its
// sender and returns the future and the entity (boxed, for FailOnContext), or a nil
// future when the fast path cannot be taken. With watch the future fails by itself
// when ctx ends; without, the caller fails it (actorstate.FailOnContext).
func (f *fastPath) tryAsk(ctx context.Context, id EntityID, msg any, watch bool) (*actor.Future, any) {
	if !f.local.Load() || f.handled.Load() != f.sent.Load() {
		return nil, nil
	}
	var fut *actor.Future
	var target any
	var run func()
	f.mu.Lock()
	if e := f.entities[id]; e != nil {
		// The message is queued now, under the lock; an idle entity is run (on this
		// goroutine) only after the lock is released.
		var v any
		v, run = actorstate.AskDeferred(ctx, e.boxed, msg, watch)
		fut, target = v.(*actor.Future), e.boxed
		e.used = true
	}
	f.mu.Unlock()
	if run != nil {
		run()
	}
	return fut, target
}

// open lets the region reach the entities listed from now on. Only the shard calls
// open, list, unlist and close.
func (f *fastPath) open() {
	f.mu.Lock()
	if f.entities == nil {
		f.entities = map[EntityID]*fastEntity{}
	}
	f.mu.Unlock()
}

// list makes entity id, running as ref, reachable directly (when the path is open).
func (f *fastPath) list(id EntityID, ref actor.Ref) {
	f.mu.Lock()
	if f.entities != nil {
		f.entities[id] = &fastEntity{ref: ref, boxed: ref}
	}
	f.mu.Unlock()
}

// unlist makes entity id reachable only through the shard again.
func (f *fastPath) unlist(id EntityID) {
	f.mu.Lock()
	delete(f.entities, id)
	f.mu.Unlock()
}

// close unlists every entity for good.
func (f *fastPath) close() {
	f.mu.Lock()
	f.entities = nil
	f.mu.Unlock()
}

// usedSinceLastLook returns the entities delivered to directly since the last call, and clears
// their marks.
func (f *fastPath) usedSinceLastLook() []EntityID {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []EntityID
	for id, e := range f.entities {
		if e.used {
			e.used = false
			out = append(out, id)
		}
	}
	return out
}
