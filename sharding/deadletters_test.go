package sharding

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

// An EntityRef whose shard has no fast path sends through the region, wrapped with its
// route; when the region has stopped, the dead letter is the Envelope the region would
// have placed (the entity and the user's message), and an ask's error names it, not the
// wrapper.
func TestEntityRefDeadLetterIsTheUsersMessage(t *testing.T) {
	sys, region := startLocal(t, EntityConfig{Entity: actor.PropsOf(func() actor.Actor { return &counter{} })})
	ref, err := EntityRefFor[any](sys, "Counter", "42")
	if err != nil {
		t.Fatal(err)
	}
	if ref.direct == nil {
		t.Fatal("the EntityRef has no direct route: it would not wrap its messages")
	}
	watcher := testkit.NewProbe(t, sys)
	watcher.Watch(region)
	if err := sys.Stop(region); err != nil {
		t.Fatal(err)
	}
	watcher.ExpectTerminated(region, 5*time.Second)

	dead := testkit.NewProbe(t, sys)
	actor.Subscribe[actor.DeadLetter](sys.EventStream(), dead.Ref())
	if err := ref.Tell(incr{}); err != nil {
		t.Fatal(err)
	}
	dl := testkit.ExpectMsgType[actor.DeadLetter](dead, 5*time.Second)
	if want := (Envelope{EntityID: "42", Message: incr{}}); dl.Message != want || dl.Recipient != region {
		t.Fatalf("dead letter %T %+v to %v, want %+v to the region %v", dl.Message, dl.Message, dl.Recipient, want, region)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = Ask[int](ctx, ref, any(get{}))
	if !errors.Is(err, actor.ErrDeadLetter) || strings.Contains(err.Error(), "refMessage") || !strings.Contains(err.Error(), "sharding.Envelope") {
		t.Fatalf("ask through the stopped region: %v; want a dead letter naming the Envelope", err)
	}
	dl = testkit.ExpectMsgType[actor.DeadLetter](dead, 5*time.Second)
	if want := (Envelope{EntityID: "42", Message: get{}}); dl.Message != want {
		t.Fatalf("the ask's dead letter is %T %+v, want %+v", dl.Message, dl.Message, want)
	}
}

// A delivery the region sent to a shard that has stopped meanwhile (it failed, or lost
// its lease) is a dead letter naming the entity and the user's message, not the
// region's delivery.
func TestShardDeliveryDeadLetterIsTheUsersMessage(t *testing.T) {
	sys := testkit.NewSystem(t)
	shard, err := sys.Spawn(actor.PropsFunc(func(actor.Context) {}), "shard")
	if err != nil {
		t.Fatal(err)
	}
	watcher := testkit.NewProbe(t, sys)
	watcher.Watch(shard)
	if err := sys.Stop(shard); err != nil {
		t.Fatal(err)
	}
	watcher.ExpectTerminated(shard, 5*time.Second)
	dead := testkit.NewProbe(t, sys)
	actor.Subscribe[actor.DeadLetter](sys.EventStream(), dead.Ref())
	for _, tc := range []struct {
		d    *delivery
		want any
	}{
		{&delivery{shard: "1", entity: "42", msg: incr{}}, Envelope{EntityID: "42", Message: incr{}}},
		{&delivery{shard: "1", entity: "43", start: true}, StartEntity{ID: "43"}},
	} {
		_ = shard.Tell(tc.d)
		if dl := testkit.ExpectMsgType[actor.DeadLetter](dead, 5*time.Second); dl.Message != tc.want {
			t.Fatalf("dead letter %T %+v, want %+v", dl.Message, dl.Message, tc.want)
		}
	}
}
