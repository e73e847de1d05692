package sharding

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
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
				node, regions, ok := live.pickRoundRobin(i)
				if !ok {
					continue
				}
				_ = node
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_, err := actor.Ask[int](ctx, regions[0], Envelope{EntityID: id, Message: GetCount{}})
				cancel()
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
		t.Logf("%s: restarting node %d", time.Now().Format("15:04:05.000"), i)

		live.markLeaving(i, true)
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(20*time.Second))
		err := sc.nodes[i].System.Shutdown(ctx)
		cancel()
		if err != nil {
			t.Fatalf("graceful leave of node %d: %v", i, err)
		}
		live.remove(i)
		waitPortsFree(t, sc.mc.Node(i))
		sc.mc.Restart(i)
		sc.startSharding(i)
		sc.mc.AwaitAllUp(testkit.Dilated(20 * time.Second))
		live.set(i, [2]actor.Ref{sc.nodes[i].region}, streamNode{})
		t.Logf("%s: node %d back", time.Now().Format("15:04:05.000"), i)
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

// pickRoundRobin returns the i-th usable node, round robin.
func (l *liveRegions) pickRoundRobin(i int) (int, [2]actor.Ref, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
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
