package ddata

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// testCluster is a multinode cluster with a replicator on every node.
type testCluster struct {
	t     *testing.T
	c     *multinode.Cluster
	reg   *serialization.Registry
	cfg   func(i int) Config
	repls []*Replicator
}

// fastConfig is the replicator configuration of the multi-node tests: short
// intervals, so that a test takes seconds.
func fastConfig() Config {
	return Config{
		GossipInterval:            100 * time.Millisecond,
		NotifySubscribersInterval: 50 * time.Millisecond,
	}
}

// startCluster starts n nodes and a replicator on each, and waits until every
// replicator sees the others.
func startCluster(t *testing.T, n int, stableAfter time.Duration, cfg func(i int) Config) *testCluster {
	t.Helper()
	reg := serialization.NewRegistry()
	if cfg == nil {
		cfg = func(int) Config { return fastConfig() }
	}
	tc := &testCluster{t: t, reg: reg, cfg: cfg}
	tc.c = multinode.Start(t, multinode.Options{Nodes: n, Registry: reg, StableAfter: stableAfter})
	for i := range n {
		tc.startReplicator(i)
	}
	for i := range n {
		tc.awaitPeers(i, n-1)
	}
	return tc
}

// startReplicator starts the replicator of node i (again, after a restart).
func (tc *testCluster) startReplicator(i int) *Replicator {
	tc.t.Helper()
	node := tc.c.Node(i)
	cfg := tc.cfg(i)
	cfg.Cluster, cfg.Registry = node.Cluster, tc.reg
	r, err := Start(tc.t.Context(), node.System, cfg)
	if err != nil {
		tc.t.Fatalf("node %d: Start: %v", i, err)
	}
	for len(tc.repls) <= i {
		tc.repls = append(tc.repls, nil)
	}
	tc.repls[i] = r
	return r
}

func (tc *testCluster) r(i int) *Replicator { return tc.repls[i] }

// inspect runs f on replicator i's goroutine and returns its result.
func inspect[T any](r *Replicator, f func(a *replicator) T) T {
	ch := make(chan T, 1)
	if err := r.ref.Tell(&inspectRequest{f: func(a *replicator) { ch <- f(a) }}); err != nil {
		panic(err)
	}
	return <-ch
}

type inspectRequest struct{ f func(a *replicator) }

func (q *inspectRequest) handle(a *replicator, _ actor.Ref) { q.f(a) }

// awaitPeers checks that replicator i has seen the cluster state with n other
// members (as every node does after multinode.Start; on a loaded machine the
// failure detector may call one of them unreachable for a moment, which the
// replicator copes with). It synchronises by messages: once the replicator has
// handled Started it has subscribed to the cluster; a probe that subscribes after
// it gets its state after the replicator's state was sent, so an inspection sent
// then is handled after that state.
func (tc *testCluster) awaitPeers(i, n int) {
	tc.t.Helper()
	r := tc.r(i)
	inspect(r, func(*replicator) bool { return true })
	node := tc.c.Node(i)
	p := testkit.NewProbe(tc.t, node.System)
	node.Cluster.Subscribe(p.Ref())
	testkit.ExpectMsgType[cluster.CurrentClusterState](p)
	node.Cluster.Unsubscribe(p.Ref())
	if got := inspect(r, func(a *replicator) int { return len(a.members) }); got != n {
		tc.t.Fatalf("node %d: the replicator sees %d members, want %d", i, got, n)
	}
}

// awaitValue waits until node i's replica of key satisfies cond, using a
// subscription (every change is notified).
func awaitValue[T ReplicatedData](tc *testCluster, i int, key Key[T], timeout time.Duration, what string, cond func(T) bool) T {
	tc.t.Helper()
	node := tc.c.Node(i)
	p := testkit.NewProbe(tc.t, node.System)
	if err := Subscribe(tc.r(i), key, p.Ref()); err != nil {
		tc.t.Fatal(err)
	}
	defer func() { _ = Unsubscribe(tc.r(i), key, p.Ref()) }()
	var last T
	deadline := time.Now().Add(testkit.Dilated(timeout))
	for {
		c, ok := p.FishForMessage(func(msg any) bool { _, ok := msg.(Changed[T]); return ok }, time.Until(deadline)).(Changed[T])
		if !ok {
			tc.t.Fatalf("node %d: no %s", i, what)
		}
		last = c.Value
		if cond(last) {
			return last
		}
		tc.t.Logf("node %d: waiting for %s: %s", i, what, describe(last))
		if time.Now().After(deadline) {
			tc.t.Fatalf("node %d: no %s within %v; last value %s", i, what, timeout, describe(last))
		}
	}
}

