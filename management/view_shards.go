package management

import (
	"maps"
	"slices"

	"github.com/troupe-go/troupe/sharding"
)

// ShardView is one shard and how many entities run in it.
type ShardView struct {
	ShardID     string `json:"shardId"`
	EntityCount int    `json:"entityCount"`
}

// EntityTypesView answers GET /cluster/shards: the entity types started on this node.
type EntityTypesView struct {
	SelfNode string `json:"selfNode"`
	// EntityTypes lists them in name order.
	EntityTypes []EntityTypeView `json:"entityTypes"`
}

// EntityTypeView is one entity type started on this node.
type EntityTypeView struct {
	Name string `json:"name"`
	// Proxy is true for a proxy-only region: it hosts no shard.
	Proxy bool `json:"proxy"`
}

// RegionView answers GET /cluster/shards/{type}: this node's shards of the type.
type RegionView struct {
	SelfNode string `json:"selfNode"`
	TypeName string `json:"typeName"`
	// Shards holds the shards hosted here, in ID order.
	Shards []ShardView `json:"shards"`
	// Failed lists the shards that did not answer in time.
	Failed []string `json:"failed"`
}

// ClusterShardsView answers GET /cluster/shards/{type}/stats: the shards of the type
// on every node that hosts a region of it.
type ClusterShardsView struct {
	TypeName string `json:"typeName"`
	// Regions holds one entry per node, in address order.
	Regions []RegionStatsView `json:"regions"`
	// Failed lists the nodes whose region did not answer in time.
	Failed []string `json:"failed"`
}

// RegionStatsView is one node's region in ClusterShardsView.
type RegionStatsView struct {
	Node   string      `json:"node"`
	Shards []ShardView `json:"shards"`
	// Failed lists the shards of that node that did not answer in time.
	Failed []string `json:"failed"`
}

func shardIDs(ids []sharding.ShardID) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, string(id))
	}
	return out
}

// regionView turns a region's state into its view.
func regionView(self, typeName string, st sharding.ShardRegionState) RegionView {
	v := RegionView{SelfNode: self, TypeName: typeName, Shards: make([]ShardView, 0, len(st.Shards)), Failed: shardIDs(st.Failed)}
	for _, s := range st.Shards {
		v.Shards = append(v.Shards, ShardView{ShardID: string(s.Shard), EntityCount: len(s.Entities)})
	}
	return v
}

// shardsOf returns a region's stats as shard views in ID order.
func shardsOf(st sharding.ShardRegionStats) []ShardView {
	out := make([]ShardView, 0, len(st.Shards))
	for _, id := range slices.Sorted(maps.Keys(st.Shards)) {
		out = append(out, ShardView{ShardID: string(id), EntityCount: st.Shards[id]})
	}
	return out
}

// clusterShardsView turns cluster-wide sharding stats into their view.
func clusterShardsView(typeName string, st sharding.ClusterShardingStats) ClusterShardsView {
	v := ClusterShardsView{TypeName: typeName, Regions: make([]RegionStatsView, 0, len(st.Regions)), Failed: append([]string{}, st.Failed...)}
	for _, node := range slices.Sorted(maps.Keys(st.Regions)) {
		r := st.Regions[node]
		v.Regions = append(v.Regions, RegionStatsView{Node: node, Shards: shardsOf(r), Failed: shardIDs(r.Failed)})
	}
	return v
}
