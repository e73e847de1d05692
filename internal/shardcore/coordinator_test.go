package shardcore

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/troupe-go/troupe/member"
	"github.com/troupe-go/troupe/sharding/placement"
)

func TestCoordinatorRegistration(t *testing.T) {
	h := newCoordHarness(t, CoordSettings{}, nil, 3)
	a := reg(1)

	h.manual = true
	d := h.from(a, Register{})
	if d.Store == nil || d.Store.Event != (RegionRegistered{Region: a}) {
		t.Fatalf("store %+v, want RegionRegistered", d.Store)
	}
	if len(sentTo(d, a)) != 0 {
		t.Fatal("acked before the registration was stored")
	}
	d = h.step(InStoreDone{})
	if !sent(d, a, RegisterAck{}) || !slices.Contains(d.Watch, a) {
		t.Fatalf("after store: sends %+v watch %v, want RegisterAck and a watch", d.Sends, d.Watch)
	}
	h.manual = false

	// Registering again is acknowledged without a store.
	d = h.from(a, Register{})
	if d.Store != nil || !sent(d, a, RegisterAck{}) {
		t.Fatalf("re-register: %+v", d)
	}

	// A sender whose member is not Up is ignored (it retries), unless it is local.
	for _, st := range []member.MemberStatus{0, member.Joining, member.Leaving, member.Down} {
		d = h.step(InRegionMsg{From: reg(2), Msg: Register{}, Status: st})
		h.expectNoSends(d, "register from "+st.String())
	}
	d = h.step(InRegionMsg{From: reg(2), Msg: Register{}, Status: member.Joining, Local: true})
	if !sent(d, reg(2), RegisterAck{}) {
		t.Fatalf("local registration not acked: %+v", d.Sends)
	}

	// Proxies register the same way, and never host.
	d = h.from(prox(3), RegisterProxy{})
	if !sent(d, prox(3), RegisterAck{}) || !slices.Contains(d.Watch, prox(3)) {
		t.Fatalf("proxy: %+v", d)
	}
	if _, ok := h.c.state.proxies[prox(3)]; !ok {
		t.Fatal("proxy not in state")
	}
	if got := h.allocate(prox(3), "s1"); got == prox(3) {
		t.Fatal("a proxy got a shard")
	}
}

func TestCoordinatorIgnoresRegionsBeforeStateLoaded(t *testing.T) {
	c := NewCoordinator(CoordSettings{}, nil)
	c.Step(InMembers{Members: testNodes(2)})
	for _, m := range []any{Register{}, GetShardHome{Shard: "s"}} {
		if d := c.Step(InRegionMsg{From: reg(1), Msg: m, Status: member.Up}); len(d.Sends) > 0 || d.Store != nil {
			t.Fatalf("%T answered before the state was loaded: %+v", m, d)
		}
	}
	d := c.Step(InStateLoaded{})
	if len(d.Sends) > 0 || d.Store != nil {
		t.Fatalf("messages from before the load were kept: %+v", d)
	}
}

