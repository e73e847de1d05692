package sharding

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

// refuseAll is an allocation strategy that gives no shard a home: it keeps every shard
// for a node that is not there (as a strategy that pins shards to one node does once
// that node has left).
type refuseAll struct{}

func (refuseAll) AllocateShard(req AllocationRequest) (RegionID, error) {
	return "", fmt.Errorf("%w: shard %q waits for its node", ErrNoRegion, req.Shard)
}

func (refuseAll) Rebalance(RebalanceRequest) ([]ShardID, error) { return nil, nil }

// A region that leaves while it holds messages for a shard the strategy gives no home
// does not wait for one until its shutdown phase times out: the coordinator tells it
// that no region can host the shard, and the region drops those messages (dead
// letters naming the reason, counted) and stops.
func TestLeavingRegionDropsWhatNoRegionCanHost(t *testing.T) {
	sc := startShardCluster(t, 1, func(int) EntityConfig {
		c := persistentCounterConfig()
		c.AllocationStrategy = refuseAll{}
		return c
	})
	node := sc.nodes[0]
	dead := testkit.NewProbe(t, node.System)
	actor.Subscribe[actor.DeadLetter](node.System.EventStream(), dead.Ref())
	msg := Envelope{EntityID: "42", Message: Increment{By: 1}}
	if err := node.region.Tell(msg); err != nil {
		t.Fatal(err)
	}
	// The region buffers the message (it has asked for the shard's home) before it
	// gets GracefulShutdown, which the shutdown sends after it. A region that waits for
	// a home until its phase times out (10 s) makes the shutdown miss this deadline.
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(5*time.Second))
	defer cancel()
	if err := node.System.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	// The shutdown dead-letters other messages too (the cluster's news to actors that
	// stopped): look for the region's drop among them, addressed to the region and
	// naming the reason.
	dead.FishForMessage(func(m any) bool {
		dl, ok := m.(actor.DeadLetter)
		return ok && dl.Message == any(msg) && dl.Recipient == node.region && errors.Is(dl.Reason, ErrNoRegion)
	}, time.Second)
	if st, err := node.sharding.Stats(sc.typeName); err != nil || st.Undelivered != 1 {
		t.Fatalf("stats %+v, %v; want 1 undelivered", st, err)
	}
}
