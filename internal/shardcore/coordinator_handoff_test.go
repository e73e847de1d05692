package shardcore

import (
	"slices"
	"testing"

	"github.com/troupe-go/troupe/member"
	"github.com/troupe-go/troupe/sharding/placement"
)

// rebalanceSetup: regions A (3 shards s1..s3) and B (none), proxy P; the classic
// strategy moves s1 on the next tick.
func rebalanceSetup(t *testing.T, cfg CoordSettings) (*coordHarness, placement.RegionID, placement.RegionID, placement.RegionID) {
	t.Helper()
	h := newCoordHarness(t, cfg, nil, 3)
	a, b, p := reg(1), reg(2), prox(3)
	h.register(a)
	for _, s := range []placement.ShardID{"s1", "s2", "s3"} {
		h.allocate(a, s)
		h.from(a, ShardStarted{Shard: s})
	}
	h.register(b)
	h.from(p, RegisterProxy{})
	return h, a, b, p
}

func TestCoordinatorRebalanceHandOff(t *testing.T) {
	h, a, b, p := rebalanceSetup(t, CoordSettings{})
	d := h.fire(TimerKey{Kind: TimerRebalance})
	for _, r := range []placement.RegionID{a, b, p} {
		if !sent(d, r, BeginHandOff{Shard: "s1"}) {
			t.Fatalf("no BeginHandOff to %q: %+v", r, d.Sends)
		}
	}
	if after, ok := startedTimer(d, TimerKey{Kind: TimerHandOff, Shard: "s1"}); !ok || after != DefaultHandOffTimeout {
		t.Fatal("no hand-off timer")
	}
	// The home of a shard in hand-off is not given out.
	h.expectNoSends(h.from(b, GetShardHome{Shard: "s1"}), "GetShardHome during the hand-off")
	h.expectNoSends(h.from(a, BeginHandOffAck{Shard: "s1", Region: a}), "first ack")
	h.expectNoSends(h.from(b, BeginHandOffAck{Shard: "s1", Region: b}), "second ack")
	h.expectNoSends(h.from(b, ShardStopped{Shard: "s1"}), "ShardStopped before HandOff")
	// The proxy's ack comes relayed by region A.
	d = h.from(a, BeginHandOffAck{Shard: "s1", Region: p})
	if !slices.Equal(sentTo(d, a), []any{HandOff{Shard: "s1"}}) || len(d.Sends) != 1 {
		t.Fatalf("after all acks: %+v, want HandOff to the owner only", d.Sends)
	}
	h.expectNoSends(h.from(b, ShardStopped{Shard: "s1"}), "ShardStopped from a region that does not own it")

	h.manual = true
	d = h.from(a, ShardStopped{Shard: "s1"})
	if d.Store == nil || d.Store.Event != (ShardHomeDeallocated{Shard: "s1"}) {
		t.Fatalf("store %+v, want the deallocation", d.Store)
	}
	// While the deallocation is stored the old home is still not given out.
	h.expectNoSends(h.from(p, GetShardHome{Shard: "s1"}), "GetShardHome while deallocating")
	d = h.step(InStoreDone{})
	if d.Store == nil || d.Store.Event != (ShardHomeAllocated{Shard: "s1", Region: b}) {
		t.Fatalf("store %+v, want s1 re-homed at B at once", d.Store)
	}
	d = h.step(InStoreDone{})
	if !sent(d, b, HostShard{Shard: "s1"}) || !sent(d, b, ShardHome{Shard: "s1", Region: b}) ||
		!sent(d, p, ShardHome{Shard: "s1", Region: b}) {
		t.Fatalf("after re-homing: %+v, want HostShard to B and the deferred requests answered", d.Sends)
	}
	if h.c.workers["s1"] != nil || h.c.timers.active(TimerKey{Kind: TimerHandOff, Shard: "s1"}) {
		t.Fatal("hand-off still marked")
	}
}

