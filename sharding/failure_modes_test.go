package sharding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

// The failure modes other implementations shipped, each reproduced here.

// recorderCluster starts the recorder entity type "Rec" on every node of sc, reporting
// to report; cfg adjusts its configuration.
func recorderCluster(t *testing.T, sc *shardCluster, report actor.Ref, gate chan struct{}, cfg func(*EntityConfig)) []actor.Ref {
	t.Helper()
	var regions []actor.Ref
	// Stubborn entities obey their stop message once the test is over, so that the
	// nodes can shut down.
	obey := &atomic.Bool{}
	t.Cleanup(func() { obey.Store(true) })
	props := stubbornRecorderProps(report, gate, obey)
	for i := range len(sc.nodes) {
		c := EntityConfig{
			Entity:         props,
			NumberOfShards: 10,
			StateStoreMode: StateStorePersistence,
			Timings:        persistentCounterConfig().Timings,
		}
		c.Timings.RebalanceInterval = time.Hour
		if cfg != nil {
			cfg(&c)
		}
		r, err := sc.nodes[i].sharding.Start("Rec", c)
		if err != nil {
			t.Fatal(err)
		}
		regions = append(regions, r)
	}
	for i, r := range regions {
		awaitRegistered(t, r, len(regions), fmt.Sprintf("node %d's Rec region", i))
	}
	return regions
}

// awaitRegistered asks region for the current regions until the coordinator answers
// with n of them: region has registered (a request that needs the coordinator fails
// with ErrNoCoordinator before that), and so have the others.
func awaitRegistered(t *testing.T, region actor.Ref, n int, what string) {
	t.Helper()
	deadline := time.Now().Add(testkit.Dilated(10 * time.Second))
	for {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(time.Second))
		cur, err := actor.Ask[CurrentRegions](ctx, region, GetCurrentRegions{})
		cancel()
		if err == nil && len(cur.Regions) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not registered with %d regions: %v, %v", what, n, cur.Regions, err)
		}
		// A poll's pace (unregistered, the region answers at once; it registers at its
		// next retry, within the retry interval).
		time.Sleep(20 * time.Millisecond)
	}
}

// Akka.NET #8501: a region kept routing to a shard it was handing off, so new messages
// died in the stopping shard. Here every message sent while the shard stops, through
// any region, reaches the entity's next incarnation, in each region's order.
func TestFailureModeRoutingToAStoppingShard(t *testing.T) {
	sc := startShardCluster(t, 2, func(int) EntityConfig { return persistentCounterConfig() })
	probe := testkit.NewProbe(t, sc.nodes[0].System)
	dead := testkit.NewProbe(t, sc.nodes[0].System)
	actor.Subscribe[actor.DeadLetter](sc.nodes[0].System.EventStream(), dead.Ref())
	actor.Subscribe[actor.DeadLetter](sc.nodes[1].System.EventStream(), dead.Ref())
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	regions := recorderCluster(t, sc, probe.Ref(), gate, func(c *EntityConfig) { c.HandOffStopMessage = stopNow{} })

	_ = regions[1].Tell(Envelope{EntityID: "a", Message: "m0"})
	probe.ExpectMsg(started{Entity: "a", Incarnation: 1}, 10*time.Second)
	probe.ExpectMsg(note{Entity: "a", Incarnation: 1, Msg: "m0"})
	_ = regions[0].Tell(Envelope{EntityID: "b", Message: "warm"}) // node 0's region registered
	testkit.ExpectMsgType[started](probe, 10*time.Second)
	testkit.ExpectMsgType[note](probe)

	requester := testkit.NewProbe(t, sc.nodes[0].System)
	requester.Send(regions[0], StopShards{Shards: []ShardID{HashShardID("a", 10)}})
	probe.ExpectMsg(inStop{Entity: "a"}, 10*time.Second)
	var sent []string
	for i := range 10 {
		m := string(rune('A'+i%2)) + string(rune('0'+i))
		sent = append(sent, m)
		_ = regions[i%2].Tell(Envelope{EntityID: "a", Message: m})
	}
	release()
	requester.ExpectMsg(ShardStopped{Shard: HashShardID("a", 10)}, 10*time.Second)
	var got []string
	next := int64(0)
	for len(got) < len(sent) {
		switch m := probe.ReceiveN(1, 10*time.Second)[0].(type) {
		case note:
			if next == 0 {
				next = m.Incarnation
			}
			if m.Incarnation == 1 || m.Incarnation != next {
				t.Fatalf("%v reached incarnation %d (the next one is %d)", m.Msg, m.Incarnation, next)
			}
			got = append(got, m.Msg.(string))
		case started, stoppedNote:
		default:
			t.Fatalf("unexpected %T %+v", m, m)
		}
	}
	for _, prefix := range []byte{'A', 'B'} {
		var want, have []string
		for _, m := range sent {
			if m[0] == prefix {
				want = append(want, m)
			}
		}
		for _, m := range got {
			if m[0] == prefix {
				have = append(have, m)
			}
		}
		if !slices.Equal(want, have) {
			t.Fatalf("region %c's messages arrived as %v, sent %v", prefix, have, want)
		}
	}
	dead.ExpectNoMsgMatching(200*time.Millisecond, func(m any) bool {
		_, isString := m.(actor.DeadLetter).Message.(string)
		return isString
	})
}

