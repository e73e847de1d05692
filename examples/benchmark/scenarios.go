package main

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupe-go/troupe/actor"
)

// payload is the message of every scenario: a pointer, as in real code.
type payload struct{ _ [100]byte }

func newSystem() (*actor.System, error) { return actor.New("bench", baseConfig()) }

func shutdown(sys *actor.System) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = sys.Shutdown(ctx)
}

// runChan is the baseline: a buffered channel between two goroutines.
func runChan(n int) (result, error) {
	ch := make(chan *payload, 1024)
	msg := &payload{}
	done := make(chan struct{})
	go func() {
		for range n {
			<-ch
		}
		close(done)
	}()
	return measure(n, func() error {
		for range n {
			ch <- msg
		}
		<-done
		return nil
	})
}

// runChanRoundTrip is the baseline for ask: request and reply over unbuffered channels.
func runChanRoundTrip(n int) (result, error) {
	req, rep := make(chan *payload), make(chan *payload)
	go func() {
		for m := range req {
			rep <- m
		}
	}()
	defer close(req)
	msg := &payload{}
	return measure(n, func() error {
		for range n {
			req <- msg
			<-rep
		}
		return nil
	})
}

// sink counts messages and closes done at target.
type sink struct {
	count  int
	target int
	done   chan struct{}
}

func (s *sink) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(*payload); ok {
		s.count++
		if s.count == s.target {
			close(s.done)
		}
	}
}

func spawnSink(sys *actor.System, target int) (actor.Ref, chan struct{}, error) {
	done := make(chan struct{})
	ref, err := sys.Spawn(actor.PropsOf(func() actor.Actor {
		return &sink{target: target, done: done}
	}), "")
	return ref, done, err
}

func runTell(n int) (result, error) {
	sys, err := newSystem()
	if err != nil {
		return nil, err
	}
	defer shutdown(sys)
	return tellOnce(sys, n)
}

// tellOnce sends n messages from this goroutine to a new sink in sys and times until
// the sink has counted them all.
func tellOnce(sys *actor.System, n int) (result, error) {
	ref, done, err := spawnSink(sys, n)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sys.Stop(ref) }()
	msg := &payload{}
	return measure(n, func() error {
		for range n {
			if err := ref.Tell(msg); err != nil {
				return err
			}
		}
		<-done
		return nil
	})
}

// tellVsChanRounds is how many times runTellVsChan measures each of the two.
const tellVsChanRounds = 7

// runTellVsChan measures tell against its floor, the buffered channel of runChan, in
// one process: the two alternate (the channel first in even rounds, tell first in odd
// ones), each after a GC, so that both see the same machine. It prints the medians
// (ops_per_sec and seconds are tell's, floor_ops_per_sec the channel's), the ratio of
// the medians, and the range of the per-round ratios.
func runTellVsChan(n int) (result, error) {
	sys, err := newSystem()
	if err != nil {
		return nil, err
	}
	defer shutdown(sys)
	var tells, chans []result
	var ratios []float64
	for i := range tellVsChanRounds {
		var t, c result
		for k := range 2 {
			runtime.GC()
			if (i+k)%2 == 0 {
				c, err = runChan(n)
			} else {
				t, err = tellOnce(sys, n)
			}
			if err != nil {
				return nil, err
			}
		}
		tells, chans = append(tells, t), append(chans, c)
		ratios = append(ratios, t["ops_per_sec"].(float64)/c["ops_per_sec"].(float64))
	}
	r := medianBy(tells, "ops_per_sec")
	floor := medianBy(chans, "ops_per_sec")["ops_per_sec"].(float64)
	sort.Float64s(ratios)
	r["floor_ops_per_sec"] = floor
	r["floor_ns_per_op"] = medianBy(chans, "ops_per_sec")["ns_per_op"]
	r["ratio"] = round(r["ops_per_sec"].(float64)/floor, 3)
	r["ratio_min"] = round(ratios[0], 3)
	r["ratio_max"] = round(ratios[len(ratios)-1], 3)
	r["rounds"] = tellVsChanRounds
	return r, nil
}

// medianBy returns the result whose key is the median (the upper one for an even
// count).
func medianBy(rs []result, key string) result {
	s := append([]result(nil), rs...)
	sort.Slice(s, func(i, j int) bool { return s[i][key].(float64) < s[j][key].(float64) })
	return s[len(s)/2]
}

