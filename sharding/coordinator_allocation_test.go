package sharding

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/troupe-go/troupe/serialization"
)

// batchShards returns the shards of a store decision's allocation event, in order, and
// whether it is the batch event.
func batchShards(t *testing.T, st *coordStore) ([]evShardHomeAllocated, bool) {
	t.Helper()
	if st == nil {
		t.Fatal("no store decision")
	}
	switch e := st.event.(type) {
	case evShardHomeAllocated:
		return []evShardHomeAllocated{e}, false
	case evShardHomesAllocated:
		return e.singles(), true
	}
	t.Fatalf("store %+v, want an allocation", st.event)
	return nil, false
}

// countsOf returns how many shards each region holds.
func countsOf(c *coordinator) map[RegionID]int {
	out := map[RegionID]int{}
	for r, ids := range c.state.regions {
		out[r] = len(ids)
	}
	return out
}

// evenSpread fails unless the regions' shard counts differ by at most one.
func evenSpread(t *testing.T, c *coordinator) {
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
	h := newCoordHarness(t, coordSettings{}, nil, 3)
	a, b, c := reg(1), reg(2), reg(3)
	h.register(a, b, c)
	h.manual = true
	d := h.from(a, msgGetShardHome{Shard: "s0"})
	if allocs, batch := batchShards(t, d.store); batch || len(allocs) != 1 {
		t.Fatalf("first request: %+v, want the single event", d.store.event)
	}
	requests := []struct {
		from  RegionID
		shard ShardID
	}{
		{b, "s1"}, {c, "s2"}, {a, "s3"}, {b, "s4"}, {c, "s5"}, {a, "s6"},
		{c, "s3"}, // a second requester of a shard in the batch
		{b, "s0"}, // the shard being stored: answered from the state afterwards
	}
	for _, r := range requests {
		h.expectNoSends(h.from(r.from, msgGetShardHome{Shard: r.shard}), fmt.Sprintf("%s from %s", r.shard, r.from))
	}
	d = h.step(inStoreDone{})
	if !sent(d, a, msgShardHome{Shard: "s0", Region: h.homeOf("s0")}) || !sent(d, b, msgShardHome{Shard: "s0", Region: h.homeOf("s0")}) {
		t.Fatalf("s0's requesters not answered: %+v", d.sends)
	}
	allocs, batch := batchShards(t, d.store)
	if !batch {
		t.Fatalf("queued requests stored as %T, want one evShardHomesAllocated", d.store.event)
	}
	var shards []ShardID
	for _, e := range allocs {
		shards = append(shards, e.Shard)
	}
	slices.Sort(shards)
	if !slices.Equal(shards, []ShardID{"s1", "s2", "s3", "s4", "s5", "s6"}) {
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
	homes := map[ShardID]RegionID{}
	for _, e := range allocs {
		homes[e.Shard] = e.Region
	}

	d = h.step(inStoreDone{})
	if d.store != nil {
		t.Fatalf("another store after the batch: %+v", d.store.event)
	}
	for s, r := range homes {
		if h.homeOf(s) != r {
			t.Fatalf("%s stored at %q, decided %q", s, h.homeOf(s), r)
		}
		if !sent(d, r, msgHostShard{Shard: s}) {
			t.Fatalf("no HostShard(%s) to %q: %+v", s, r, d.sends)
		}
		if _, ok := startedTimer(d, timerKey{kind: timerHostShard, shard: s}); !ok {
			t.Fatalf("no HostShard resend timer for %s", s)
		}
	}
	for _, r := range requests[:7] {
		if !sent(d, r.from, msgShardHome{Shard: r.shard, Region: homes[r.shard]}) {
			t.Fatalf("%s not told to %q: %+v", r.shard, r.from, d.sends)
		}
	}
	// The least-shard strategy saw the batch's own homes: 7 shards on 3 regions.
	evenSpread(t, h.c)

	// Later requests are answered from the state, without a write.
	h.manual = false
	d = h.from(c, msgGetShardHome{Shard: "s4"})
	if d.store != nil || !sent(d, c, msgShardHome{Shard: "s4", Region: homes["s4"]}) {
		t.Fatalf("a later request: %+v", d)
	}
}

// A request for a shard of the batch that arrives while the batch is written waits, and
// is answered from the state once it is stored.
func TestCoordinatorRequestDuringBatchWrite(t *testing.T) {
	h := newCoordHarness(t, coordSettings{}, nil, 2)
	a, b := reg(1), reg(2)
	h.register(a, b)
	h.manual = true
	h.from(a, msgGetShardHome{Shard: "s0"})
	for _, s := range []ShardID{"s1", "s2", "s3"} {
		h.from(a, msgGetShardHome{Shard: s})
	}
	d := h.step(inStoreDone{})
	if _, batch := batchShards(t, d.store); !batch {
		t.Fatal("no batch")
	}
	h.expectNoSends(h.from(b, msgGetShardHome{Shard: "s2"}), "a request for a shard of the pending batch")
	d = h.step(inStoreDone{})
	if d.store != nil {
		t.Fatalf("a store for a shard the batch stored: %+v", d.store.event)
	}
	if home := h.homeOf("s2"); home == "" || !sent(d, b, msgShardHome{Shard: "s2", Region: home}) {
		t.Fatalf("late request not answered from the state: %+v", d.sends)
	}
}

// A batch whose write fails is written again, the same batch; the requests wait. The
// failure is reported once, not at every retry.
func TestCoordinatorBatchWriteRetried(t *testing.T) {
	h := newCoordHarness(t, coordSettings{storeState: true}, nil, 2)
	a, b := reg(1), reg(2)
	h.register(a, b)
	h.manual = true
	h.from(a, msgGetShardHome{Shard: "s0"})
	for _, s := range []ShardID{"s1", "s2", "s3"} {
		h.from(b, msgGetShardHome{Shard: s})
	}
	first := h.step(inStoreDone{}).store
	if _, batch := batchShards(t, first); !batch {
		t.Fatal("no batch")
	}
	for i := range 2 {
		// The first failure of the write is reported; its retries fail alike until the
		// cause passes, and are not reported again.
		d := h.step(inStoreFailed{Err: errStore})
		if hasProblem(d, errStore) != (i == 0) || len(d.sends) > 0 {
			t.Fatalf("failed write %d: %+v", i+1, d)
		}
		if d.store == nil || !reflect.DeepEqual(d.store.event, first.event) || !d.store.state.equal(first.state) {
			t.Fatalf("retry stores %+v, want the same batch %+v", d.store, first.event)
		}
	}
	d := h.step(inStoreDone{})
	for _, s := range []ShardID{"s1", "s2", "s3"} {
		if !sent(d, b, msgShardHome{Shard: s, Region: h.homeOf(s)}) {
			t.Fatalf("%s not answered after the retry: %+v", s, d.sends)
		}
	}
}

// After a region's removal its shards get new homes in one write, spread evenly over
// the regions left (the crash of one member of three).
func TestCoordinatorRehomesRemovedRegionInOneWrite(t *testing.T) {
	h := newCoordHarness(t, coordSettings{}, nil, 3)
	a, b, c := reg(1), reg(2), reg(3)
	h.register(a, b, c)
	for i := range 30 {
		s := ShardID(fmt.Sprintf("s%02d", i))
		h.allocate(a, s)
		h.from(h.homeOf(s), msgShardStarted{Shard: s})
	}
	gone := slices.Clone(h.c.state.regions[c])
	if len(gone) != 10 {
		t.Fatalf("region c holds %v", gone)
	}
	h.manual = true
	d := h.step(inRegionTerminated{Region: c})
	if d.store == nil || d.store.event != (evRegionTerminated{Region: c}) {
		t.Fatalf("store %+v, want the termination", d.store)
	}
	d = h.step(inStoreDone{})
	allocs, batch := batchShards(t, d.store)
	if !batch || len(allocs) != len(gone) {
		t.Fatalf("store %+v, want one batch of %d shards", d.store.event, len(gone))
	}
	d = h.step(inStoreDone{})
	if d.store != nil {
		t.Fatalf("another store: %+v", d.store.event)
	}
	for _, s := range gone {
		if r := h.homeOf(s); r == c || r == "" || !sent(d, r, msgHostShard{Shard: s}) {
			t.Fatalf("%s at %q: %+v", s, r, d.sends)
		}
	}
	evenSpread(t, h.c)
}

// A batch holds at most maxAllocationBatch shards; the rest follow in the next write.
func TestCoordinatorBatchCap(t *testing.T) {
	h := newCoordHarness(t, coordSettings{}, nil, 3)
	h.register(reg(1), reg(2), reg(3))
	h.manual = true
	h.from(reg(1), msgGetShardHome{Shard: "first"})
	n := maxAllocationBatch + 100
	for i := range n {
		h.from(reg(1+i%3), msgGetShardHome{Shard: ShardID(fmt.Sprint(i))})
	}
	d := h.step(inStoreDone{})
	allocs, _ := batchShards(t, d.store)
	if len(allocs) != maxAllocationBatch {
		t.Fatalf("first batch of %d shards, want %d", len(allocs), maxAllocationBatch)
	}
	// The size of a full batch as the journal stores it (default shard IDs, cluster
	// region IDs).
	_, b, err := serialization.NewRegistry().Marshal(d.store.event)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a batch of %d shards encodes to %d bytes", len(allocs), len(b))
	if len(b) > 8<<10 {
		t.Fatalf("a batch of %d default shard IDs takes %d bytes", len(allocs), len(b))
	}
	d = h.step(inStoreDone{})
	if allocs, _ := batchShards(t, d.store); len(allocs) != 100 {
		t.Fatalf("second batch of %d shards, want 100", len(allocs))
	}
	h.step(inStoreDone{})
	if len(h.c.state.shards) != n+1 {
		t.Fatalf("%d shards allocated, want %d", len(h.c.state.shards), n+1)
	}
	evenSpread(t, h.c)
}

// Only the run of home requests at the head of the queue is batched: an input behind
// it (here a registration) runs before the requests that follow it, which then see the
// new region.
func TestCoordinatorBatchStopsAtOtherInput(t *testing.T) {
	h := newCoordHarness(t, coordSettings{}, nil, 3)
	a, b, c := reg(1), reg(2), reg(3)
	h.register(a, b)
	h.manual = true
	h.from(a, msgGetShardHome{Shard: "s0"})
	h.from(a, msgGetShardHome{Shard: "s1"})
	h.from(a, msgGetShardHome{Shard: "s2"})
	h.from(c, msgRegister{})
	h.from(a, msgGetShardHome{Shard: "s3"})
	d := h.step(inStoreDone{})
	allocs, _ := batchShards(t, d.store)
	if len(allocs) != 2 {
		t.Fatalf("batch %+v, want s1 and s2 only", allocs)
	}
	d = h.step(inStoreDone{})
	if d.store == nil || d.store.event != (evRegionRegistered{Region: c}) {
		t.Fatalf("store %+v, want the registration next", d.store)
	}
	d = h.step(inStoreDone{})
	if allocs, _ := batchShards(t, d.store); len(allocs) != 1 || allocs[0] != (evShardHomeAllocated{Shard: "s3", Region: c}) {
		t.Fatalf("s3 stored as %+v, want at the new region", d.store.event)
	}
}

// failingStrategy fails for one shard and otherwise asks the least-shard strategy.
type failingStrategy struct {
	LeastShardStrategy
	bad ShardID
}

func (s *failingStrategy) AllocateShard(req AllocationRequest) (RegionID, error) {
	if req.Shard == s.bad {
		return "", fmt.Errorf("%w: no", ErrNoRegion)
	}
	return s.LeastShardStrategy.AllocateShard(req)
}

// A shard the strategy cannot place leaves the batch (its request is dropped with a
// problem, as alone); the others are stored.
func TestCoordinatorBatchSkipsStrategyFailure(t *testing.T) {
	strategy := &failingStrategy{LeastShardStrategy: LeastShardStrategy{cfg: LeastShardConfig{}.withDefaults()}, bad: "s2"}
	h := newCoordHarness(t, coordSettings{}, strategy, 2)
	h.register(reg(1), reg(2))
	h.manual = true
	h.from(reg(1), msgGetShardHome{Shard: "s0"})
	for _, s := range []ShardID{"s1", "s2", "s3"} {
		h.from(reg(2), msgGetShardHome{Shard: s})
	}
	d := h.step(inStoreDone{})
	if !hasProblem(d, errStrategy) {
		t.Fatalf("no problem for the shard the strategy failed: %+v", d.problems)
	}
	allocs, _ := batchShards(t, d.store)
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
	h, a, b, p := rebalanceSetup(t, coordSettings{})
	h.fire(timerKey{kind: timerRebalance}) // moves s1 from a
	for _, r := range []RegionID{a, b, p} {
		h.from(a, msgBeginHandOffAck{Shard: "s1", Region: r})
	}
	h.manual = true
	d := h.from(a, msgShardStopped{Shard: "s1", Pending: true})
	if d.store == nil || d.store.event != (evShardHomeDeallocated{Shard: "s1"}) {
		t.Fatalf("store %+v, want the deallocation", d.store)
	}
	h.from(a, msgGetShardHome{Shard: "x1"})
	d = h.step(inStoreDone{}) // s1 is re-homed at once, with x1
	allocs, batch := batchShards(t, d.store)
	if !batch || len(allocs) != 2 {
		t.Fatalf("store %+v, want x1 and s1 in one batch", d.store.event)
	}
	h.expectNoSends(h.from(a, msgGetShardHome{Shard: "s1", HandOver: true}), "a hand-over request during the write")
	d = h.step(inStoreDone{})
	if home := h.homeOf("s1"); home != b || !sent(d, b, msgHostShard{Shard: "s1", Predecessor: a}) ||
		!sent(d, a, msgHandOverTo{Shard: "s1", Region: b}) {
		t.Fatalf("s1 at %q: %+v, want HostShard naming a, and a told to hand over to b", home, d.sends)
	}
}

// A region that asks for a shard while its home is being removed (the removal margin
// runs) is told the next home as soon as it is stored, without asking again.
func TestCoordinatorAnswersRequestsAwaitingRemoval(t *testing.T) {
	h := newCoordHarness(t, coordSettings{removalMargin: 5}, nil, 3)
	a, b, c := reg(1), reg(2), reg(3)
	h.register(a, b, c)
	for i := range 6 {
		s := ShardID(fmt.Sprint("s", i))
		h.allocate(a, s)
		h.from(h.homeOf(s), msgShardStarted{Shard: s})
	}
	gone := slices.Clone(h.c.state.regions[c])
	h.step(inRegionTerminated{Region: c, NodeRemoved: true})
	for _, s := range gone {
		h.expectNoSends(h.from(b, msgGetShardHome{Shard: s}), "a request while the home is being removed")
		h.from(c, msgGetShardHome{Shard: s}) // the removed region's own request goes with it
	}
	d := h.fire(timerKey{kind: timerRemovalMargin, region: c})
	for _, s := range gone {
		home := h.homeOf(s)
		if home == c || home == "" || !sent(d, b, msgShardHome{Shard: s, Region: home}) {
			t.Fatalf("%s at %q: %+v, want b told", s, home, d.sends)
		}
		if len(sentTo(d, c)) > 0 {
			t.Fatalf("the removed region was told: %+v", sentTo(d, c))
		}
	}
	if len(h.c.awaiting) != 0 {
		t.Fatalf("still awaiting: %v", h.c.awaiting)
	}
}
