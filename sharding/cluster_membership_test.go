package sharding

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/singleton"
	"github.com/troupe-go/troupe/testkit"
)

// A node joins with rebalancing on: at least 2 of 10 shards move to it.
func TestClusterJoinRebalances(t *testing.T) {
	sc := startShardCluster(t, 2, func(int) EntityConfig { return persistentCounterConfig() })
	ids := entityIDs(40)
	for j, id := range ids {
		sc.mustAsk(j%2, id, Increment{By: 1})
	}
	if n := len(sc.homes(0, 1)); n != 10 {
		t.Fatalf("%d shards allocated, want 10", n)
	}
	events := sc.events(0)
	sc.mc.Add()
	sc.mc.AwaitAllUp(testkit.Dilated(10 * time.Second))
	sc.startSharding(2)
	moved := 0
	for moved < 2 {
		m := events.FishForMessage(func(m any) bool {
			a, ok := m.(ShardAllocated)
			return ok && a.To == sc.addressOf(2)
		}, 15*time.Second).(ShardAllocated)
		if m.From == (actor.Address{}) {
			t.Fatalf("allocation %+v to the new node does not name the old home", m)
		}
		moved++
	}
	// Every count survived the moves.
	for _, id := range ids {
		if n := sc.mustAsk(2, id, GetCount{}); n != 1 {
			t.Fatalf("entity %s: count %d, want 1", id, n)
		}
	}
}

// Coordinated shutdown of one node hands all its shards to the others, and no count is
// lost.
func TestClusterGracefulLeaveHandsOffEverything(t *testing.T) {
	sc := startShardCluster(t, 3, func(int) EntityConfig { return persistentCounterConfig() })
	ids := entityIDs(30)
	for j, id := range ids {
		sc.mustAsk(j%3, id, Increment{By: 1})
	}
	before := sc.homes(0, 1, 2)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(20*time.Second))
	defer cancel()
	if err := sc.nodes[2].System.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown of node 2: %v", err)
	}
	after := sc.homes(0, 1)
	for s := range before {
		if len(after[s]) != 1 {
			t.Fatalf("shard %s: homes %v after node 2 left (before %v)", s, after[s], before[s])
		}
	}
	for _, id := range ids {
		if n := sc.mustAsk(0, id, Increment{By: 1}); n != 2 {
			t.Fatalf("entity %s: count %d, want 2", id, n)
		}
	}
}

// The coordinator is the cluster singleton <type>Coordinator. When its member (the
// oldest) shuts down, the regions there hand their shards off first, through the
// coordinator still running there, and the singleton moves to the next oldest member
// after: the shutdown completes without error, every shard has one home, no count is
// lost, and the coordinator runs on the next oldest member.
func TestClusterCoordinatorMemberLeaves(t *testing.T) {
	sc := startShardCluster(t, 3, func(int) EntityConfig { return persistentCounterConfig() })
	ids := entityIDs(30)
	for j, id := range ids {
		sc.mustAsk(j%3, id, Increment{By: 1})
	}
	age := sc.byAge()
	if age[0] != 0 {
		t.Fatalf("members by age %v: node 0 is not the oldest", age)
	}
	if st := singleton.Get(sc.nodes[0].System, "CounterCoordinator").Status(); !st.Running {
		t.Fatalf("the coordinator singleton does not run on the oldest member: %+v", st)
	}
	next := age[1] // nodes 1 and 2 may have come Up together: their addresses order them
	before := sc.homes(0, 1, 2)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(20*time.Second))
	defer cancel()
	if err := sc.nodes[0].System.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown of node 0: %v", err)
	}
	for _, id := range ids {
		if n := sc.mustAsk(1, id, Increment{By: 1}); n != 2 {
			t.Fatalf("entity %s: count %d, want 2", id, n)
		}
	}
	after := sc.homes(1, 2)
	for s := range before {
		if len(after[s]) != 1 {
			t.Fatalf("shard %s: homes %v after node 0 left (before %v)", s, after[s], before[s])
		}
	}
	m := singleton.Get(sc.nodes[next].System, "CounterCoordinator")
	if _, err := m.AwaitStatus(ctx, func(st singleton.Status) bool { return st.Running }); err != nil {
		t.Fatalf("the coordinator singleton on node %d, the next oldest: %v", next, err)
	}
}

