package sharding

import "github.com/troupe-go/troupe/sharding/placement"

// ShardID names a shard: a group of entities that live, move and stop together. It
// is placement.ShardID, where allocation strategies find it.
type ShardID = placement.ShardID

// EntityID names one entity within its entity type. It is placement.EntityID.
type EntityID = placement.EntityID

// RegionID identifies a shard region (or a proxy-only region) to the sharding cores and
// to allocation strategies. It is placement.RegionID (see there).
type RegionID = placement.RegionID
