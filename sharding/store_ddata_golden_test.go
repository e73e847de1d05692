package sharding

import (
	"encoding/hex"
	"testing"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/ddata"
	"github.com/troupe-go/troupe/internal/shardcore"
	"github.com/troupe-go/troupe/serialization"
)

// The distributed-data register that holds a coordinator's state is a storage format
// too (see wireGoldens): replicas of another version read it.
func TestCoordStateRegisterGolden(t *testing.T) {
	const want = "94ae74726f7570653a2f2f7340683a312acd04d284a770726f7869657392b274726f7570653a2f2f7340683a382f702331b274726f7570653a2f2f7340683a392f702331a7726567696f6e739382a6726567696f6eb274726f7570653a2f2f7340683a312f722331a673686172647392a17aa16182a6726567696f6eb274726f7570653a2f2f7340683a322f722331a673686172647391a16d82a6726567696f6eb274726f7570653a2f2f7340683a332f722331a6736861726473c0a872656d656d626572c3ab756e616c6c6f636174656492a162a171"
	node := cluster.UniqueAddress{Addr: "troupe://s@h:1", UID: 42}
	r := ddata.NewLWWRegister(node, *sampleState(), func(int64, shardcore.CoordState) int64 { return 1234 })
	man, b, err := serialization.NewRegistry().Marshal(coordStateRegister(r))
	if err != nil {
		t.Fatal(err)
	}
	if man != "troupe.sharding.CoordinatorStateRegister.v1" {
		t.Errorf("manifest %q", man)
	}
	if got := hex.EncodeToString(b); got != want {
		t.Errorf("bytes\n%s\nwant\n%s", got, want)
	}
}

// sampleState is internal/shardcore's sample state (see its wireGoldens), built from
// events: the shards of a region that terminates are left without a home.
func sampleState() *shardcore.CoordState {
	s := shardcore.NewCoordState(true)
	for _, e := range []shardcore.CoordEvent{
		shardcore.RegionRegistered{Region: "troupe://s@h:2/r#1"},
		shardcore.RegionRegistered{Region: "troupe://s@h:1/r#1"},
		shardcore.RegionRegistered{Region: "troupe://s@h:3/r#1"},
		shardcore.RegionRegistered{Region: "troupe://s@h:4/r#1"},
		shardcore.RegionProxyRegistered{Proxy: "troupe://s@h:9/p#1"},
		shardcore.RegionProxyRegistered{Proxy: "troupe://s@h:8/p#1"},
		shardcore.ShardHomeAllocated{Shard: "z", Region: "troupe://s@h:1/r#1"},
		shardcore.ShardHomeAllocated{Shard: "a", Region: "troupe://s@h:1/r#1"},
		shardcore.ShardHomeAllocated{Shard: "m", Region: "troupe://s@h:2/r#1"},
		shardcore.ShardHomeAllocated{Shard: "q", Region: "troupe://s@h:4/r#1"},
		shardcore.ShardHomeAllocated{Shard: "b", Region: "troupe://s@h:4/r#1"},
		shardcore.RegionTerminated{Region: "troupe://s@h:4/r#1"},
	} {
		if err := s.Apply(e); err != nil {
			panic(err)
		}
	}
	return s
}
