package remote_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

// A Failure reply to a remote ask fails the ask with the remote error's text, without
// anyone registering actor.Failure.
func TestAFailureReplyFailsARemoteAsk(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)
	failing, err := b.sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*ping); ok {
			_ = ctx.Respond(actor.Failure{Err: errors.New("out of stock")})
		}
	}), "failing")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Dilated(5*time.Second))
	defer cancel()
	_, err = actor.Ask[*pong](ctx, a.remoteRef(t, failing), &ping{N: 1})
	if err == nil || errors.Is(err, actor.ErrTimeout) || !strings.Contains(err.Error(), "out of stock") {
		t.Fatalf("ask answered with a Failure: %v", err)
	}
}

// PoisonPill and Kill sent to an actor in another system act as they do locally.
func TestPoisonPillAndKillAcrossSystems(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)
	restarts := testkit.NewProbe(t, b.sys)
	victim, err := b.sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if r, ok := ctx.Message().(actor.Restarting); ok {
			_ = restarts.Ref().Tell(r)
		}
	}), "victim")
	if err != nil {
		t.Fatal(err)
	}
	ref := a.remoteRef(t, victim)
	if err := ref.Tell(actor.Kill{}); err != nil {
		t.Fatalf("Tell(Kill): %v", err)
	}
	if r := testkit.ExpectMsgType[actor.Restarting](restarts); !errors.Is(r.Reason, actor.ErrKilled) {
		t.Errorf("restarted for %v", r.Reason)
	}
	watcher := testkit.NewProbe(t, b.sys)
	watcher.Watch(victim)
	if err := ref.Tell(actor.PoisonPill{}); err != nil {
		t.Fatalf("Tell(PoisonPill): %v", err)
	}
	watcher.ExpectTerminated(victim)
}

// An ask of an actor in another system that never answers fails with an error that
// names the target and the message's type.
func TestARemoteAskTimeoutNamesTargetAndType(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)
	mute := testkit.NewProbe(t, b.sys)
	ref := a.remoteRef(t, mute.Ref())
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := actor.Ask[*pong](ctx, ref, &ping{N: 1})
	if !errors.Is(err, actor.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ask: %v", err)
	}
	for _, want := range []string{ref.URI(), "*remote_test.ping"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %q", err, want)
		}
	}
	testkit.ExpectMsgType[*ping](mute)
}

// A message for an actor that does not exist becomes a dead letter that names the
// path it was sent to.
func TestADeadLetterForAMissingActorNamesIt(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)
	dead := testkit.NewProbe(t, b.sys)
	actor.Subscribe[actor.DeadLetter](b.sys.EventStream(), dead.Ref())
	ref, err := a.sys.Resolve(b.r.Address().String() + "/user/missing")
	if err != nil {
		t.Fatal(err)
	}
	if err := ref.Tell(&pong{N: 1}); err != nil {
		t.Fatal(err)
	}
	dl := testkit.ExpectMsgType[actor.DeadLetter](dead)
	if dl.Recipient.IsZero() || dl.Recipient.Path() != "/user/missing" || dl.Recipient.Address() != b.r.Address() {
		t.Errorf("dead letter for %v (path %q, address %v)", dl.Recipient, dl.Recipient.Path(), dl.Recipient.Address())
	}
	if !errors.Is(dl.Reason, actor.ErrNotFound) {
		t.Errorf("reason %v", dl.Reason)
	}
}
