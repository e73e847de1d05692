package sharding

import (
	"fmt"
	"testing"
	"time"

	"github.com/troupe-go/troupe/testkit/multinode"
)

// The default stores on a cluster: the coordinator's state in distributed data. Counters
// answer from every node, and after the coordinator's node crashes the new coordinator
// reads the state back (majority reads) and every count is intact.
func TestDDataCoordinatorState(t *testing.T) {
	sc := startDDataShardCluster(t, 3, t.TempDir(), func(int) EntityConfig { return ddataCounterConfig() })
	ids := entityIDs(20)
	for j, id := range ids {
		sc.mustAsk(j%3, id, Increment{By: 1})
	}
	homes := sc.homes(0, 1, 2)
	sc.mc.Crash(0)
	for _, id := range ids {
		if n := sc.incrementEventually(1, id, 30*time.Second); n != 2 {
			t.Fatalf("entity %s: count %d, want 2", id, n)
		}
	}
	// Shards of the surviving nodes kept their homes: the state was read back, not
	// rebuilt from scratch.
	after := sc.homes(1, 2)
	for s, where := range homes {
		if where[0] != 0 && (len(after[s]) != 1 || after[s][0] != where[0]) {
			t.Fatalf("shard %s moved from node %d to %v", s, where[0], after[s])
		}
	}
}

// Remembered entities in distributed data with durable keys: after a crash they start
// on the survivors, and after the whole cluster restarts (on the same durable folders)
// they start without a message; the passivated one does not.
func TestDDataRememberEntities(t *testing.T) {
	dir := t.TempDir()
	table := newIncarnations()
	cfg := func(i int) EntityConfig {
		c := ddataCounterConfig()
		c.EntityFactory = trackedCounters(table, fmt.Sprintf("node%d", i))
		c.RememberEntities = true
		return c
	}
	sc := startDDataShardCluster(t, 3, dir, cfg)
	ids := entityIDs(10)
	for j, id := range ids {
		sc.mustAsk(j%3, id, Increment{By: 1})
	}
	sc.mustAsk(0, "0", PassivateCounter{})
	table.await(t, 10*time.Second, "0 stopped", func(in *incarnations) bool { return in.live["0"] == "" })
	homes := sc.homes(0, 1, 2)
	var moved []EntityID
	for _, id := range ids[1:] {
		if homes[HashShardID(id, 10)][0] == 2 {
			moved = append(moved, id)
		}
	}
	sc.mc.Crash(2)
	for _, id := range moved {
		table.stop(id, "node2")
	}
	table.await(t, 30*time.Second, "the crashed node's entities restarted", allLive(ids[1:]))

	sc.shutdown()
	table.await(t, 10*time.Second, "everything stopped", func(in *incarnations) bool { return len(in.live) == 0 })
	sc2 := newShardCluster(t, multinode.Options{Nodes: 3}, cfg, true, sc.journal)
	sc2.ddataDir = dir
	for i := range 3 {
		sc2.startSharding(i)
	}
	table.await(t, 30*time.Second, "the remembered entities started after the restart", allLive(ids[1:]))
	if table.isLive("0") {
		t.Fatal("the passivated entity started")
	}
	table.checkNeverTwo(t)
}
