package shardcore

import (
	"fmt"
	"iter"
	"maps"
	"slices"

	"github.com/troupe-go/troupe/sharding/placement"
)

// What the shells read of the cores between inputs: for the events and metrics they
// publish, the queries they answer and the direct routes of the fast path. Nothing here
// changes a core.

// HandOff reports the running hand-off of shard s: the region it leaves and whether a
// rebalance started it.
func (c *Coordinator) HandOff(s placement.ShardID) (from placement.RegionID, rebalance, ok bool) {
	w := c.workers[s]
	if w == nil {
		return "", false, false
	}
	return w.from, w.rebalance, true
}

// HandOffs returns how many hand-offs run.
func (c *Coordinator) HandOffs() int { return len(c.workers) }

// Home returns the stored home of shard s.
func (c *Coordinator) Home(s placement.ShardID) (placement.RegionID, bool) {
	r, ok := c.state.shards[s]
	return r, ok
}

// Regions returns the registered regions (proxies excluded), sorted.
func (c *Coordinator) Regions() []placement.RegionID { return c.state.SortedRegions() }

// Snapshot returns a copy of the stored state, to save as a snapshot.
func (c *Coordinator) Snapshot() *CoordState { return c.state.Clone() }

// AllShards returns the shards the state knows, with a home or (with remember-entities)
// without one, sorted.
func (s *CoordState) AllShards() []placement.ShardID {
	all := slices.Collect(maps.Keys(s.shards))
	for id := range s.unallocated {
		all = append(all, id)
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// Registered reports whether the region is registered with a coordinator.
func (r *RegionCore[M]) Registered() bool { return r.registered }

// ShuttingDown reports whether the region leaves (GracefulShutdown).
func (r *RegionCore[M]) ShuttingDown() bool { return r.shuttingDown }

// Stopped reports whether the region's core has stopped: its shell stops the actor.
func (r *RegionCore[M]) Stopped() bool { return r.stopped }

// LocalShards returns how many shard actors of this region run or stop.
func (r *RegionCore[M]) LocalShards() int { return len(r.local) }

// Buffered returns how many messages the region holds for shards.
func (r *RegionCore[M]) Buffered() int { return r.total }

// Owed returns how many hand-overs the region owes the next homes of shards.
func (r *RegionCore[M]) Owed() int { return len(r.owes) }

// HomeShards yields the shards whose home the region knows (its own included), in no
// order.
func (r *RegionCore[M]) HomeShards() iter.Seq[placement.ShardID] { return maps.Keys(r.homes) }

// Holding describes, one line each in shard order, the shards the region holds
// messages for and the hand-overs it owes: what a drained cluster should not have.
func (r *RegionCore[M]) Holding() []string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(r.buffers)) {
		home, known := r.homes[id]
		out = append(out, fmt.Sprintf("%s holds %s (home %q known %v, waiting for %q, registered %v)",
			r.self, id, home, known, r.waiting[id], r.registered))
	}
	for _, id := range slices.Sorted(maps.Keys(r.owes)) {
		out = append(out, fmt.Sprintf("%s owes %s a hand-over (target %q)", r.self, id, r.target[id]))
	}
	return out
}

// ID returns the shard's ID.
func (s *ShardCore[M]) ID() placement.ShardID { return s.id }

// Stopped reports whether the shard is done (after a hand-off).
func (s *ShardCore[M]) Stopped() bool { return s.phase == shardStopped }

// Buffered returns how many messages the shard holds for entities.
func (s *ShardCore[M]) Buffered() int { return s.buffered }

// Passivated returns how many entities passivation has stopped so far.
func (s *ShardCore[M]) Passivated() uint64 { return s.passivated }

// Direct reports whether entity id is active with nothing held for it: a message may
// reach it directly, bypassing the shard.
func (s *ShardCore[M]) Direct(id placement.EntityID) bool {
	e := s.entities[id]
	return e != nil && e.state == entActive && !s.holds(e)
}

// Held returns the messages the shard holds and has not delivered: those that came
// while it loaded, then each entity's, entity by entity. The shell gives them to dead
// letters when the shard stops without a hand-off.
func (s *ShardCore[M]) Held() []M {
	var out []M
	for _, q := range s.early {
		out = append(out, q.msg)
	}
	for _, e := range s.entities {
		for _, q := range s.buf(e) {
			out = append(out, q.msg)
		}
	}
	return out
}
