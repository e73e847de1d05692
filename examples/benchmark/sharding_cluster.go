package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/ddata"
	"github.com/troupe-go/troupe/sharding"
)

// The multi-node sharding scenarios run in-process nodes that talk over real remote
// TCP, with the cluster scenarios' timing (cluster.TestTiming, stable-after 1.4 s,
// which is also the down-removal margin), a replicator on every node and sharding with
// its default, distributed-data, coordinator state store. The nodes share this
// process, so the entities count what they receive into tables the driver reads.
func init() {
	scenarios["sharded-tell-remote"] = scenario{1_000_000, runShardedTellRemote}
	scenarios["shard-allocate"] = scenario{1000, runShardAllocate}
	scenarios["rebalance"] = scenario{30_000, runRebalance}
	scenarios["sharding-failover"] = scenario{1000, runShardingFailover}
}

// benchType is the entity type of the multi-node sharding scenarios.
const benchType = "Counter"

// startShardingOn starts the replicator and sharding on node, and the entity type
// benchType with cfg; it returns the type's region.
func startShardingOn(node *clusterNode, cfg sharding.EntityConfig) (actor.Ref, error) {
	if err := startReplicator(node); err != nil {
		return actor.Ref{}, err
	}
	return startType(node, cfg)
}

// startReplicator starts node's replicator, which the coordinator's state store uses.
func startReplicator(node *clusterNode) error {
	_, err := ddata.Start(context.Background(), node.sys, ddata.Config{Cluster: node.c, Registry: node.reg})
	return err
}

// startType starts sharding on node, and the entity type benchType with cfg.
func startType(node *clusterNode, cfg sharding.EntityConfig) (actor.Ref, error) {
	s, err := sharding.Start(node.sys, sharding.Config{Registry: node.reg})
	if err != nil {
		return actor.Ref{}, err
	}
	return s.Start(benchType, cfg)
}

// startShardingAll starts the replicator on every node, then sharding with cfg(i)
// (so that no coordinator reads its state from a node whose replicator has not
// started), and returns the regions once each of them knows a region on every node.
func startShardingAll(nodes []*clusterNode, cfg func(i int) sharding.EntityConfig) ([]actor.Ref, error) {
	for i, node := range nodes {
		if err := startReplicator(node); err != nil {
			return nil, fmt.Errorf("node %d: %w", i, err)
		}
	}
	regions := make([]actor.Ref, len(nodes))
	for i, node := range nodes {
		var err error
		if regions[i], err = startType(node, cfg(i)); err != nil {
			return nil, fmt.Errorf("node %d: %w", i, err)
		}
	}
	if err := awaitRegions(regions, len(nodes), 30*time.Second); err != nil {
		return nil, err
	}
	return regions, nil
}

