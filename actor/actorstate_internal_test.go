package actor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/troupe-go/troupe/internal/actorstate"
)

// The hooks package actor gives internal/actorstate: AskDeferred queues an ask and leaves running the
// idle recipient to the caller; AwaitAsk waits for such an ask as a blocking ask does,
// and fails it when ctx ends.
func TestActorStateHooks(t *testing.T) {
	sys, err := New("hooks", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sys.Shutdown(context.Background()) }()
	release := make(chan struct{})
	ref, err := sys.Spawn(PropsFunc(func(ctx Context) {
		switch ctx.Message() {
		case "ping":
			_ = ctx.Respond("pong")
		case "block":
			<-release
		}
	}), "echo")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := Ask[string](ctx, ref, "ping"); err != nil {
		t.Fatal(err)
	}
	// It gives its cell up just after it answered (on a worker, or inline).
	deadline := time.Now().Add(5 * time.Second)
	for ref.p.(*cell).sched.Load() != schedIdle {
		if time.Now().After(deadline) {
			t.Fatal("an actor that answered everything did not become idle")
		}
		time.Sleep(time.Millisecond) // a poll's pace
	}

	// Deferred: the recipient is idle, so the caller owns it and runs it.
	v, run := actorstate.AskDeferred(ctx, ref, "ping", false)
	if run == nil {
		t.Fatal("no run for an idle recipient")
	}
	run()
	if got, err := v.(*Future).Result(ctx); err != nil || got != "pong" {
		t.Fatalf("deferred ask: %v, %v", got, err)
	}

	// A busy recipient runs on the dispatcher; a context that ends fails the ask with
	// ErrTimeout, naming the recipient.
	_ = ref.Tell("block")
	short, cancelShort := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancelShort()
	v, run = actorstate.AskDeferred(short, ref, "ping", false)
	if run != nil {
		run()
	}
	_, err = actorstate.AwaitAsk(short, v, ref, "ping")
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("AwaitAsk: %v, want ErrTimeout", err)
	}
	close(release)
}
