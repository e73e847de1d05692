package actor_test

import (
	"runtime"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

// Actors that block in Receive hold their workers; the dispatcher adds workers so
// that other actors still run.
func TestBlockedActorsDoNotStarveOthers(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	gate := make(chan struct{})
	defer close(gate)
	blockers := 2*runtime.GOMAXPROCS(0) + 1
	for range blockers {
		ref := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
			if ctx.Message() == "block" {
				_ = probe.Ref().Tell("blocked")
				<-gate
			}
		}), "")
		_ = ref.Tell("block")
	}
	for range blockers {
		probe.ExpectMsg("blocked")
	}
	echo := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
		if s, ok := ctx.Message().(string); ok {
			_ = probe.Ref().Tell("echo:" + s)
		}
	}), "echo")
	for _, s := range []string{"a", "b", "c"} {
		_ = echo.Tell(s)
		probe.ExpectMsg("echo:" + s)
	}
}

// Many actors exchanging messages concurrently lose nothing.
func TestManyActorsManyMessages(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	const actors, per = 200, 500
	total := spawn(t, sys, actor.PropsOf(func() actor.Actor {
		n := 0
		return actor.ReceiveFunc(func(ctx actor.Context) {
			if _, ok := ctx.Message().(int); ok {
				n++
				if n == actors*per {
					_ = probe.Ref().Tell(n)
				}
			}
		})
	}), "total")
	relay := actor.PropsFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(int); ok {
			_ = total.Tell(m)
		}
	})
	refs := make([]actor.Ref, actors)
	for i := range refs {
		refs[i] = spawn(t, sys, relay, "")
	}
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := g; i < actors; i += 4 {
				for j := range per {
					_ = refs[i].Tell(j)
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
	probe.ExpectMsg(actors * per)
}

// A burst of spawns larger than the run queue, while every worker is busy, waits in the
// dispatcher's overflow list and still runs, in full; stopping the burst takes the
// same path.
func TestSpawnBurstLargerThanTheRunQueue(t *testing.T) {
	sys := testkit.NewSystem(t)
	gate := make(chan struct{})
	blocked := make(chan struct{})
	for range runtime.GOMAXPROCS(0) {
		ref := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
			if ctx.Message() == "block" {
				blocked <- struct{}{}
				<-gate
			}
		}), "")
		_ = ref.Tell("block")
		<-blocked
	}
	const n = 20_000 // more than the run queue holds (1<<14)
	started := make(chan struct{}, n)
	stopped := make(chan struct{}, n)
	props := actor.PropsFunc(func(ctx actor.Context) {
		switch ctx.Message().(type) {
		case actor.Started:
			started <- struct{}{}
		case actor.Stopped:
			stopped <- struct{}{}
		}
	})
	refs := make([]actor.Ref, n)
	for i := range refs {
		refs[i] = spawn(t, sys, props, "")
	}
	close(gate)
	for range n {
		<-started
	}
	for _, ref := range refs {
		if err := sys.Stop(ref); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		<-stopped
	}
}