// describe returns a value's contents for a failure message.
func describe(v any) string {
	switch x := v.(type) {
	case interface{ Value() uint64 }:
		return fmt.Sprint(x.Value())
	case interface{ Elements() []string }:
		return fmt.Sprint(sortedStrings(x.Elements()))
	}
	return fmt.Sprintf("%v", v)
}

func counterIs(n uint64) func(*GCounter) bool {
	return func(c *GCounter) bool { return c.Value() == n }
}

// update is Update that fails the test on error.
func update[T ReplicatedData](t *testing.T, r *Replicator, key Key[T], level WriteConsistency, modify func(T) (T, error)) {
	t.Helper()
	if err := Update(context.Background(), r, key, level, *new(T), modify); err != nil {
		t.Fatalf("Update %s with %v: %v", key.ID(), level, err)
	}
}

func localCount(t *testing.T, r *Replicator, key Key[*GCounter]) uint64 {
	t.Helper()
	c, err := Read(context.Background(), r, key, ReadLocal())
	if errors.Is(err, ErrNotFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return c.Value()
}

// Two nodes: local writes, WriteTo(2), WriteAll and WriteMajority; a partition;
// a node that joins later gets the data by gossip.
func TestTwoNodes(t *testing.T) {
	tc := startCluster(t, 2, 30*time.Second, nil)
	r0, r1 := tc.r(0), tc.r(1)
	for _, r := range []*Replicator{r0, r1} {
		for range 20 {
			update(t, r, counterKey, WriteLocal(), inc(r, 1))
		}
		update(t, r, counterKey, WriteTo(2, 3*time.Second), inc(r, 1))
	}
	for i, r := range []*Replicator{r0, r1} {
		if v := localCount(t, r, counterKey); v != 42 {
			t.Fatalf("node %d: %d after WriteTo(2), want 42", i, v)
		}
	}
	for i, r := range []*Replicator{r0, r1} {
		if n, err := ReplicaCount(context.Background(), r); err != nil || n != 2 {
			t.Fatalf("node %d: ReplicaCount %d, %v; want 2", i, n, err)
		}
	}
	for _, r := range []*Replicator{r0, r1} {
		update(t, r, counterKey, WriteAll(3*time.Second), inc(r, 1))
	}
	for i, r := range []*Replicator{r0, r1} {
		if v := localCount(t, r, counterKey); v != 44 {
			t.Fatalf("node %d: %d after WriteAll, want 44", i, v)
		}
	}
	for _, r := range []*Replicator{r0, r1} {
		update(t, r, counterKey, WriteMajority(3*time.Second, 0), inc(r, 1))
	}
	for i, r := range []*Replicator{r0, r1} {
		if v := localCount(t, r, counterKey); v != 46 {
			t.Fatalf("node %d: %d after WriteMajority, want 46", i, v)
		}
	}

	// A partition: WriteTo(2) times out, local writes go on on both sides.
	tc.c.Partition([]int{0}, []int{1})
	err := Update(context.Background(), r0, counterKey, WriteTo(2, 300*time.Millisecond), nil, inc(r0, 1))
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("WriteTo(2) during a partition: %v", err)
	}
	for range 5 {
		update(t, r0, counterKey, WriteLocal(), inc(r0, 1))
		update(t, r1, counterKey, WriteLocal(), inc(r1, 1))
	}
	update(t, r1, setKey, WriteLocal(), add(r1, "b1"))
	tc.c.Heal()
	for i := range 2 {
		awaitValue(tc, i, counterKey, 10*time.Second, "57 after the partition", counterIs(57))
	}
	awaitValue(tc, 0, setKey, 10*time.Second, "the set", func(s *ORSet[string]) bool { return s.Contains("b1") })

	// A node that joins later gets everything by gossip within 5s.
	tc.c.Add()
	tc.startReplicator(2)
	start := time.Now()
	awaitValue(tc, 2, counterKey, 5*time.Second, "57 on the new node", counterIs(57))
	awaitValue(tc, 2, setKey, 5*time.Second, "the set on the new node", func(s *ORSet[string]) bool { return s.Contains("b1") })
	t.Logf("the new node had the data %v after its replicator started", time.Since(start))
}

