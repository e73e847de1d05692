package sharding

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// EntityRefs on one node add their messages for an entity on another node to the
// region's batch themselves, and two senders' streams keep their order, with nothing
// lost or doubled, while the entity's shard is stopped and started again in the middle
// of them (the region shuts the EntityRefs out while it handles the hand-off).
func TestEntityRefsToAnotherNodeKeepOrderAcrossAHandOff(t *testing.T) {
	const n = 1000
	progress := map[string]chan int{"a": make(chan int, n+1), "b": make(chan int, n+1)}
	var mu sync.Mutex
	got := map[string][]int{}
	rec := actor.PropsFunc(func(ctx actor.Context) {
		s, ok := ctx.Message().(string)
		if !ok {
			return
		}
		if s == "probe" {
			_ = ctx.Respond(s)
			return
		}
		who, num, _ := strings.Cut(s, ":")
		i, _ := strconv.Atoi(num)
		mu.Lock()
		got[who] = append(got[who], i)
		mu.Unlock()
		progress[who] <- i
	})
	sc := startShardCluster(t, 2, func(int) EntityConfig {
		c := persistentCounterConfig()
		c.EntityFactory, c.Entity = nil, rec
		c.RememberEntities = false
		c.MinMembers = 2
		c.Timings.RebalanceInterval = time.Hour
		return c
	})
	dead := testkit.NewProbe(t, sc.nodes[0].System)
	actor.Subscribe[actor.DeadLetter](sc.nodes[0].System.EventStream(), dead.Ref())
	actor.Subscribe[actor.DeadLetter](sc.nodes[1].System.EventStream(), dead.Ref())
	p := testkit.NewProbe(t, sc.nodes[0].System)
	var ref EntityRef[string]
	for _, e := range entityIDs(50) {
		r, err := EntityRefFor[string](sc.nodes[0].System, "Counter", e)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Send("probe", p.Ref()); err != nil {
			t.Fatal(err)
		}
		p.ExpectMsg("probe", 30*time.Second)
		if p.LastSender().Address() == sc.addressOf(1) {
			ref = r
			break
		}
	}
	if ref.EntityID() == "" {
		t.Fatal("no entity of the first 50 lives on node 1")
	}
	shard := HashShardID(ref.EntityID(), 10)
	o := sc.nodes[0].sharding.types["Counter"].outbox.Load()
	o.mu.Lock()
	home, direct := o.direct[shard]
	o.mu.Unlock()
	if !direct || home.Address() != sc.addressOf(1) {
		t.Fatalf("EntityRefs may not add to node 1's batch for shard %s (%v, %v)", shard, home, direct)
	}

	// Each sender waits, every 50 messages, until the entity has its last one: at most
	// 50 of a sender's messages wait while the shard moves.
	send := func(who string, from, to int) {
		for i := from; i < to; i++ {
			if err := ref.Tell(fmt.Sprintf("%s:%d", who, i)); err != nil {
				t.Errorf("%s:%d: %v", who, i, err)
				return
			}
			if i%50 == 49 || i == to-1 {
				awaitProgress(t, progress[who], i)
			}
		}
	}
	var wg sync.WaitGroup
	stream := func(from, to int) {
		for _, who := range []string{"a", "b"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				send(who, from, to)
			}()
		}
	}
	stream(0, 300)
	wg.Wait()
	requester := testkit.NewProbe(t, sc.nodes[0].System)
	requester.Send(sc.nodes[0].region, StopShards{Shards: []ShardID{shard}})
	stream(300, 600) // while the shard stops and starts again
	requester.ExpectMsg(ShardStopped{Shard: shard}, 10*time.Second)
	wg.Wait()
	stream(600, n)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, who := range []string{"a", "b"} {
		want := make([]int, n)
		for i := range want {
			want[i] = i
		}
		if !slices.Equal(got[who], want) {
			t.Fatalf("sender %s's messages arrived as %v", who, got[who])
		}
	}
	dead.ExpectNoMsgMatching(200*time.Millisecond, func(m any) bool {
		_, isString := m.(actor.DeadLetter).Message.(string)
		return isString
	})
}

// awaitProgress waits until the entity reports message i on ch (earlier reports are
// passed over).
func awaitProgress(t *testing.T, ch chan int, i int) {
	timeout := time.After(testkit.Dilated(10 * time.Second))
	for {
		select {
		case v := <-ch:
			if v >= i {
				return
			}
		case <-timeout:
			t.Errorf("message %d did not arrive within 10 s", i)
			return
		}
	}
}