// awaitRegions asks each region, every 10 ms, for the type's regions until it knows
// want of them.
func awaitRegions(regions []actor.Ref, want int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for i, r := range regions {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			cur, err := actor.Ask[sharding.CurrentRegions](ctx, r, sharding.GetCurrentRegions{})
			cancel()
			if err == nil && len(cur.Regions) >= want {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("region %d knows %d of %d regions after %v (last error %v)", i, len(cur.Regions), want, timeout, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// entityRefs returns references, through sys's region, to the entities named ids.
func entityRefs(sys *actor.System, ids []sharding.EntityID) ([]sharding.EntityRef[any], error) {
	refs := make([]sharding.EntityRef[any], len(ids))
	for i, id := range ids {
		var err error
		if refs[i], err = sharding.EntityRefFor[any](sys, benchType, id); err != nil {
			return nil, err
		}
	}
	return refs, nil
}

// numberedIDs returns the entity IDs "0" to n-1.
func numberedIDs(n int) []sharding.EntityID {
	ids := make([]sharding.EntityID, n)
	for i := range ids {
		ids[i] = sharding.EntityID(strconv.Itoa(i))
	}
	return ids
}

// idsInDistinctShards returns n entity IDs that the default extractor places in n
// different shards of shards (n <= shards).
func idsInDistinctShards(n, shards int) []sharding.EntityID {
	seen := make(map[sharding.ShardID]bool, n)
	ids := make([]sharding.EntityID, 0, n)
	for i := 0; len(ids) < n; i++ {
		id := sharding.EntityID("e" + strconv.Itoa(i))
		if s := sharding.HashShardID(id, shards); !seen[s] {
			seen[s] = true
			ids = append(ids, id)
		}
	}
	return ids
}

// progress counts the wireMsgs that entities on any node receive, and signals every
// 10,000th and the wanted total.
type progress struct {
	total  atomic.Int64
	want   atomic.Int64
	signal chan int64
}

// newProgress returns a progress with room for every signal of a run.
func newProgress() *progress { return &progress{signal: make(chan int64, 1<<16)} }

// add counts one message, signalling without blocking (the room newProgress leaves is
// enough for every signal of a run; the driver times out should one be missed).
func (p *progress) add() {
	n := p.total.Add(1)
	if n%10_000 == 0 || n == p.want.Load() {
		select {
		case p.signal <- n:
		default:
		}
	}
}

// countingEntity counts the wireMsgs it receives into a progress, and answers a probe
// (whoAreYou) with the index of its node.
type countingEntity struct {
	p    *progress
	node int
}

// Receive counts wireMsgs and answers probes.
func (e *countingEntity) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *wireMsg:
		e.p.add()
	case *wireAck:
		if m.N == -1 {
			_ = ctx.Respond(&wireAck{N: int64(e.node)})
		}
	}
}

// countingConfig is the entity configuration of node i: countingEntity with the
// defaults.
func countingConfig(p *progress, i int) sharding.EntityConfig {
	return sharding.EntityConfig{
		Entity: actor.PropsOf(func() actor.Actor { return &countingEntity{p: p, node: i} }),
	}
}

// homeOn is an allocation strategy that places every shard on the node at addr and
// never moves one.
type homeOn struct{ addr string }

// AllocateShard returns the region of the node at addr, or, when that node's region is
// not offered (it is leaving, or gone), another region: the shards it hands off when
// it leaves get a home on the nodes that stay, instead of none. (The scenario's
// MinMembers makes the first allocation wait for both regions.)
func (h homeOn) AllocateShard(req sharding.AllocationRequest) (sharding.RegionID, error) {
	for _, r := range req.Regions {
		if r.Node.Address.Addr == h.addr {
			return r.Region, nil
		}
	}
	if len(req.Regions) > 0 {
		return req.Regions[0].Region, nil
	}
	return "", fmt.Errorf("%w: no region for shard %s", sharding.ErrNoRegion, req.Shard)
}

// Rebalance moves nothing.
func (homeOn) Rebalance(sharding.RebalanceRequest) ([]sharding.ShardID, error) { return nil, nil }

// runShardedTellRemote: two nodes, A and B; 1,000 entities, all hosted on B (a
// strategy that places every shard there), already running. Three rounds, each first
// the floor, n remote tells from A to one plain actor on B, then n 100-byte tells
// through A's region round robin to the entities; both keep at most 60,000 messages
// unacknowledged (the plain actor acknowledges over the wire every 10,000, the
// entities through the shared counter). Reports the median round of each.
func runShardedTellRemote(n int) (result, error) {
	const entities, rounds = 1000, 3
	nodes, err := formCluster(2)
	if err != nil {
		return nil, err
	}
	defer stopCluster(nodes)
	a, b := nodes[0].sys, nodes[1].sys
	p := newProgress()
	home := homeOn{addr: b.Address().String()}
	if _, err := startShardingAll(nodes, func(i int) sharding.EntityConfig {
		cfg := countingConfig(p, i)
		cfg.AllocationStrategy = home
		cfg.MinMembers = 2
		return cfg
	}); err != nil {
		return nil, err
	}
	refs, err := entityRefs(a, numberedIDs(entities))
	if err != nil {
		return nil, err
	}
	// Start every entity (and learn every home) with one message each.
	p.want.Store(entities)
	warm := &wireMsg{Body: make([]byte, 100)}
	for _, ref := range refs {
		if err := ref.Tell(warm); err != nil {
			return nil, err
		}
	}
	if err := waitAck(p.signal, entities); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}

	var rs againstFloor
	for rnd := range rounds {
		cpu0 := processCPU()
		floor, err := remoteFloor(a, b, n)
		if err != nil {
			return nil, fmt.Errorf("round %d, remote tell: %w", rnd, err)
		}
		cpu1 := processCPU()
		r, err := streamEntities(refs, n, p)
		if err != nil {
			return nil, fmt.Errorf("round %d, through the region: %w", rnd, err)
		}
		r["cpu_ns_per_op"] = round(float64(processCPU()-cpu1)/float64(n), 0)
		r["floor_cpu_ns_per_op"] = round(float64(cpu1-cpu0)/float64(n), 0)
		rs.add(floor, r)
	}
	mid := rs.summary()
	mid["entities"] = entities
	return mid, nil
}

// remoteFloor streams n wireMsgs from an actor of from to a new plain actor on to, which
// acknowledges every 10,000 and the last (streamTo).
func remoteFloor(from, to *actor.System, n int) (result, error) {
	var count int64
	sink, err := to.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*wireMsg); ok {
			count++
			if count%10_000 == 0 || count == int64(n) {
				_ = ctx.Respond(&wireAck{N: count})
			}
		}
	}), "")
	if err != nil {
		return nil, err
	}
	defer func() { _ = to.Stop(sink) }()
	target, err := from.Resolve(sink.URI())
	if err != nil {
		return nil, err
	}
	return streamTo(from, target, n)
}

