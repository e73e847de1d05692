package sharding

import (
	"testing"
)

// Counters reached from every node: each increment's reply comes from the one entity,
// wherever it lives, and the shards spread over the three nodes.
func TestClusterCountersFromEveryNode(t *testing.T) {
	sc := startShardCluster(t, 3, func(int) EntityConfig { return persistentCounterConfig() })
	ids := entityIDs(20)
	for round := range 3 {
		for j, id := range ids {
			node := (j + round) % 3
			if got := sc.mustAsk(node, id, Increment{By: 1}); got != round+1 {
				t.Fatalf("entity %s via node %d: count %d, want %d", id, node, got, round+1)
			}
		}
	}
	homes := sc.homes(0, 1, 2)
	perNode := map[int]int{}
	for s, where := range homes {
		if len(where) != 1 {
			t.Fatalf("shard %s hosted on %v", s, where)
		}
		perNode[where[0]]++
	}
	if len(perNode) != 3 {
		t.Fatalf("shards per node %v: want all three nodes used", perNode)
	}
}
