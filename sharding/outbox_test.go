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
	"github.com/troupe-go/troupe/internal/shardcore"
	"github.com/troupe-go/troupe/testkit"
)

// Messages from several senders on one node to an entity on another travel in batches
// and reach it in each sender's order, each with its sender (the entity's replies
// reach them), also across flushes the region makes before a coordinator message.
func TestBatchedForwardsKeepOrderAndSenders(t *testing.T) {
	sc := startStringCluster(t, 2, echoProps(), nil)
	a := testkit.NewProbe(t, sc.nodes[0].System)
	b := testkit.NewProbe(t, sc.nodes[0].System)
	id := entityOn(t, sc, a, 1)
	shard := HashShardID(id, 10)
	home := shardcore.ShardHome{Shard: shard, Region: RegionID(sc.nodes[1].region.URI())}
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
	sc := startStringCluster(t, 2, echoProps(), func(c *EntityConfig) { c.Timings.RetryInterval = 10 * time.Second })
	p := testkit.NewProbe(t, sc.nodes[0].System)
	id := entityOn(t, sc, p, 1)
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
	sc := startStringCluster(t, 2, rec, func(c *EntityConfig) { c.Timings.RebalanceInterval = time.Hour })
	dead := testkit.NewProbe(t, sc.nodes[0].System)
	actor.Subscribe[actor.DeadLetter](sc.nodes[0].System.EventStream(), dead.Ref())
	actor.Subscribe[actor.DeadLetter](sc.nodes[1].System.EventStream(), dead.Ref())
	ref, err := EntityRefFor[string](sc.nodes[0].System, "Counter", entityOn(t, sc, testkit.NewProbe(t, sc.nodes[0].System), 1))
	if err != nil {
		t.Fatal(err)
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

// echoProps is an entity that answers every string with itself.
func echoProps() *actor.Props {
	return actor.PropsFunc(func(ctx actor.Context) {
		if s, ok := ctx.Message().(string); ok {
			_ = ctx.Respond(s)
		}
	})
}

// startStringCluster starts n nodes whose Counter entities are props, without
// remembered entities, allocating no shard before every region registered (so that
// some land on each node); tweak, if not nil, changes the configuration further.
func startStringCluster(t *testing.T, n int, props *actor.Props, tweak func(*EntityConfig)) *shardCluster {
	return startShardCluster(t, n, func(int) EntityConfig {
		c := persistentCounterConfig()
		c.EntityFactory, c.Entity = nil, props
		c.RememberEntities = false
		c.MinMembers = n
		if tweak != nil {
			tweak(&c)
		}
		return c
	})
}

// entityOn returns an entity that lives on node i, found by sending "probe" through
// node 0's region with p as the sender (the entity must answer it).
func entityOn(t *testing.T, sc *shardCluster, p *testkit.Probe, i int) EntityID {
	t.Helper()
	for _, e := range entityIDs(50) {
		p.Send(sc.nodes[0].region, Envelope{EntityID: e, Message: "probe"})
		p.ExpectMsg("probe", 30*time.Second) // the first waits for the regions to register
		if p.LastSender().Address() == sc.addressOf(i) {
			return e
		}
	}
	t.Fatalf("no entity of the first 50 lives on node %d", i)
	return ""
}

// When the node of an entity crashes, an EntityRef's tells to it from another node
// keep their order: the entity's incarnations, taken together, see one sender's
// messages in the order sent, each at most once, with at most one gap (those in
// flight to the crashed node), and the stream goes on at the new home.
func TestEntityRefTellsKeepOrderAcrossACrash(t *testing.T) {
	var mu sync.Mutex
	var got []int
	progress := make(chan int, 1<<16)
	rec := actor.PropsFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case string:
			_ = ctx.Respond(m) // "probe"
		case int:
			mu.Lock()
			got = append(got, m)
			mu.Unlock()
			select {
			case progress <- m:
			default:
			}
		}
	})
	sc := startStringCluster(t, 3, rec, func(c *EntityConfig) { c.Timings.RebalanceInterval = time.Hour })
	ref, err := EntityRefFor[any](sc.nodes[0].System, "Counter", entityOn(t, sc, testkit.NewProbe(t, sc.nodes[0].System), 2))
	if err != nil {
		t.Fatal(err)
	}
	// Before the crash: every message arrives (the sender waits every 20).
	next := 0
	for ; next < 200; next++ {
		if err := ref.Tell(next); err != nil {
			t.Fatal(err)
		}
		if next%20 == 19 {
			awaitProgress(t, progress, next)
		}
	}
	sc.mc.Crash(2)
	// After it: the sender goes on until the entity's next incarnation has taken 100
	// messages sent after the crash, pausing every 20 for the entity to catch up, or
	// for a second while nothing arrives (the shard has no home yet).
	deadline := time.Now().Add(testkit.Dilated(60 * time.Second))
	for after := 0; after < 100; {
		if time.Now().After(deadline) {
			t.Fatalf("%d messages sent after the crash, %d arrived", next-200, after)
		}
		if err := ref.Tell(next); err != nil {
			t.Fatal(err)
		}
		next++
		if next%20 != 0 {
			continue
		}
		wait := time.After(testkit.Dilated(time.Second))
	drain:
		for {
			select {
			case v := <-progress:
				if v >= 200 {
					after++
				}
				if v == next-1 {
					break drain
				}
			case <-wait:
				break drain
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	gaps := 0
	for i := 1; i < len(got); i++ {
		switch {
		case got[i] <= got[i-1]:
			t.Fatalf("message %d arrived after %d: %v", got[i], got[i-1], got)
		case got[i] != got[i-1]+1:
			gaps++
			t.Logf("messages %d to %d were in flight to the crashed node", got[i-1]+1, got[i]-1)
		}
	}
	if gaps > 1 || len(got) < 300 || got[199] != 199 {
		t.Fatalf("%d gaps in what arrived (at most one: the messages in flight to the crashed node): %v", gaps, got)
	}
}
