package actor_test

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

// A long chain of actors, each asking the next from its Receive and blocking for the
// answer, used to run every hop on the first asker's stack until the process died of
// a stack overflow. Now it fails with ErrTimeout when the chain cannot finish in time,
// and the process lives. The stack limit is lowered so that the old behaviour would
// crash at this depth.
func TestDeepBlockingAskChainFailsCleanly(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(8 << 20))
	sys := testkit.NewSystem(t)
	const depth = 100_000
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()

	next := actor.Ref{}
	var err error
	var started sync.WaitGroup
	started.Add(depth)
	for i := range depth {
		following := next
		next, err = sys.Spawn(actor.PropsFunc(func(c actor.Context) {
			switch c.Message() {
			case actor.Started{}:
				started.Done()
				return
			case "ask":
			default:
				return
			}
			if following.IsZero() {
				_ = c.Respond("end")
				return
			}
			v, err := actor.Ask[string](ctx, following, "ask")
			if err != nil {
				_ = c.Respond(actor.Failure{Err: err})
				return
			}
			_ = c.Respond(v)
		}), "")
		if err != nil {
			t.Fatalf("spawn %d: %v", i, err)
		}
	}
	started.Wait() // every actor idle: each hop finds its recipient idle
	v, err := actor.Ask[string](ctx, next, "ask")
	if err == nil && v != "end" {
		t.Fatalf("chain answered %q", v)
	}
	if err != nil && !errors.Is(err, actor.ErrTimeout) {
		t.Fatalf("chain failed with %v, want a timeout", err)
	}
}
