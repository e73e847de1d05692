package actor_test

import (
	"errors"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

// A gate stashes messages until "open", then handles them in order.
func TestStashAndUnstashAllKeepOrder(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	var open actor.Behavior = func(ctx actor.Context) {
		if n, ok := ctx.Message().(int); ok {
			_ = probe.Ref().Tell(n)
		}
	}
	gate := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
		switch ctx.Message().(type) {
		case int:
			if err := ctx.Stash(); err != nil {
				panic(err)
			}
		case string:
			ctx.Become(open)
			ctx.UnstashAll()
		}
	}), "gate")
	for i := range 5 {
		_ = gate.Tell(i)
	}
	_ = gate.Tell("open")
	_ = gate.Tell(5)
	for i := range 6 {
		probe.ExpectMsg(i)
	}
}

func TestStashIsBounded(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	p := &actor.Props{StashCapacity: 2, Producer: func() actor.Actor {
		return actor.ReceiveFunc(func(ctx actor.Context) {
			if _, ok := ctx.Message().(int); ok {
				_ = probe.Ref().Tell(stashResult{ctx.Stash()})
			}
		})
	}}
	ref := spawn(t, sys, p, "bounded")
	for i := range 3 {
		_ = ref.Tell(i)
	}
	probe.ExpectMsg(stashResult{})
	probe.ExpectMsg(stashResult{})
	if r := testkit.ExpectMsgType[stashResult](probe); !errors.Is(r.err, actor.ErrStashFull) {
		t.Fatalf("third stash: %v", r.err)
	}
}

func TestBecomeStackedAndUnbecome(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	say := func(word string) actor.Behavior {
		return func(ctx actor.Context) {
			switch ctx.Message() {
			case "who":
				_ = probe.Ref().Tell(word)
			case "pop":
				ctx.Unbecome()
			}
		}
	}
	ref := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
		switch ctx.Message() {
		case "who":
			_ = probe.Ref().Tell("base")
		case "push":
			ctx.BecomeStacked(say("one"))
			ctx.BecomeStacked(say("two"))
		}
	}), "moody")
	for _, m := range []string{"who", "push", "who", "pop", "who", "pop", "who"} {
		_ = ref.Tell(m)
	}
	probe.ExpectMsg("base")
	probe.ExpectMsg("two")
	probe.ExpectMsg("one")
	probe.ExpectMsg("base")
}

func TestRestartUnstashesAndResetsBehavior(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	ref := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case int:
			_ = probe.Ref().Tell(m)
		case string:
			switch m {
			case "stash-next":
				ctx.BecomeStacked(func(ctx actor.Context) {
					if ctx.Message() == "fail" {
						panic("fail")
					}
					_ = ctx.Stash()
				})
			}
		}
	}), "a")
	_ = ref.Tell("stash-next")
	_ = ref.Tell(1)
	_ = ref.Tell(2)
	_ = ref.Tell("fail")
	probe.ExpectMsg(1)
	probe.ExpectMsg(2)
}

type stashResult struct{ err error }