// Akka.NET #7500: after a hand-off whose timer expired, the shard was never deallocated
// and was re-created in a loop. Here the entity ignores the hand-off stop message past
// the hand-off timeout; the shard ends at one home, and no allocation repeats.
func TestFailureModeHandOffTimeoutDoesNotLoop(t *testing.T) {
	sc := startShardCluster(t, 2, func(int) EntityConfig { return persistentCounterConfig() })
	probe := testkit.NewProbe(t, sc.nodes[0].System)
	events := sc.events(0)
	regions := recorderCluster(t, sc, probe.Ref(), nil, func(c *EntityConfig) {
		c.HandOffStopMessage = stubbornStop{} // the recorder notes it and keeps running
		c.Timings.HandOffTimeout = time.Second
	})
	shard := HashShardID("a", 10)
	_ = regions[1].Tell(Envelope{EntityID: "a", Message: "m0"})
	testkit.ExpectMsgType[started](probe, 10*time.Second)
	probe.ExpectMsg(note{Entity: "a", Incarnation: 1, Msg: "m0"})
	requester := testkit.NewProbe(t, sc.nodes[0].System)
	requester.Send(regions[0], StopShards{Shards: []ShardID{shard}})
	probe.ExpectMsg(note{Entity: "a", Incarnation: 1, Msg: "ignored"}, 10*time.Second)
	// Stopped hard after max(timeout - 5s, 1s).
	probe.ExpectMsg(stoppedNote{Entity: "a", Incarnation: 1}, 10*time.Second)
	_ = regions[0].Tell(Envelope{EntityID: "a", Message: "m1"})
	probe.FishForMessage(func(m any) bool { return m == note{Entity: "a", Incarnation: 2, Msg: "m1"} }, 10*time.Second)
	// Settled: the shard was allocated twice in all (for m0, and again for m1 after
	// the hand-off), and no more. The events are counted from the start: one may
	// reach the probe after the entity's note does.
	allocations := 0
	deadline := time.Now().Add(testkit.Dilated(2 * time.Second))
	for time.Now().Before(deadline) {
		for _, m := range events.Drain() {
			if a, ok := m.(ShardAllocated); ok && a.Shard == shard && a.TypeName == "Rec" {
				allocations++
			}
		}
		probe.ExpectNoMsgMatching(200*time.Millisecond, func(m any) bool {
			s, ok := m.(started)
			return ok && s.Entity == "a"
		})
	}
	for _, m := range events.Drain() {
		if a, ok := m.(ShardAllocated); ok && a.Shard == shard && a.TypeName == "Rec" {
			allocations++
		}
	}
	if allocations != 2 {
		t.Fatalf("shard %s allocated %d times in all, want 2 (for m0, and after the hand-off)", shard, allocations)
	}
}