func TestCoordinatorShardHomesAfterRegistration(t *testing.T) {
	a, b := reg(1), reg(2)
	st := NewCoordState(false)
	_ = st.Apply(RegionRegistered{Region: a})
	for i := range 5200 {
		_ = st.Apply(ShardHomeAllocated{Shard: placement.ShardID(fmt.Sprintf("s%05d", i)), Region: a})
	}
	c := NewCoordinator(CoordSettings{}, nil)
	c.Step(InMembers{Members: testNodes(3)})
	c.Step(InStateLoaded{State: st})
	c.Step(InTimer{Key: TimerKey{Kind: TimerStateInit}})
	d := c.Step(InRegionMsg{From: prox(3), Msg: RegisterProxy{}, Status: member.Up})
	var batches []ShardHomes
	for _, m := range sentTo(d, prox(3)) {
		if sh, ok := m.(ShardHomes); ok {
			batches = append(batches, sh)
		}
	}
	if len(batches) != 10 {
		t.Fatalf("%d ShardHomes messages, want 10", len(batches))
	}
	for i, b := range batches {
		n := 0
		for _, e := range b.Homes {
			n += len(e.Shards)
		}
		if n != 500 {
			t.Fatalf("batch %d holds %d homes, want 500", i, n)
		}
	}

	// Shards in hand-off are left out.
	h2 := newCoordHarness(t, CoordSettings{}, nil, 3)
	h2.register(a)
	h2.allocate(a, "s1")
	h2.allocate(a, "s2")
	h2.allocate(a, "s3")
	h2.register(b)
	h2.fire(TimerKey{Kind: TimerRebalance}) // classic: moves s1
	if h2.c.workers["s1"] == nil {
		t.Fatal("no hand-off started")
	}
	d = h2.from(prox(3), RegisterProxy{})
	for _, m := range sentTo(d, prox(3)) {
		if sh, ok := m.(ShardHomes); ok {
			for _, e := range sh.Homes {
				if slices.Contains(e.Shards, "s1") {
					t.Fatal("ShardHomes names a shard in hand-off")
				}
				if e.Region == a && !slices.Equal(e.Shards, []placement.ShardID{"s2", "s3"}) {
					t.Fatalf("homes %v", e.Shards)
				}
			}
		}
	}
}

func TestCoordinatorAllocation(t *testing.T) {
	h := newCoordHarness(t, CoordSettings{}, nil, 3)
	a, b := reg(1), reg(2)
	h.register(a, b)
	h.manual = true
	d := h.from(b, GetShardHome{Shard: "s1"})
	if d.Store == nil || d.Store.Event != (ShardHomeAllocated{Shard: "s1", Region: a}) {
		t.Fatalf("store %+v, want s1 at the older region", d.Store)
	}
	if len(d.Sends) > 0 {
		t.Fatal("answered before the allocation was stored")
	}
	d = h.step(InStoreDone{})
	if !sent(d, a, HostShard{Shard: "s1"}) || !sent(d, b, ShardHome{Shard: "s1", Region: a}) {
		t.Fatalf("after store: %+v", d.Sends)
	}
	if after, ok := startedTimer(d, TimerKey{Kind: TimerHostShard, Shard: "s1"}); !ok || after != DefaultShardStartTimeout {
		t.Fatalf("HostShard resend timer %v %v", after, ok)
	}
	h.manual = false
	// A known home is answered without a store.
	d = h.from(reg(3), GetShardHome{Shard: "s1"})
	if d.Store != nil || !sent(d, reg(3), ShardHome{Shard: "s1", Region: a}) {
		t.Fatalf("known home: %+v", d)
	}
	// The next shard goes to the region with fewer shards.
	if got := h.allocate(a, "s2"); got != b {
		t.Fatalf("s2 at %q, want %q", got, b)
	}
}

func TestCoordinatorMinMembers(t *testing.T) {
	h := newCoordHarness(t, CoordSettings{MinMembers: 2}, nil, 3)
	h.register(reg(1))
	h.expectNoSends(h.from(reg(1), GetShardHome{Shard: "s1"}), "one of two regions registered")
	// Proxies do not count.
	h.step(InRegionMsg{From: prox(3), Msg: RegisterProxy{}, Status: member.Up})
	h.expectNoSends(h.from(reg(1), GetShardHome{Shard: "s1"}), "one region and a proxy")
	h.register(reg(2))
	if got := h.allocate(reg(1), "s1"); got == "" {
		t.Fatal("not answered once two regions registered")
	}
}

