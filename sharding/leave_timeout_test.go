package sharding

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// ignoredStop is a hand-off stop message the test counters ignore: their shard's
// hand-off cannot finish before its own hard stop, long after the leave's phase
// timeout.
type ignoredStop struct{}

// A node leaves gracefully while its hand-off cannot finish: the entities ignore the
// hand-off stop message, and the shutdown phase of the regions times out first. The
// leave must not let the shards start elsewhere while the old entities still run:
// the node stops its regions before it leaves, and no entity ever has two live
// incarnations.
func TestGracefulLeaveWhoseHandOffTimesOutStopsTheEntitiesFirst(t *testing.T) {
	table := newIncarnations()
	incarnation := map[int]int{}
	cfg := func(i int) EntityConfig {
		incarnation[i]++
		c := persistentCounterConfig()
		c.EntityFactory = trackedCounters(table, fmt.Sprintf("node%d.%d", i, incarnation[i]))
		c.HandOffStopMessage = ignoredStop{}
		c.Timings.HandOffTimeout = time.Minute // the shard's own hard stop comes after 55 s
		c.Timings.RebalanceInterval = time.Hour
		return c
	}
	phase := testkit.Dilated(2 * time.Second)
	sc := startShardClusterWith(t, multinode.Options{Nodes: 3, ConfigureSystem: func(_ int, c *actor.Config) {
		c.PhaseTimeouts = map[actor.Phase]time.Duration{actor.PhaseClusterShardingShutdownRegion: phase}
	}}, cfg)
	// Entities on every node, the leaving one included.
	ids := entityIDs(30)
	for _, id := range ids {
		sc.mustAsk(0, id, Increment{By: 1})
	}
	leaving := 2
	onLeaving := 0
	for _, home := range sc.homes(0, 1, 2) {
		if len(home) == 1 && home[0] == leaving {
			onLeaving++
		}
	}
	if onLeaving == 0 {
		t.Fatal("no shard on the leaving node")
	}

	// The leaving node's actors live on after the leave until the others have asked
	// every entity again (an application's own last shutdown task could take as long).
	sys := sc.nodes[leaving].System
	release := make(chan struct{})
	if err := sys.CoordinatedShutdown().AddTask(actor.PhaseBeforeActorSystemTerminate, "hold", func(ctx context.Context) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	left := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(60*time.Second))
		defer cancel()
		left <- sys.Shutdown(ctx)
	}()
	sc.mc.Await(0, testkit.Dilated(20*time.Second), "the leaving node removed", func(st cluster.CurrentClusterState) bool {
		return len(st.Members) == 2
	})
	// Every entity answers again, from the nodes that stay, and counts what it was
	// acknowledged.
	for _, id := range ids {
		if n := sc.askEventually(0, id, Increment{By: 1}, testkit.Dilated(20*time.Second)); n != 2 {
			t.Errorf("%s counts %d after the leave, want 2", id, n)
		}
	}
	table.checkNeverTwo(t)
	close(release)
	t.Logf("shutdown of the leaving node: %v", <-left)
}
