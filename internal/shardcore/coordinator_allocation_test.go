package shardcore

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/sharding/placement"
)

// batchShards returns the shards of a store decision's allocation event, in order, and
// whether it is the batch event.
func batchShards(t *testing.T, st *CoordStore) ([]ShardHomeAllocated, bool) {
	t.Helper()
	if st == nil {
		t.Fatal("no store decision")
	}
	switch e := st.Event.(type) {
	case ShardHomeAllocated:
		return []ShardHomeAllocated{e}, false
	case ShardHomesAllocated:
		return e.Singles(), true
	}
	t.Fatalf("store %+v, want an allocation", st.Event)
	return nil, false
}

// countsOf returns how many shards each region holds.
func countsOf(c *Coordinator) map[placement.RegionID]int {
	out := map[placement.RegionID]int{}
	for r, ids := range c.state.regions {
		out[r] = len(ids)
	}
	return out
}

// evenSpread fails unless the regions' shard counts differ by at most one.
func evenSpread(t *testing.T, c *Coordinator) {
	t.Helper()
	counts := countsOf(c)
	lo, hi := -1, 0
	for _, n := range counts {
		if lo < 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	if hi-lo > 1 {
		t.Fatalf("uneven spread: %v", counts)
	}
}

// Home requests that queue behind a write are allocated together, in one write; once it
// is stored every shard gets its HostShard and every requester its ShardHome.
func TestCoordinatorAllocatesQueuedRequestsInOneWrite(t *testing.T) {
	h := newCoordHarness(t, CoordSettings{}, nil, 3)
	a, b, c := reg(1), reg(2), reg(3)
	h.register(a, b, c)
	h.manual = true
	d := h.from(a, GetShardHome{Shard: "s0"})
	if allocs, batch := batchShards(t, d.Store); batch || len(allocs) != 1 {
		t.Fatalf("first request: %+v, want the single event", d.Store.Event)
	}
	requests := []struct {
		from  placement.RegionID
		shard placement.ShardID
	}{
		{b, "s1"}, {c, "s2"}, {a, "s3"}, {b, "s4"}, {c, "s5"}, {a, "s6"},
		{c, "s3"}, // a second requester of a shard in the batch
		{b, "s0"}, // the shard being stored: answered from the state afterwards
	}
	for _, r := range requests {
		h.expectNoSends(h.from(r.from, GetShardHome{Shard: r.shard}), fmt.Sprintf("%s from %s", r.shard, r.from))
	}
	d = h.step(InStoreDone{})
	if !sent(d, a, ShardHome{Shard: "s0", Region: h.homeOf("s0")}) || !sent(d, b, ShardHome{Shard: "s0", Region: h.homeOf("s0")}) {
		t.Fatalf("s0's requesters not answered: %+v", d.Sends)
	}
	allocs, batch := batchShards(t, d.Store)
	if !batch {
		t.Fatalf("queued requests stored as %T, want one evShardHomesAllocated", d.Store.Event)
	}
	var shards []placement.ShardID
	for _, e := range allocs {
		shards = append(shards, e.Shard)
	}
	slices.Sort(shards)
	if !slices.Equal(shards, []placement.ShardID{"s1", "s2", "s3", "s4", "s5", "s6"}) {
		t.Fatalf("batch holds %v", shards)
	}
	if len(h.c.queue) != 0 {
		t.Fatalf("queue keeps %d inputs, want none", len(h.c.queue))
	}
	for _, s := range shards {
		if _, ok := h.c.state.shards[s]; ok {
			t.Fatalf("%s has a home before the batch is stored", s)
		}
	}
	homes := map[placement.ShardID]placement.RegionID{}
	for _, e := range allocs {
		homes[e.Shard] = e.Region
	}

	d = h.step(InStoreDone{})
	if d.Store != nil {
		t.Fatalf("another store after the batch: %+v", d.Store.Event)
	}
	for s, r := range homes {
		if h.homeOf(s) != r {
			t.Fatalf("%s stored at %q, decided %q", s, h.homeOf(s), r)
		}
		if !sent(d, r, HostShard{Shard: s}) {
			t.Fatalf("no HostShard(%s) to %q: %+v", s, r, d.Sends)
		}
		if _, ok := startedTimer(d, TimerKey{Kind: TimerHostShard, Shard: s}); !ok {
			t.Fatalf("no HostShard resend timer for %s", s)
		}
	}
	for _, r := range requests[:7] {
		if !sent(d, r.from, ShardHome{Shard: r.shard, Region: homes[r.shard]}) {
			t.Fatalf("%s not told to %q: %+v", r.shard, r.from, d.Sends)
		}
	}
	// The least-shard strategy saw the batch's own homes: 7 shards on 3 regions.
	evenSpread(t, h.c)

	// Later requests are answered from the state, without a write.
	h.manual = false
	d = h.from(c, GetShardHome{Shard: "s4"})
	if d.Store != nil || !sent(d, c, ShardHome{Shard: "s4", Region: homes["s4"]}) {
		t.Fatalf("a later request: %+v", d)
	}
}

// A request for a shard of the batch that arrives while the batch is written waits, and
// is answered from the state once it is stored.
func TestCoordinatorRequestDuringBatchWrite(t *testing.T) {
	h := newCoordHarness(t, CoordSettings{}, nil, 2)
	a, b := reg(1), reg(2)
	h.register(a, b)
	h.manual = true
	h.from(a, GetShardHome{Shard: "s0"})
	for _, s := range []placement.ShardID{"s1", "s2", "s3"} {
		h.from(a, GetShardHome{Shard: s})
	}
	d := h.step(InStoreDone{})
	if _, batch := batchShards(t, d.Store); !batch {
		t.Fatal("no batch")
	}
	h.expectNoSends(h.from(b, GetShardHome{Shard: "s2"}), "a request for a shard of the pending batch")
	d = h.step(InStoreDone{})
	if d.Store != nil {
		t.Fatalf("a store for a shard the batch stored: %+v", d.Store.Event)
	}
	if home := h.homeOf("s2"); home == "" || !sent(d, b, ShardHome{Shard: "s2", Region: home}) {
		t.Fatalf("late request not answered from the state: %+v", d.Sends)
	}
}

// A batch whose write fails is written again, the same batch; the requests wait. The
// failure is reported once, not at every retry.
func TestCoordinatorBatchWriteRetried(t *testing.T) {
	h := newCoordHarness(t, CoordSettings{StoreState: true}, nil, 2)
	a, b := reg(1), reg(2)
	h.register(a, b)
	h.manual = true
	h.from(a, GetShardHome{Shard: "s0"})
	for _, s := range []placement.ShardID{"s1", "s2", "s3"} {
		h.from(b, GetShardHome{Shard: s})
	}
	first := h.step(InStoreDone{}).Store
	if _, batch := batchShards(t, first); !batch {
		t.Fatal("no batch")
	}
	for i := range 2 {
		// The first failure of the write is reported; its retries fail alike until the
		// cause passes, and are not reported again.
		d := h.step(InStoreFailed{Err: errStore})
		if hasProblem(d, errStore) != (i == 0) || len(d.Sends) > 0 {
			t.Fatalf("failed write %d: %+v", i+1, d)
		}
		if d.Store == nil || !reflect.DeepEqual(d.Store.Event, first.Event) || !d.Store.State.equal(first.State) {
			t.Fatalf("retry stores %+v, want the same batch %+v", d.Store, first.Event)
		}
	}
	d := h.step(InStoreDone{})
	for _, s := range []placement.ShardID{"s1", "s2", "s3"} {
		if !sent(d, b, ShardHome{Shard: s, Region: h.homeOf(s)}) {
			t.Fatalf("%s not answered after the retry: %+v", s, d.Sends)
		}
	}
}

// After a region's removal its shards get new homes in one write, spread evenly over
// the regions left (the crash of one member of three).
func TestCoordinatorRehomesRemovedRegionInOneWrite(t *testing.T) {
	h := newCoordHarness(t, CoordSettings{}, nil, 3)
	a, b, c := reg(1), reg(2), reg(3)
	h.register(a, b, c)
	for i := range 30 {
		s := placement.ShardID(fmt.Sprintf("s%02d", i))
		h.allocate(a, s)
		h.from(h.homeOf(s), ShardStarted{Shard: s})
	}
	gone := slices.Clone(h.c.state.regions[c])
	if len(gone) != 10 {
		t.Fatalf("region c holds %v", gone)
	}
	h.manual = true
	d := h.step(InRegionTerminated{Region: c})
	if d.Store == nil || d.Store.Event != (RegionTerminated{Region: c}) {
		t.Fatalf("store %+v, want the termination", d.Store)
	}
	d = h.step(InStoreDone{})
	allocs, batch := batchShards(t, d.Store)
	if !batch || len(allocs) != len(gone) {
		t.Fatalf("store %+v, want one batch of %d shards", d.Store.Event, len(gone))
	}
	d = h.step(InStoreDone{})
	if d.Store != nil {
		t.Fatalf("another store: %+v", d.Store.Event)
	}
	for _, s := range gone {
		if r := h.homeOf(s); r == c || r == "" || !sent(d, r, HostShard{Shard: s}) {
			t.Fatalf("%s at %q: %+v", s, r, d.Sends)
		}
	}
	evenSpread(t, h.c)
}

// A batch holds at most maxAllocationBatch shards; the rest follow in the next write.
func TestCoordinatorBatchCap(t *testing.T) {
	h := newCoordHarness(t, CoordSettings{}, nil, 3)
	h.register(reg(1), reg(2), reg(3))
	h.manual = true
	h.from(reg(1), GetShardHome{Shard: "first"})
	n := maxAllocationBatch + 100
	for i := range n {
		h.from(reg(1+i%3), GetShardHome{Shard: placement.ShardID(fmt.Sprint(i))})
	}
	d := h.step(InStoreDone{})
	allocs, _ := batchShards(t, d.Store)
	if len(allocs) != maxAllocationBatch {
		t.Fatalf("first batch of %d shards, want %d", len(allocs), maxAllocationBatch)
	}
	// The size of a full batch as the journal stores it (default shard IDs, cluster
	// region IDs).
	_, b, err := serialization.NewRegistry().Marshal(d.Store.Event)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a batch of %d shards encodes to %d bytes", len(allocs), len(b))
	if len(b) > 8<<10 {
		t.Fatalf("a batch of %d default shard IDs takes %d bytes", len(allocs), len(b))
	}
	d = h.step(InStoreDone{})
	if allocs, _ := batchShards(t, d.Store); len(allocs) != 100 {
		t.Fatalf("second batch of %d shards, want 100", len(allocs))
	}
	h.step(InStoreDone{})
	if len(h.c.state.shards) != n+1 {
		t.Fatalf("%d shards allocated, want %d", len(h.c.state.shards), n+1)
	}
	evenSpread(t, h.c)
}

// Only the run of home requests at the head of the queue is batched: an input behind
// it (here a registration) runs before the requests that follow it, which then see the
// new region.
func TestCoordinatorBatchStopsAtOtherInput(t *testing.T) {
	h := newCoordHarness(t, CoordSettings{}, nil, 3)
	a, b, c := reg(1), reg(2), reg(3)
	h.register(a, b)
	h.manual = true
	h.from(a, GetShardHome{Shard: "s0"})
	h.from(a, GetShardHome{Shard: "s1"})
	h.from(a, GetShardHome{Shard: "s2"})
	h.from(c, Register{})
	h.from(a, GetShardHome{Shard: "s3"})
	d := h.step(InStoreDone{})
	allocs, _ := batchShards(t, d.Store)
	if len(allocs) != 2 {
		t.Fatalf("batch %+v, want s1 and s2 only", allocs)
	}
	d = h.step(InStoreDone{})
	if d.Store == nil || d.Store.Event != (RegionRegistered{Region: c}) {
		t.Fatalf("store %+v, want the registration next", d.Store)
	}
	d = h.step(InStoreDone{})
	if allocs, _ := batchShards(t, d.Store); len(allocs) != 1 || allocs[0] != (ShardHomeAllocated{Shard: "s3", Region: c}) {
		t.Fatalf("s3 stored as %+v, want at the new region", d.Store.Event)
	}
}

// failingStrategy fails for one shard and otherwise asks the least-shard strategy.
type failingStrategy struct {
	LeastShard
	bad placement.ShardID
}

func (s *failingStrategy) AllocateShard(req placement.AllocationRequest) (placement.RegionID, error) {
	if req.Shard == s.bad {
		return "", fmt.Errorf("%w: no", placement.ErrNoRegion)
	}
	return s.LeastShard.AllocateShard(req)
}

// A shard the strategy cannot place leaves the batch (its request is dropped with a
// problem, as alone); the others are stored.
func TestCoordinatorBatchSkipsStrategyFailure(t *testing.T) {
	strategy := &failingStrategy{LeastShard: *NewLeastShard(LeastShardSettings{}), bad: "s2"}
	h := newCoordHarness(t, CoordSettings{}, strategy, 2)
	h.register(reg(1), reg(2))
	h.manual = true
	h.from(reg(1), GetShardHome{Shard: "s0"})
	for _, s := range []placement.ShardID{"s1", "s2", "s3"} {
		h.from(reg(2), GetShardHome{Shard: s})
	}
	d := h.step(InStoreDone{})
	if !hasProblem(d, errStrategy) {
		t.Fatalf("no problem for the shard the strategy failed: %+v", d.Problems)
	}
	allocs, _ := batchShards(t, d.Store)
	if len(allocs) != 2 || allocs[0].Shard == "s2" || allocs[1].Shard == "s2" {
		t.Fatalf("batch %+v, want s1 and s3", allocs)
	}
	if len(h.c.queue) != 0 {
		t.Fatalf("queue keeps %d inputs", len(h.c.queue))
	}
}

// A shard re-homed in a batch keeps its hand-over bookkeeping: its new home is told
// whose messages come first, and the old home, asking where to hand them over, is told.
func TestCoordinatorBatchHandOver(t *testing.T) {
	h, a, b, p := rebalanceSetup(t, CoordSettings{})
	h.fire(TimerKey{Kind: TimerRebalance}) // moves s1 from a
	for _, r := range []placement.RegionID{a, b, p} {
		h.from(a, BeginHandOffAck{Shard: "s1", Region: r})
	}
	h.manual = true
	d := h.from(a, ShardStopped{Shard: "s1", Pending: true})
	if d.Store == nil || d.Store.Event != (ShardHomeDeallocated{Shard: "s1"}) {
		t.Fatalf("store %+v, want the deallocation", d.Store)
	}
	h.from(a, GetShardHome{Shard: "x1"})
	d = h.step(InStoreDone{}) // s1 is re-homed at once, with x1
	allocs, batch := batchShards(t, d.Store)
	if !batch || len(allocs) != 2 {
		t.Fatalf("store %+v, want x1 and s1 in one batch", d.Store.Event)
	}
	h.expectNoSends(h.from(a, GetShardHome{Shard: "s1", HandOver: true}), "a hand-over request during the write")
	d = h.step(InStoreDone{})
	if home := h.homeOf("s1"); home != b || !sent(d, b, HostShard{Shard: "s1", Predecessor: a}) ||
		!sent(d, a, HandOverTo{Shard: "s1", Region: b}) {
		t.Fatalf("s1 at %q: %+v, want HostShard naming a, and a told to hand over to b", home, d.Sends)
	}
}

// A region that asks for a shard while its home is being removed (the removal margin
// runs) is told the next home as soon as it is stored, without asking again.
func TestCoordinatorAnswersRequestsAwaitingRemoval(t *testing.T) {
	h := newCoordHarness(t, CoordSettings{RemovalMargin: 5}, nil, 3)
	a, b, c := reg(1), reg(2), reg(3)
	h.register(a, b, c)
	for i := range 6 {
		s := placement.ShardID(fmt.Sprint("s", i))
		h.allocate(a, s)
		h.from(h.homeOf(s), ShardStarted{Shard: s})
	}
	gone := slices.Clone(h.c.state.regions[c])
	h.step(InRegionTerminated{Region: c, NodeRemoved: true})
	for _, s := range gone {
		h.expectNoSends(h.from(b, GetShardHome{Shard: s}), "a request while the home is being removed")
		h.from(c, GetShardHome{Shard: s}) // the removed region's own request goes with it
	}
	d := h.fire(TimerKey{Kind: TimerRemovalMargin, Region: c})
	for _, s := range gone {
		home := h.homeOf(s)
		if home == c || home == "" || !sent(d, b, ShardHome{Shard: s, Region: home}) {
			t.Fatalf("%s at %q: %+v, want b told", s, home, d.Sends)
		}
		if len(sentTo(d, c)) > 0 {
			t.Fatalf("the removed region was told: %+v", sentTo(d, c))
		}
	}
	if len(h.c.awaiting) != 0 {
		t.Fatalf("still awaiting: %v", h.c.awaiting)
	}
}
