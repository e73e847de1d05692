package sharding_test

import (
	"context"
	"fmt"
	"time"

	"github.com/troupe-go/troupe/actor"

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

type (
	increment struct{}
	getCount  struct{}
)

// counterEntity counts increments; it learns its ID from its context.
type counterEntity struct{ n int }

func (c *counterEntity) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case increment:
		c.n++
	case getCount:
		_ = ctx.Respond(fmt.Sprintf("%s: %d", sharding.EntityIDOf(ctx), c.n))
	}
}

// An entity type on a single node (a system without a cluster is a cluster of one):
// typed entity references send to entities by ID; the region creates them on demand.
func Example() {
	sys, _ := actor.New("shop", actor.Config{})
	defer func() { _ = sys.Shutdown(context.Background()) }()

	s, err := sharding.Start(sys, sharding.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := s.Start("Counter", sharding.EntityConfig{
		Entity: actor.PropsOf(func() actor.Actor { return &counterEntity{} }),
	}); err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, id := range []sharding.EntityID{"a", "b", "a"} {
		ref, _ := sharding.EntityRefFor[any](sys, "Counter", id)
		_ = ref.Tell(increment{})
	}
	for _, id := range []sharding.EntityID{"a", "b"} {
		ref, _ := sharding.EntityRefFor[any](sys, "Counter", id)
		reply, err := sharding.Ask[string, any](ctx, ref, getCount{})
		fmt.Println(reply, err)
	}
	// Output:
	// a: 2 <nil>
	// b: 1 <nil>
}
