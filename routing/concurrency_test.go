package routing_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/routing"
	"github.com/troupe-go/troupe/testkit"
)

// TestRoutingWhileRouteesChange sends from several goroutines while the pool grows and
// shrinks: every message is either handled by a routee or a counted dead letter (sent
// to a routee that was stopping), never lost without a trace, and the race detector
// sees the snapshot swaps.
func TestRoutingWhileRouteesChange(t *testing.T) {
	sys := testkit.NewSystem(t)
	var handled atomic.Int64
	r := newPool(t, sys, routing.PoolConfig{
		Routee: actor.PropsFunc(func(ctx actor.Context) {
			if _, ok := ctx.Message().(int); ok {
				handled.Add(1)
			}
		}),
		Size: 4,
	})
	before := sys.DeadLetterCount()
	const senders, each = 4, 5000
	var sent, refused atomic.Int64
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range each {
				var err error
				if s == 0 && i%2 == 0 {
					err = r.Ref().Tell(i) // through the router actor too
				} else {
					err = r.Tell(i)
				}
				if err != nil {
					refused.Add(1)
					continue
				}
				sent.Add(1)
			}
		})
	}
	for i := range 20 {
		change := 3
		if i%2 == 1 {
			change = -3
		}
		_ = r.Tell(routing.AdjustPoolSize{Change: change})
	}
	wg.Wait()
	if n := len(routees(t, r)); n != 4 {
		t.Fatalf("%d routees after the adjustments, want 4", n)
	}
	if refused.Load() != 0 {
		t.Fatalf("%d sends refused", refused.Load())
	}
	deadline := time.Now().Add(testkit.Dilated(testkit.DefaultTimeout))
	for {
		dead := int64(sys.DeadLetterCount() - before)
		if handled.Load()+dead == senders*each {
			t.Logf("handled %d, dead letters %d", handled.Load(), dead)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("handled %d + dead letters %d, want %d", handled.Load(), dead, senders*each)
		}
		runtime.Gosched()
	}
}
