package sharding

import "github.com/troupe-go/troupe/sharding/placement"

// AllocationStrategy decides where shards live. It is placement.AllocationStrategy
// (see there for the rules an implementation keeps); NewLeastShardStrategy returns the
// default one.
type AllocationStrategy = placement.AllocationStrategy

// AllocationRequest is the question AllocationStrategy.AllocateShard answers. It is
// placement.AllocationRequest.
type AllocationRequest = placement.AllocationRequest

// RebalanceRequest is the question AllocationStrategy.Rebalance answers. It is
// placement.RebalanceRequest.
type RebalanceRequest = placement.RebalanceRequest

// RegionInfo describes one region to an allocation strategy. It is
// placement.RegionInfo.
type RegionInfo = placement.RegionInfo

// NodeInfo is what sharding needs to know about a cluster member. It is
// placement.NodeInfo.
type NodeInfo = placement.NodeInfo
