package actor_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/supervision"
	"github.com/troupe-go/troupe/testkit"
)

// counting is an actor whose state shows whether it was restarted.
type counting struct {
	n     int
	probe actor.Ref
}

func (c *counting) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case actor.Started:
		_ = c.probe.Tell("started")
	case actor.Restarting:
		_ = c.probe.Tell("restarting")
	case actor.Stopped:
		_ = c.probe.Tell("stopped")
	case string:
		switch m {
		case "inc":
			c.n++
		case "get":
			_ = c.probe.Tell(c.n)
		}
	case error:
		panic(m)
	}
}

// supervisorWith spawns a parent with strategy st and one child of type counting.
func supervisorWith(t *testing.T, sys *actor.System, probe *testkit.Probe, st supervision.Strategy) actor.Ref {
	t.Helper()
	child := actor.PropsOf(func() actor.Actor { return &counting{probe: probe.Ref()} })
	parent := &actor.Props{
		Strategy: st,
		Producer: func() actor.Actor {
			return actor.ReceiveFunc(func(ctx actor.Context) {
				switch m := ctx.Message().(type) {
				case actor.Started:
					if _, err := ctx.Spawn(child, "child"); err != nil {
						panic(err)
					}
				case string:
					if k, ok := ctx.Child("child"); ok {
						_ = ctx.Forward(k)
					}
				case error:
					if k, ok := ctx.Child("child"); ok {
						_ = k.Tell(m)
					}
				}
			})
		},
	}
	ref := spawn(t, sys, parent, "parent")
	probe.ExpectMsg("started")
	return ref
}

var errResume = errors.New("resume me")
var errStop = errors.New("stop me")
var errEscalate = errors.New("escalate me")

func decider(err error) supervision.Directive {
	switch {
	case errors.Is(err, errResume):
		return supervision.Resume
	case errors.Is(err, errStop):
		return supervision.Stop
	case errors.Is(err, errEscalate):
		return supervision.Escalate
	}
	return supervision.Restart
}

func TestResumeKeepsState(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	p := supervisorWith(t, sys, probe, supervision.OneForOne{Decider: decider})
	_ = p.Tell("inc")
	_ = p.Tell(errResume)
	_ = p.Tell("get")
	probe.ExpectMsg(1)
}

func TestRestartResetsStateKeepsMailbox(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	p := supervisorWith(t, sys, probe, supervision.OneForOne{Decider: decider})
	_ = p.Tell("inc")
	_ = p.Tell(boom{})
	_ = p.Tell("get") // queued while the child restarts: not lost
	probe.ExpectMsg("restarting")
	probe.ExpectMsg("started")
	probe.ExpectMsg(0)
}

func TestStopDirective(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	p := supervisorWith(t, sys, probe, supervision.OneForOne{Decider: decider})
	_ = p.Tell(errStop)
	probe.ExpectMsg("stopped")
	_ = p.Tell("get")
	probe.ExpectNoMsg(50 * time.Millisecond)
}

func TestEscalateRestartsParentAndStopsChildren(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	supervisorWith(t, sys, probe, supervision.OneForOne{Decider: decider})
	p, _ := sys.Resolve("/user/parent")
	_ = p.Tell(errEscalate)
	// The parent restarts (default strategy of /user): its child is stopped, and the
	// new parent instance spawns a new child.
	probe.ExpectMsg("stopped")
	probe.ExpectMsg("started")
}

// A child that fails more than its retries within the window is stopped.
func TestRetriesWithinWindowExceededStops(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	p := supervisorWith(t, sys, probe, supervision.OneForOne{MaxRetries: 2, Within: time.Minute})
	for range 2 {
		_ = p.Tell(boom{})
		probe.ExpectMsg("restarting")
		probe.ExpectMsg("started")
	}
	_ = p.Tell(boom{})
	probe.ExpectMsg("stopped")
	probe.ExpectNoMsg(50 * time.Millisecond)
}

func TestAllForOneRestartsSiblings(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	parent := &actor.Props{
		Strategy: supervision.AllForOne{},
		Producer: func() actor.Actor {
			return actor.ReceiveFunc(func(ctx actor.Context) {
				switch m := ctx.Message().(type) {
				case actor.Started:
					for _, n := range []string{"x", "y"} {
						_, _ = ctx.Spawn(recorderProps(n, probe, func(ctx actor.Context) {
							if ctx.Message() == "fail" {
								panic("fail")
							}
						}), n)
					}
				case string:
					k, _ := ctx.Child(m)
					_ = k.Tell("fail")
				}
			})
		},
	}
	p := spawn(t, sys, parent, "p")
	probe.ReceiveN(2)
	_ = p.Tell("x")
	got := map[event]int{}
	for range 5 { // x: "fail", Restarting, Started; y: Restarting, Started
		got[testkit.ExpectMsgType[event](probe)]++
	}
	for _, n := range []string{"x", "y"} {
		if got[event{n, actor.Restarting{}}] != 1 || got[event{n, actor.Started{}}] != 1 {
			t.Fatalf("%s was not restarted: %v", n, got)
		}
	}
}

func TestPanickingDeciderStopsChild(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	p := supervisorWith(t, sys, probe, supervision.OneForOne{Decider: func(error) supervision.Directive {
		panic("bad decider")
	}})
	_ = p.Tell(boom{})
	probe.ExpectMsg("stopped")
}

// A restart stops the children before the new instance gets Started.
func TestRestartStopsChildrenBeforeNewInstance(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	parent := spawn(t, sys, recorderProps("parent", probe, func(ctx actor.Context) {
		switch ctx.Message().(type) {
		case actor.Started:
			_, _ = ctx.Spawn(recorderProps("child", probe, nil), "child")
		case string:
			panic("parent fails")
		}
	}), "parent")
	probe.ReceiveN(2) // Started of parent and child
	_ = parent.Tell("fail")
	var order []string
	for len(order) < 4 {
		ev := testkit.ExpectMsgType[event](probe)
		switch ev.Msg.(type) {
		case actor.Restarting, actor.Stopped, actor.Started:
			order = append(order, fmt.Sprintf("%s:%T", ev.Name, ev.Msg))
		}
	}
	want := []string{"parent:actor.Restarting", "child:actor.Stopped", "parent:actor.Started", "child:actor.Started"}
	pos := map[string]int{}
	for i, o := range order {
		if _, seen := pos[o]; !seen {
			pos[o] = i
		}
	}
	for i := 1; i < len(want); i++ {
		if pos[want[i-1]] > pos[want[i]] {
			t.Fatalf("order %v; want %v as a subsequence", order, want)
		}
	}
}
