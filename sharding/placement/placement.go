package placement

import (
	"errors"

	"github.com/troupe-go/troupe/member"
)

// ShardID names a shard: a group of entities that live, move and stop together. The
// shard of an entity must never change while the cluster runs (see package sharding's
// overview).
type ShardID string

// EntityID names one entity within its entity type. It is unique per type across the
// cluster; an entity runs in at most one place at a time.
type EntityID string

// RegionID identifies a shard region (or a proxy-only region) to the sharding cores and
// to allocation strategies. The running system uses the region actor's full path with
// its incarnation uid (actor.Ref.URI, as in troupe://sys@10.0.0.5:2552/system/sharding/cart#42),
// so a region that restarts is a new RegionID. Strategies treat it as opaque: compare it,
// use it as a map key, return one of the IDs they were given.
type RegionID string

// ErrNoRegion reports that an allocation strategy was asked for a home while no
// region can take a shard: none is registered, or every one is shutting down.
var ErrNoRegion = errors.New("sharding: no region can host the shard")

// AllocationStrategy decides where shards live: which region hosts a shard that has no
// home yet, and which shards to move away from their region to even out the load. The
// coordinator calls it from its own goroutine, one call at a time, and waits for the
// answer: an implementation must not block (no I/O, no locks held by others). It may
// keep state between calls.
//
// Package sharding's NewLeastShardStrategy returns the default strategy. A custom one
// must honour the rules its methods document; the coordinator checks the answers and
// ignores (and logs) a region that cannot host or a shard that cannot move.
type AllocationStrategy interface {
	// AllocateShard returns the region that is to host req.Shard. It must return one of
	// req.Regions, or an error (wrapping ErrNoRegion when none fits); the coordinator
	// then leaves the shard without a home and the requester asks again later, except a
	// requester that is leaving: it is told, and drops what it holds for the shard.
	//
	// A strategy that keeps shards for some regions (a node, a zone) should return
	// another of req.Regions when none of those is offered (they are leaving or gone):
	// refusing leaves the shard homeless until one of them comes back, and a shard
	// handed off by a region that leaves then has no next home.
	AllocateShard(req AllocationRequest) (RegionID, error)

	// Rebalance returns shards to move, possibly none. Each is handed off by its current
	// region and then allocated again through AllocateShard. Shards in
	// req.InProgress, and shards no region holds, are ignored by the coordinator.
	Rebalance(req RebalanceRequest) ([]ShardID, error)
}

// AllocationRequest is the question AllocateShard answers.
type AllocationRequest struct {
	// Requester is the region (or proxy) that asked for the shard's home first; a
	// strategy may prefer it, to keep a shard near its first user. It is not always
	// one of Regions (a proxy cannot host, and the coordinator itself asks when it
	// re-homes shards eagerly, with an empty Requester).
	Requester RegionID
	// Shard is the shard to place.
	Shard ShardID
	// Regions are the regions that may host it, in no particular order: registered,
	// not shutting down, not terminating. Never empty.
	Regions []RegionInfo
}

// RebalanceRequest is the question Rebalance answers.
type RebalanceRequest struct {
	// Regions are all registered regions with their shards. Regions that are shutting
	// down or terminating are included with ShuttingDown set: their shards are being
	// handed off already and they must not receive shards.
	Regions []RegionInfo
	// InProgress holds the shards that are being handed off now (the strategy's own
	// copy).
	InProgress map[ShardID]bool
	// Members are the cluster members the strategy should take into account (those
	// that could host this entity type or route to it), with their status and
	// reachability. The default strategy does not rebalance while any of them is
	// Joining or unreachable.
	Members []NodeInfo
}

// RegionInfo describes one region to an allocation strategy.
type RegionInfo struct {
	// Region identifies the region.
	Region RegionID
	// Shards are the shards the region hosts, in the order they were allocated to it.
	// The slice is the strategy's own copy.
	Shards []ShardID
	// Node describes the region's cluster member. Node.Status is 0 when the coordinator
	// does not know the member (yet); the default strategy skips such regions.
	Node NodeInfo
	// ShuttingDown is true for a region that is leaving gracefully or whose node was
	// removed: it never receives a shard.
	ShuttingDown bool
}

// NodeInfo is what sharding needs to know about a cluster member.
type NodeInfo struct {
	// Address identifies the member; among equals the lower address is preferred.
	Address member.UniqueAddress
	// Status is the member's status; 0 means unknown.
	Status member.MemberStatus
	// AppVersion is the member's application version; higher versions are preferred
	// during a rolling upgrade ("1.10.0" is higher than "1.9.2").
	AppVersion string
	// UpNumber is the member's age: lower is older, 0 means not Up yet (youngest).
	UpNumber int64
	// Unreachable is true while the failure detector has lost contact with the member.
	Unreachable bool
}