// Deltas carry local changes, and a change without a delta (a key created from an
// initial value with state of its own, a modify that returns another value) makes
// the receiver ask for the full value. Gossip runs every second, so the deltas
// (every 200ms) come first; without the full value the replicas would diverge for
// good (a set's element whose dot the receiver counts as seen is never added back).
func TestDeltasAndFullValues(t *testing.T) {
	tc := startCluster(t, 2, 30*time.Second, func(int) Config {
		c := fastConfig()
		c.GossipInterval = time.Second
		return c
	})
	r0 := tc.r(0)
	for range 3 {
		update(t, r0, counterKey, WriteLocal(), inc(r0, 1))
	}
	awaitValue(tc, 1, counterKey, 5*time.Second, "3", counterIs(3))

	seeded := NewKey[*ORSet[string]]("seeded")
	initial := NewORSet[string]()
	initial.Add(r0.SelfUniqueAddress(), "from-initial")
	if err := Update(context.Background(), r0, seeded, WriteLocal(), initial, add(r0, "first")); err != nil {
		t.Fatal(err)
	}
	awaitValue(tc, 1, seeded, 5*time.Second, "first", func(s *ORSet[string]) bool { return s.Contains("first") })
	update(t, r0, seeded, WriteLocal(), add(r0, "second"))
	awaitValue(tc, 1, seeded, 5*time.Second, "second", func(s *ORSet[string]) bool { return s.Contains("second") })
	update(t, r0, seeded, WriteLocal(), func(s *ORSet[string]) (*ORSet[string], error) {
		other := s.Clone() // another value: merged in, and sent whole
		other.Add(r0.SelfUniqueAddress(), "third")
		return other, nil
	})
	want := []string{"first", "from-initial", "second", "third"}
	awaitValue(tc, 1, seeded, 5*time.Second, fmt.Sprint(want), func(s *ORSet[string]) bool {
		return slices.Equal(sortedStrings(s.Elements()), want)
	})

	// A write whose delta the other node cannot apply (it lost the deltas before
	// it) is answered with a DeltaNack and sent whole: when WriteAll returns, the
	// other node has everything.
	lossy := NewKey[*ORSet[string]]("lossy")
	inspect(r0, func(a *replicator) bool {
		q := &updateRequest[*ORSet[string]]{key: lossy, level: WriteLocal(), modify: add(r0, "lost"), ch: make(chan UpdateResponse[*ORSet[string]], 1)}
		q.handle(a, actor.Ref{})
		a.flushDelta(lossy.ID(), a.entries[lossy.ID()])
		a.deltas.Collect() // "sent", and lost
		return true
	})
	update(t, r0, lossy, WriteAll(3*time.Second), add(r0, "written"))
	s, err := Read(context.Background(), tc.r(1), lossy, ReadLocal())
	if err != nil || !slices.Equal(sortedStrings(s.Elements()), []string{"lost", "written"}) {
		t.Fatalf("after WriteAll the other node holds %v, %v", s, err)
	}
}

// Read repair: with gossip and deltas out of the way, a ReadAll merges the
// replicas and writes the merge locally before it answers.
func TestReadRepair(t *testing.T) {
	tc := startCluster(t, 2, 30*time.Second, func(int) Config {
		c := fastConfig()
		c.GossipInterval, c.DisableDeltas = time.Hour, true
		return c
	})
	r0, r1 := tc.r(0), tc.r(1)
	update(t, r0, counterKey, WriteLocal(), inc(r0, 2))
	update(t, r1, counterKey, WriteLocal(), inc(r1, 5))
	if v := localCount(t, r0, counterKey); v != 2 {
		t.Fatalf("node 0 sees %d before the read; the test needs 2", v)
	}
	c, err := Read(context.Background(), r0, counterKey, ReadAll(3*time.Second))
	if err != nil || c.Value() != 7 {
		t.Fatalf("ReadAll: %v, %v", c, err)
	}
	if v := localCount(t, r0, counterKey); v != 7 {
		t.Fatalf("after ReadAll the local replica holds %d, want 7 (read repair)", v)
	}
	if v := localCount(t, r1, counterKey); v != 5 {
		t.Fatalf("node 1 holds %d; a read repairs only the reader", v)
	}
	// Not found anywhere.
	if _, err := Read(context.Background(), r0, setKey, ReadAll(3*time.Second)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ReadAll of an unknown key: %v", err)
	}
}