// streamEntities tells n 100-byte wireMsgs round robin to refs, keeping at most 60,000
// that the entities have not counted, and times until they have counted all.
func streamEntities(refs []sharding.EntityRef[any], n int, p *progress) (result, error) {
	const window = 60_000
	base := p.total.Load()
	want := base + int64(n)
	p.want.Store(want)
	msg := &wireMsg{Body: make([]byte, 100)}
	return measure(n, func() error {
		have := base
		for i := 1; i <= n; i++ {
			for base+int64(i)-have > window {
				var err error
				if have, err = next(p.signal); err != nil {
					return err
				}
			}
			if err := refs[i%len(refs)].Tell(msg); err != nil {
				return err
			}
		}
		return waitAck(p.signal, want)
	})
}

// askAll asks every ref a probe (whoAreYou) at once, with timeout, and returns for
// each the index of the node that answered, or -1.
func askAll(refs []sharding.EntityRef[any], timeout time.Duration) []int64 {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	futs := make([]*actor.Future, len(refs))
	for i, ref := range refs {
		futs[i] = ref.Ask(ctx, any(whoAreYou))
	}
	out := make([]int64, len(refs))
	for i, f := range futs {
		out[i] = -1
		if v, err := f.Result(ctx); err == nil {
			if a, ok := v.(*wireAck); ok {
				out[i] = a.N
			}
		}
	}
	return out
}

// countingCluster forms three nodes that run the counting entity type over shards
// shards; the caller stops them.
func countingCluster(shards int) ([]*clusterNode, error) {
	nodes, err := formCluster(3)
	if err != nil {
		return nil, err
	}
	p := newProgress()
	if _, err := startShardingAll(nodes, func(i int) sharding.EntityConfig {
		cfg := countingConfig(p, i)
		cfg.NumberOfShards = shards
		return cfg
	}); err != nil {
		stopCluster(nodes)
		return nil, err
	}
	return nodes, nil
}

