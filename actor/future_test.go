package actor_test

import (
	"sync"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

// A future's Done channel works whether it is asked for before or after the reply:
// the channel is made only on demand, and a completed future returns a closed one.
func TestFutureDoneBeforeAndAfterReply(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	f := probe.Ref().Ask(t.Context(), "question")
	probe.ExpectMsg("question")
	done := f.Done()
	select {
	case <-done:
		t.Fatal("Done closed before the reply")
	default:
	}
	probe.Reply("answer")
	<-done
	<-f.Done()
	if res, err := f.Result(t.Context()); err != nil || res != "answer" {
		t.Fatalf("Result = %v, %v", res, err)
	}
}

// Goroutines that wait, pipe and watch while the reply arrives all see it exactly once.
func TestFutureRegistrationRacesCompletion(t *testing.T) {
	sys := testkit.NewSystem(t)
	for range 50 {
		target := testkit.NewProbe(t, sys)
		piped := testkit.NewProbe(t, sys)
		f := target.Ref().Ask(t.Context(), "q")
		target.ExpectMsg("q")
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				if res, err := f.Result(t.Context()); err != nil || res != "a" {
					t.Errorf("Result = %v, %v", res, err)
				}
			})
		}
		wg.Go(func() { f.PipeTo(piped.Ref()) })
		wg.Go(func() { <-f.Done() })
		target.Reply("a")
		wg.Wait()
		piped.ExpectMsg("a")
		piped.ExpectNoMsg(0)
	}
}

// Ask of an idle local actor completes on the caller's goroutine with one allocation,
// the future; a Done channel is made only when the caller has to wait.
func TestAskOfIdleActorAllocatesOnlyTheFuture(t *testing.T) {
	sys := testkit.NewSystem(t)
	echo := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*int); ok {
			_ = ctx.Respond(m)
		}
	}), "echo")
	msg := new(int)
	ctx := t.Context()
	if _, err := actor.Ask[*int](ctx, echo, msg); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := actor.Ask[*int](ctx, echo, msg); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Fatalf("Ask of an idle actor: %v allocations, want 1", allocs)
	}
}
