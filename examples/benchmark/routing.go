package main

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"sync/atomic"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/routing"
)

// routerRounds is how many times runRouterPool measures each of its three parts.
const routerRounds = 7

// keyedPayload is the message of the router scenario: every part sends the same ones.
type keyedPayload struct{ key string }

func (p *keyedPayload) RoutingKey() string { return p.key }

// runRouterPool measures routers against their floor in one process: n messages told
// from one goroutine to one actor (the floor), to a round-robin pool of 8 and to a
// consistent-hashing pool of 8 (1,024 distinct keys) through the Router, which routes
// on the sender's goroutine, and to the round-robin pool through its router actor's
// Ref (one more hop), each part timed until its actors have handled all n. The parts
// rotate their order over the rounds, each after a GC. Each actor counts what it
// handles by itself and adds it to the shared count when a flush message that follows
// the last one reaches it. It prints the round-robin pool's medians (ops_per_sec, seconds, ...), the floor's (floor_ops_per_sec), the
// consistent-hashing pool's (ch_ops_per_sec), the router actor's (ref_ops_per_sec),
// the ratios of the medians to the floor (ratio, ch_ratio, ref_ratio) and the range of
// the per-round ratios.
func runRouterPool(n int) (result, error) {
	sys, err := newSystem()
	if err != nil {
		return nil, err
	}
	defer shutdown(sys)
	msgs := make([]*keyedPayload, 1024)
	for i := range msgs {
		msgs[i] = &keyedPayload{key: "entity-" + strconv.Itoa(i)}
	}
	parts := []func() (result, error){
		func() (result, error) { return routeOnce(sys, n, msgs, nil) },
		func() (result, error) { return routeOnce(sys, n, msgs, routing.RoundRobin()) },
		func() (result, error) {
			return routeOnce(sys, n, msgs, routing.ConsistentHashing(routing.ConsistentHashingConfig{}))
		},
		func() (result, error) { return routeOnce(sys, n, msgs, viaRef{routing.RoundRobin()}) },
	}
	runs := make([][]result, len(parts))
	var rrRatios, chRatios, refRatios []float64
	for i := range routerRounds {
		round := make([]result, len(parts))
		for k := range parts {
			p := (i + k) % len(parts)
			runtime.GC()
			if round[p], err = parts[p](); err != nil {
				return nil, err
			}
			runs[p] = append(runs[p], round[p])
		}
		floor := round[0]["ops_per_sec"].(float64)
		rrRatios = append(rrRatios, round[1]["ops_per_sec"].(float64)/floor)
		chRatios = append(chRatios, round[2]["ops_per_sec"].(float64)/floor)
		refRatios = append(refRatios, round[3]["ops_per_sec"].(float64)/floor)
	}
	sort.Float64s(rrRatios)
	sort.Float64s(chRatios)
	sort.Float64s(refRatios)
	floor := medianBy(runs[0], "ops_per_sec")
	ch := medianBy(runs[2], "ops_per_sec")
	r := medianBy(runs[1], "ops_per_sec")
	fl := floor["ops_per_sec"].(float64)
	r["floor_ops_per_sec"] = fl
	r["floor_ns_per_op"] = floor["ns_per_op"]
	r["ratio"] = round(r["ops_per_sec"].(float64)/fl, 3)
	r["ratio_min"] = round(rrRatios[0], 3)
	r["ratio_max"] = round(rrRatios[len(rrRatios)-1], 3)
	r["ch_ops_per_sec"] = ch["ops_per_sec"]
	r["ch_ns_per_op"] = ch["ns_per_op"]
	r["ch_ratio"] = round(ch["ops_per_sec"].(float64)/fl, 3)
	r["ch_ratio_min"] = round(chRatios[0], 3)
	r["ch_ratio_max"] = round(chRatios[len(chRatios)-1], 3)
	ref := medianBy(runs[3], "ops_per_sec")
	r["ref_ops_per_sec"] = ref["ops_per_sec"]
	r["ref_ns_per_op"] = ref["ns_per_op"]
	r["ref_ratio"] = round(ref["ops_per_sec"].(float64)/fl, 3)
	r["ref_ratio_min"] = round(refRatios[0], 3)
	r["ref_ratio_max"] = round(refRatios[len(refRatios)-1], 3)
	r["routees"] = 8
	r["rounds"] = routerRounds
	return r, nil
}

// viaRef marks a logic whose pool routeOnce tells through the router actor's Ref.
type viaRef struct{ routing.Logic }

// routeOnce tells n messages to one new actor (logic nil) or to a new pool of 8 with
// logic (through its Router, or its Ref for a viaRef), and times until they are all
// handled.
func routeOnce(sys *actor.System, n int, msgs []*keyedPayload, logic routing.Logic) (result, error) {
	var handled atomic.Int64
	done := make(chan struct{})
	props := actor.PropsOf(func() actor.Actor { return &routeeCounter{handled: &handled, n: int64(n), done: done} })
	var tell func(m *keyedPayload) error
	var flush func() error
	var stop actor.Ref
	if logic == nil {
		ref, err := sys.Spawn(props, "")
		if err != nil {
			return nil, err
		}
		tell, stop = func(m *keyedPayload) error { return ref.Tell(m) }, ref
		flush = func() error { return ref.Tell(flushCount{}) }
	} else {
		via, ok := logic.(viaRef)
		if ok {
			logic = via.Logic
		}
		r, err := routing.NewPool(context.Background(), sys, routing.PoolConfig{Routee: props, Size: 8, Logic: logic})
		if err != nil {
			return nil, err
		}
		tell, stop = func(m *keyedPayload) error { return r.Tell(m) }, r.Ref()
		flush = func() error { return r.Tell(routing.Broadcast{Msg: flushCount{}}) }
		if ok {
			// The flush takes the messages' path, or it could overtake them.
			ref := r.Ref()
			tell = func(m *keyedPayload) error { return ref.Tell(m) }
			flush = func() error { return ref.Tell(routing.Broadcast{Msg: flushCount{}}) }
		}
	}
	defer func() { _ = sys.Stop(stop) }()
	res, err := measure(n, func() error {
		for i := range n {
			if err := tell(msgs[i&1023]); err != nil {
				return err
			}
		}
		if err := flush(); err != nil {
			return err
		}
		<-done
		return nil
	})
	if err == nil && handled.Load() != int64(n) {
		err = fmt.Errorf("router-pool: handled %d of %d", handled.Load(), n)
	}
	return res, err
}

// flushCount follows the last message to every actor of a part of router-pool.
type flushCount struct{}

// routeeCounter counts the messages it handles by itself and adds its count to the
// shared one on flushCount, closing done when that reaches n: the actors of a pool
// then do not contend for one counter on every message, which the floor's single
// actor never does.
type routeeCounter struct {
	handled *atomic.Int64
	n       int64
	done    chan struct{}
	mine    int64
}

func (c *routeeCounter) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *keyedPayload:
		c.mine++
	case flushCount:
		// Only the flush that brings the count to n closes done: one with nothing to
		// add may come after it.
		if c.mine > 0 && c.handled.Add(c.mine) == c.n {
			close(c.done)
		}
		c.mine = 0
	}
}