// runShardAllocate: three nodes; n sequential asks from the youngest node, each the
// first message to a new shard (the default extractor, max(n, 1000) shards), so each
// waits for the coordinator on the oldest to allocate the shard (a majority write of
// its state) and for the entity to start wherever it went. Reports the latencies.
func runShardAllocate(n int) (result, error) {
	shards := max(n, sharding.DefaultNumberOfShards)
	nodes, err := countingCluster(shards)
	if err != nil {
		return nil, err
	}
	defer stopCluster(nodes)
	refs, err := entityRefs(nodes[2].sys, idsInDistinctShards(n, shards))
	if err != nil {
		return nil, err
	}
	lat := make([]time.Duration, n)
	hosts := make([]int, len(nodes))
	r, err := measure(n, func() error {
		for i, ref := range refs {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			t0 := time.Now()
			a, err := sharding.Ask[*wireAck](ctx, ref, any(whoAreYou))
			lat[i] = time.Since(t0)
			cancel()
			if err != nil {
				return fmt.Errorf("shard %d: %w", i, err)
			}
			hosts[a.N]++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	r["mean_us"] = micros(sum / time.Duration(n))
	r["p50_us"], r["p99_us"] = latencies(lat) // sorts lat
	r["max_us"] = micros(lat[n-1])
	r["shards"] = shards
	r["per_node"] = hosts
	return r, nil
}

// seqTable is what the rebalance scenario's entities received, per entity: how many
// messages and the highest sequence number, and how many arrived out of sequence.
type seqTable struct {
	received   []atomic.Int64
	last       []atomic.Int64
	total      atomic.Int64
	outOfOrder atomic.Int64
}

// seqEntity records the wireMsgs of entity idx in a seqTable.
type seqEntity struct {
	t   *seqTable
	idx int
}

// Receive records a wireMsg: counted, and out of order unless it follows the last.
func (e *seqEntity) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*wireMsg); ok {
		e.t.received[e.idx].Add(1)
		if prev := e.t.last[e.idx].Swap(m.Seq); m.Seq != prev+1 {
			e.t.outOfOrder.Add(1)
		}
		e.t.total.Add(1)
	}
}

// shardCounts returns how many shards each region hosts.
func shardCounts(regions []actor.Ref) ([]int, error) {
	out := make([]int, len(regions))
	for i, r := range regions {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := actor.Ask[sharding.ShardRegionStats](ctx, r, sharding.GetShardRegionStats{})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("region %d: %w", i, err)
		}
		out[i] = len(st.Shards)
	}
	return out, nil
}

// balanced reports whether the counts add up to shards and each is within one shard
// of an even spread.
func balanced(counts []int, shards int) bool {
	even := float64(shards) / float64(len(counts))
	sum := 0
	for _, c := range counts {
		if float64(c) < even-1 || float64(c) > even+1 {
			return false
		}
		sum += c
	}
	return sum == shards
}

// tellStream tells entities, from one goroutine, rate messages per second in ticks of
// 10 ms, round robin, each with the entity's next sequence number (seq[i] is the last
// one sent, so also how many were sent), until stop is closed.
type tellStream struct {
	refs     []sharding.EntityRef[any]
	seq      []int64
	rejected int64 // tells that returned an error (not sent; retried with the same number)
	stop     chan struct{}
	done     chan struct{}
}

// run streams until stop is closed, then closes done.
func (s *tellStream) run(rate int) {
	defer close(s.done)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	next := 0
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		for range rate / 100 {
			i := next % len(s.refs)
			next++
			if err := s.refs[i].Tell(&wireMsg{Seq: s.seq[i] + 1}); err != nil {
				s.rejected++
				continue
			}
			s.seq[i]++
		}
	}
}