// A coordinator that took over starts hand-offs with the regions of its stored state
// before they register with it, and their answers go to the coordinator they knew:
// when such a region registers, it gets BeginHandOff again, after its RegisterAck, and
// the hand-off goes on instead of waiting for its timeout. Found by the simulation
// with coordinator moves and crashes (sim_coord_test.go).
func TestCoordinatorResendsBeginHandOffToARegionThatRegisters(t *testing.T) {
	h, a, b, p := rebalanceSetup(t, CoordSettings{})
	h.fire(TimerKey{Kind: TimerRebalance})
	h.expectNoSends(h.from(a, BeginHandOffAck{Shard: "s1", Region: a}), "A's ack")
	// B's and the proxy's answers went elsewhere. They register (again).
	for _, r := range []placement.RegionID{b, p} {
		var reg any = Register{}
		if r == p {
			reg = RegisterProxy{}
		}
		d := h.from(r, reg)
		to := sentTo(d, r)
		ack, again := slices.Index(to, any(RegisterAck{})), slices.Index(to, any(BeginHandOff{Shard: "s1"}))
		if ack < 0 || again < ack {
			t.Fatalf("%q registers during the hand-off: sent it %+v, want RegisterAck then BeginHandOff", r, to)
		}
		if slices.Contains(to, any(BeginHandOff{Shard: "s2"})) {
			t.Fatalf("%q got BeginHandOff for a shard not in hand-off: %+v", r, to)
		}
	}
	// A region that has answered gets none when it registers again.
	if to := sentTo(h.from(a, Register{}), a); slices.Contains(to, any(BeginHandOff{Shard: "s1"})) {
		t.Fatalf("A, which answered, got BeginHandOff again: %+v", to)
	}
	h.expectNoSends(h.from(b, BeginHandOffAck{Shard: "s1", Region: b}), "B's ack")
	d := h.from(a, BeginHandOffAck{Shard: "s1", Region: p}) // relayed by A
	if !slices.Equal(sentTo(d, a), []any{HandOff{Shard: "s1"}}) {
		t.Fatalf("after all acks: %+v, want HandOff to the owner", d.Sends)
	}
	// Once HandOff went, a registration resends nothing.
	if to := sentTo(h.from(b, Register{}), b); slices.Contains(to, any(BeginHandOff{Shard: "s1"})) {
		t.Fatalf("BeginHandOff after HandOff: %+v", to)
	}
}

// A region answers an earlier coordinator's HandOff with ShardStopped after this
// Coordinator told it to host the shard (HostShard, not yet confirmed): it stopped the
// old instance and starts the shard again as told. Re-homing the shard on that
// ShardStopped would run it in two regions at once. Found by the simulation with
// Coordinator moves and crashes (seed 185).
func TestCoordinatorKeepsAShardItToldARegionToHost(t *testing.T) {
	h := newCoordHarness(t, CoordSettings{}, nil, 3)
	a := reg(1)
	h.register(a)
	if home := h.allocate(a, "s1"); home != a {
		t.Fatalf("s1 at %q", home)
	}
	h.manual = true
	d := h.from(a, ShardStopped{Shard: "s1"}) // before its ShardStarted
	if d.Store != nil || len(d.Problems) != 0 || len(d.Sends) != 0 {
		t.Fatalf("ShardStopped while HostShard is unconfirmed: %+v, want nothing", d)
	}
	if h.homeOf("s1") != a {
		t.Fatalf("s1 moved to %q", h.homeOf("s1"))
	}
	h.manual = false
	h.expectNoSends(h.from(a, ShardStarted{Shard: "s1"}), "ShardStarted")
	if _, ok := h.c.unacked["s1"]; ok {
		t.Fatal("HostShard still unconfirmed after ShardStarted")
	}
}

