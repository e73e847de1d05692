package sharding

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/ddata"
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
		_ = persistence.Persist(ctx, Incremented(m), func(ev Incremented) {
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
	journal  *gatedJournal
	typeName string
	cfg      func(i int) EntityConfig
	nodes    map[int]*shardNode
	// extra, when set, starts more on a node after its sharding started.
	extra func(i int, s *Sharding)
	// ddataDir, when set, starts a replicator on every node, with the shard-* keys
	// durable in ddataDir/node<i> (kept across restarts of a node).
	ddataDir string
}

func testRegistry(t testing.TB) *serialization.Registry {
	t.Helper()
	reg := serialization.NewRegistry()
	if err := errors.Join(
		serialization.Register[Incremented](reg, "test.Incremented"),
		serialization.Register[Increment](reg, "test.Increment"),
		serialization.Register[GetCount](reg, "test.GetCount"),
		serialization.Register[int](reg, "test.int"),
		serialization.Register[string](reg, "test.string"),
		serialization.Register[PassivateCounter](reg, "test.PassivateCounter"),
		serialization.Register[StopCounter](reg, "test.StopCounter"),
		serialization.Register[TraceHop](reg, "test.TraceHop"),
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

// startDDataShardCluster starts a cluster whose nodes run a replicator, and sharding
// with cfg (whose stores default to distributed data).
func startDDataShardCluster(t *testing.T, n int, dir string, cfg func(i int) EntityConfig) *shardCluster {
	t.Helper()
	sc := newShardCluster(t, multinode.Options{Nodes: n}, cfg, true, nil)
	sc.ddataDir = dir
	for i := range n {
		sc.startSharding(i)
	}
	return sc
}

// ddataCounterConfig is persistentCounterConfig with the default (distributed-data)
// stores for the coordinator and remembered entities; the counters themselves stay
// persistent.
func ddataCounterConfig() EntityConfig {
	c := persistentCounterConfig()
	c.StateStoreMode = StateStoreDistributedData
	c.RememberEntitiesStore = RememberStoreDistributedData
	return c
}

func startShardCluster(t *testing.T, n int, cfg func(i int) EntityConfig) *shardCluster {
	t.Helper()
	return startShardClusterWith(t, multinode.Options{Nodes: n}, cfg)
}

// startShardClusterWith starts the cluster opts describe (its Registry is replaced by the
// tests' one).
func startShardClusterWith(t *testing.T, opts multinode.Options, cfg func(i int) EntityConfig) *shardCluster {
	t.Helper()
	return newShardCluster(t, opts, cfg, false, nil)
}

// newShardCluster starts a cluster; journal nil means a new one (closed at the end of
// the test), otherwise the given one (a restart of a whole cluster on its journal).
func newShardCluster(t *testing.T, opts multinode.Options, cfg func(i int) EntityConfig, lazy bool, journal *gatedJournal) *shardCluster {
	t.Helper()
	n := opts.Nodes
	reg := testRegistry(t)
	own := journal == nil
	if own {
		journal = &gatedJournal{Store: memjournal.New()}
	}
	sc := &shardCluster{t: t, reg: reg, journal: journal, typeName: "Counter", cfg: cfg, nodes: map[int]*shardNode{}}
	// Cleanups run last-in first-out: these run after multinode has shut the nodes down.
	t.Cleanup(func() {
		if own {
			_ = sc.journal.Close()
		}
	})
	opts.Registry = reg
	if opts.StableAfter == 0 {
		opts.StableAfter = testkit.Dilated(3 * time.Second)
	}
	configure := opts.Configure
	opts.Configure = func(i int, c *cluster.Config) {
		c.Timing = tolerantTiming()
		if configure != nil {
			configure(i, c)
		}
	}
	sc.mc = multinode.Start(t, opts)
	// Shut the nodes down youngest first, before the test kit does (cleanups run last
	// in, first out): the coordinator, on the oldest node, then never moves while the
	// cluster is taken down, and each node hands its shards off quickly.
	t.Cleanup(sc.shutdown)
	if !lazy {
		for i := range n {
			sc.startSharding(i)
		}
	}
	return sc
}

// startShardClusterLazy starts the nodes without sharding; the test starts it with
// startSharding.
func startShardClusterLazy(t *testing.T, n int, cfg func(i int) EntityConfig) *shardCluster {
	t.Helper()
	return newShardCluster(t, multinode.Options{Nodes: n}, cfg, true, nil)
}

// startSharding starts persistence and sharding on node i (after a start or restart).
func (sc *shardCluster) startSharding(i int) *shardNode {
	sc.t.Helper()
	node := sc.mc.Node(i)
	if _, err := persistence.Start(node.System, persistence.Config{
		Journal: sc.journal, Snapshots: sc.journal, Registry: sc.reg,
		JournalBreaker: persistence.BreakerConfig{CallTimeout: time.Second, ResetTimeout: 300 * time.Millisecond},
	}); err != nil {
		sc.t.Fatal(err)
	}
	if sc.ddataDir != "" {
		_, err := ddata.Start(context.Background(), node.System, ddata.Config{
			Cluster: node.Cluster, Registry: sc.reg, GossipInterval: 500 * time.Millisecond,
			DurableKeys: []string{"shard-*"}, DurableDir: filepath.Join(sc.ddataDir, fmt.Sprintf("node%d", i)),
		})
		if err != nil {
			sc.t.Fatal(err)
		}
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
	if sc.extra != nil {
		sc.extra(i, s)
	}
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

// tolerantTiming is the test cluster timing with failure detection slow enough to
// bear a loaded machine (many test processes on two cores, under the race detector): a
// crash is still detected in about three seconds, and downed three seconds later.
func tolerantTiming() cluster.Timing {
	t := cluster.TestTiming()
	t.GossipInterval = 50 * time.Millisecond
	t.ProbeInterval = testkit.Dilated(400 * time.Millisecond)
	t.ProbeTimeout = testkit.Dilated(800 * time.Millisecond)
	t.SuspicionMult = 4
	return t
}

func entityIDs(n int) []EntityID {
	out := make([]EntityID, n)
	for i := range out {
		out[i] = EntityID(fmt.Sprint(i))
	}
	return out
}

// askEventually asks entity id through node i until it answers (messages in flight to a
// crashed node are lost; the retry is the client's), failing the test after timeout. msg
// must be idempotent: a retry may be delivered as well as the message it repeats.
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

// incrementEventually waits (reading, which is idempotent) until entity id answers
// through node i, then increments it once and returns the new count. Retrying the
// increment itself would count twice: a retried message that the region buffered while
// the shard had no home is delivered with the others once the home is known.
func (sc *shardCluster) incrementEventually(i int, id EntityID, timeout time.Duration) int {
	sc.t.Helper()
	sc.askEventually(i, id, GetCount{}, timeout)
	n, err := sc.ask(i, id, Increment{By: 1}, timeout)
	if err != nil {
		sc.t.Fatalf("node %d, entity %s: increment after it answered: %v", i, id, err)
	}
	return n
}

// events subscribes a probe on node i to the rebalance events.
func (sc *shardCluster) events(i int) *testkit.Probe {
	p := testkit.NewProbe(sc.t, sc.nodes[i].System)
	actor.Subscribe[ShardEvent](sc.nodes[i].System.EventStream(), p.Ref())
	return p
}

// addressOf returns node i's address.
func (sc *shardCluster) addressOf(i int) actor.Address { return sc.nodes[i].System.Address() }

// byAge returns the indexes of the live nodes, oldest member first, as node 0 sees them.
func (sc *shardCluster) byAge() []int {
	members := slices.Clone(sc.mc.Node(0).Cluster.State().Members) // State shares its slice
	slices.SortFunc(members, func(a, b cluster.Member) int {
		if a.IsOlderThan(b) {
			return -1
		}
		return 1
	})
	var out []int
	for _, m := range members {
		for i, n := range sc.nodes {
			if n.System.Address().String() == m.Unique.Addr {
				out = append(out, i)
			}
		}
	}
	return out
}

// shutdown shuts the whole cluster down, youngest node first, and waits.
func (sc *shardCluster) shutdown() {
	sc.t.Helper()
	for i := len(sc.mc.Nodes()) - 1; i >= 0; i-- {
		n := sc.mc.Node(i)
		if n.System == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(15*time.Second))
		if err := n.System.Shutdown(ctx); err != nil {
			sc.t.Logf("shutdown of node %d: %v", i, err)
		}
		cancel()
	}
}

// gatedJournal is the shared test journal: an in-memory journal whose writes can be
// delayed (to make entities stash commands) or blocked (a journal nobody can reach).
type gatedJournal struct {
	*memjournal.Store
	delay   atomic.Int64 // nanoseconds added to every write
	blocked atomic.Bool
	open    chan struct{} // closed when unblocked; replaced when blocked
	mu      sync.Mutex
	// fault, when set before the nodes start, answers a call in the journal's
	// place when it reports ok: a failure of the call, or a result per write.
	fault func(writes []persistence.AtomicWrite) (results []error, err error, ok bool)
}

// block makes writes wait (until their context ends) until unblock.
func (j *gatedJournal) block() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.blocked.Load() {
		j.open = make(chan struct{})
		j.blocked.Store(true)
	}
}

func (j *gatedJournal) unblock() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.blocked.Load() {
		j.blocked.Store(false)
		close(j.open)
	}
}

// WriteMessages delays or blocks, then writes.
func (j *gatedJournal) WriteMessages(ctx context.Context, writes []persistence.AtomicWrite) ([]error, error) {
	if d := time.Duration(j.delay.Load()); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
	if j.blocked.Load() {
		j.mu.Lock()
		open := j.open
		j.mu.Unlock()
		select {
		case <-open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if j.fault != nil {
		if results, err, ok := j.fault(writes); ok {
			return results, err
		}
	}
	return j.Store.WriteMessages(ctx, writes)
}
