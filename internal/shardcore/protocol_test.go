package shardcore

import (
	"reflect"
	"testing"

	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/sharding/placement"
)

func TestProtocolRoundTrip(t *testing.T) {
	reg := serialization.NewRegistry() // knows them without registration
	msgs := []any{
		Register{}, RegisterProxy{}, RegisterAck{},
		GetShardHome{Shard: "s"}, ShardHome{Shard: "s", Region: reg1},
		ShardHomes{Homes: []ShardHomesEntry{{Region: reg1, Shards: []placement.ShardID{"a", "b"}}}},
		HostShard{Shard: "s"}, HostShard{Shard: "s", Predecessor: reg1},
		ShardStarted{Shard: "s"}, BeginHandOff{Shard: "s"}, BeginHandOffAck{Shard: "s", Region: reg1},
		HandOff{Shard: "s"}, ShardStopped{Shard: "s"}, ShardStopped{Shard: "s", Pending: true},
		GracefulShutdownReq{}, RegionStopped{}, StopShards{Shards: []placement.ShardID{"a"}},
	}
	for _, m := range msgs {
		man, b, err := reg.Marshal(m)
		if err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		v, err := reg.Unmarshal(man, b)
		if err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		if !reflect.DeepEqual(v, m) {
			t.Fatalf("%T round trip: %+v, want %+v", m, v, m)
		}
	}
}

const reg1 = placement.RegionID("troupe://sys@10.0.0.1:2552/system/sharding/t#1")
