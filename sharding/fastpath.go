package sharding

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/shardcore"
	"go.opentelemetry.io/otel/trace"
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
//     goes direct too (trySend) when no EntityRef message for that shard is still
//     queued in the region (its route's count, entityref.go: every EntityRef that does
//     not go direct sends through the region, counted, and the region counts each off
//     once it has handed it on) and the region would deliver to the shard itself
//     (local). The counts and the lock then hold as for the region. The count is per
//     shard, not a test of the region's whole mailbox: a stream of EntityRef messages
//     that once went through a busy region comes back to the direct path as soon as
//     the region has passed its shard's messages on, instead of keeping the region
//     busy for good. Its price: a message a sender told the region itself (an
//     Envelope, not through an EntityRef) may be overtaken by the same sender's later
//     EntityRef message to that entity; each path keeps its own order. Other senders'
//     messages are not ordered against this sender's, as between any actors.
//   - Idle passivation. A direct delivery marks the entity used (only when the shard
//     passivates idle entities); the shard takes the marks into its bookkeeping before
//     each idle check. With an active-entity limit (least-recently-used passivation on
//     every start) the shard does not open the fast path at all.
//   - What an EntityRef remembers. An EntityRef keeps what its last look-up found (the
//     entity's Ref, marked used) with the fast path's epoch at that time, and skips the
//     look-up while the epoch is the same. The shard moves the epoch, under mu, with
//     every change that can end a look-up's answer: an entity unlisted, stopped or
//     replaced, the fast path closed, the marks of use taken. So a remembered answer
//     is one a look-up under mu would give now, and the rules above hold as they are.
//
// TestSimulationFastPath (sim_fast_test.go) runs this file's code in the sharding
// simulation, with its races; its doc lists the invariants it checks.
//
// The shard keeps its map of running entities here, so that an entity costs one map
// entry, not two: the shard writes it only under mu and reads it without (it is the
// only writer); the region and EntityRefs read it under mu.
type fastPath struct {
	handled atomic.Uint64 // deliveries the shard has handled; written by the shard only
	sent    atomic.Uint64 // deliveries the region sent the shard; written by the region only
	// local says the region itself would deliver this shard's messages to the shard now
	// (its home is here, the shard is ready, nothing is buffered for it, no hand-off):
	// senders outside the region may then go direct (see trySend). Written by the
	// region only.
	local atomic.Bool
	// gone says the shard has stopped: EntityRefs look its successor up. Written by
	// the region only.
	gone atomic.Bool

	mu   sync.Mutex
	open bool // direct delivery allowed
	// shut says the fast path closed after it was open (the shard hands off or stops):
	// it never opens again, so it keeps no record of which entities are unlisted.
	shut bool
	// epoch moves with every change that can make an earlier look-up's answer wrong
	// (what EntityRefs remember, see above). Drawn from epochs, it also names this
	// fast path among all others.
	epoch    uint64
	entities map[EntityID]actor.Ref // the shard's running entities
	// unlisted holds the running entities the region may not reach directly: most are
	// listed, so the exception has the map (a value of a Ref alone keeps entities'
	// entries at 16 bytes, a headline figure with a million of them).
	unlisted map[EntityID]struct{}
	// used holds the entities delivered to directly since the shard last looked; kept
	// only with idle passivation (trackUse), the one thing that reads it.
	used     map[EntityID]struct{}
	trackUse bool
}

// epochs draws the epochs of all fast paths, so that no two share one: an EntityRef
// that remembers an epoch need not hold on to the fast path (and through it, its
// entities) to know which one it came from.
var epochs atomic.Uint64

// nextEpoch moves the epoch. The caller holds mu, or is newFastPath.
func (f *fastPath) nextEpoch() { f.epoch = epochs.Add(1) }

// reachable returns entity id's Ref when the region may reach it directly, marking
// it used. The caller holds mu.
func (f *fastPath) reachable(id EntityID) (actor.Ref, bool) {
	if !f.open {
		return actor.Ref{}, false
	}
	ref, ok := f.entities[id]
	if !ok {
		return actor.Ref{}, false
	}
	if len(f.unlisted) != 0 {
		if _, no := f.unlisted[id]; no {
			return actor.Ref{}, false
		}
	}
	if !f.trackUse {
		return ref, true
	}
	if _, seen := f.used[id]; !seen {
		if f.used == nil {
			f.used = map[EntityID]struct{}{}
		}
		f.used[id] = struct{}{}
	}
	return ref, true
}

