package actor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// Ref.AskDeferred queues an ask and leaves running the idle recipient to the caller;
// Future.Await waits for such an ask as a blocking ask does, and fails it when ctx
// ends.
func TestAskDeferredAndAwait(t *testing.T) {
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
	fut, run := ref.AskDeferred(ctx, "ping", false)
	if run == nil {
		t.Fatal("no run for an idle recipient")
	}
	run()
	if got, err := fut.Await(ctx, ref, "ping"); err != nil || got != "pong" {
		t.Fatalf("deferred ask: %v, %v", got, err)
	}

	// A busy recipient runs on the dispatcher; a context that ends fails the ask with
	// ErrTimeout, naming the recipient.
	_ = ref.Tell("block")
	short, cancelShort := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancelShort()
	fut, run = ref.AskDeferred(short, "ping", false)
	if run != nil {
		run()
	}
	_, err = fut.Await(short, ref, "ping")
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("Await: %v, want ErrTimeout", err)
	}
	// With watch the future fails by itself when its context ends.
	watched, cancelWatched := context.WithCancel(context.Background())
	fut, run = ref.AskDeferred(watched, "ping", true)
	if run != nil {
		t.Fatal("a run for a busy recipient")
	}
	cancelWatched()
	if _, err := fut.Result(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("watched deferred ask: %v, want context.Canceled", err)
	}
	// The zero Ref: no run, and the future has failed.
	fut, run = Ref{}.AskDeferred(ctx, "ping", false)
	if _, err := fut.Await(ctx, Ref{}, "ping"); run != nil || !errors.Is(err, ErrNoRecipient) {
		t.Fatalf("deferred ask to the zero Ref: run %v, %v; want no run and ErrNoRecipient", run != nil, err)
	}
	close(release)
}

// PublishDeadLetter publishes a layer's undelivered message as the runtime's own dead
// letters: the user's message in the event, counted, and the ask waiting for it
// failed at once with the reason.
func TestPublishDeadLetter(t *testing.T) {
	sys, err := New("publish", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sys.Shutdown(context.Background()) }()
	dead, sub := deadLetterChan(t, sys)
	fut := newFuture(sys)
	errGone := errors.New("the layer's reason")
	before := sys.DeadLetterCount()
	sys.PublishDeadLetter(sub, wrapped{"hello"}, Ref{fut}, errGone)
	dl := <-dead
	if dl.Message != "hello" || dl.Recipient != sub || dl.Sender != (Ref{fut}) || !errors.Is(dl.Reason, errGone) {
		t.Fatalf("dead letter %+v, want the user's message to the recipient, from the ask, with the reason", dl)
	}
	if n := sys.DeadLetterCount() - before; n != 1 {
		t.Fatalf("the count grew by %d, want 1", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := fut.Result(ctx); !errors.Is(err, ErrDeadLetter) || !errors.Is(err, errGone) {
		t.Fatalf("the ask's future: %v; want ErrDeadLetter and the reason", err)
	}
}

// wrapped is a layer's wrapper around a user's message (MessageWrapper).
type wrapped struct{ user string }

func (w wrapped) UserMessage() any { return w.user }

// deadLetterChan subscribes an actor (returned) to sys's dead letters, which it passes
// to the channel returned.
func deadLetterChan(t *testing.T, sys *System) (<-chan DeadLetter, Ref) {
	t.Helper()
	dead := make(chan DeadLetter, 4)
	sub, err := sys.Spawn(PropsFunc(func(ctx Context) {
		if dl, ok := ctx.Message().(DeadLetter); ok {
			dead <- dl
		}
	}), "dead")
	if err != nil {
		t.Fatal(err)
	}
	Subscribe[DeadLetter](sys.EventStream(), sub)
	return dead, sub
}

// A wrapped message that becomes a dead letter is published as the user's message, and
// an ask that fails with it, or times out, names the user's message's type.
func TestDeadLetterNamesTheUsersMessage(t *testing.T) {
	sys, err := New("wrapped", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sys.Shutdown(context.Background()) }()
	dead, _ := deadLetterChan(t, sys)
	silent, err := sys.Spawn(PropsFunc(func(Context) {}), "silent")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if _, err := Ask[string](ctx, silent, wrapped{"hello"}); !errors.Is(err, ErrTimeout) || strings.Contains(err.Error(), "wrapped") || !strings.Contains(err.Error(), "string") {
		t.Fatalf("ask timed out with %v; want ErrTimeout naming a string", err)
	}

	gone, err := sys.Spawn(PropsFunc(func(Context) {}), "gone")
	if err != nil {
		t.Fatal(err)
	}
	terminated := make(chan struct{})
	if _, err := sys.Spawn(PropsFunc(func(ctx Context) {
		switch ctx.Message().(type) {
		case Started:
			ctx.Watch(gone)
			_ = sys.Stop(gone)
		case Terminated:
			close(terminated)
		}
	}), "watcher"); err != nil {
		t.Fatal(err)
	}
	<-terminated
	_ = gone.Tell(wrapped{"hello"})
	if dl := <-dead; dl.Message != "hello" {
		t.Fatalf("dead letter %T %v, want the user's message", dl.Message, dl.Message)
	}
	ask, cancelAsk := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelAsk()
	if _, err := Ask[string](ask, gone, wrapped{"again"}); !errors.Is(err, ErrDeadLetter) || strings.Contains(err.Error(), "wrapped") {
		t.Fatalf("ask to a stopped actor: %v; want a dead letter naming a string", err)
	}
	if dl := <-dead; dl.Message != "again" {
		t.Fatalf("the ask's dead letter %T %v, want the user's message", dl.Message, dl.Message)
	}
}

// batch is a layer's batch of users' messages (MessageBatch), each with a sender.
type batch struct {
	msgs    []any
	senders []Ref
}

func (b batch) EachUserMessage(yield func(msg any, sender Ref)) {
	for i, m := range b.msgs {
		yield(m, b.senders[i])
	}
}

// A batch that becomes a dead letter is a dead letter per message, each with its own
// sender, counted as many: an ask among them fails at once with an error naming its
// message, not the batch.
func TestBatchDeadLetterIsOnePerMessage(t *testing.T) {
	sys, err := New("batch", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sys.Shutdown(context.Background()) }()
	dead, sub := deadLetterChan(t, sys)
	fut := newFuture(sys)
	b := batch{msgs: []any{"first", 2}, senders: []Ref{sub, {fut}}}
	before := sys.DeadLetterCount()
	_ = sys.DeadLetters().Tell(b)
	for i, want := range b.msgs {
		if dl := <-dead; dl.Message != want || dl.Sender != b.senders[i] {
			t.Fatalf("dead letter %d: %T %v from %v, want %v from %v", i, dl.Message, dl.Message, dl.Sender, want, b.senders[i])
		}
	}
	if n := sys.DeadLetterCount() - before; n != 2 {
		t.Fatalf("the count grew by %d, want 2", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := fut.Result(ctx); !errors.Is(err, ErrDeadLetter) || !strings.Contains(err.Error(), "int") || strings.Contains(err.Error(), "batch") {
		t.Fatalf("the ask's future: %v; want a dead letter naming an int", err)
	}
}