// A coordinator that takes over a running cluster (its state has shards with homes)
// does not wait for min-nr-of-members regions again: the cluster may have shrunk.
func TestCoordinatorMinMembersOnlyAtFirstStart(t *testing.T) {
	st := NewCoordState(false)
	a := reg(1)
	for _, e := range []CoordEvent{RegionRegistered{Region: a}, ShardHomeAllocated{Shard: "s1", Region: a}} {
		if err := st.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	h := &coordHarness{t: t, c: NewCoordinator(CoordSettings{MinMembers: 5}, nil), shadow: st.Clone()}
	h.step(InMembers{Members: testNodes(3)})
	h.step(InStateLoaded{State: st})
	h.fire(TimerKey{Kind: TimerStateInit})
	h.register(a)
	d := h.from(a, GetShardHome{Shard: "s1"})
	if !sent(d, a, ShardHome{Shard: "s1", Region: a}) {
		t.Fatalf("known home not answered: %+v", d.Sends)
	}
	if got := h.allocate(a, "s2"); got != a {
		t.Fatalf("new shard at %q, want %q", got, a)
	}
}

func TestCoordinatorHostShardResend(t *testing.T) {
	h := newCoordHarness(t, CoordSettings{ShardStartTimeout: 3 * time.Second}, nil, 2)
	a := reg(1)
	h.register(a)
	h.allocate(a, "s1")
	key := TimerKey{Kind: TimerHostShard, Shard: "s1"}
	for range 3 {
		d := h.fire(key)
		if !sent(d, a, HostShard{Shard: "s1"}) {
			t.Fatalf("no resend: %+v", d.Sends)
		}
		if after, ok := startedTimer(d, key); !ok || after != 3*time.Second {
			t.Fatal("resend timer not restarted")
		}
	}
	h.from(reg(2), ShardStarted{Shard: "s1"}) // from the wrong region: ignored
	if !h.c.timers.active(key) {
		t.Fatal("ShardStarted from another region acknowledged the HostShard")
	}
	d := h.from(a, ShardStarted{Shard: "s1"})
	if h.c.timers.active(key) || len(d.Timers) == 0 || !d.Timers[0].Cancel {
		t.Fatalf("timer not cancelled: %+v", d.Timers)
	}
	h.expectNoSends(h.step(InTimer{Key: key}), "a stale resend fire")
}

func TestCoordinatorInputsWaitForPendingStore(t *testing.T) {
	h := newCoordHarness(t, CoordSettings{}, nil, 3)
	a, b := reg(1), reg(2)
	h.register(a, b)
	h.allocate(a, "known")
	h.manual = true
	d := h.from(a, GetShardHome{Shard: "s1"}) // starts a store
	if d.Store == nil {
		t.Fatal("no store")
	}
	// A known home is answered at once; everything else waits.
	d = h.from(b, GetShardHome{Shard: "known"})
	if !sent(d, b, ShardHome{Shard: "known", Region: a}) {
		t.Fatalf("known home not answered during the store: %+v", d.Sends)
	}
	h.expectNoSends(h.from(b, GetShardHome{Shard: "s1"}), "the shard being stored")
	h.expectNoSends(h.from(reg(3), Register{}), "a registration")
	h.expectNoSends(h.from(b, GetShardHome{Shard: "s2"}), "another new shard")
	h.from(b, GetShardHome{Shard: "s2"}) // a retry of the same request
	if len(h.c.queue) != 3 {
		t.Fatalf("queue holds %d inputs, want 3", len(h.c.queue))
	}

	// A failed store is asked for again.
	d = h.step(InStoreFailed{Err: errStore})
	if d.Store == nil || d.Store.Event != (ShardHomeAllocated{Shard: "s1", Region: b}) || !hasProblem(d, errStore) {
		t.Fatalf("retry: %+v", d)
	}

	// Done: the queued inputs run in order; the next store (RegionRegistered) blocks again.
	d = h.step(InStoreDone{})
	if !sent(d, a, ShardHome{Shard: "s1", Region: b}) || !sent(d, b, HostShard{Shard: "s1"}) {
		t.Fatalf("requester not answered: %+v", d.Sends)
	}
	if !sent(d, b, ShardHome{Shard: "s1", Region: b}) {
		t.Fatalf("queued request for the same shard not answered: %+v", d.Sends)
	}
	if d.Store == nil || d.Store.Event != (RegionRegistered{Region: reg(3)}) {
		t.Fatalf("next store %+v, want the queued registration", d.Store)
	}
	h.manual = false
	d = h.step(InStoreDone{})
	if !sent(d, reg(3), RegisterAck{}) || h.homeOf("s2") == "" {
		t.Fatalf("rest of the queue: %+v, s2 at %q", d.Sends, h.homeOf("s2"))
	}
}

func TestCoordinatorRemovalMargin(t *testing.T) {
	margin := 7 * time.Second
	h := newCoordHarness(t, CoordSettings{RemovalMargin: margin}, nil, 3)
	a, b := reg(1), reg(2)
	h.register(a, b)
	h.allocate(a, "s1")
	h.allocate(a, "s2") // at b
	if h.homeOf("s1") != a {
		t.Fatal("setup")
	}
	d := h.step(InRegionTerminated{Region: a, NodeRemoved: true})
	if d.Store != nil {
		t.Fatal("region removed before the margin")
	}
	if after, ok := startedTimer(d, TimerKey{Kind: TimerRemovalMargin, Region: a}); !ok || after != margin {
		t.Fatal("no margin timer")
	}
	// Its shards are not handed out, and it gets no new shard.
	h.expectNoSends(h.from(b, GetShardHome{Shard: "s1"}), "GetShardHome for a shard of a region being removed")
	if got := h.allocate(b, "s3"); got != b {
		t.Fatalf("new shard at %q, want %q", got, b)
	}
	d = h.fire(TimerKey{Kind: TimerRemovalMargin, Region: a})
	if _, ok := h.c.state.regions[a]; ok || h.homeOf("s1") != b {
		t.Fatalf("after the margin: region still there or s1 at %q", h.homeOf("s1"))
	}
	if !sent(d, b, HostShard{Shard: "s1"}) {
		t.Fatalf("s1 not re-homed: %+v", d.Sends)
	}

	// Without a margin, or when the actor stopped by itself, removal is immediate.
	h = newCoordHarness(t, CoordSettings{}, nil, 3)
	h.register(a, b)
	h.step(InRegionTerminated{Region: a, NodeRemoved: true})
	if _, ok := h.c.state.regions[a]; ok {
		t.Fatal("no margin: region not removed at once")
	}
	h = newCoordHarness(t, CoordSettings{RemovalMargin: margin}, nil, 3)
	h.register(a, b)
	h.from(a, RegionStopped{})
	if _, ok := h.c.state.regions[a]; ok {
		t.Fatal("RegionStopped: region not removed at once")
	}
}

func TestCoordinatorGracefulShutdown(t *testing.T) {
	h, a, b, p := rebalanceSetup(t, CoordSettings{})
	d := h.from(a, GracefulShutdownReq{})
	for _, s := range []placement.ShardID{"s1", "s2", "s3"} {
		if !sent(d, b, BeginHandOff{Shard: s}) {
			t.Fatalf("no hand-off for %q", s)
		}
	}
	h.expectNoSends(h.from(a, GracefulShutdownReq{}), "a repeated GracefulShutdownReq")
	// A region shutting down gets no new shard.
	if got := h.allocate(a, "new"); got != b {
		t.Fatalf("new shard at %q", got)
	}
	for i, s := range []placement.ShardID{"s1", "s2", "s3"} {
		for _, r := range []placement.RegionID{a, b, p} {
			h.from(r, BeginHandOffAck{Shard: s, Region: r})
		}
		d = h.from(a, ShardStopped{Shard: s})
		if h.homeOf(s) != b {
			t.Fatalf("%q at %q after hand-off", s, h.homeOf(s))
		}
		// Told it may stop once its last shard is handed off, not before.
		if acked := sent(d, a, GracefulShutdownAck{}); acked != (i == 2) {
			t.Fatalf("after the hand-off of %q: acknowledged %v", s, acked)
		}
	}
	if d = h.from(a, GracefulShutdownReq{}); !sent(d, a, GracefulShutdownAck{}) {
		t.Fatal("a request from a region that hosts nothing not acknowledged")
	}
	// A region with no shard is acknowledged at once; one never registered too.
	c := reg(4)
	h.register(c)
	if d = h.from(c, GracefulShutdownReq{}); !sent(d, c, GracefulShutdownAck{}) {
		t.Fatal("an empty region not acknowledged")
	}
	if d = h.from(reg(5), GracefulShutdownReq{}); !sent(d, reg(5), GracefulShutdownAck{}) {
		t.Fatal("an unknown region not acknowledged")
	}

	// A hand-off that times out lets the region ask again.
	h, a, b, _ = rebalanceSetup(t, CoordSettings{})
	h.from(a, GracefulShutdownReq{})
	h.fire(TimerKey{Kind: TimerHandOff, Shard: "s1"})
	if h.c.graceful[a] {
		t.Fatal("graceful mark kept after a hand-off timed out")
	}
	d = h.from(a, GracefulShutdownReq{})
	if !sent(d, b, BeginHandOff{Shard: "s1"}) {
		t.Fatal("shutdown request not honoured again")
	}
}

func TestCoordinatorStopShards(t *testing.T) {
	h, a, b, p := rebalanceSetup(t, CoordSettings{})
	user := placement.RegionID("troupe://sys@10.0.0.1:2552/user/admin#5")
	d := h.from(user, StopShards{Shards: []placement.ShardID{"s1", "nope", "s1"}})
	if !sent(d, user, ShardStopped{Shard: "nope"}) || !sent(d, b, BeginHandOff{Shard: "s1"}) {
		t.Fatalf("StopShards: %+v", d.Sends)
	}
	for _, r := range []placement.RegionID{a, b, p} {
		h.from(r, BeginHandOffAck{Shard: "s1", Region: r})
	}
	d = h.from(a, ShardStopped{Shard: "s1"})
	if !sent(d, user, ShardStopped{Shard: "s1"}) {
		t.Fatalf("requester not told: %+v", d.Sends)
	}

	// A request that times out forgets its requester.
	d = h.from(user, StopShards{Shards: []placement.ShardID{"s2"}})
	key := TimerKey{Kind: TimerStopShards, N: 2}
	if _, ok := startedTimer(d, key); !ok {
		t.Fatalf("no request timer: %+v", d.Timers)
	}
	h.fire(key)
	if len(h.c.stopWaiters) != 0 {
		t.Fatal("requester kept after the timeout")
	}

	// Refused with remember-entities.
	h = newCoordHarness(t, CoordSettings{RememberEntities: true}, nil, 2)
	h.register(a)
	h.allocate(a, "s1")
	d = h.from(user, StopShards{Shards: []placement.ShardID{"s1"}})
	if len(d.Sends) != 0 || !hasProblem(d, errStopShardsRemembered) {
		t.Fatalf("remember-entities: %+v", d)
	}
}

func TestCoordinatorRememberEntitiesRehomesAtOnce(t *testing.T) {
	h := newCoordHarness(t, CoordSettings{RememberEntities: true}, nil, 3)
	a, b := reg(1), reg(2)
	h.register(a, b)
	h.allocate(a, "s1")
	h.allocate(b, "s2")
	d := h.step(InRegionTerminated{Region: a})
	if h.homeOf("s1") != b || !sent(d, b, HostShard{Shard: "s1"}) {
		t.Fatalf("s1 at %q: %+v", h.homeOf("s1"), d.Sends)
	}
	if len(h.c.state.unallocated) != 0 {
		t.Fatalf("unallocated %v", h.c.state.unallocated)
	}
	// Remembered shards read from the store get homes at once.
	d = h.step(InRememberedShards{Shards: []placement.ShardID{"s2", "s9"}})
	if h.homeOf("s9") != b || !sent(d, b, HostShard{Shard: "s9"}) {
		t.Fatalf("remembered s9 at %q", h.homeOf("s9"))
	}
}

func TestCoordinatorLoadsStateAndDropsDeadRegions(t *testing.T) {
	st := NewCoordState(false)
	a, b, dead, deadProxy := reg(1), reg(2), reg(5), prox(6)
	for _, e := range []CoordEvent{
		RegionRegistered{Region: a}, RegionRegistered{Region: b}, RegionRegistered{Region: dead},
		RegionProxyRegistered{Proxy: deadProxy},
		ShardHomeAllocated{Shard: "s1", Region: a}, ShardHomeAllocated{Shard: "s2", Region: dead},
	} {
		if err := st.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	h := &coordHarness{t: t, c: NewCoordinator(CoordSettings{}, nil), shadow: st.Clone()}
	h.step(InMembers{Members: testNodes(3)})
	d := h.step(InStateLoaded{State: st})
	for _, r := range []placement.RegionID{a, b, dead, deadProxy} {
		if !slices.Contains(d.Watch, r) {
			t.Fatalf("%q not watched", r)
		}
	}
	if _, ok := h.c.state.regions[dead]; ok {
		t.Fatal("region of a node that is not a member kept")
	}
	if _, ok := h.c.state.proxies[deadProxy]; ok {
		t.Fatal("proxy of a node that is not a member kept")
	}
	if h.c.phase != phaseInitializing {
		t.Fatal("not waiting for the initial delay")
	}
	// Until the delay passes, requests wait. (Regions register again with a new
	// Coordinator; GetShardHome is answered once enough of them did.)
	h.expectNoSends(h.from(a, Register{}), "Register while initializing")
	h.expectNoSends(h.from(a, GetShardHome{Shard: "s1"}), "GetShardHome while initializing")
	d = h.fire(TimerKey{Kind: TimerStateInit})
	if !sent(d, a, HostShard{Shard: "s1"}) || !sent(d, a, ShardHome{Shard: "s1", Region: a}) {
		t.Fatalf("after the delay: %+v", d.Sends)
	}
	if h.c.phase != phaseActive || !h.c.timers.active(TimerKey{Kind: TimerRebalance}) {
		t.Fatal("not active")
	}
	// The dead region's shard gets a home when asked.
	if got := h.allocate(b, "s2"); got == dead || got == "" {
		t.Fatalf("s2 at %q", got)
	}
}

func TestCoordinatorPredecessorInHostShard(t *testing.T) {
	h, a, b, p := rebalanceSetup(t, CoordSettings{})
	h.fire(TimerKey{Kind: TimerRebalance})
	for _, r := range []placement.RegionID{a, b, p} {
		h.from(r, BeginHandOffAck{Shard: "s1", Region: r})
	}
	d := h.from(a, ShardStopped{Shard: "s1", Pending: true})
	if !sent(d, b, HostShard{Shard: "s1", Predecessor: a}) {
		t.Fatalf("HostShard without predecessor: %+v", d.Sends)
	}
	d = h.fire(TimerKey{Kind: TimerHostShard, Shard: "s1"})
	if !sent(d, b, HostShard{Shard: "s1", Predecessor: a}) {
		t.Fatal("resend lost the predecessor")
	}
	h.from(b, ShardStarted{Shard: "s1"})
	if _, ok := h.c.predecessor["s1"]; ok {
		t.Fatal("predecessor kept after ShardStarted")
	}
}

func TestCoordinatorStoreStateMode(t *testing.T) {
	h := newCoordHarness(t, CoordSettings{StoreState: true}, nil, 2)
	h.manual = true
	d := h.from(reg(1), Register{})
	if d.Store == nil || d.Store.State == nil || len(d.Store.State.regions) != 1 {
		t.Fatalf("store without the next state: %+v", d.Store)
	}
	if len(h.c.state.regions) != 0 {
		t.Fatal("state changed before the store completed")
	}
}

// A region that owes a hand-over learns where to deliver it (the region that followed
// it), even while the shard is being handed off again; other requests wait.
func TestCoordinatorHandOverToSuccessor(t *testing.T) {
	h, a, b, p := rebalanceSetup(t, CoordSettings{})
	c := reg(3)
	h.register(c)
	h.fire(TimerKey{Kind: TimerRebalance}) // moves s1 away from A
	for _, r := range []placement.RegionID{a, b, c, p} {
		h.from(r, BeginHandOffAck{Shard: "s1", Region: r})
	}
	h.from(a, ShardStopped{Shard: "s1", Pending: true})
	next := h.homeOf("s1")
	if next == a || next == "" {
		t.Fatalf("s1 at %q", next)
	}
	d := h.from(a, GetShardHome{Shard: "s1", HandOver: true})
	if !sent(d, a, HandOverTo{Shard: "s1", Region: next}) {
		t.Fatalf("no HandOverTo: %+v", d.Sends)
	}
	// The successor is handed off in turn: the owing region still learns it, others wait.
	h.from(next, GracefulShutdownReq{})
	if h.c.workers["s1"] == nil {
		t.Fatal("no hand-off")
	}
	d = h.from(a, GetShardHome{Shard: "s1", HandOver: true})
	if !sent(d, a, HandOverTo{Shard: "s1", Region: next}) {
		t.Fatalf("no HandOverTo during the hand-off: %+v", d.Sends)
	}
	h.expectNoSends(h.from(a, GetShardHome{Shard: "s1"}), "a plain GetShardHome during the hand-off")
	// The successor dies before A delivered (it never acknowledged HostShard): A's
	// hand-over goes to the shard's new home, or nowhere when that is A itself.
	h.step(InRegionTerminated{Region: next})
	got, ok := h.c.successor["s1"][a]
	if home := h.homeOf("s1"); home == a && ok || home != a && got != home {
		t.Fatalf("successor of A %q (%v), home %q", got, ok, home)
	}
}

// pinned is a strategy that places every shard in one region, and no shard anywhere
// else.
type pinned struct{ home placement.RegionID }

func (p pinned) AllocateShard(req placement.AllocationRequest) (placement.RegionID, error) {
	for _, r := range req.Regions {
		if r.Region == p.home {
			return r.Region, nil
		}
	}
	return "", fmt.Errorf("%w: shard %q stays with %q", placement.ErrNoRegion, req.Shard, p.home)
}

func (pinned) Rebalance(placement.RebalanceRequest) ([]placement.ShardID, error) { return nil, nil }

// A region (or proxy) that leaves, and asks for a home the coordinator cannot give (the
// strategy gives none, or no region can host), is told so (NoShardHome) instead of being
// left to ask until its shutdown times out; a region that stays is not.
func TestCoordinatorTellsALeavingRegionThatNoRegionCanHost(t *testing.T) {
	a, b := reg(1), reg(2)
	h := newCoordHarness(t, CoordSettings{}, pinned{home: b}, 2)
	h.register(a, b)
	if got := h.allocate(a, "s1"); got != b {
		t.Fatalf("s1 at %q", got)
	}
	h.from(b, GracefulShutdownReq{})
	for _, r := range []placement.RegionID{a, b} {
		h.from(r, BeginHandOffAck{Shard: "s1", Region: r})
	}
	h.from(b, ShardStopped{Shard: "s1", Pending: true})
	if _, ok := h.c.state.shards["s1"]; ok {
		t.Fatal("s1 still allocated after its hand-off")
	}
	if d := h.from(a, GetShardHome{Shard: "s1"}); len(sentTo(d, a)) != 0 {
		t.Fatalf("a region that stays got %+v", sentTo(d, a))
	}
	d := h.from(b, GetShardHome{Shard: "s1", HandOver: true})
	if !sent(d, b, NoShardHome{Shard: "s1"}) {
		t.Fatalf("the leaving region was not told: %+v", d.Sends)
	}
	// A proxy that leaves holding messages for a shard is told too.
	p := prox(3)
	h.from(p, RegisterProxy{})
	h.from(p, GracefulShutdownReq{})
	if d := h.from(p, GetShardHome{Shard: "s2"}); !sent(d, p, NoShardHome{Shard: "s2"}) {
		t.Fatalf("the leaving proxy was not told: %+v", d.Sends)
	}

	// The last region leaves: no region can host at all.
	h = newCoordHarness(t, CoordSettings{}, nil, 1)
	h.register(a)
	h.from(a, GracefulShutdownReq{})
	if d := h.from(a, GetShardHome{Shard: "s9"}); !sent(d, a, NoShardHome{Shard: "s9"}) {
		t.Fatalf("the last region was not told: %+v", d.Sends)
	}
}
