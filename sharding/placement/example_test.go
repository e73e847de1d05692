package placement_test

import (
	"fmt"
	"strings"

	"github.com/troupe-go/troupe/member"
	"github.com/troupe-go/troupe/sharding/placement"
)

// zoneStrategy keeps every shard in one zone (here: the nodes whose address holds the
// zone's prefix) while a region there can take it, on the region there with the fewest
// shards; it falls back to any offered region, so that a shard still gets a home when
// the zone is gone. It never moves a shard.
type zoneStrategy struct{ zone string }

func (z zoneStrategy) AllocateShard(req placement.AllocationRequest) (placement.RegionID, error) {
	var best, fallback *placement.RegionInfo
	for i := range req.Regions {
		r := &req.Regions[i]
		if r.ShuttingDown {
			continue
		}
		if fallback == nil || len(r.Shards) < len(fallback.Shards) {
			fallback = r
		}
		if strings.Contains(r.Node.Address.Addr, z.zone) && (best == nil || len(r.Shards) < len(best.Shards)) {
			best = r
		}
	}
	switch {
	case best != nil:
		return best.Region, nil
	case fallback != nil:
		return fallback.Region, nil
	}
	return "", fmt.Errorf("%w: shard %q", placement.ErrNoRegion, req.Shard)
}

func (zoneStrategy) Rebalance(placement.RebalanceRequest) ([]placement.ShardID, error) {
	return nil, nil
}

// A custom allocation strategy; give it to sharding in its Config's
// AllocationStrategy. The coordinator asks it where each shard without a home goes.
func Example() {
	region := func(addr string, shards ...placement.ShardID) placement.RegionInfo {
		return placement.RegionInfo{
			Region: placement.RegionID(addr + "/system/sharding/cart#1"),
			Shards: shards,
			Node:   placement.NodeInfo{Address: member.UniqueAddress{Addr: addr, UID: 1}, Status: member.Up},
		}
	}
	var strategy placement.AllocationStrategy = zoneStrategy{zone: "@10.1."}
	req := placement.AllocationRequest{
		Shard: "42",
		Regions: []placement.RegionInfo{
			region("troupe://app@10.1.0.1:2552", "1", "2"),
			region("troupe://app@10.1.0.2:2552", "3"),
			region("troupe://app@10.2.0.1:2552"),
		},
	}
	home, _ := strategy.AllocateShard(req)
	fmt.Println(home)

	req.Regions = req.Regions[2:] // the zone's regions are gone
	home, _ = strategy.AllocateShard(req)
	fmt.Println(home)

	_, err := strategy.AllocateShard(placement.AllocationRequest{Shard: "42"})
	fmt.Println(err)
	// Output:
	// troupe://app@10.1.0.2:2552/system/sharding/cart#1
	// troupe://app@10.2.0.1:2552/system/sharding/cart#1
	// sharding: no region can host the shard: shard "42"
}
