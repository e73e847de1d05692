package sharding_test

import (
	"fmt"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/sharding"
)

// The least-shard strategy places a new shard on the region with the fewest shards, and
// moves shards from the fuller regions towards a new, empty one: with 9 shards on 3
// regions each should hold 3, so a gives up 2 and b 1.
func ExampleLeastShardStrategy() {
	strategy, err := sharding.NewLeastShardStrategy(sharding.LeastShardConfig{
		RebalanceAbsoluteLimit: 10,  // the newer algorithm, at most 10 shards a round
		RebalanceRelativeLimit: 0.5, // and at most half of all shards
	})
	if err != nil {
		panic(err)
	}
	node := func(host string, age int64) sharding.NodeInfo {
		return sharding.NodeInfo{
			Address:  cluster.UniqueAddress{Addr: "troupe://shop@" + host + ":2552", UID: 1},
			Status:   cluster.Up,
			UpNumber: age,
		}
	}
	regions := []sharding.RegionInfo{
		{Region: "a", Node: node("10.0.0.1", 1), Shards: []sharding.ShardID{"1", "2", "3", "4", "5"}},
		{Region: "b", Node: node("10.0.0.2", 2), Shards: []sharding.ShardID{"6", "7", "8", "9"}},
		{Region: "c", Node: node("10.0.0.3", 3)}, // a node that just joined
	}

	home, err := strategy.AllocateShard(sharding.AllocationRequest{Shard: "10", Regions: regions})
	fmt.Println("shard 10 goes to", home, err)

	var members []sharding.NodeInfo
	for _, r := range regions {
		members = append(members, r.Node)
	}
	moves, err := strategy.Rebalance(sharding.RebalanceRequest{Regions: regions, Members: members})
	fmt.Println("move", moves, err)
	// Output:
	// shard 10 goes to c <nil>
	// move [1 2 6] <nil>
}