// reach is reachable for the EntityRef route e: it returns what e found last time when
// nothing has changed since, and otherwise looks the entity up and remembers the
// answer. The caller holds mu.
func (f *fastPath) reach(e *entityRoute, id EntityID) (actor.Ref, bool) {
	// A closed fast path finds nothing: closing moved the epoch, and an answer is
	// remembered only when reachable found the entity, which needs it open.
	if c := e.found.Load(); c != nil && c.epoch == f.epoch {
		return c.ref, true
	}
	ref, ok := f.reachable(id)
	if ok {
		e.found.Store(&foundEntity{epoch: f.epoch, ref: ref})
	}
	return ref, ok
}

// tryDeliver sends d straight to its entity and reports whether it did. Only the
// region calls it.
func (f *fastPath) tryDeliver(d *delivery) bool {
	return !d.start && f.handled.Load() == f.sent.Load() && f.send(d.entity, d.msg, d.sender, d.trace)
}

// send sends msg to entity id, in the trace context tc (nil for none), under mu when
// the region may reach it directly, and reports whether it did.
func (f *fastPath) send(id EntityID, msg any, sender actor.Ref, tc *trace.SpanContext) bool {
	f.mu.Lock()
	ref, ok := f.reachable(id)
	if ok {
		_ = deliverTo(ref, msg, sender, tc)
	}
	f.mu.Unlock()
	return ok
}

// trySend sends msg straight to entity id for a sender outside the region (an
// EntityRef, whose route is e), and reports whether it did. The caller has seen its
// route's count at zero: no EntityRef message for this shard is still queued in the
// region. The region must deliver this shard locally now and have nothing on its way
// through the shard; then the rules above hold for this sender as they do for the
// region.
func (f *fastPath) trySend(e *entityRoute, id EntityID, msg any, sender actor.Ref) bool {
	return f.outsideMayGo() && f.sendReached(e, id, msg, sender)
}

// sendReached is trySend's second half, once outsideMayGo said yes: under mu, it sends
// msg to entity id when the EntityRef route e may reach it directly, and reports
// whether it did. Between the two halves the shard and the region go on (the
// simulation steps them apart, sim_fast_test.go).
func (f *fastPath) sendReached(e *entityRoute, id EntityID, msg any, sender actor.Ref) bool {
	f.mu.Lock()
	ref, ok := f.reach(e, id)
	if ok {
		_ = ref.Send(msg, sender)
	}
	f.mu.Unlock()
	return ok
}

// outsideMayGo reports whether a sender outside the region may go direct now (its
// caller has seen its route's count at zero): the region would deliver this shard
// locally and has nothing on its way through the shard.
func (f *fastPath) outsideMayGo() bool {
	return f.local.Load() && f.handled.Load() == f.sent.Load()
}

// tryAsk is trySend for an ask: it sends msg to entity id with a new future as its
// sender and returns the future and the entity (for Future.Await), or a nil future
// when the fast path cannot be taken. With watch the future fails by itself when ctx
// ends; without, the caller waits with Future.Await.
func (f *fastPath) tryAsk(ctx context.Context, e *entityRoute, id EntityID, msg any, watch bool) (*actor.Future, actor.Ref) {
	if !f.outsideMayGo() {
		return nil, actor.Ref{}
	}
	var fut *actor.Future
	var target actor.Ref
	var run func()
	f.mu.Lock()
	if ref, ok := f.reach(e, id); ok {
		// The message is queued now, under the lock; an idle entity is run (on this
		// goroutine) only after the lock is released.
		target = ref
		fut, run = ref.AskDeferred(ctx, msg, watch)
	}
	f.mu.Unlock()
	if run != nil {
		run()
	}
	return fut, target
}

// viaShard is the region's delivery of d to its local shard's actor: straight to the
// entity when the fast path allows (tryDeliver); otherwise it counts d as sent to the
// shard and reports that the caller must now send it there.
func (f *fastPath) viaShard(d *delivery) bool {
	if f.tryDeliver(d) {
		return false
	}
	f.sent.Add(1)
	return true
}

// setLocal records whether the region would deliver this shard's messages to the
// shard itself now (its core's DeliversLocally). Only the region calls it.
func (f *fastPath) setLocal(local bool) {
	if f.local.Load() != local {
		f.local.Store(local)
	}
}

// retire closes the fast path for good for senders outside the region: its shard has
// stopped (or its region), and EntityRefs that hold it look up its successor. Only the
// region calls it.
func (f *fastPath) retire() {
	f.local.Store(false)
	f.gone.Store(true)
}

// The shard's side: only the shard calls the methods and functions below, and reads
// entities without mu. The functions take the shard's core, whose decisions they pair
// with the fast path's steps in the order the rules above need; the shard actor and
// the simulation (sim_fast_test.go) both call them.