// A region that hosts no shard shuts down within 5 s.
func TestClusterEmptyRegionShutsDownQuickly(t *testing.T) {
	sc := startShardCluster(t, 3, func(int) EntityConfig {
		c := persistentCounterConfig()
		c.MinMembers = 3 // the two shards go to two different nodes
		return c
	})
	sc.mustAsk(0, "0", Increment{By: 1})
	for _, id := range entityIDs(20) {
		if HashShardID(id, 10) != HashShardID("0", 10) {
			sc.mustAsk(0, id, Increment{By: 1})
			break
		}
	}
	empty := -1
	for i := range 3 {
		if st := sc.regionState(i); len(st.Shards) == 0 {
			empty = i
		}
	}
	if empty < 0 {
		t.Fatal("no node without shards")
	}
	probe := testkit.NewProbe(t, sc.nodes[empty].System)
	probe.Watch(sc.nodes[empty].region)
	start := time.Now()
	_ = sc.nodes[empty].region.Tell(GracefulShutdown{})
	probe.ExpectTerminated(sc.nodes[empty].region, 5*time.Second)
	t.Logf("empty region stopped after %v", time.Since(start))
}

// When 2 of 5 nodes leave, one of them hosting the coordinator, only their shards move:
// every other shard keeps its home.
func TestClusterTwoOfFiveLeave(t *testing.T) {
	sc := startShardCluster(t, 5, func(int) EntityConfig {
		c := persistentCounterConfig()
		c.NumberOfShards = 20
		c.MinMembers = 5
		c.Timings.RebalanceInterval = time.Hour // only the departures move shards
		return c
	})
	ids := entityIDs(100)
	for j, id := range ids {
		sc.mustAsk(j%5, id, Increment{By: 1})
	}
	before := sc.homes(0, 1, 2, 3, 4)
	for _, i := range []int{0, 3} { // node 0 runs the coordinator
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(20*time.Second))
		if err := sc.nodes[i].System.Shutdown(ctx); err != nil {
			t.Fatalf("shutdown of node %d: %v", i, err)
		}
		cancel()
	}
	after := sc.homes(1, 2, 4)
	for s, where := range before {
		if len(where) != 1 {
			t.Fatalf("shard %s on %v before", s, where)
		}
		now := after[s]
		if len(now) > 1 {
			t.Fatalf("shard %s on %v after", s, now)
		}
		if where[0] != 0 && where[0] != 3 && (len(now) != 1 || now[0] != where[0]) {
			t.Fatalf("shard %s moved from node %d to %v although its node stayed", s, where[0], now)
		}
	}
	for _, id := range ids {
		if n := sc.mustAsk(1, id, GetCount{}); n != 1 {
			t.Fatalf("entity %s: count %d, want 1", id, n)
		}
	}
}

// min-nr-of-members 3: no shard gets a home until the third region has registered.
func TestClusterMinMembers(t *testing.T) {
	sc := startShardClusterLazy(t, 3, func(int) EntityConfig {
		c := persistentCounterConfig()
		c.MinMembers = 3
		return c
	})
	sc.startSharding(0)
	sc.startSharding(1)
	probe := testkit.NewProbe(t, sc.nodes[0].System)
	probe.Send(sc.nodes[0].region, Envelope{EntityID: "1", Message: Increment{By: 1}})
	probe.ExpectNoMsg(time.Second)
	sc.startSharding(2)
	probe.ExpectMsg(1, 10*time.Second)
}

// StopShards gives one ShardStopped per shard, and every entity of those shards stops.
func TestClusterStopShards(t *testing.T) {
	sc := startShardCluster(t, 2, func(int) EntityConfig { return persistentCounterConfig() })
	probe := testkit.NewProbe(t, sc.nodes[0].System)
	var entities []actor.Ref
	shards := map[ShardID]bool{}
	for _, id := range entityIDs(12) {
		probe.Send(sc.nodes[0].region, Envelope{EntityID: id, Message: Increment{By: 1}})
		probe.ExpectMsg(1, 10*time.Second)
		entities = append(entities, probe.LastSender())
		shards[HashShardID(id, 10)] = true
	}
	for _, e := range entities {
		probe.Watch(e)
	}
	var list []ShardID
	for s := range shards {
		list = append(list, s)
	}
	slices.Sort(list)
	sc.mustAsk(1, "0", GetCount{}) // node 1's region has registered with the coordinator
	probe.Send(sc.nodes[1].region, StopShards{Shards: list})
	stopped := map[ShardID]bool{}
	terminated := map[actor.Ref]bool{}
	for len(stopped) < len(list) || len(terminated) < len(entities) {
		switch m := probe.ReceiveN(1, 10*time.Second)[0].(type) {
		case ShardStopped:
			if stopped[m.Shard] {
				t.Fatalf("two ShardStopped for %s", m.Shard)
			}
			stopped[m.Shard] = true
		case actor.Terminated:
			terminated[m.Ref] = true
		default:
			t.Fatalf("unexpected %T %+v", m, m)
		}
	}
	// The shards start again at the next message, and the counts survived.
	if n := sc.mustAsk(1, "0", GetCount{}); n != 1 {
		t.Fatalf("count %d after StopShards, want 1", n)
	}
}