// A coordinator with a hand-off epoch names each hand-off; an acknowledgement of
// another BeginHandOff for the shard (an earlier hand-off's, or another incarnation's,
// relayed late by the shard's home) is not counted: counting it could send HandOff
// before the region's forwards have reached the home. Found by the simulation with
// Coordinator moves and crashes (seed 1882, a lost message).
func TestCoordinatorCountsOnlyAcknowledgementsOfItsHandOff(t *testing.T) {
	h, a, b, p := rebalanceSetup(t, CoordSettings{HandOffEpoch: 7 << 32})
	d := h.fire(TimerKey{Kind: TimerRebalance})
	var id uint64
	for _, m := range d.Sends {
		if bh, ok := m.Msg.(BeginHandOff); ok && bh.Shard == "s1" {
			id = bh.ID
		}
	}
	if id == 0 {
		t.Fatalf("BeginHandOff without an ID: %+v", d.Sends)
	}
	h.expectNoSends(h.from(a, BeginHandOffAck{Shard: "s1", Region: a, ID: id}), "A's ack")
	h.expectNoSends(h.from(b, BeginHandOffAck{Shard: "s1", Region: b, ID: id}), "B's ack")
	// The proxy's acknowledgements of other BeginHandOffs, relayed by A, count for nothing.
	for _, stale := range []uint64{0, id - 1, 5<<32 + 1} {
		h.expectNoSends(h.from(a, BeginHandOffAck{Shard: "s1", Region: p, ID: stale}), "a stale ack")
	}
	d = h.from(a, BeginHandOffAck{Shard: "s1", Region: p, ID: id})
	if !sent(d, a, HandOff{Shard: "s1"}) {
		t.Fatalf("after the proxy's own ack: %+v, want HandOff", d.Sends)
	}
	// The next hand-off gets another name.
	if next := h.c.nextHandOffID(); next == id || next == 0 {
		t.Fatalf("next hand-off id %d after %d", next, id)
	}
}

func TestCoordinatorTerminatedRegionCountsAsAcked(t *testing.T) {
	h, a, b, p := rebalanceSetup(t, CoordSettings{})
	h.fire(TimerKey{Kind: TimerRebalance})
	h.from(a, BeginHandOffAck{Shard: "s1", Region: a})
	h.from(b, BeginHandOffAck{Shard: "s1", Region: b})
	d := h.step(InRegionTerminated{Region: p})
	if !sent(d, a, HandOff{Shard: "s1"}) {
		t.Fatalf("terminated proxy not counted as acked: %+v", d.Sends)
	}
	if _, ok := h.c.state.proxies[p]; ok {
		t.Fatal("terminated proxy still registered")
	}
}

func TestCoordinatorRebalanceTimeout(t *testing.T) {
	h, a, b, _ := rebalanceSetup(t, CoordSettings{})
	h.fire(TimerKey{Kind: TimerRebalance})
	h.from(b, GetShardHome{Shard: "s1"})
	d := h.fire(TimerKey{Kind: TimerHandOff, Shard: "s1"})
	if !hasProblem(d, errHandOffTimeout) {
		t.Fatal("timeout not reported")
	}
	if h.c.workers["s1"] != nil || h.homeOf("s1") != a {
		t.Fatalf("after timeout: worker %v, home %q", h.c.workers["s1"], h.homeOf("s1"))
	}
	if !sent(d, b, ShardHome{Shard: "s1", Region: a}) || d.Store != nil {
		t.Fatalf("deferred request not answered with the unchanged home: %+v", d)
	}
	// A new rebalance may start again later.
	d = h.fire(TimerKey{Kind: TimerRebalance})
	if !sent(d, b, BeginHandOff{Shard: "s1"}) {
		t.Fatalf("no new rebalance after the timeout: %+v", d.Sends)
	}
}

// After a hand-off timed out, the owner's late ShardStopped still re-homes the shard,
// and the old home is not handed out meanwhile (Akka.NET issue 7500).
func TestCoordinatorLateShardStopped(t *testing.T) {
	h, a, b, p := rebalanceSetup(t, CoordSettings{})
	h.fire(TimerKey{Kind: TimerRebalance})
	for _, r := range []placement.RegionID{a, b, p} {
		h.from(r, BeginHandOffAck{Shard: "s1", Region: r})
	}
	h.fire(TimerKey{Kind: TimerHandOff, Shard: "s1"})
	if h.homeOf("s1") != a {
		t.Fatal("timeout moved the shard")
	}
	h.manual = true
	d := h.from(a, ShardStopped{Shard: "s1", Pending: true})
	if d.Store == nil || d.Store.Event != (ShardHomeDeallocated{Shard: "s1"}) || !hasProblem(d, ErrStoppedUnasked) {
		t.Fatalf("late ShardStopped: %+v", d)
	}
	h.expectNoSends(h.from(b, GetShardHome{Shard: "s1"}), "GetShardHome while the late deallocation is stored")
	h.manual = false
	d = h.step(InStoreDone{})
	if !sent(d, b, HostShard{Shard: "s1", Predecessor: a}) || !sent(d, b, ShardHome{Shard: "s1", Region: b}) {
		t.Fatalf("after the late deallocation: %+v", d.Sends)
	}
	// ShardStopped from a region that does not own the shard changes nothing.
	h.expectNoSends(h.from(a, ShardStopped{Shard: "s2x"}), "ShardStopped for an unknown shard")
	h.expectNoSends(h.from(a, ShardStopped{Shard: "s1"}), "ShardStopped from the old owner")
}