func runTellParallel(n int) (result, error) {
	sys, err := newSystem()
	if err != nil {
		return nil, err
	}
	defer shutdown(sys)
	pairs := runtime.NumCPU()
	per := n / pairs
	refs := make([]actor.Ref, pairs)
	dones := make([]chan struct{}, pairs)
	for i := range pairs {
		if refs[i], dones[i], err = spawnSink(sys, per); err != nil {
			return nil, err
		}
	}
	msg := &payload{}
	r, err := measure(per*pairs, func() error {
		var wg sync.WaitGroup
		var firstErr atomic.Value
		for i := range pairs {
			wg.Go(func() {
				for range per {
					if err := refs[i].Tell(msg); err != nil {
						firstErr.CompareAndSwap(nil, err)
						return
					}
				}
				<-dones[i]
			})
		}
		wg.Wait()
		if err, ok := firstErr.Load().(error); ok {
			return err
		}
		return nil
	})
	if r != nil {
		r["pairs"] = pairs
	}
	return r, err
}

func runAsk(n int) (result, error) {
	sys, err := newSystem()
	if err != nil {
		return nil, err
	}
	defer shutdown(sys)
	echo, err := sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*payload); ok {
			ctx.Respond(m)
		}
	}), "echo")
	if err != nil {
		return nil, err
	}
	msg := &payload{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	return measure(n, func() error {
		for range n {
			if _, err := actor.Ask[*payload](ctx, echo, msg); err != nil {
				return err
			}
		}
		return nil
	})
}

// idle counts Started and otherwise does nothing.
type idle struct{ started *sync.WaitGroup }

func (a *idle) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(actor.Started); ok {
		a.started.Done()
	}
}

func runSpawn(n int) (result, error) { return spawnIdle(n, true) }

// runSpawnWarm is spawn in a process whose heap has held n actors once already: it
// spawns n actors in a first system, shuts that down and collects, then measures n
// spawns in a second system (without the stop that spawn times). The first round's
// memory is reused, so the figure leaves out what a new process pays the operating
// system for fresh pages, which on a virtual machine can be most of spawn's time.
func runSpawnWarm(n int) (result, error) {
	if _, err := spawnIdle(n, false); err != nil {
		return nil, err
	}
	runtime.GC()
	return spawnIdle(n, false)
}

// spawnIdle starts a system, spawns n idle actors and times until each has handled
// Started, and measures their heap; with stop, it then times watching and stopping
// them all. It shuts the system down before it returns.
func spawnIdle(n int, stop bool) (result, error) {
	sys, err := newSystem()
	if err != nil {
		return nil, err
	}
	defer shutdown(sys)
	refs := make([]actor.Ref, n)
	var started sync.WaitGroup
	started.Add(n)
	props := actor.PropsOf(func() actor.Actor { return &idle{started: &started} })

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, err := measure(n, func() error {
		for i := range n {
			ref, err := sys.Spawn(props, "")
			if err != nil {
				return fmt.Errorf("spawn %d: %w", i, err)
			}
			refs[i] = ref
		}
		started.Wait()
		return nil
	})
	if err != nil {
		return nil, err
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	r["bytes_per_actor"] = round(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(n), 1)
	r["goroutines_idle"] = runtime.NumGoroutine()
	if !stop {
		return r, nil
	}

	stopStart := time.Now()
	var stopped sync.WaitGroup
	stopped.Add(n)
	watcher, err := sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case actor.Ref:
			ctx.Watch(m)
			sys.Stop(m)
		case actor.Terminated:
			stopped.Done()
		}
	}), "watcher")
	if err != nil {
		return nil, err
	}
	for _, ref := range refs {
		_ = watcher.Tell(ref)
	}
	stopped.Wait()
	r["stop_seconds"] = round(time.Since(stopStart).Seconds(), 6)
	runtime.KeepAlive(refs)
	return r, nil
}

// floorCell and floorInstance have the sizes of an idle actor's two allocations: its
// 128-byte cell and a small user instance with one pointer.
type floorCell struct{ words [16]uintptr }
type floorInstance struct {
	cell *floorCell
	n    int
}

// runAllocFloor is spawn-1m's floor: the same two allocations per actor, kept alive in
// a slice as spawn-1m keeps its refs, with no actor system. Run in a new process, as
// spawn-1m is, it measures what fresh memory costs on the machine (page faults and
// zeroing), which no runtime can spawn faster than.
func runAllocFloor(n int) (result, error) {
	cells := make([]*floorCell, n)
	instances := make([]*floorInstance, n)
	r, err := measure(n, func() error {
		for i := range n {
			c := &floorCell{}
			c.words[0] = uintptr(i)
			cells[i] = c
			instances[i] = &floorInstance{cell: c, n: i}
		}
		return nil
	})
	runtime.KeepAlive(cells)
	runtime.KeepAlive(instances)
	return r, err
}
