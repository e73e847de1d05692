package sharding

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/memjournal"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// Events and commands of the persistent test counter. The commands cross the wire.
type (
	Incremented struct{ By int }
	Increment   struct{ By int }
	GetCount    struct{}
)

// pcounter is the seeds' Counter: an event-sourced entity named by its entity ID.
type pcounter struct {
	id string
	n  int
}

func (c *pcounter) PersistenceID() string { return "Counter-" + c.id }

func (c *pcounter) Recover(ctx persistence.Context) {
	if ev, ok := ctx.Message().(Incremented); ok {
		c.n += ev.By
	}
}

func (c *pcounter) Receive(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case Increment:
		_ = persistence.Persist(ctx, Incremented{By: m.By}, func(ev Incremented) {
			c.n += ev.By
			_ = ctx.Respond(c.n)
		})
	case GetCount:
		_ = ctx.Respond(c.n)
	}
}

func pcounterProps(id EntityID) *actor.Props {
	return persistence.Props(func() persistence.Entity { return &pcounter{id: string(id)} })
}

// shardNode is one node of a sharding test cluster.
type shardNode struct {
	*multinode.Node
	sharding *Sharding
	region   actor.Ref
}

// shardCluster is a multinode cluster with sharding started on every node, sharing
// one registry and one journal.
type shardCluster struct {
	t        *testing.T
	mc       *multinode.Cluster
	reg      *serialization.Registry
	journal  *memjournal.Store
	typeName string
	cfg      func(i int) EntityConfig
	nodes    map[int]*shardNode
}

func testRegistry(t testing.TB) *serialization.Registry {
	t.Helper()
	reg := serialization.NewRegistry()
	if err := errors.Join(
		serialization.Register[Incremented](reg, "test.Incremented"),
		serialization.Register[Increment](reg, "test.Increment"),
		serialization.Register[GetCount](reg, "test.GetCount"),
		serialization.Register[int](reg, "test.int"),
	); err != nil {
		t.Fatal(err)
	}
	return reg
}

// persistentCounterConfig is the configuration of the tests' persistent counters:
// everything stored in the shared journal, short timings.
func persistentCounterConfig() EntityConfig {
	return EntityConfig{
		EntityFactory:         pcounterProps,
		NumberOfShards:        10,
		StateStoreMode:        StateStorePersistence,
		RememberEntitiesStore: RememberStoreJournal,
		Timings: Timings{
			RetryInterval:             200 * time.Millisecond,
			HandOffTimeout:            6 * time.Second,
			ShardStartTimeout:         time.Second,
			RebalanceInterval:         500 * time.Millisecond,
			CoordinatorFailureBackoff: 200 * time.Millisecond,
			EntityRestartBackoff:      200 * time.Millisecond,
			ShardFailureBackoff:       200 * time.Millisecond,
		},
	}
}

func startShardCluster(t *testing.T, n int, cfg func(i int) EntityConfig) *shardCluster {
	t.Helper()
	return startShardClusterWith(t, multinode.Options{Nodes: n}, cfg)
}

// startShardClusterWith starts the cluster opts describe (its Registry is replaced by the
// tests' one).
func startShardClusterWith(t *testing.T, opts multinode.Options, cfg func(i int) EntityConfig) *shardCluster {
	t.Helper()
	n := opts.Nodes
	reg := testRegistry(t)
	sc := &shardCluster{t: t, reg: reg, journal: memjournal.New(), typeName: "Counter", cfg: cfg, nodes: map[int]*shardNode{}}
	// Cleanups run last-in first-out: these run after multinode has shut the nodes down.
	t.Cleanup(func() {
		_ = sc.journal.Close()
		for _, n := range sc.nodes {
			useCluster(n.System, nil)
		}
	})
	opts.Registry = reg
	sc.mc = multinode.Start(t, opts)
	for i := range n {
		sc.startSharding(i)
	}
	return sc
}

// startSharding starts persistence and sharding on node i (after a start or restart).
func (sc *shardCluster) startSharding(i int) *shardNode {
	sc.t.Helper()
	node := sc.mc.Node(i)
	useCluster(node.System, node.Cluster)
	if _, err := persistence.Start(node.System, persistence.Config{Journal: sc.journal, Snapshots: sc.journal, Registry: sc.reg}); err != nil {
		sc.t.Fatal(err)
	}
	s, err := Start(node.System, Config{Registry: sc.reg})
	if err != nil {
		sc.t.Fatal(err)
	}
	region, err := s.Start(sc.typeName, sc.cfg(i))
	if err != nil {
		sc.t.Fatal(err)
	}
	sn := &shardNode{Node: node, sharding: s, region: region}
	sc.nodes[i] = sn
	return sn
}

// ask asks entity id through node i's region, retrying until the deadline (a retry is
// needed only for messages lost with a crashed node).
func (sc *shardCluster) ask(i int, id EntityID, msg any, timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(timeout))
	defer cancel()
	return actor.Ask[int](ctx, sc.nodes[i].region, Envelope{EntityID: id, Message: msg})
}

func (sc *shardCluster) mustAsk(i int, id EntityID, msg any) int {
	sc.t.Helper()
	n, err := sc.ask(i, id, msg, 10*time.Second)
	if err != nil {
		sc.t.Fatalf("node %d, entity %s, %T: %v", i, id, msg, err)
	}
	return n
}

// regionState returns node i's region state.
func (sc *shardCluster) regionState(i int) ShardRegionState {
	sc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(5*time.Second))
	defer cancel()
	st, err := actor.Ask[ShardRegionState](ctx, sc.nodes[i].region, GetShardRegionState{})
	if err != nil {
		sc.t.Fatalf("node %d region state: %v", i, err)
	}
	return st
}

// homes returns, for every shard hosted anywhere, the nodes hosting it.
func (sc *shardCluster) homes(nodes ...int) map[ShardID][]int {
	out := map[ShardID][]int{}
	for _, i := range nodes {
		for _, s := range sc.regionState(i).Shards {
			out[s.Shard] = append(out[s.Shard], i)
		}
	}
	return out
}

func entityIDs(n int) []EntityID {
	out := make([]EntityID, n)
	for i := range out {
		out[i] = EntityID(fmt.Sprint(i))
	}
	return out
}

// askEventually asks entity id through node i until it answers (messages in flight to a
// crashed node are lost; the retry is the client's), failing the test after timeout.
func (sc *shardCluster) askEventually(i int, id EntityID, msg any, timeout time.Duration) int {
	sc.t.Helper()
	deadline := time.Now().Add(testkit.Dilated(timeout))
	var err error
	for time.Now().Before(deadline) {
		var n int
		if n, err = sc.ask(i, id, msg, time.Second); err == nil {
			return n
		}
	}
	sc.t.Fatalf("node %d, entity %s, %T: no answer within %v: %v", i, id, msg, timeout, err)
	return 0
}

// events subscribes a probe on node i to the rebalance events.
func (sc *shardCluster) events(i int) *testkit.Probe {
	p := testkit.NewProbe(sc.t, sc.nodes[i].System)
	actor.Subscribe[ShardEvent](sc.nodes[i].System.EventStream(), p.Ref())
	return p
}

// addressOf returns node i's address.
func (sc *shardCluster) addressOf(i int) actor.Address { return sc.nodes[i].System.Address() }
