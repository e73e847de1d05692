package main

import (
	"context"
	"fmt"
	"runtime"
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
// 1,000 entities that already run, against n tells to 1,000 plain actors in the same
// run (the floor, measured first).
func runShardedTell(n int) (result, error) {
	const entities = 1000
	sys, err := newSystem()
	if err != nil {
		return nil, err
	}
	defer shutdown(sys)
	var total atomic.Int64
	done := make(chan struct{})
	want := int64(entities + n) // a warm-up message per entity, then n
	props := actor.PropsOf(func() actor.Actor { return &shardCounter{total: &total, want: want, done: done} })
	if _, err := startCounters(sys, props); err != nil {
		return nil, err
	}
	refs := make([]sharding.EntityRef[any], entities)
	for i := range refs {
		if refs[i], err = sharding.EntityRefFor[any](sys, "Counter", sharding.EntityID(strconv.Itoa(i))); err != nil {
			return nil, err
		}
		_ = refs[i].Tell(1) // starts the entity and its shard
	}
	for total.Load() < entities {
		runtime.Gosched()
	}

	// The floor: the same tells to plain actors.
	var plainTotal atomic.Int64
	plainDone := make(chan struct{})
	plainProps := actor.PropsOf(func() actor.Actor {
		return &shardCounter{total: &plainTotal, want: int64(n), done: plainDone}
	})
	plain := make([]actor.Ref, entities)
	for i := range plain {
		if plain[i], err = sys.Spawn(plainProps, ""); err != nil {
			return nil, err
		}
	}
	floor, err := measure(n, func() error {
		for i := range n {
			_ = plain[i%entities].Tell(1)
		}
		return waitClosed(plainDone)
	})
	if err != nil {
		return nil, err
	}
	r, err := measure(n, func() error {
		for i := range n {
			if err := refs[i%entities].Tell(1); err != nil {
				return err
			}
		}
		return waitClosed(done)
	})
	if err != nil {
		return nil, err
	}
	r["entities"] = entities
	r["floor_ops_per_sec"] = floor["ops_per_sec"]
	r["pct_of_floor"] = round(100*r["ops_per_sec"].(float64)/floor["ops_per_sec"].(float64), 1)
	return r, nil
}

func waitClosed(ch chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-time.After(time.Minute):
		return fmt.Errorf("not all messages arrived within a minute")
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
// included). At most 50,000 starts are outstanding, half the region's buffer, which
// holds the messages of shards whose home is not known yet.
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
	return r, nil
}
