package actor_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

func TestLifecycleMessagesInOrder(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	ref := spawn(t, sys, recorderProps("a", probe, nil), "a")
	probe.ExpectMsg(event{"a", actor.Started{}})
	_ = ref.Tell("hello")
	probe.ExpectMsg(event{"a", "hello"})
	sys.Stop(ref)
	probe.ExpectMsg(event{"a", actor.Stopping{}})
	probe.ExpectMsg(event{"a", actor.Stopped{}})
	probe.ExpectNoMsg(50 * time.Millisecond)
}

func TestPoisonPillAfterEarlierMessages(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	ref := spawn(t, sys, recorderProps("a", probe, nil), "a")
	probe.ExpectMsg(event{"a", actor.Started{}})
	for i := range 100 {
		_ = ref.Tell(i)
	}
	_ = ref.Tell(actor.PoisonPill{})
	_ = ref.Tell("after")
	for i := range 100 {
		probe.ExpectMsg(event{"a", i})
	}
	probe.ExpectMsg(event{"a", actor.Stopping{}})
	probe.ExpectMsg(event{"a", actor.Stopped{}})
	probe.ExpectNoMsg(50 * time.Millisecond)
}

// Stopping a parent stops its children before the parent's Stopped, and each actor
// sees Stopped exactly once.
func TestParentStopsChildrenFirst(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	parent := spawn(t, sys, recorderProps("parent", probe, func(ctx actor.Context) {
		if _, ok := ctx.Message().(actor.Started); ok {
			for _, name := range []string{"c1", "c2"} {
				if _, err := ctx.Spawn(recorderProps(name, probe, func(ctx actor.Context) {
					if _, ok := ctx.Message().(actor.Started); ok {
						_, _ = ctx.Spawn(recorderProps(ctx.Self().Path()+"/g", probe, nil), "g")
					}
				}), name); err != nil {
					panic(err)
				}
			}
		}
	}), "parent")
	probe.ReceiveN(5) // Started of parent, c1, c2 and two grandchildren
	sys.Stop(parent)

	var order []string
	stopped := map[string]int{}
	for len(stopped) < 5 {
		ev := testkit.ExpectMsgType[event](probe)
		if _, ok := ev.Msg.(actor.Stopped); ok {
			stopped[ev.Name]++
			order = append(order, ev.Name)
		}
	}
	if order[len(order)-1] != "parent" {
		t.Fatalf("parent's Stopped is not last: %v", order)
	}
	pos := map[string]int{}
	for i, n := range order {
		pos[n] = i
	}
	for _, c := range []string{"c1", "c2"} {
		if pos["/user/parent/"+c+"/g"] > pos[c] {
			t.Fatalf("%s stopped before its child: %v", c, order)
		}
	}
	for n, k := range stopped {
		if k != 1 {
			t.Fatalf("%s got Stopped %d times", n, k)
		}
	}
	probe.ExpectNoMsg(50 * time.Millisecond)
}

func TestPanicInReceiveDoesNotCrash(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	ref := spawn(t, sys, recorderProps("a", probe, func(ctx actor.Context) {
		if ctx.Message() == "panic" {
			panic("deliberate")
		}
	}), "a")
	probe.ExpectMsg(event{"a", actor.Started{}})
	_ = ref.Tell("panic")
	probe.ExpectMsg(event{"a", "panic"})
	probe.ExpectMsg(event{"a", actor.Restarting{}})
	probe.ExpectMsg(event{"a", actor.Started{}})
	_ = ref.Tell("still alive")
	probe.ExpectMsg(event{"a", "still alive"})
}

func TestStopInsideStartedAndStartFailure(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	ref := spawn(t, sys, recorderProps("a", probe, func(ctx actor.Context) {
		if _, ok := ctx.Message().(actor.Started); ok {
			panic("cannot start")
		}
	}), "a")
	probe.Watch(ref)
	probe.ExpectMsg(event{"a", actor.Started{}})
	probe.ExpectMsg(event{"a", actor.Stopping{}})
	probe.ExpectMsg(event{"a", actor.Stopped{}})
	probe.ExpectTerminated(ref)
}

func TestKillFailsIntoSupervision(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	ref := spawn(t, sys, recorderProps("a", probe, nil), "a")
	probe.ExpectMsg(event{"a", actor.Started{}})
	_ = ref.Tell(actor.Kill{})
	probe.ExpectMsg(event{"a", actor.Restarting{}})
	probe.ExpectMsg(event{"a", actor.Started{}})
}