// runRebalance: three nodes host 300 shards with n entities (default 30,000), the
// least-shard strategy's defaults and a rebalance interval of 1 s; a stream of 10,000
// tells a second with per-entity sequence numbers flows through the oldest node's
// region. A fourth node joins; the time from its start until every node is within one
// shard of an even spread; then the stream stops and every entity must have received
// all that was sent to it, in order.
func runRebalance(n int) (result, error) {
	const shards, rate, interval = 300, 10_000, time.Second
	nodes, err := formCluster(3)
	if err != nil {
		return nil, err
	}
	defer func() { stopCluster(nodes) }()
	table := &seqTable{received: make([]atomic.Int64, n), last: make([]atomic.Int64, n)}
	cfg := func(int) sharding.EntityConfig {
		return sharding.EntityConfig{
			EntityFactory: func(id sharding.EntityID) *actor.Props {
				idx, _ := strconv.Atoi(string(id))
				return actor.PropsOf(func() actor.Actor { return &seqEntity{t: table, idx: idx} })
			},
			NumberOfShards: shards,
			Timings:        sharding.Timings{RebalanceInterval: interval},
		}
	}
	regions, err := startShardingAll(nodes, cfg)
	if err != nil {
		return nil, err
	}
	refs, err := entityRefs(nodes[0].sys, numberedIDs(n))
	if err != nil {
		return nil, err
	}
	stream := &tellStream{refs: refs, seq: make([]int64, n), stop: make(chan struct{}), done: make(chan struct{})}
	// Start every entity with its first message.
	for i, ref := range refs {
		if err := ref.Tell(&wireMsg{Seq: 1}); err != nil {
			return nil, err
		}
		stream.seq[i] = 1
	}
	if err := pollUntil(60*time.Second, func() bool { return table.total.Load() == int64(n) }); err != nil {
		return nil, fmt.Errorf("starting %d entities: %d received: %w", n, table.total.Load(), err)
	}
	before, err := shardCounts(regions)
	if err != nil {
		return nil, err
	}
	coord := sharding.Get(nodes[0].sys)
	stats0, err := coord.Stats(benchType)
	if err != nil {
		return nil, err
	}

	go stream.run(rate)
	stopStream := func() {
		select {
		case <-stream.stop:
		default:
			close(stream.stop)
		}
		<-stream.done
	}
	defer stopStream()
	time.Sleep(time.Second) // a steady stream before the join (pacing, not synchronisation)

	start := time.Now()
	joiner, err := addNode(nodes)
	if err != nil {
		return nil, err
	}
	nodes = append(nodes, joiner)
	region, err := startShardingOn(joiner, cfg(3))
	if err != nil {
		return nil, err
	}
	regions = append(regions, region)
	if err := waitFor(nodes, 30*time.Second, func(st cluster.CurrentClusterState) bool {
		up := 0
		for _, m := range st.Members {
			if m.Status == cluster.Up {
				up++
			}
		}
		return up == 4
	}); err != nil {
		return nil, err
	}
	joined := time.Since(start)
	var counts []int
	var pollErr error
	if err := pollUntil(5*time.Minute, func() bool {
		counts, pollErr = shardCounts(regions)
		return pollErr == nil && balanced(counts, shards)
	}); err != nil {
		return nil, fmt.Errorf("not balanced: %v (last counts %v, %v)", err, counts, pollErr)
	}
	took := time.Since(start)
	stats1, err := coord.Stats(benchType)
	if err != nil {
		return nil, err
	}

	time.Sleep(time.Second) // the stream goes on a little after the spread is even
	stopStream()
	var sent int64
	for _, s := range stream.seq {
		sent += s
	}
	drained := pollUntil(30*time.Second, func() bool { return table.total.Load() >= sent })
	var lost, dup int64
	for i, s := range stream.seq {
		switch got := table.received[i].Load(); {
		case got < s:
			lost += s - got
		case got > s:
			dup += got - s
		}
	}
	var dropped, undelivered uint64
	for _, node := range nodes {
		st, err := sharding.Get(node.sys).Stats(benchType)
		if err != nil {
			return nil, err
		}
		dropped += st.BufferDropped
		undelivered += st.Undelivered
	}
	r := result{
		"n":                  n,
		"seconds":            round(took.Seconds(), 3),
		"ns_per_op":          float64(took.Nanoseconds()),
		"join_seconds":       round(joined.Seconds(), 3),
		"shards":             shards,
		"shards_before":      before,
		"shards_after":       counts,
		"rebalance_interval": interval.Seconds(),
		"hand_offs":          stats1.HandOffsCompleted - stats0.HandOffsCompleted,
		"hand_offs_failed":   stats1.HandOffsFailed - stats0.HandOffsFailed,
		"rate_per_sec":       rate,
		"sent":               sent,
		"received":           table.total.Load(),
		"lost":               lost,
		"duplicated":         dup,
		"out_of_order":       table.outOfOrder.Load(),
		"rejected":           stream.rejected,
		"buffer_dropped":     dropped,
		"undelivered":        undelivered,
		"drained_within_30s": drained == nil,
	}
	return r, nil
}

