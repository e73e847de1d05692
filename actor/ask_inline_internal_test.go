package actor

import (
	"context"
	"testing"
	"time"
)

// A blocking Ask to an idle actor runs it on the asking goroutine whatever flags its
// state carries besides the lifecycle: here the child is watched by its parent (a
// state flag), as sharding's regions and entities are. The parent-watch flag once made
// every such ask take the dispatcher's path (three allocations more, and a third
// slower).
func TestAskRunsAWatchedChildInline(t *testing.T) {
	sys, err := New("inline", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sys.Shutdown(context.Background()) }()
	kids := make(chan Ref, 1)
	_, err = sys.Spawn(PropsFunc(func(ctx Context) {
		if _, ok := ctx.Message().(Started); ok {
			kid, err := ctx.Spawn(PropsFunc(func(ctx Context) {
				if _, ok := ctx.Message().(string); ok {
					_ = ctx.Respond(sys.inlining.Load() > 0)
				}
			}), "kid")
			if err != nil {
				t.Error(err)
				return
			}
			ctx.Watch(kid)
			kids <- kid
		}
	}), "parent")
	if err != nil {
		t.Fatal(err)
	}
	kid := <-kids
	// The ask runs the child inline only if no worker holds it: wait until it is idle.
	c := kid.p.(*cell)
	deadline := time.Now().Add(5 * time.Second)
	for c.sched.Load() != schedIdle || c.state.Load()&stateParentWatches == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the watched child did not become idle")
		}
		time.Sleep(time.Millisecond) // a poll's pace
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	inline, err := Ask[bool](ctx, kid, "ask")
	if err != nil {
		t.Fatal(err)
	}
	if !inline {
		t.Fatal("the ask did not run the idle, watched child on the asking goroutine")
	}
}