// Three nodes: with one unreachable, majority reads and writes succeed and ReadAll
// fails; concurrent updates converge; both sides of a split accept writes, and
// the merges decide after it heals; unchanged data notifies nobody.
func TestThreeNodes(t *testing.T) {
	tc := startCluster(t, 3, 30*time.Second, nil)
	r0, r1, r2 := tc.r(0), tc.r(1), tc.r(2)
	ctx := context.Background()
	gone := tc.c.Node(2).Cluster.SelfUniqueAddress()

	tc.c.Partition([]int{0, 1}, []int{2})
	tc.c.Await(0, testkit.Dilated(10*time.Second), "node 2 unreachable", func(st cluster.CurrentClusterState) bool {
		return slices.ContainsFunc(st.Unreachable, func(m cluster.Member) bool { return m.Unique == gone })
	})
	update(t, r0, counterKey, WriteMajority(2*time.Second, 0), inc(r0, 1))
	if c, err := Read(ctx, r0, counterKey, ReadMajority(2*time.Second, 0)); err != nil || c.Value() != 1 {
		t.Fatalf("ReadMajority with one node unreachable: %v, %v", c, err)
	}
	if _, err := Read(ctx, r0, counterKey, ReadAll(500*time.Millisecond)); !errors.Is(err, ErrTimeout) {
		t.Fatalf("ReadAll with one node unreachable: %v, want ErrTimeout", err)
	}

	// Both sides accept writes: a counter, a set, and a key deleted on one side
	// while the other updates it.
	update(t, r1, setKey, WriteMajority(2*time.Second, 0), add(r1, "kept", "removed-on-a"))
	update(t, r2, setKey, WriteLocal(), add(r2, "added-on-b"))
	update(t, r0, setKey, WriteMajority(2*time.Second, 0), func(s *ORSet[string]) (*ORSet[string], error) {
		s.Remove("removed-on-a")
		return s, nil
	})
	doomed := NewKey[*GCounter]("doomed")
	update(t, r2, doomed, WriteLocal(), inc(r2, 1))
	update(t, r0, doomed, WriteLocal(), inc(r0, 1))
	if err := Delete(ctx, r0, doomed, WriteMajority(2*time.Second, 0)); err != nil {
		t.Fatalf("Delete on side A: %v", err)
	}
	update(t, r2, doomed, WriteLocal(), inc(r2, 1)) // side B does not know yet
	for range 3 {
		update(t, r2, counterKey, WriteLocal(), inc(r2, 1))
	}
	tc.c.Heal()
	want := []string{"added-on-b", "kept"}
	for i := range 3 {
		awaitValue(tc, i, counterKey, 10*time.Second, "4", counterIs(4))
		awaitValue(tc, i, setKey, 10*time.Second, fmt.Sprint(want), func(s *ORSet[string]) bool {
			return slices.Equal(sortedStrings(s.Elements()), want)
		})
	}
	deadline := time.Now().Add(testkit.Dilated(10 * time.Second))
	for i := range 3 {
		p := testkit.NewProbe(t, tc.c.Node(i).System)
		if err := Subscribe(tc.r(i), doomed, p.Ref()); err != nil {
			t.Fatal(err)
		}
		p.FishForMessage(func(msg any) bool { _, ok := msg.(Deleted[*GCounter]); return ok }, time.Until(deadline))
		if err := Update(ctx, tc.r(i), doomed, WriteLocal(), nil, inc(tc.r(i), 1)); !errors.Is(err, ErrDeleted) {
			t.Fatalf("node %d: update of a deleted key: %v", i, err)
		}
	}

	// Concurrent updates from every node converge.
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := tc.r(i)
			for range 100 {
				if err := Update(ctx, r, NewKey[*GCounter]("busy"), WriteLocal(), nil, inc(r, 1)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	busy := NewKey[*GCounter]("busy")
	for i := range 3 {
		awaitValue(tc, i, busy, 10*time.Second, "300", counterIs(300))
	}

	// Converged data: more gossip rounds, and no Changed.
	p := testkit.NewProbe(t, tc.c.Node(1).System)
	if err := Subscribe(r1, busy, p.Ref()); err != nil {
		t.Fatal(err)
	}
	testkit.ExpectMsgType[Changed[*GCounter]](p) // the current value, at once
	p.ExpectNoMsg(testkit.Dilated(500 * time.Millisecond))
	_ = r2
}

// A removed node's counts are folded into the leader's, and the value stays.
func TestPruningRemovedNode(t *testing.T) {
	tc := startCluster(t, 3, 2*time.Second, func(int) Config {
		c := fastConfig()
		c.PruningInterval = 100 * time.Millisecond
		c.MaxPruningDissemination = 300 * time.Millisecond
		return c
	})
	for i := range 3 {
		update(t, tc.r(i), counterKey, WriteAll(3*time.Second), inc(tc.r(i), uint64(i+1)))
	}
	for i := range 3 {
		awaitValue(tc, i, counterKey, 5*time.Second, "6", counterIs(6))
	}
	gone := tc.c.Node(2).Cluster.SelfUniqueAddress()
	tc.c.Crash(2)
	for i := range 2 {
		tc.c.Await(i, testkit.Dilated(20*time.Second), "node 2 removed", func(st cluster.CurrentClusterState) bool {
			return !slices.ContainsFunc(st.Members, func(m cluster.Member) bool { return m.Unique == gone })
		})
	}
	for i := range 2 {
		c := awaitValue(tc, i, counterKey, 20*time.Second, "node 2 pruned", func(c *GCounter) bool {
			return !c.NeedPruningFrom(gone)
		})
		if c.Value() != 6 {
			t.Fatalf("node %d: %d after pruning, want 6", i, c.Value())
		}
		if nodes := c.ModifiedByNodes(); len(nodes) != 2 {
			t.Fatalf("node %d: counts of %v after pruning", i, nodes)
		}
	}
	// The pruned value still takes updates, and both nodes agree.
	update(t, tc.r(1), counterKey, WriteAll(3*time.Second), inc(tc.r(1), 1))
	for i := range 2 {
		awaitValue(tc, i, counterKey, 5*time.Second, "7", counterIs(7))
	}
}

// Durable keys survive a restart of every node.
func TestDurableKeysSurviveRestart(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	tc := startCluster(t, 2, 30*time.Second, func(i int) Config {
		c := fastConfig()
		c.DurableKeys, c.DurableDir = []string{"durable-*"}, dirs[i]
		return c
	})
	durable := NewKey[*GCounter]("durable-count")
	cart := NewKey[*ORSet[string]]("durable-cart")
	for i := range 2 {
		r := tc.r(i)
		update(t, r, durable, WriteMajority(3*time.Second, 0), inc(r, uint64(i+1)))
		update(t, r, counterKey, WriteMajority(3*time.Second, 0), inc(r, 1))
	}
	// Many durable updates at once are stored in batches.
	errs := make(chan error, 200)
	for i := range 200 {
		go func() {
			errs <- Update(context.Background(), tc.r(i%2), cart, WriteLocal(), nil, add(tc.r(i%2), fmt.Sprint("item-", i)))
		}()
	}
	for range 200 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	tc.c.Crash(0)
	tc.c.Crash(1)
	for i := range 2 {
		tc.c.Restart(i)
		r := tc.startReplicator(i)
		// Loaded before the replicator serves anything: no wait.
		if v := localCount(t, r, durable); v != 3 {
			t.Fatalf("node %d: durable counter %d after the restart, want 3", i, v)
		}
		if v := localCount(t, r, counterKey); v != 0 {
			t.Fatalf("node %d: a key that is not durable survived: %d", i, v)
		}
	}
	tc.c.AwaitAllUp(testkit.Dilated(10 * time.Second))
	for i := range 2 {
		awaitValue(tc, i, cart, 10*time.Second, "200 items", func(s *ORSet[string]) bool { return s.Len() == 200 })
	}
}

// Bad input from a peer is refused alone, counted and logged; the rest of the
// message is used and nothing else is disturbed.
func TestBadInputFromPeer(t *testing.T) {
	tc := startCluster(t, 2, 30*time.Second, nil)
	r0 := tc.r(0)
	update(t, r0, counterKey, WriteLocal(), inc(r0, 1))
	n1 := tc.c.Node(1)
	from := toNodeWire(n1.Cluster.SelfUniqueAddress())
	target, err := n1.System.Resolve(tc.c.Node(0).Remote.Address().String() + "/system/" + actorName)
	if err != nil {
		t.Fatal(err)
	}
	p := testkit.NewProbe(t, n1.System)

	// A valid value, made on node 1's side.
	good := NewGCounter()
	good.Increment(n1.Cluster.SelfUniqueAddress(), 5)
	goodWire, err := newEnvelope(good).toWire(tc.reg, true)
	if err != nil {
		t.Fatal(err)
	}
	set := NewORSet[string]()
	set.Add(n1.Cluster.SelfUniqueAddress(), "x")
	setWire, _ := newEnvelope(set).toWire(tc.reg, true)
	before := r0.Stats()
	p.Send(target, &gossipMsg{From: from, Entries: []keyedEnvelope{
		{Key: "unknown-type", Env: envelopeWire{Manifest: "no.such.Type", Data: []byte{0x90}}},
		{Key: "corrupt", Env: envelopeWire{Manifest: "ddata.GCounter", Data: []byte{0xc1, 0xff, 0x00}}},
		{Key: counterKey.ID(), Env: setWire}, // another type than the key's
		{Key: "good", Env: goodWire},
	}})
	p.Send(target, &writeMsg{From: from, ID: 7, Key: "w", Env: envelopeWire{Manifest: "ddata.ORSet.string", Data: []byte{0x93, 0x01}}})
	if reply := testkit.ExpectMsgType[*writeReplyMsg](p); reply.ID != 7 || reply.Kind != replyNack {
		t.Fatalf("a corrupt write was answered with %+v, want a nack", reply)
	}
	p.Send(target, &deltasMsg{From: from, Deltas: []deltaWire{{Key: "d", Manifest: "ddata.GCounter.delta", Data: []byte{0xff}, FromSeq: 1, ToSeq: 1}}})
	// A message naming a node that is not the one it comes from, and a status
	// from a non-member, are ignored whole.
	forged := toNodeWire(tc.c.Node(0).Cluster.SelfUniqueAddress())
	p.Send(target, &gossipMsg{From: forged, Entries: []keyedEnvelope{{Key: "forged", Env: goodWire}}})
	p.Send(target, &statusMsg{From: nodeWire{Addr: from.Addr, UID: from.UID + 1}, TotChunks: 1})
	// A read after them answers once they are handled (one sender, in order).
	p.Send(target, &readMsg{From: from, ID: 9, Key: "good"})
	res := testkit.ExpectMsgType[*readResultMsg](p)
	if !res.Found || res.ID != 9 {
		t.Fatalf("the good value of the gossip was not kept: %+v", res)
	}
	st := r0.Stats()
	if got := st.InvalidData - before.InvalidData; got != 5 {
		t.Fatalf("InvalidData grew by %d, want 5 (unknown type, corrupt, wrong type, corrupt write, corrupt delta)", got)
	}
	if got := st.Ignored - before.Ignored; got != 2 {
		t.Fatalf("Ignored grew by %d, want 2", got)
	}
	if v := localCount(t, r0, counterKey); v != 1 {
		t.Fatalf("the counter changed to %d", v)
	}
	for _, k := range []string{"unknown-type", "corrupt", "w", "d", "forged"} {
		if _, err := Read(context.Background(), r0, NewKey[*GCounter](k), ReadLocal()); !errors.Is(err, ErrNotFound) {
			t.Fatalf("key %q: %v, want not found", k, err)
		}
	}
	// And the replicators still replicate.
	update(t, r0, counterKey, WriteAll(3*time.Second), inc(r0, 1))
	if v := localCount(t, tc.r(1), counterKey); v != 2 {
		t.Fatalf("node 1 has %d after WriteAll", v)
	}
}