// fastStart opens f for the shard whose core c has just been made, if c allows it.
func fastStart[M any](f *fastPath, c *shardcore.ShardCore[M]) {
	if c.FastPathAllowed() {
		f.setOpen(true)
	}
}

// fastHandOff closes f for good, then hands the shard off: no sender goes direct from
// now on, and what one sent direct before is in its entity's mailbox ahead of the stop
// message the hand-off sends.
func fastHandOff[M any](f *fastPath, c *shardcore.ShardCore[M], now time.Time) shardcore.ShardDecisions[M] {
	f.setOpen(false)
	return c.HandOff(now)
}

// fastListSpawned lists, once decisions that spawned the entities spawned are carried
// out, those still active with nothing held for them: they may be reached directly
// from now on.
func fastListSpawned[M any](f *fastPath, c *shardcore.ShardCore[M], spawned []EntityID) {
	for _, id := range spawned {
		if c.Direct(id) {
			f.setListed(id, true)
		}
	}
}

// fastEntityStopped forgets entity id, whose actor has stopped, then tells the core.
func fastEntityStopped[M any](f *fastPath, c *shardcore.ShardCore[M], now time.Time, id EntityID) shardcore.ShardDecisions[M] {
	f.remove(id)
	return c.EntityTerminated(now, id)
}

// toEntity sends msg to the running entity id, the shard's own delivery, in the trace
// context tc (nil for none); false when id has no actor.
func (f *fastPath) toEntity(id EntityID, msg any, sender actor.Ref, tc *trace.SpanContext) bool {
	ref, ok := f.entities[id]
	if ok {
		_ = deliverTo(ref, msg, sender, tc)
	}
	return ok
}

// stopEntity unlists entity id and then sends it msg, its stop message: a message the
// region or an EntityRef sends direct is in its mailbox before the stop message, or is
// not sent direct at all.
func (f *fastPath) stopEntity(id EntityID, msg any, sender actor.Ref) {
	f.setListed(id, false)
	if ref, ok := f.entities[id]; ok {
		_ = ref.Send(msg, sender)
	}
}

// newFastPath returns a closed fast path with no entity; with trackUse it marks the
// entities it delivers to (for idle passivation).
func newFastPath(trackUse bool) *fastPath {
	f := &fastPath{entities: map[EntityID]actor.Ref{}, unlisted: map[EntityID]struct{}{}, trackUse: trackUse}
	f.nextEpoch()
	return f
}

// The methods below move the epoch under mu whenever an entity that a look-up may
// have found reachable stops being so (or gets another Ref), and when the marks of
// use are taken; making an entity reachable moves nothing, as no look-up can have
// found it so before.

// setOpen allows (or stops) direct delivery. Once closed after it was open, the fast
// path stays closed (shut): the shard is handing off or stopping.
func (f *fastPath) setOpen(open bool) {
	f.mu.Lock()
	if f.open && !open {
		f.nextEpoch()
		f.shut = true
	}
	f.open = open && !f.shut
	f.mu.Unlock()
}

// add records the running entity id, not yet listed.
func (f *fastPath) add(id EntityID, ref actor.Ref) {
	f.mu.Lock()
	if _, ok := f.entities[id]; ok {
		f.nextEpoch() // a new Ref for id: what a look-up found is out of date
	}
	f.entities[id] = ref
	f.unlisted[id] = struct{}{}
	f.mu.Unlock()
}

// remove forgets entity id (its actor has stopped).
func (f *fastPath) remove(id EntityID) {
	f.mu.Lock()
	f.nextEpoch()
	delete(f.entities, id)
	delete(f.unlisted, id)
	delete(f.used, id)
	f.mu.Unlock()
}

// setListed makes entity id reachable directly, or only through the shard again.
func (f *fastPath) setListed(id EntityID, listed bool) {
	f.mu.Lock()
	if f.shut {
		// Nothing is reachable, nor will be: a hand-off that stops every entity records
		// nothing per entity.
		f.mu.Unlock()
		return
	}
	if _, ok := f.entities[id]; ok && !listed {
		if _, already := f.unlisted[id]; !already {
			f.nextEpoch()
		}
		f.unlisted[id] = struct{}{}
	} else {
		delete(f.unlisted, id)
	}
	f.mu.Unlock()
}

// usedSinceLastLook returns the entities delivered to directly since the last call,
// and clears their marks.
func (f *fastPath) usedSinceLastLook() []EntityID {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.used) == 0 {
		return nil
	}
	out := make([]EntityID, 0, len(f.used))
	for id := range f.used {
		out = append(out, id)
	}
	f.used = nil
	f.nextEpoch() // EntityRefs must look up (and mark) their entities again
	return out
}