// akka-core #27259: a region that terminated during a rebalance left its shard marked
// in progress for ever. Here the owner crashes while its shard's hand-off waits for an
// entity; the shard gets a new home and the entity answers there.
func TestFailureModeOwnerDiesDuringHandOff(t *testing.T) {
	sc := startShardCluster(t, 3, func(int) EntityConfig { return persistentCounterConfig() })
	probe := testkit.NewProbe(t, sc.nodes[0].System)
	regions := recorderCluster(t, sc, probe.Ref(), nil, func(c *EntityConfig) {
		c.HandOffStopMessage = stubbornStop{}
		c.Timings.HandOffTimeout = time.Minute
		c.MinMembers = 3 // shards spread over the three nodes
	})
	// Find an entity whose shard lives on node 2.
	cands := entityIDs(30)
	for _, cand := range cands {
		_ = regions[0].Tell(Envelope{EntityID: cand, Message: "hello"})
	}
	for range 2 * len(cands) {
		probe.ReceiveN(1, 10*time.Second)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(5*time.Second))
	defer cancel()
	st, err := actor.Ask[ShardRegionState](ctx, regions[2], GetShardRegionState{})
	if err != nil {
		t.Fatal(err)
	}
	var id EntityID
	for _, s := range st.Shards {
		if len(s.Entities) > 0 {
			id = s.Entities[0]
			break
		}
	}
	if id == "" {
		t.Fatal("no entity on node 2")
	}
	requester := testkit.NewProbe(t, sc.nodes[0].System)
	requester.Send(regions[0], StopShards{Shards: []ShardID{HashShardID(id, 10)}})
	probe.FishForMessage(func(m any) bool { return isIgnored(m, id) }, 10*time.Second)
	sc.mc.Crash(2)
	requester.ExpectMsg(ShardStopped{Shard: HashShardID(id, 10)}, 30*time.Second)
	_ = regions[0].Tell(Envelope{EntityID: id, Message: "after"})
	probe.FishForMessage(func(m any) bool {
		n, ok := m.(note)
		return ok && n.Entity == id && n.Msg == "after"
	}, 20*time.Second)
}

func isIgnored(m any, id EntityID) bool {
	n, ok := m.(note)
	return ok && n.Entity == id && n.Msg == "ignored"
}

// Akka.NET #7090: commands queued behind the hand-off stop message of a persistent
// entity were lost. With a stop command of its own (the seeds' advice for persistent
// entities), every command a persistent entity got before its stop message is handled
// first (it waits in the entity's stash while events are written), and every command
// sent later reaches the next incarnation: all increments are acknowledged and counted.
func TestFailureModeCommandsBehindTheStopMessage(t *testing.T) {
	table := newIncarnations()
	sc := startShardCluster(t, 2, func(i int) EntityConfig {
		c := persistentCounterConfig()
		c.EntityFactory = trackedCounters(table, fmt.Sprintf("node%d", i))
		c.HandOffStopMessage = StopCounter{}
		c.Timings.RebalanceInterval = time.Hour
		return c
	})
	sc.mustAsk(0, "a", GetCount{})
	sc.mustAsk(1, "b", GetCount{})
	sc.journal.delay.Store(int64(20 * time.Millisecond)) // persist slowly: commands stash
	probe := testkit.NewProbe(t, sc.nodes[0].System)
	shard := HashShardID("a", 10)
	for range 10 {
		probe.Send(sc.nodes[0].region, Envelope{EntityID: "a", Message: Increment{By: 1}})
	}
	probe.Send(sc.nodes[1].region, StopShards{Shards: []ShardID{shard}})
	for range 10 {
		probe.Send(sc.nodes[0].region, Envelope{EntityID: "a", Message: Increment{By: 1}})
	}
	acks := map[int]bool{}
	stopped := false
	for len(acks) < 20 || !stopped {
		switch m := probe.ReceiveN(1, 20*time.Second)[0].(type) {
		case int:
			if acks[m] {
				t.Fatalf("count %d acknowledged twice", m)
			}
			acks[m] = true
		case ShardStopped:
			stopped = true
		default:
			t.Fatalf("unexpected %T %+v", m, m)
		}
	}
	sc.journal.delay.Store(0)
	if n := sc.mustAsk(1, "a", GetCount{}); n != 20 {
		t.Fatalf("count %d, want 20", n)
	}
	if table.startsOf("a") < 2 {
		t.Fatal("the shard was not handed off")
	}
	table.checkNeverTwo(t)
}

// While the coordinator's state store cannot be written (a journal nobody reaches), a
// message to a new shard gets no answer within a second, shards with known homes keep
// answering, and once the store is back the message is delivered.
func TestStateStoreUnreachable(t *testing.T) {
	sc := startShardCluster(t, 2, func(int) EntityConfig { return persistentCounterConfig() })
	for _, id := range []EntityID{"0", "1"} {
		sc.mustAsk(0, id, Increment{By: 1})
		sc.mustAsk(1, id, GetCount{})
	}
	var fresh EntityID
	for _, id := range entityIDs(50) {
		if s := HashShardID(id, 10); s != HashShardID("0", 10) && s != HashShardID("1", 10) {
			fresh = id
			break
		}
	}
	sc.journal.block()
	probe := testkit.NewProbe(t, sc.nodes[1].System)
	probe.Send(sc.nodes[1].region, Envelope{EntityID: fresh, Message: GetCount{}})
	probe.ExpectNoMsg(time.Second)
	if n, err := sc.ask(1, "0", GetCount{}, time.Second); err != nil || n != 1 {
		t.Fatalf("known shard while the store is unreachable: %d, %v", n, err)
	}
	sc.journal.unblock()
	probe.ExpectMsg(0, 20*time.Second)
}