// The owner of a shard in hand-off dies: the hand-off ends (no shard stays marked in
// progress, akka-core issue 27259) and the shard gets a new home at once.
func TestCoordinatorOwnerTerminatesDuringHandOff(t *testing.T) {
	for _, handOffSent := range []bool{false, true} {
		h, a, b, p := rebalanceSetup(t, CoordSettings{})
		h.fire(TimerKey{Kind: TimerRebalance})
		h.from(p, GetShardHome{Shard: "s1"})
		if handOffSent {
			for _, r := range []placement.RegionID{a, b, p} {
				h.from(r, BeginHandOffAck{Shard: "s1", Region: r})
			}
		}
		d := h.step(InRegionTerminated{Region: a})
		if len(h.c.workers) != 0 {
			t.Fatalf("handOffSent=%v: hand-offs still marked: %v", handOffSent, h.c.workers)
		}
		for _, s := range []placement.ShardID{"s1", "s2", "s3"} {
			if h.homeOf(s) != b {
				t.Fatalf("handOffSent=%v: %q at %q, want %q", handOffSent, s, h.homeOf(s), b)
			}
			if !sent(d, b, HostShard{Shard: s}) {
				t.Fatalf("handOffSent=%v: no HostShard for %q", handOffSent, s)
			}
		}
		if !sent(d, p, ShardHome{Shard: "s1", Region: b}) {
			t.Fatalf("handOffSent=%v: deferred request not answered: %+v", handOffSent, d.Sends)
		}
		if h.c.timers.active(TimerKey{Kind: TimerHandOff, Shard: "s1"}) {
			t.Fatal("hand-off timer still running")
		}
	}
}

func TestCoordinatorNoRebalanceConditions(t *testing.T) {
	newer := NewLeastShard(LeastShardSettings{RebalanceAbsoluteLimit: 10, RebalanceRelativeLimit: 1})
	setup := func() (*coordHarness, placement.RegionID, placement.RegionID) {
		h := newCoordHarness(t, CoordSettings{}, newer, 3)
		a, b := reg(1), reg(2)
		h.register(a)
		for _, s := range []placement.ShardID{"s1", "s2", "s3", "s4"} {
			h.allocate(a, s)
		}
		h.register(b)
		return h, a, b
	}
	tick := func(h *coordHarness) int {
		d := h.fire(TimerKey{Kind: TimerRebalance})
		n := 0
		for _, m := range d.Sends {
			if _, ok := m.Msg.(BeginHandOff); ok && m.To == reg(1) {
				n++
			}
		}
		return n
	}

	h, _, _ := setup()
	if n := tick(h); n != 2 {
		t.Fatalf("healthy: %d hand-offs, want 2", n)
	}
	if n := tick(h); n != 0 {
		t.Fatalf("while hand-offs run: %d new ones", n)
	}

	cases := map[string]func([]placement.NodeInfo) []placement.NodeInfo{
		"app versions differ": func(ns []placement.NodeInfo) []placement.NodeInfo { ns[1].AppVersion = "2"; return ns },
		"member unreachable":  func(ns []placement.NodeInfo) []placement.NodeInfo { ns[2].Unreachable = true; return ns },
		"member joining": func(ns []placement.NodeInfo) []placement.NodeInfo {
			return append(ns, placement.NodeInfo{Address: member.UniqueAddress{Addr: nodeAddr(9)}, Status: member.Joining})
		},
	}
	for name, change := range cases {
		h, _, _ := setup()
		h.step(InMembers{Members: change(testNodes(3))})
		if n := tick(h); n != 0 {
			t.Errorf("%s: %d hand-offs started", name, n)
		}
	}

	h, _, _ = setup()
	h.step(InPrepareForShutdown{})
	if h.c.timers.active(TimerKey{Kind: TimerRebalance}) {
		t.Fatal("rebalance tick still running while preparing for shutdown")
	}
	h.expectNoSends(h.step(InTimer{Key: TimerKey{Kind: TimerRebalance}}), "tick while preparing for shutdown")
}
