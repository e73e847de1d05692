package actor_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

type tick struct{}

// quietTick does not reset the receive timeout.
type quietTick struct{}

func (quietTick) NotInfluenceReceiveTimeout() {}

// ReceiveTimeout fires when the actor is idle, is reset by ordinary messages, and is
// not reset by messages marked NotInfluenceReceiveTimeout. Virtual time.
func TestReceiveTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := testkit.NewSystem(t)
		probe := testkit.NewProbe(t, sys)
		start := time.Now()
		ref := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
			switch ctx.Message().(type) {
			case actor.Started:
				ctx.SetReceiveTimeout(time.Second)
			case actor.ReceiveTimeout:
				_ = probe.Ref().Tell(time.Since(start))
			case string:
				ctx.CancelReceiveTimeout()
			}
		}), "idle")

		// Idle: fires after 1s, and again every second while idle.
		probe.ExpectMsg(time.Second)
		probe.ExpectMsg(2 * time.Second)

		// Ordinary messages every 600ms keep it from firing.
		for range 3 {
			time.Sleep(600 * time.Millisecond)
			_ = ref.Tell(tick{})
		}
		synctest.Wait()
		probe.ExpectNoMsg(900 * time.Millisecond)
		probe.ExpectMsg(2*time.Second + 1800*time.Millisecond + time.Second)

		// Quiet ticks do not: it fires 1s after the last ordinary message.
		mark := time.Since(start)
		for range 3 {
			time.Sleep(300 * time.Millisecond)
			_ = ref.Tell(quietTick{})
		}
		probe.ExpectMsg(mark + time.Second)

		_ = ref.Tell("cancel")
		probe.ExpectNoMsg(5 * time.Second)
	})
}

func TestTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := testkit.NewSystem(t)
		probe := testkit.NewProbe(t, sys)
		start := time.Now()
		ref := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
			switch m := ctx.Message().(type) {
			case actor.Started:
				ctx.StartSingleTimer("once", "once", time.Second)
				ctx.StartPeriodicTimer("every", "every", 3*time.Second)
				ctx.StartSingleTimer("cancelled", "cancelled", 2*time.Second)
				ctx.StartSingleTimer("replaced", "old", 2*time.Second)
				ctx.StartSingleTimer("replaced", "new", 4*time.Second)
				ctx.CancelTimer("cancelled")
				if ctx.IsTimerActive("cancelled") || !ctx.IsTimerActive("once") {
					panic("IsTimerActive is wrong")
				}
			case string:
				_ = probe.Ref().Tell(m + "@" + time.Since(start).String())
				if m == "every" && time.Since(start) >= 9*time.Second {
					ctx.CancelTimer("every")
				}
			}
		}), "timers")
		probe.ExpectMsg("once@1s", time.Minute)
		probe.ExpectMsg("every@3s", time.Minute)
		probe.ExpectMsg("new@4s", time.Minute)
		probe.ExpectMsg("every@6s", time.Minute)
		probe.ExpectMsg("every@9s", time.Minute)
		probe.ExpectNoMsg(10 * time.Second)
		_ = ref
	})
}

// A timer whose fire is already queued when it is cancelled or replaced never
// delivers its message.
func TestCancelledTimerAlreadyQueuedIsNotDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := testkit.NewSystem(t)
		probe := testkit.NewProbe(t, sys)
		gate := make(chan struct{})
		ref := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
			switch m := ctx.Message().(type) {
			case actor.Started:
				ctx.StartSingleTimer("cancel-me", "cancelled", time.Second)
				ctx.StartSingleTimer("replace-me", "old", time.Second)
			case string:
				if m == "block" {
					<-gate // both timers fire meanwhile: their messages are queued
					ctx.CancelTimer("cancel-me")
					ctx.StartSingleTimer("replace-me", "new", time.Second)
					return
				}
				_ = probe.Ref().Tell(m)
			}
		}), "a")
		_ = ref.Tell("block")
		time.Sleep(2 * time.Second)
		synctest.Wait()
		close(gate)
		probe.ExpectMsg("new")
		probe.ExpectNoMsg(5 * time.Second)
	})
}

// Timers die with their actor.
func TestTimersDieWithActor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := testkit.NewSystem(t)
		probe := testkit.NewProbe(t, sys)
		actor.Subscribe[actor.DeadLetter](sys.EventStream(), probe.Ref())
		ref := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
			if _, ok := ctx.Message().(actor.Started); ok {
				ctx.StartPeriodicTimer("p", tick{}, time.Second)
			}
		}), "a")
		probe.Watch(ref)
		sys.Stop(ref)
		probe.ExpectTerminated(ref)
		probe.ExpectNoMsg(10 * time.Second)
	})
}

// Ask timeouts work in virtual time, and a system shut down with asks pending leaves
// nothing running.
func TestAskTimeoutVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := testkit.NewSystem(t)
		silent := spawn(t, sys, actor.PropsFunc(func(actor.Context) {}), "silent")
		start := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		_, err := actor.Ask[int](ctx, silent, "anyone?")
		took := time.Since(start)
		if !errors.Is(err, actor.ErrTimeout) || took < 3*time.Second || took > 3*time.Second+50*time.Millisecond {
			t.Fatalf("Ask failed with %v after %v; want a timeout after 3s", err, took)
		}
		// Without a deadline, the system's AskTimeout (10s by default) bounds an Ask.
		start = time.Now()
		_, err = actor.Ask[int](context.Background(), silent, "anyone?")
		if took := time.Since(start); !errors.Is(err, actor.ErrTimeout) || took < 10*time.Second || took > 10*time.Second+50*time.Millisecond {
			t.Fatalf("Ask without a deadline failed with %v after %v; want a timeout after 10s", err, took)
		}
		_ = silent.Ask(context.Background(), "pending at shutdown")
	})
}
