package main

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/sharding"
)

// The single-node sharding scenarios run one system without a cluster (a cluster of
// one, for sharding) with the default envelope extractor over 1,000 shards.
func init() {
	scenarios["sharded-tell"] = scenario{2_000_000, runShardedTell}
	scenarios["sharded-ask"] = scenario{200_000, runShardedAsk}
	scenarios["entities-1m"] = scenario{1_000_000, runEntities1M}
}

// shardCounter counts what it receives into a shared counter and closes done when the
// total reaches want; it answers a *payload with itself.
type shardCounter struct {
	total *atomic.Int64
	want  int64
	done  chan struct{}
}

func (c *shardCounter) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *payload:
		_ = ctx.Respond(m)
	case int:
		if c.total.Add(1) == c.want {
			close(c.done)
		}
	}
}

// startCounters starts sharding on sys with the counter entity type.
func startCounters(sys *actor.System, props *actor.Props) (actor.Ref, error) {
	s, err := sharding.Start(sys, sharding.Config{})
	if err != nil {
		return actor.Ref{}, err
	}
	return s.Start("Counter", sharding.EntityConfig{Entity: props})
}

// runShardedTell: n tells through the local region's entity refs, round robin over
// 1,000 entities that already run, against n tells to 1,000 plain actors (the floor),
// in 5 rounds that each measure the floor first and then the entity refs; it reports
// the round with the median rate and the ratio of the median rates, with the range
// of the rounds' ratios.
func runShardedTell(n int) (result, error) {
	const entities, rounds = 1000, 5
	sys, err := newSystem()
	if err != nil {
		return nil, err
	}
	defer shutdown(sys)
	p := newProgress()
	props := actor.PropsOf(func() actor.Actor { return &intCounter{p: p} })
	if _, err := startCounters(sys, props); err != nil {
		return nil, err
	}
	refs := make([]sharding.EntityRef[any], entities)
	p.want.Store(entities)
	for i := range refs {
		if refs[i], err = sharding.EntityRefFor[any](sys, "Counter", sharding.EntityID(strconv.Itoa(i))); err != nil {
			return nil, err
		}
		_ = refs[i].Tell(1) // starts the entity and its shard
	}
	if err := waitAck(p.signal, entities); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	plain := make([]actor.Ref, entities)
	for i := range plain {
		if plain[i], err = sys.Spawn(props, ""); err != nil {
			return nil, err
		}
	}
	var rs againstFloor
	for range rounds {
		floor, err := tellRound(n, p, func(i int) error { return plain[i%entities].Tell(1) })
		if err != nil {
			return nil, fmt.Errorf("plain actors: %w", err)
		}
		r, err := tellRound(n, p, func(i int) error { return refs[i%entities].Tell(1) })
		if err != nil {
			return nil, fmt.Errorf("entity refs: %w", err)
		}
		rs.add(floor, r)
	}
	mid := rs.summary()
	mid["entities"] = entities
	return mid, nil
}

// againstFloor collects the rounds of a scenario measured against a floor in the same
// run: each round measures the floor, then the scenario.
type againstFloor struct {
	floors, rates, pcts []float64
	results             []result
}

// add records a round: the floor's result and the scenario's.
func (a *againstFloor) add(floor, r result) {
	f, s := floor["ops_per_sec"].(float64), r["ops_per_sec"].(float64)
	a.floors, a.rates, a.pcts = append(a.floors, f), append(a.rates, s), append(a.pcts, 100*s/f)
	a.results = append(a.results, r)
}

// summary returns the round with the median rate, with the ratio of the median rates
// to the floor's and the range of the rounds' ratios.
func (a *againstFloor) summary() result {
	mid := medianBy(a.results, "ops_per_sec")
	pcts := slices.Sorted(slices.Values(a.pcts))
	mid["rounds"] = len(a.results)
	mid["floor_ops_per_sec"] = round(median(a.floors), 0)
	mid["pct_of_floor"] = round(100*median(a.rates)/median(a.floors), 1)
	mid["pct_of_floor_min"] = round(pcts[0], 1)
	mid["pct_of_floor_max"] = round(pcts[len(pcts)-1], 1)
	return mid
}

// tellRound sends n messages with send(0) ... send(n-1) and times until p has counted
// all of them.
func tellRound(n int, p *progress, send func(i int) error) (result, error) {
	want := p.total.Load() + int64(n)
	p.want.Store(want)
	return measure(n, func() error {
		for i := range n {
			if err := send(i); err != nil {
				return err
			}
		}
		return waitAck(p.signal, want)
	})
}

// intCounter counts the ints it receives into a progress.
type intCounter struct{ p *progress }

// Receive counts ints.
func (c *intCounter) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(int); ok {
		c.p.add()
	}
}

// runShardedAsk: n sequential asks to one running entity through its region.
func runShardedAsk(n int) (result, error) {
	sys, err := newSystem()
	if err != nil {
		return nil, err
	}
	defer shutdown(sys)
	var total atomic.Int64
	props := actor.PropsOf(func() actor.Actor { return &shardCounter{total: &total, done: make(chan struct{})} })
	if _, err := startCounters(sys, props); err != nil {
		return nil, err
	}
	ref, err := sharding.EntityRefFor[any](sys, "Counter", "ask")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	msg := &payload{}
	if _, err := sharding.Ask[*payload](ctx, ref, any(msg)); err != nil { // starts it
		return nil, err
	}
	return measure(n, func() error {
		for range n {
			if _, err := sharding.Ask[*payload](ctx, ref, any(msg)); err != nil {
				return err
			}
		}
		return nil
	})
}

// idleEntity counts its start and otherwise does nothing.
type idleEntity struct{ started *atomic.Int64 }

func (e *idleEntity) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(actor.Started); ok {
		e.started.Add(1)
	}
}

// runEntities1M starts n idle entities over 1,000 shards on one node with StartEntity
// and reports the start rate and the heap per entity (shards and their bookkeeping
// included), then times the system's coordinated shutdown, in which the region hands
// every shard off and each shard stops its entities (shutdown_seconds). At most
// 50,000 starts are outstanding, half the region's buffer, which holds the messages
// of shards whose home is not known yet.
func runEntities1M(n int) (result, error) {
	sys, err := newSystem()
	if err != nil {
		return nil, err
	}
	defer shutdown(sys)
	var started atomic.Int64
	props := actor.PropsOf(func() actor.Actor { return &idleEntity{started: &started} })
	region, err := startCounters(sys, props)
	if err != nil {
		return nil, err
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, err := measure(n, func() error {
		const window = 50_000
		for i := range n {
			for int64(i)-started.Load() > window {
				runtime.Gosched()
			}
			if err := region.Tell(sharding.StartEntity{ID: sharding.EntityID(strconv.Itoa(i))}); err != nil {
				return err
			}
		}
		deadline := time.Now().Add(time.Minute)
		for started.Load() < int64(n) {
			if time.Now().After(deadline) {
				return fmt.Errorf("%d of %d entities started within a minute", started.Load(), n)
			}
			runtime.Gosched()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	r["bytes_per_entity"] = round(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(n), 1)
	r["shards"] = sharding.DefaultNumberOfShards
	runtime.KeepAlive(region)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stopStart := time.Now()
	if err := sys.Shutdown(ctx); err != nil {
		return nil, fmt.Errorf("shutdown: %w", err)
	}
	r["shutdown_seconds"] = round(time.Since(stopStart).Seconds(), 6)
	return r, nil
}
