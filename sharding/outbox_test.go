package sharding

import (
	"fmt"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

// Messages from several senders on one node to an entity on another travel in batches
// and reach it in each sender's order, each with its sender (the entity's replies
// reach them), also across flushes the region makes before a coordinator message.
func TestBatchedForwardsKeepOrderAndSenders(t *testing.T) {
	echo := actor.PropsFunc(func(ctx actor.Context) {
		if s, ok := ctx.Message().(string); ok {
			_ = ctx.Respond(s)
		}
	})
	sc := startShardCluster(t, 2, func(int) EntityConfig {
		c := persistentCounterConfig()
		c.EntityFactory, c.Entity = nil, echo
		c.RememberEntities = false
		c.MinMembers = 2 // no home before both regions registered: some land on node 1
		return c
	})
	a := testkit.NewProbe(t, sc.nodes[0].System)
	b := testkit.NewProbe(t, sc.nodes[0].System)
	// An entity on node 1, reached through node 0's region.
	var id EntityID
	for _, e := range entityIDs(50) {
		a.Send(sc.nodes[0].region, Envelope{EntityID: e, Message: "probe"})
		a.ExpectMsg("probe", 10*time.Second)
		if a.LastSender().Address() == sc.addressOf(1) {
			id = e
			break
		}
	}
	if id == "" {
		t.Fatal("no entity of the first 50 lives on node 1")
	}
	shard := HashShardID(id, 10)
	home := msgShardHome{Shard: shard, Region: RegionID(sc.nodes[1].region.URI())}
	const n = 300
	for i := range n {
		a.Send(sc.nodes[0].region, Envelope{EntityID: id, Message: fmt.Sprintf("a-%d", i)})
		b.Send(sc.nodes[0].region, Envelope{EntityID: id, Message: fmt.Sprintf("b-%d", i)})
		if i%50 == 25 {
			// A coordinator message (the home the region knows already): the region
			// flushes what it forwarded before it handles it.
			_ = sc.nodes[0].region.Tell(home)
		}
	}
	for i := range n {
		a.ExpectMsg(fmt.Sprintf("a-%d", i), 10*time.Second)
		b.ExpectMsg(fmt.Sprintf("b-%d", i), 10*time.Second)
	}
}

// A lone message to an entity on another node leaves with the flush the region sends
// itself, not with whatever the region handles next: here the region's retry tick
// (every 10 s) is the only other message it would get, and each of ten messages,
// sent one after another's reply, is answered well before it.
func TestALoneForwardLeavesWithTheRegionsOwnFlush(t *testing.T) {
	echo := actor.PropsFunc(func(ctx actor.Context) {
		if s, ok := ctx.Message().(string); ok {
			_ = ctx.Respond(s)
		}
	})
	sc := startShardCluster(t, 2, func(int) EntityConfig {
		c := persistentCounterConfig()
		c.EntityFactory, c.Entity = nil, echo
		c.RememberEntities = false
		c.MinMembers = 2
		c.Timings.RetryInterval = 10 * time.Second
		return c
	})
	p := testkit.NewProbe(t, sc.nodes[0].System)
	var id EntityID
	for _, e := range entityIDs(50) {
		p.Send(sc.nodes[0].region, Envelope{EntityID: e, Message: "probe"})
		p.ExpectMsg("probe", 30*time.Second) // the first waits for both regions to register
		if p.LastSender().Address() == sc.addressOf(1) {
			id = e
			break
		}
	}
	if id == "" {
		t.Fatal("no entity of the first 50 lives on node 1")
	}
	for i := range 10 {
		msg := fmt.Sprintf("lone-%d", i)
		p.Send(sc.nodes[0].region, Envelope{EntityID: id, Message: msg})
		p.ExpectMsg(msg, testkit.Dilated(2*time.Second))
	}
}
