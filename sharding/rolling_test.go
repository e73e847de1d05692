package sharding

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// akka-core #30120: during a rolling update shards paused for 10 to 30 s each. Here every
// node of a 3-node cluster is restarted in turn (a graceful leave, then a new
// incarnation on the same addresses) while a client per shard keeps asking its entity;
// the longest time a shard goes without an answer must stay under a second.
func TestRollingRestartPausePerShard(t *testing.T) {
	sc := startShardCluster(t, 3, func(int) EntityConfig {
		c := persistentCounterConfig()
		c.Timings.RebalanceInterval = time.Hour // only the restarts move shards
		return c
	})
	// One entity per shard.
	perShard := map[ShardID]EntityID{}
	for _, id := range entityIDs(200) {
		if s := HashShardID(id, 10); perShard[s] == "" {
			perShard[s] = id
		}
	}
	live := &liveRegions{regions: map[int][2]actor.Ref{}, streams: map[int]streamNode{}, leaving: map[int]bool{}}
	for i := range 3 {
		live.set(i, [2]actor.Ref{sc.nodes[i].region}, streamNode{})
		for _, id := range perShard {
			sc.mustAsk(i, id, GetCount{})
		}
	}

	type result struct {
		shard    ShardID
		maxPause time.Duration
		at       time.Time
		failures int
		answers  int
	}
	var inFlight [3]atomic.Int64 // the asks through each node (see restartInTurn)
	stop := make(chan struct{})
	results := make(chan result, len(perShard))
	var clients sync.WaitGroup
	for s, id := range perShard {
		clients.Add(1)
		go func() {
			defer clients.Done()
			r := result{shard: s}
			last := time.Now()
			i := 0
			for {
				select {
				case <-stop:
					if p := time.Since(last); p > r.maxPause {
						r.maxPause = p
					}
					results <- r
					return
				default:
				}
				i++
				node, regions, ok := live.pickRoundRobinCounting(i, inFlight[:])
				if !ok {
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_, err := actor.Ask[int](ctx, regions[0], Envelope{EntityID: id, Message: GetCount{}})
				cancel()
				inFlight[node].Add(-1)
				if err != nil {
					r.failures++
					continue
				}
				now := time.Now()
				if p := now.Sub(last); p > r.maxPause {
					r.maxPause, r.at = p, last
				}
				last = now
				r.answers++
			}
		}()
	}
	for _, i := range []int{2, 1, 0} {
		restartInTurn(t, sc, live, i, inFlight[:], nil)
	}
	close(stop)
	clients.Wait()
	close(results)
	limit := testkit.Dilated(time.Second)
	var report []string
	for r := range results {
		report = append(report, fmt.Sprintf("%s: %v from %s (%d answers, %d failed)", r.shard, r.maxPause.Round(time.Millisecond),
			r.at.Format("15:04:05.000"), r.answers, r.failures))
		if r.maxPause > limit {
			t.Errorf("shard %s paused %v during the rolling restart (limit %v)", r.shard, r.maxPause, limit)
		}
	}
	t.Logf("longest pause per shard: %v", report)
}

// restartInTurn restarts node i as a rolling restart does: the clients stop sending
// through it, the asks already sent through it end (a reply comes back to the node an
// ask went through, as a service drains its requests before it stops), it leaves
// gracefully, and it starts again with the same configuration. check, if not nil, runs
// once every node is Up again, before the clients use node i again.
func restartInTurn(t *testing.T, sc *shardCluster, live *liveRegions, i int, inFlight []atomic.Int64, check func()) {
	t.Helper()
	t.Logf("%s: restarting node %d", time.Now().Format("15:04:05.000"), i)
	live.markLeaving(i, true)
	for inFlight[i].Load() > 0 {
		<-time.After(5 * time.Millisecond) // polling a counter of the test's clients
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(20*time.Second))
	err := sc.nodes[i].System.Shutdown(ctx)
	cancel()
	if err != nil {
		t.Fatalf("graceful leave of node %d: %v", i, err)
	}
	live.remove(i)
	sc.mc.Restart(i)
	sc.startSharding(i)
	sc.mc.AwaitAllUp(testkit.Dilated(20 * time.Second))
	if check != nil {
		check()
	}
	live.set(i, [2]actor.Ref{sc.nodes[i].region}, streamNode{})
	t.Logf("%s: node %d back", time.Now().Format("15:04:05.000"), i)
}

// pickRoundRobinCounting returns the i-th usable node, round robin, and counts an ask
// in flight through it, in the same step as the pick (so that a node marked leaving
// after it sees the ask).
func (l *liveRegions) pickRoundRobinCounting(i int, inFlight []atomic.Int64) (int, [2]actor.Ref, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, r, ok := l.pickLocked(i)
	if ok {
		inFlight[n].Add(1)
	}
	return n, r, ok
}

// pickLocked returns the i-th usable node (not leaving), round robin; l.mu is held.
func (l *liveRegions) pickLocked(i int) (int, [2]actor.Ref, bool) {
	var ids []int
	for n := range 8 {
		if _, ok := l.regions[n]; ok && !l.leaving[n] {
			ids = append(ids, n)
		}
	}
	if len(ids) == 0 {
		return 0, [2]actor.Ref{}, false
	}
	n := ids[i%len(ids)]
	return n, l.regions[n], true
}

// A rolling restart done as docs/cluster.md advises: five nodes, every one with the
// same seed list (the first three nodes, the first seed first), each shut down
// gracefully and started again with that same configuration, the first seed first,
// while clients keep asking persistent counters on every node. The restarted first
// seed must join the running cluster (it once formed a second cluster, and every
// entity then ran twice on one journal): no ask fails, no entity ever has two live
// incarnations, every cluster identity is the same, and no acknowledged increment is
// lost.
func TestRollingRestartWithTheSameSeedsOnEveryNode(t *testing.T) {
	const nodes = 5
	table := newIncarnations()
	incarnation := map[int]int{}
	cfg := func(i int) EntityConfig {
		incarnation[i]++
		c := persistentCounterConfig()
		c.EntityFactory = trackedCounters(table, fmt.Sprintf("node%d.%d", i, incarnation[i]))
		c.Timings.RebalanceInterval = time.Hour // only the restarts move shards
		// As docs/sharding.md advises for persistent entities: a stop command, which
		// waits behind the commands stashed during a persist (PoisonPill would drop
		// them, and their asks would time out).
		c.HandOffStopMessage = StopCounter{}
		return c
	}
	sc := startShardClusterWith(t, multinode.Options{Nodes: nodes, Seeds: 3}, cfg)
	id := sc.mc.Node(0).Cluster.ClusterID()
	ids := entityIDs(20)
	live := &liveRegions{regions: map[int][2]actor.Ref{}, streams: map[int]streamNode{}, leaving: map[int]bool{}}
	for i := range nodes {
		live.set(i, [2]actor.Ref{sc.nodes[i].region}, streamNode{})
	}

	var acked [20]atomic.Int64
	var asks, failures atomic.Int64
	// The clients' asks in flight through each node: a node is shut down once the asks
	// through it have ended (its service stops taking requests and drains them first,
	// as a deployment does), since an ask's reply comes back to the node it was sent
	// through.
	var inFlight [nodes]atomic.Int64
	var fmu sync.Mutex
	var failed []string
	stop := make(chan struct{})
	var clients sync.WaitGroup
	for c := range 6 {
		clients.Add(1)
		go func() {
			defer clients.Done()
			for k := c; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				node, regions, ok := live.pickRoundRobinCounting(k, inFlight[:])
				if !ok {
					continue
				}
				e := (k*7 + c) % len(ids)
				ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(5*time.Second))
				n, err := actor.Ask[int](ctx, regions[0], Envelope{EntityID: ids[e], Message: Increment{By: 1}})
				cancel()
				inFlight[node].Add(-1)
				asks.Add(1)
				if err != nil {
					failures.Add(1)
					fmu.Lock()
					failed = append(failed, fmt.Sprintf("%s via node %d at %s: %v", ids[e], node, time.Now().Format("15:04:05.000"), err))
					fmu.Unlock()
					continue
				}
				_ = n
				acked[e].Add(1)
			}
		}()
	}
	start := time.Now()
	for i := range nodes {
		restartInTurn(t, sc, live, i, inFlight[:], func() {
			for j := range nodes {
				if got := sc.mc.Node(j).Cluster.ClusterID(); got != id {
					t.Fatalf("after restarting node %d, node %d is in cluster %q, want %q", i, j, got, id)
				}
			}
		})
	}
	close(stop)
	clients.Wait()
	elapsed := time.Since(start)
	t.Logf("%d asks in %v (%.0f/s), %d failed", asks.Load(), elapsed.Round(time.Millisecond),
		float64(asks.Load())/elapsed.Seconds(), failures.Load())
	if failures.Load() > 0 {
		t.Errorf("%d asks failed during the rolling restart: %v", failures.Load(), failed)
	}
	table.checkNeverTwo(t)
	for e, entity := range ids {
		if got := sc.mustAsk(0, entity, GetCount{}); got < int(acked[e].Load()) {
			t.Errorf("%s counts %d, but %d increments were acknowledged", entity, got, acked[e].Load())
		}
	}
}
