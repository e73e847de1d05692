package sharding

import (
	"fmt"
	"slices"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/shardcore"
	"go.uber.org/zap"
)

// How the region actor follows its coordinator: which one it registered with, and
// which coordinator messages it takes.

// clusterChanged re-registers when the coordinator's node changes.
func (r *regionActor) clusterChanged(ctx actor.Context) {
	oldest := r.view.oldest(r.cfg.Role)
	if oldest == r.oldest {
		return
	}
	r.oldest = oldest
	if oldest != "" {
		r.apply(ctx, r.core.CoordinatorLost())
	}
}

func (r *regionActor) registered(ctx actor.Context) {
	c := ctx.Sender()
	if c.IsZero() || c == r.coordinator {
		return
	}
	if !r.coordinator.IsZero() {
		ctx.Unwatch(r.coordinator)
	}
	r.coordinator = c
	ctx.Watch(c)
}

// maxGoneCoordinators bounds goneCoordinators: a coordinator's late RegisterAcks reach
// the region soon after its end, and only a few incarnations end in that while.
const maxGoneCoordinators = 4

// coordinatorGone remembers c, a coordinator that terminated (see fromAnother).
func (r *regionActor) coordinatorGone(c actor.Ref) {
	r.goneCoordinators = shardcore.Remember(r.goneCoordinators, c, maxGoneCoordinators)
}

// isCoordinatorMsg reports whether msg is one a coordinator sends a region.
func isCoordinatorMsg(msg any) bool {
	switch msg.(type) {
	case shardcore.RegisterAck, shardcore.ShardHome, shardcore.ShardHomes, shardcore.HostShard, shardcore.BeginHandOff, shardcore.HandOff,
		shardcore.HandOverTo, shardcore.NoShardHome, shardcore.GracefulShutdownAck:
		return true
	}
	return false
}

// fromAnother reports whether the message is a coordinator's, from another than the
// one this region is registered with, and so to be dropped. After the coordinator
// moves or crashes, what the previous one sent can arrive after the new one
// registered the region (they reach it on different connections): a ShardHome or
// HostShard from it would name a home the new coordinator may have changed since,
// and a shard could run in two regions at once; its RegisterAck would make the
// region follow it again. While the region is not registered (it has just learned
// that its coordinator is gone, and registers again) it takes them from anyone (but
// its core takes no late GracefulShutdownAck of the coordinator it lost:
// RegionCore.shutdownAck).
// Whatever the coordinator it registers with wants of it, that one asks again
// (homes on registration, HostShard until the shard starts, BeginHandOff on
// registration), so dropping loses nothing.
//
// While it is not registered it drops a stale RegisterAck: one of a coordinator it
// has seen terminate, or from a node where it no longer looks for the coordinator
// (StaleRegisterAck). The region registers again and again until answered, and a
// coordinator that stopped since it answered would have the region register with
// it, drop the running coordinator's messages, act on its own late ones (a
// ShardHomes naming homes that changed since), and relay other regions'
// BeginHandOffAcks to where they are lost.
func (r *regionActor) fromAnother(msg any, from actor.Ref) bool {
	if !isCoordinatorMsg(msg) || r.core == nil {
		return false
	}
	if r.core.Registered() && from == r.coordinator || !r.core.Registered() && !r.staleRegisterAck(msg, from) {
		return false
	}
	r.log.Debug("sharding: region drops a message of a coordinator it is not registered with",
		zap.String("type", fmt.Sprintf("%T", msg)), zap.Stringer("coordinator", from))
	return true
}

// StaleRegisterAck reports whether the message is a RegisterAck from a coordinator
// this region has seen terminate, or from a node that is no longer among those it
// registers with (regionActor.candidates): it answers a Register sent before the
// coordinator moved.
func (r *regionActor) staleRegisterAck(msg any, from actor.Ref) bool {
	if _, ok := msg.(shardcore.RegisterAck); !ok {
		return false
	}
	if slices.Contains(r.goneCoordinators, from) {
		return true
	}
	return !r.solo && !slices.Contains(r.view.coordinatorNodes(r.cfg.Role), from.Address().String())
}
