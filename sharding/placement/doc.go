// Package placement holds what a sharding allocation strategy sees and decides: the
// names of shards, entities and regions (ShardID, EntityID, RegionID), the regions and
// cluster members it chooses among (RegionInfo, NodeInfo), and the strategy itself
// (AllocationStrategy, with its questions AllocationRequest and RebalanceRequest).
//
// Package sharding gives the same types under the same names, so a program that uses
// sharding needs no import of this package; a custom strategy may be written against
// either. Package sharding's LeastShardStrategy is the default strategy. The sharding
// coordinator's pure core (under internal/) uses these types without depending on the
// actors around it.
//
// Nothing here does I/O or keeps state: these are values and an interface.
package placement