// testLeases is an in-memory lease store shared by the nodes of one process.
type testLeases struct {
	mu       sync.Mutex
	owners   map[string]string
	lost     map[string]func(error)
	acquires atomic.Int64
}

func newTestLeases() *testLeases {
	return &testLeases{owners: map[string]string{}, lost: map[string]func(error){}}
}

func (s *testLeases) factory(name, owner string) (Lease, error) {
	return &testLease{s: s, name: name, owner: owner}, nil
}

func (s *testLeases) owner(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owners[name]
}

// revoke takes the lease away from its holder.
func (s *testLeases) revoke(name string) {
	s.mu.Lock()
	f := s.lost[name]
	delete(s.owners, name)
	delete(s.lost, name)
	s.mu.Unlock()
	if f != nil {
		f(errors.New("revoked"))
	}
}

type testLease struct {
	s           *testLeases
	name, owner string
}

func (l *testLease) Acquire(_ context.Context, onLost func(error)) (bool, error) {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if o, ok := l.s.owners[l.name]; ok && o != l.owner {
		return false, nil
	}
	l.s.owners[l.name] = l.owner
	l.s.lost[l.name] = onLost
	l.s.acquires.Add(1)
	return true, nil
}

func (l *testLease) Release(context.Context) (bool, error) {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if l.s.owners[l.name] != l.owner {
		return false, nil
	}
	delete(l.s.owners, l.name)
	delete(l.s.lost, l.name)
	return true, nil
}

func (l *testLease) CheckLease() bool { return l.s.owner(l.name) == l.owner }

// akka-core #31715: a shard's lease was acquired and never released when the shard was
// rebalanced, so its next home could never start it. Here the shard moves with its
// lease; and a shard that loses its lease stops, then starts again with it.
func TestFailureModeShardLeaseReleasedOnHandOff(t *testing.T) {
	leases := newTestLeases()
	sc := startShardCluster(t, 2, func(int) EntityConfig {
		c := persistentCounterConfig()
		c.Lease = leases.factory
		c.Timings.RebalanceInterval = time.Hour
		return c
	})
	// An entity whose shard is on node 1 (the youngest, which leaves).
	var id EntityID
	for _, cand := range entityIDs(30) {
		sc.mustAsk(0, cand, Increment{By: 1})
		if homes := sc.homes(1); len(homes[HashShardID(cand, 10)]) == 1 {
			id = cand
			break
		}
	}
	if id == "" {
		t.Fatal("no shard on node 1")
	}
	name := leaseName("Counter", HashShardID(id, 10))
	if got := leases.owner(name); got != sc.addressOf(1).HostPort() {
		t.Fatalf("lease %s held by %q, want node 1", name, got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(20*time.Second))
	defer cancel()
	if err := sc.nodes[1].System.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if n := sc.mustAsk(0, id, Increment{By: 1}); n != 2 {
		t.Fatalf("count %d after the move, want 2", n)
	}
	if got := leases.owner(name); got != sc.addressOf(0).HostPort() {
		t.Fatalf("lease %s held by %q after the move, want node 0", name, got)
	}
	// Revoked: the shard stops (what reaches it meanwhile is lost, as documented), and
	// starts again with the lease at the next message. Reads until it has, then one
	// increment.
	before := leases.acquires.Load()
	leases.revoke(name)
	deadline := time.Now().Add(testkit.Dilated(10 * time.Second))
	for leases.acquires.Load() <= before && time.Now().Before(deadline) {
		_, _ = sc.ask(0, id, GetCount{}, 200*time.Millisecond)
	}
	if n := sc.incrementEventually(0, id, 10*time.Second); n != 3 {
		t.Fatalf("count %d after losing the lease, want 3", n)
	}
	if leases.acquires.Load() <= before {
		t.Fatal("the lease was not acquired again")
	}
}
