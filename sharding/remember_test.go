package sharding

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

func rememberConfig(table *incarnations) func(i int) EntityConfig {
	return func(i int) EntityConfig {
		c := persistentCounterConfig()
		c.EntityFactory = trackedCounters(table, fmt.Sprintf("node%d", i))
		c.RememberEntities = true
		return c
	}
}

// allLive reports whether every id has a live incarnation.
func allLive(ids []EntityID) func(in *incarnations) bool {
	return func(in *incarnations) bool {
		for _, id := range ids {
			if _, ok := in.live[id]; !ok {
				return false
			}
		}
		return true
	}
}

// Remembered entities restart without a message after a crash of their node and after
// a graceful hand-off; a passivated entity stays stopped; one that stops without
// Passivate starts again after the entity restart backoff.
func TestRememberEntities(t *testing.T) {
	table := newIncarnations()
	sc := startShardCluster(t, 3, rememberConfig(table))
	ids := entityIDs(12)
	for j, id := range ids {
		sc.mustAsk(j%3, id, Increment{By: 1})
	}
	table.await(t, 10*time.Second, "all started", allLive(ids))

	// "0" passivates: it stays stopped. "1" stops on its own: it comes back.
	sc.mustAsk(0, "0", PassivateCounter{})
	sc.mustAsk(0, "1", StopCounter{})
	table.await(t, 10*time.Second, "1 restarted", func(in *incarnations) bool {
		return in.starts["1"] == 2 && in.live["1"] != ""
	})
	if table.isLive("0") {
		t.Fatal("the passivated entity runs")
	}
	rest := ids[2:]

	// A crash: the entities of the crashed node start elsewhere without a message.
	homes := sc.homes(0, 1, 2)
	victim := 2
	var moved []EntityID
	for _, id := range rest {
		if homes[HashShardID(id, 10)][0] == victim {
			moved = append(moved, id)
		}
	}
	sc.mc.Crash(victim)
	for _, id := range moved {
		table.stop(id, fmt.Sprintf("node%d", victim)) // a crashed incarnation records no stop
	}
	table.await(t, 30*time.Second, "the crashed node's entities restarted", allLive(rest))

	// A graceful leave of node 1: its entities start on node 0 without a message.
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(20*time.Second))
	defer cancel()
	if err := sc.nodes[1].System.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	table.await(t, 20*time.Second, "node 1's entities restarted on node 0", func(in *incarnations) bool {
		for _, id := range rest {
			if in.live[id] != "node0" {
				return false
			}
		}
		return true
	})
	if table.isLive("0") {
		t.Fatal("the passivated entity runs")
	}
	table.checkNeverTwo(t)
	for _, id := range rest {
		if n := sc.mustAsk(0, id, GetCount{}); n != 1 {
			t.Fatalf("entity %s: count %d, want 1", id, n)
		}
	}
}

// A region that fails restarts; its remembered entities start again without a message.
func TestRememberEntitiesKilledRegion(t *testing.T) {
	table := newIncarnations()
	sc := startShardCluster(t, 2, rememberConfig(table))
	ids := entityIDs(8)
	for _, id := range ids {
		sc.mustAsk(0, id, Increment{By: 1})
	}
	table.await(t, 10*time.Second, "all started", allLive(ids))
	before := map[EntityID]int{}
	for _, id := range ids {
		before[id] = table.startsOf(id)
	}
	_ = sc.nodes[1].region.Tell(actor.Kill{})
	table.await(t, 20*time.Second, "node 1's entities restarted", func(in *incarnations) bool {
		for _, id := range ids {
			if in.live[id] == "" {
				return false
			}
		}
		restarted := 0
		for _, id := range ids {
			if in.starts[id] > before[id] {
				restarted++
			}
		}
		return restarted > 0
	})
	table.checkNeverTwo(t)
}

// After the whole cluster stops and a new one starts on the same journal, the
// remembered entities start without a message; the passivated one does not.
func TestRememberEntitiesFullClusterRestart(t *testing.T) {
	table := newIncarnations()
	sc := startShardCluster(t, 3, rememberConfig(table))
	ids := entityIDs(10)
	for j, id := range ids {
		sc.mustAsk(j%3, id, Increment{By: 1})
	}
	sc.mustAsk(0, "0", PassivateCounter{})
	table.await(t, 10*time.Second, "0 stopped", func(in *incarnations) bool { return in.live["0"] == "" })
	sc.shutdown()
	table.await(t, 10*time.Second, "everything stopped", func(in *incarnations) bool { return len(in.live) == 0 })

	sc2 := newShardCluster(t, multinode.Options{Nodes: 3}, rememberConfig(table), false, sc.journal)
	table.await(t, 30*time.Second, "the remembered entities started", allLive(ids[1:]))
	if table.isLive("0") {
		t.Fatal("the passivated entity started")
	}
	table.checkNeverTwo(t)
	for _, id := range ids[1:] {
		if n := sc2.mustAsk(1, id, GetCount{}); n != 1 {
			t.Fatalf("entity %s: count %d, want 1", id, n)
		}
	}
}
