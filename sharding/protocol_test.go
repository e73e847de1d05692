package sharding

import (
	"reflect"
	"testing"

	"github.com/troupe-go/troupe/serialization"
)

func TestProtocolRoundTrip(t *testing.T) {
	reg := serialization.NewRegistry() // knows them without registration
	msgs := []any{
		msgRegister{}, msgRegisterProxy{}, msgRegisterAck{},
		msgGetShardHome{Shard: "s"}, msgShardHome{Shard: "s", Region: reg1},
		msgShardHomes{Homes: []shardHomesEntry{{Region: reg1, Shards: []ShardID{"a", "b"}}}},
		msgHostShard{Shard: "s"}, msgHostShard{Shard: "s", Predecessor: reg1},
		msgShardStarted{Shard: "s"}, msgBeginHandOff{Shard: "s"}, msgBeginHandOffAck{Shard: "s", Region: reg1},
		msgHandOff{Shard: "s"}, msgShardStopped{Shard: "s"}, msgShardStopped{Shard: "s", Pending: true},
		msgGracefulShutdownReq{}, msgRegionStopped{}, msgStopShards{Shards: []ShardID{"a"}},
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

const reg1 = RegionID("troupe://sys@10.0.0.1:2552/system/sharding/t#1")