func TestSystemMessagesBeforeUserMessages(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	gate := make(chan struct{})
	ref := spawn(t, sys, recorderProps("a", probe, func(ctx actor.Context) {
		if ctx.Message() == "block" {
			<-gate
		}
	}), "a")
	probe.ExpectMsg(event{"a", actor.Started{}})
	_ = ref.Tell("block")
	probe.ExpectMsg(event{"a", "block"})
	for i := range 10 {
		_ = ref.Tell(i)
	}
	sys.Stop(ref) // a system message, queued behind ten user messages
	close(gate)
	probe.ExpectMsg(event{"a", actor.Stopping{}})
	probe.ExpectMsg(event{"a", actor.Stopped{}})
}

func TestSpawnWhileStoppingFails(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	ref := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
		switch ctx.Message().(type) {
		case actor.Stopping, actor.Stopped:
			_, err := ctx.Spawn(actor.PropsFunc(func(actor.Context) {}), "late")
			_ = probe.Ref().Tell(errors.Is(err, actor.ErrStopping))
		}
	}), "a")
	sys.Stop(ref)
	probe.ExpectMsg(true)
	probe.ExpectMsg(true)
}

// An actor whose producer panics or returns nil, at start or at a restart, stops
// (its watchers see Terminated) and the system goes on.
func TestProducerFailureStopsActor(t *testing.T) {
	cases := map[string]func(calls int, probe *testkit.Probe) actor.Actor{
		"panic at start": func(int, *testkit.Probe) actor.Actor { panic("no instance") },
		"nil at start":   func(int, *testkit.Probe) actor.Actor { return nil },
		"panic at restart": func(calls int, probe *testkit.Probe) actor.Actor {
			if calls > 1 {
				panic("no second instance")
			}
			return &recorder{name: "a", probe: probe.Ref(), hook: panicOnString}
		},
		"nil at restart": func(calls int, probe *testkit.Probe) actor.Actor {
			if calls > 1 {
				return nil
			}
			return &recorder{name: "a", probe: probe.Ref(), hook: panicOnString}
		},
	}
	for name, produce := range cases {
		t.Run(name, func(t *testing.T) {
			sys := testkit.NewSystem(t)
			probe := testkit.NewProbe(t, sys)
			calls := 0
			ref := spawn(t, sys, actor.PropsOf(func() actor.Actor {
				calls++
				return produce(calls, probe)
			}), "a")
			probe.Watch(ref)
			if strings.HasSuffix(name, "restart") {
				probe.ExpectMsg(event{"a", actor.Started{}})
				_ = ref.Tell("fail")
				probe.ExpectMsg(event{"a", "fail"})
				probe.ExpectMsg(event{"a", actor.Restarting{}})
			}
			probe.ExpectTerminated(ref)
			// The system still spawns and runs actors.
			other := spawn(t, sys, recorderProps("b", probe, nil), "b")
			probe.ExpectMsg(event{"b", actor.Started{}})
			_ = other.Tell("hello")
			probe.ExpectMsg(event{"b", "hello"})
		})
	}
}

// panicOnString is a recorder hook that fails on every string message.
func panicOnString(ctx actor.Context) {
	if s, ok := ctx.Message().(string); ok {
		panic(s)
	}
}

// Messages and stops that race an actor's start are neither lost nor handled before
// Started: a drain that has just started an actor goes idle only if nothing waits.
func TestMessagesRacingStartAreHandled(t *testing.T) {
	sys := testkit.NewSystem(t)
	const actors = 2000 // even ones get a message, odd ones a stop
	type hello struct{ i int }
	handled := make(chan int, actors)
	stopped := make(chan int, actors)
	early := make(chan int, actors)
	for i := range actors {
		startedSeen := false
		ref := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
			switch ctx.Message().(type) {
			case actor.Started:
				startedSeen = true
			case hello:
				if !startedSeen {
					early <- i
				}
				handled <- i
			case actor.Stopped:
				if !startedSeen {
					early <- i
				}
				stopped <- i
			}
		}), "")
		if i%2 == 0 {
			_ = ref.Tell(hello{i})
		} else {
			_ = sys.Stop(ref)
		}
	}
	for n := 0; n < actors; n++ {
		select {
		case <-handled:
		case <-stopped:
		case i := <-early:
			t.Fatalf("actor %d handled a message before Started", i)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d actors handled their message or stopped", n, actors)
		}
	}
}