// pollUntil calls cond every 10 ms until it holds, or fails after timeout.
func pollUntil(timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// askUntilMoved asks ref a probe, with 250 ms timeouts, until it answers from another
// node than victim, and returns when (since start) it did, or -1 at the deadline.
// Asks that fail at once are paced 20 ms apart; asks counts every ask.
func askUntilMoved(ref sharding.EntityRef[any], victim int64, deadline time.Time, asks *atomic.Int64, start time.Time) time.Duration {
	for time.Now().Before(deadline) {
		t0 := time.Now()
		asks.Add(1)
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		a, err := sharding.Ask[*wireAck](ctx, ref, any(whoAreYou))
		cancel()
		if err == nil && a.N != victim {
			return time.Since(start)
		}
		if d := time.Since(t0); d < 20*time.Millisecond {
			time.Sleep(20*time.Millisecond - d)
		}
	}
	return -1
}

// runShardingFailover: three nodes; one entity in each of n shards (max(n, 1000) in
// all), spread by the least-shard strategy. The youngest node (not the coordinator's)
// crashes: serf and the transport stop without a leave, then its system shuts down.
// From the middle node, every entity whose shard lived on the crashed node is asked
// (all at once, each by an asker of its own, 250 ms timeouts, again and again) until
// each answers from another node: the time from the crash until the last answered.
// Also reported, from the crash: when the survivors removed the crashed member, when
// the coordinator gave the first shard a new home (its ShardAllocated event) and when
// the first answered.
func runShardingFailover(n int) (result, error) {
	shards := max(n, sharding.DefaultNumberOfShards)
	nodes, err := countingCluster(shards)
	if err != nil {
		return nil, err
	}
	defer stopCluster(nodes)
	refs, err := entityRefs(nodes[1].sys, idsInDistinctShards(n, shards))
	if err != nil {
		return nil, err
	}
	// Start the entities; note those on the victim.
	const victim = 2
	var pending []sharding.EntityRef[any]
	for i, at := range askAll(refs, 30*time.Second) {
		switch at {
		case victim:
			pending = append(pending, refs[i])
		case -1:
			return nil, fmt.Errorf("entity %s did not start within 30 s", refs[i].EntityID())
		}
	}
	moved := len(pending)
	gone := nodes[victim].c.SelfUniqueAddress()
	survivors := nodes[:victim]
	// The coordinator, on the oldest node, publishes every new home; note the first
	// after the crash.
	var start time.Time
	var armed atomic.Bool
	firstHome := make(chan time.Duration, 1)
	watcher, err := nodes[0].sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(sharding.ShardAllocated); ok && armed.Load() {
			select {
			case firstHome <- time.Since(start):
			default:
			}
		}
	}), "")
	if err != nil {
		return nil, err
	}
	actor.Subscribe[sharding.ShardEvent](nodes[0].sys.EventStream(), watcher)

	start = time.Now()
	armed.Store(true)
	nodes[victim].crash()
	removed := make(chan time.Duration, 1)
	go func() {
		err := waitFor(survivors, 60*time.Second, func(st cluster.CurrentClusterState) bool {
			for _, m := range st.Members {
				if m.Unique == gone {
					return false
				}
			}
			return true
		})
		if err != nil {
			removed <- -1
			return
		}
		removed <- time.Since(start)
	}()

	// One asker per shard, each asking again and again (250 ms timeouts) until its
	// entity answers from a survivor; an answer is timed when it arrives.
	answered := make(chan time.Duration, len(pending))
	var asks atomic.Int64
	deadline := start.Add(60 * time.Second)
	for _, ref := range pending {
		go func() { answered <- askUntilMoved(ref, victim, deadline, &asks, start) }()
	}
	var at []time.Duration
	for range pending {
		if d := <-answered; d >= 0 {
			at = append(at, d)
		}
	}
	if len(at) < moved {
		return nil, fmt.Errorf("%d of %d shards of the crashed node did not answer within 60 s", moved-len(at), moved)
	}
	sort.Slice(at, func(i, j int) bool { return at[i] < at[j] })
	first, last := at[0], at[len(at)-1]
	<-nodes[victim].crashed
	removal := <-removed
	var rehomed time.Duration
	select {
	case rehomed = <-firstHome:
	default:
	}
	return result{
		"n":                           n,
		"seconds":                     round(last.Seconds(), 3),
		"ns_per_op":                   float64(last.Nanoseconds()),
		"first_answer_seconds":        round(first.Seconds(), 3),
		"removed_seconds":             round(removal.Seconds(), 3),
		"first_new_home_seconds":      round(rehomed.Seconds(), 3),
		"shards":                      shards,
		"shards_moved":                moved,
		"median_answer_seconds":       round(at[len(at)/2].Seconds(), 3),
		"asks":                        asks.Load(),
		"stable_after_seconds":        stableAfter.Seconds(),
		"down_removal_margin_seconds": stableAfter.Seconds(), // DowningConfig.DownRemovalMargin 0: stable-after
		"target_seconds":              (stableAfter + 3*time.Second).Seconds(),
	}, nil
}
