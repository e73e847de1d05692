package shardcore

import (
	"encoding/hex"
	"testing"

	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/sharding/placement"
)

// The bytes a registry writes for the coordinator's stored state, its events and the
// Coordinator protocol's messages are a storage and wire format: a journal, a
// distributed-data register or a node of another version reads them. These goldens pin
// them, name and bytes; a change that fails here breaks stored state or a rolling
// upgrade.
var wireGoldens = []struct {
	value    any
	manifest string
	hex      string
}{
	{sampleState(), "troupe.sharding.CoordinatorState.v1", "84a7726567696f6e739382a6726567696f6eb274726f7570653a2f2f7340683a312f722331a673686172647392a17aa16182a6726567696f6eb274726f7570653a2f2f7340683a322f722331a673686172647391a16d82a6726567696f6eb274726f7570653a2f2f7340683a332f722331a6736861726473c0a770726f7869657392b274726f7570653a2f2f7340683a382f702331b274726f7570653a2f2f7340683a392f702331ab756e616c6c6f636174656492a162a171a872656d656d626572c3"},
	{RegionRegistered{Region: "r1"}, "troupe.sharding.RegionRegistered.v1", "81a6726567696f6ea27231"},
	{RegionProxyRegistered{Proxy: "p1"}, "troupe.sharding.RegionProxyRegistered.v1", "81a570726f7879a27031"},
	{RegionTerminated{Region: "r1"}, "troupe.sharding.RegionTerminated.v1", "81a6726567696f6ea27231"},
	{RegionProxyTerminated{Proxy: "p1"}, "troupe.sharding.RegionProxyTerminated.v1", "81a570726f7879a27031"},
	{ShardHomeAllocated{Shard: "s1", Region: "r1"}, "troupe.sharding.ShardHomeAllocated.v1", "82a57368617264a27331a6726567696f6ea27231"},
	{ShardHomesAllocated{Homes: []RegionShards{{Region: "r2", Shards: []placement.ShardID{"s9", "s3"}}, {Region: "r1", Shards: []placement.ShardID{"s1"}}}}, "troupe.sharding.ShardHomesAllocated.v1", "81a5686f6d65739282a6726567696f6ea27232a673686172647392a27339a2733382a6726567696f6ea27231a673686172647391a27331"},
	{ShardHomeDeallocated{Shard: "s1"}, "troupe.sharding.ShardHomeDeallocated.v1", "81a57368617264a27331"},
	{CoordinatorInitialized{}, "troupe.sharding.CoordinatorInitialized.v1", "80"},

	{Register{}, "troupe.sharding.Register.v1", "80"},
	{RegisterProxy{}, "troupe.sharding.RegisterProxy.v1", "80"},
	{RegisterAck{}, "troupe.sharding.RegisterAck.v1", "80"},
	{RegisterAck{Epoch: 1 << 40}, "troupe.sharding.RegisterAck.v1", "81a565706f6368cf0000010000000000"},
	{GetShardHome{Shard: "s1"}, "troupe.sharding.GetShardHome.v1", "81a57368617264a27331"},
	{GetShardHome{Shard: "s1", HandOver: true}, "troupe.sharding.GetShardHome.v1", "82a57368617264a27331a868616e644f766572c3"},
	{ShardHome{Shard: "s1", Region: "r1"}, "troupe.sharding.ShardHome.v1", "82a57368617264a27331a6726567696f6ea27231"},
	{ShardHomes{Homes: []ShardHomesEntry{{Region: "r1", Shards: []placement.ShardID{"s1", "s2"}}}}, "troupe.sharding.ShardHomes.v1", "81a5686f6d65739182a6726567696f6ea27231a673686172647392a27331a27332"},
	{HostShard{Shard: "s1"}, "troupe.sharding.HostShard.v1", "81a57368617264a27331"},
	{HostShard{Shard: "s1", Predecessor: "r0"}, "troupe.sharding.HostShard.v1", "82a57368617264a27331ab7072656465636573736f72a27230"},
	{ShardStarted{Shard: "s1"}, "troupe.sharding.ShardStarted.v1", "81a57368617264a27331"},
	{BeginHandOff{Shard: "s1", ID: 7}, "troupe.sharding.BeginHandOff.v1", "82a57368617264a27331a2696407"},
	{BeginHandOffAck{Shard: "s1", Region: "r1", ID: 7}, "troupe.sharding.BeginHandOffAck.v1", "83a57368617264a27331a6726567696f6ea27231a2696407"},
	{HandOff{Shard: "s1"}, "troupe.sharding.HandOff.v1", "81a57368617264a27331"},
	{ShardStopped{Shard: "s1", Pending: true}, "troupe.sharding.ShardStopped.v1", "82a57368617264a27331a770656e64696e67c3"},
	{GracefulShutdownReq{}, "troupe.sharding.GracefulShutdownReq.v1", "80"},
	{GracefulShutdownAck{Epoch: 3}, "troupe.sharding.GracefulShutdownAck.v1", "81a565706f636803"},
	{RegionStopped{}, "troupe.sharding.RegionStopped.v1", "80"},
	{StopShards{Shards: []placement.ShardID{"s1", "s2"}}, "troupe.sharding.StopShards.v1", "81a673686172647392a27331a27332"},
	{HandOverTo{Shard: "s1", Region: "r2"}, "troupe.sharding.HandOverTo.v1", "82a57368617264a27331a6726567696f6ea27232"},
	{NoShardHome{Shard: "s1"}, "troupe.sharding.NoShardHome.v1", "81a57368617264a27331"},
	{HandOverAck{Shard: "s1"}, "troupe.sharding.HandOverAck.v1", "81a57368617264a27331"},
}

func TestWireGoldens(t *testing.T) {
	reg := serialization.NewRegistry() // knows them without registration
	for _, g := range wireGoldens {
		man, b, err := reg.Marshal(g.value)
		if err != nil {
			t.Fatalf("%T: %v", g.value, err)
		}
		if man != g.manifest {
			t.Errorf("%T: manifest %q, want %q", g.value, man, g.manifest)
		}
		if got := hex.EncodeToString(b); got != g.hex {
			t.Errorf("%T %+v: bytes\n%s\nwant\n%s", g.value, g.value, got, g.hex)
		}
	}
}
