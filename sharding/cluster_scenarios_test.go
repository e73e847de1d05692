package sharding

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// The seeds' scenarios 1 and 2: a new shard goes to the region with the fewest shards
// (ties to the oldest member), and a message for a shard of another node is forwarded
// there; the reply comes from the entity on that node.
func TestClusterAllocationAndForwarding(t *testing.T) {
	sc := startShardCluster(t, 3, func(int) EntityConfig {
		c := persistentCounterConfig()
		c.MinMembers = 3
		return c
	})
	events := sc.events(0) // node 0 is the oldest: the coordinator runs there
	probe := testkit.NewProbe(t, sc.nodes[2].System)
	// Three entities in three different shards, all sent through node 2.
	ids := []EntityID{}
	seen := map[ShardID]bool{}
	for _, id := range entityIDs(50) {
		s := HashShardID(id, 10)
		if !seen[s] {
			seen[s] = true
			ids = append(ids, id)
		}
		if len(ids) == 3 {
			break
		}
	}
	want := sc.byAge() // fewest shards first, ties to the oldest
	for k, id := range ids {
		probe.Send(sc.nodes[2].region, Envelope{EntityID: id, Message: Increment{By: 1}})
		probe.ExpectMsg(1, 10*time.Second)
		if got := probe.LastSender().Address(); got != sc.addressOf(want[k]) {
			t.Fatalf("entity %s answered from %v, want node %d (%v)", id, got, want[k], sc.addressOf(want[k]))
		}
		a := testkit.ExpectMsgType[ShardAllocated](events)
		if a.Shard != HashShardID(id, 10) || a.To != sc.addressOf(want[k]) {
			t.Fatalf("allocation %+v, want shard %s to node %d", a, HashShardID(id, 10), want[k])
		}
	}
	// Known homes: the next message goes straight there, without the coordinator.
	probe.Send(sc.nodes[1].region, Envelope{EntityID: ids[0], Message: GetCount{}})
	probe.ExpectMsg(1)
	events.ExpectNoMsg(200 * time.Millisecond)
}

// A proxy-only region delivers to entities on other nodes and hosts none.
func TestClusterProxyOnly(t *testing.T) {
	// Nodes 0 and 1 have the role "backend" and host the type; node 2 runs a proxy.
	sc := startShardClusterWith(t, multinode.Options{Nodes: 3, Configure: func(i int, c *cluster.Config) {
		if i < 2 {
			c.Roles = []string{"backend"}
		}
	}}, func(i int) EntityConfig { return persistentCounterConfig() })
	cfg := persistentCounterConfig()
	cfg.Role = "backend"
	for i := range 2 {
		if _, err := sc.nodes[i].sharding.Start("Other", cfg); err != nil {
			t.Fatal(err)
		}
	}
	// On a node without the role, Start starts a proxy.
	proxy, err := sc.nodes[2].sharding.Start("Other", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if proxy.Path() != "/system/sharding/OtherProxy" {
		t.Fatalf("proxy path %s", proxy.Path())
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
	defer cancel()
	for _, id := range entityIDs(10) {
		n, err := actor.Ask[int](ctx, proxy, Envelope{EntityID: "other-" + id, Message: Increment{By: 2}})
		if err != nil || n != 2 {
			t.Fatalf("entity %s through the proxy: %d, %v", id, n, err)
		}
	}
	st, err := actor.Ask[ShardRegionState](ctx, proxy, GetShardRegionState{})
	if err != nil || len(st.Shards) != 0 {
		t.Fatalf("proxy state %+v, %v: want no shard", st, err)
	}
	// Both regions of the role register (the first may still be retrying: it started
	// before the coordinator singleton did).
	awaitRegistered(t, proxy, 2, "the proxy's type")
}

// A node crashes: its shards move to the survivors, and the persistent entities there
// recover their counts.
func TestClusterCrashMovesShards(t *testing.T) {
	sc := startShardCluster(t, 3, func(int) EntityConfig { return persistentCounterConfig() })
	ids := entityIDs(20)
	for j, id := range ids {
		sc.mustAsk(j%3, id, Increment{By: 1})
	}
	before := sc.homes(0, 1, 2)
	onCrashed := 0
	for _, where := range before {
		if where[0] == 2 {
			onCrashed++
		}
	}
	if onCrashed == 0 {
		t.Fatalf("no shard on node 2: %v", before)
	}
	sc.mc.Crash(2)
	for _, id := range ids {
		if n := sc.incrementEventually(0, id, 20*time.Second); n != 2 {
			t.Fatalf("entity %s: count %d after the crash, want 2", id, n)
		}
	}
	after := sc.homes(0, 1)
	for s, where := range after {
		if len(where) != 1 {
			t.Fatalf("shard %s hosted on %v", s, where)
		}
	}
	if len(after) != len(before) {
		t.Fatalf("%d shards after the crash, %d before", len(after), len(before))
	}
}

// The coordinator's node crashes: shards whose homes are known stay reachable at once,
// and after the coordinator has moved every entity answers with its count intact.
func TestClusterCoordinatorCrash(t *testing.T) {
	sc := startShardCluster(t, 3, func(int) EntityConfig { return persistentCounterConfig() })
	ids := entityIDs(20)
	for _, id := range ids {
		sc.mustAsk(1, id, Increment{By: 1}) // node 1 learns every home
	}
	homes := sc.homes(0, 1, 2)
	sc.mc.Crash(0)
	known := 0
	for _, id := range ids {
		where := homes[HashShardID(id, 10)]
		if where[0] == 0 {
			continue
		}
		known++
		n, err := sc.ask(1, id, GetCount{}, time.Second)
		if err != nil || n != 1 {
			t.Fatalf("entity %s on node %d while the coordinator is down: %d, %v", id, where[0], n, err)
		}
	}
	if known == 0 {
		t.Fatalf("every shard was on node 0: %v", homes)
	}
	for _, id := range ids {
		if n := sc.incrementEventually(1, id, 20*time.Second); n != 2 {
			t.Fatalf("entity %s: count %d, want 2", id, n)
		}
	}
}
