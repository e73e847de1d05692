package sharding

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/remote"
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
	dl := notFromTheCoordinator(dead)
	if want := (Envelope{EntityID: "42", Message: incr{}}); dl.Message != want || dl.Recipient != region {
		t.Fatalf("dead letter %T %+v to %v, want %+v to the region %v", dl.Message, dl.Message, dl.Recipient, want, region)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = Ask[int](ctx, ref, any(get{}))
	if !errors.Is(err, actor.ErrDeadLetter) || strings.Contains(err.Error(), "refMessage") || !strings.Contains(err.Error(), "sharding.Envelope") {
		t.Fatalf("ask through the stopped region: %v; want a dead letter naming the Envelope", err)
	}
	dl = notFromTheCoordinator(dead)
	if want := (Envelope{EntityID: "42", Message: get{}}); dl.Message != want {
		t.Fatalf("the ask's dead letter is %T %+v, want %+v", dl.Message, dl.Message, want)
	}
}

// notFromTheCoordinator returns the next dead letter that is not one of the
// coordinator's messages to the stopped region (a RegisterAck on its way when the region
// stopped becomes a dead letter too, at any moment).
func notFromTheCoordinator(dead *testkit.Probe) actor.DeadLetter {
	return dead.FishForMessage(func(msg any) bool {
		dl, ok := msg.(actor.DeadLetter)
		return ok && !isCoordinatorMsg(dl.Message)
	}, 5*time.Second).(actor.DeadLetter)
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

// A batch of deliveries that becomes a dead letter (the transport refused it, or its
// region has stopped) is one dead letter for each delivery, in order: the Envelope the
// region would have placed, with the delivery's own sender, and the dead-letter count
// grows by the number of deliveries. A batch being sent decodes its encodings again; a
// received one gives what its transport decoded; a message that cannot be decoded is
// named by a remote.Undecodable.
func TestABatchDeadLetterIsOnePerDelivery(t *testing.T) {
	sys := testkit.NewSystem(t)
	reg := testRegistry(t)
	s, err := Start(sys, Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	a := testkit.NewProbe(t, sys).Ref()
	codec := reg.NewCodec(refResolver{sys})
	ds := []delivery{
		{shard: "1", entity: "e1", msg: Increment{By: 1}, sender: a},
		{shard: "2", entity: "e2", msg: "text"},
		{shard: "1", entity: "e3", msg: GetCount{}, sender: a},
	}
	envelopes := func(msgs ...any) []actor.DeadLetter {
		out := make([]actor.DeadLetter, len(ds))
		for i, d := range ds {
			out[i] = actor.DeadLetter{Message: Envelope{EntityID: d.entity, Message: msgs[i]}, Sender: d.sender}
		}
		return out
	}
	sending := testBatchOf(t, codec, ds...)
	sending.decoders = &s.decoders

	// The same batch received, its second delivery under a manifest nobody registered.
	parts, err := unmarshalDeliveries(reg, marshalDeliveries(t, reg, &msgDeliveries{out: testBatchOf(t, codec, ds...)}), plainResolver{sys})
	if err != nil {
		t.Fatal(err)
	}
	parts[1].manifest = "test.nobody"
	unknown := remote.Undecodable{Manifest: "test.nobody", Size: len(parts[1].payload)}
	v, err := reg.UnmarshalContext(deliveriesName, marshalDeliveries(t, reg, &msgDeliveries{out: batchOf(parts)}), refResolver{sys})
	if err != nil {
		t.Fatal(err)
	}
	received := v.(*msgDeliveries)

	dead := testkit.NewProbe(t, sys)
	actor.Subscribe[actor.DeadLetter](sys.EventStream(), dead.Ref())
	region := testkit.NewProbe(t, sys).Ref()
	for _, tc := range []struct {
		name  string
		batch *msgDeliveries
		want  []actor.DeadLetter
	}{
		{"being sent", &msgDeliveries{out: sending}, envelopes(Increment{By: 1}, "text", GetCount{})},
		{"received", received, envelopes(Increment{By: 1}, unknown, GetCount{})},
	} {
		before := sys.DeadLetterCount()
		_ = sys.DeadLetters().Send(tc.batch, region)
		for i, want := range tc.want {
			dl := testkit.ExpectMsgType[actor.DeadLetter](dead, 5*time.Second)
			if dl.Message != want.Message || dl.Sender != want.Sender {
				t.Fatalf("%s: dead letter %d is %T %+v from %v, want %+v from %v", tc.name, i, dl.Message, dl.Message, dl.Sender, want.Message, want.Sender)
			}
		}
		if n := sys.DeadLetterCount() - before; n != uint64(len(tc.want)) {
			t.Fatalf("%s: the dead-letter count grew by %d, want %d", tc.name, n, len(tc.want))
		}
	}
}

// A batch that reaches a node whose region has stopped (the node is up) becomes, on
// that node, a dead letter per delivery, each the user's Envelope with the sender on
// the first node.
func TestABatchForAStoppedRegionIsADeadLetterPerDelivery(t *testing.T) {
	sc := startStringCluster(t, 2, echoProps(), nil)
	sys0, sys1 := sc.nodes[0].System, sc.nodes[1].System
	region1 := sc.nodes[1].region
	watcher := testkit.NewProbe(t, sys1)
	watcher.Watch(region1)
	if err := sys1.Stop(region1); err != nil {
		t.Fatal(err)
	}
	watcher.ExpectTerminated(region1, 5*time.Second)
	dead := testkit.NewProbe(t, sys1)
	actor.Subscribe[actor.DeadLetter](sys1.EventStream(), dead.Ref())

	to, err := sys0.Resolve(region1.URI())
	if err != nil {
		t.Fatal(err)
	}
	a := testkit.NewProbe(t, sys0).Ref()
	b := testBatchOf(t, Get(sys0).reg.NewCodec(refResolver{sys0}),
		delivery{shard: "1", entity: "e1", msg: "one", sender: a},
		delivery{shard: "2", entity: "e2", msg: "two"})
	if err := to.Send(&msgDeliveries{out: b}, a); err != nil {
		t.Fatal(err)
	}
	want := []Envelope{{EntityID: "e1", Message: "one"}, {EntityID: "e2", Message: "two"}}
	senders := []string{a.URI(), ""}
	deadline := time.Now().Add(10 * time.Second)
	for len(want) > 0 {
		dl := testkit.ExpectMsgType[actor.DeadLetter](dead, time.Until(deadline))
		switch m := dl.Message.(type) {
		case *msgDeliveries:
			t.Fatal("the batch is a dead letter of its own")
		case Envelope:
			sender := ""
			if !dl.Sender.IsZero() {
				sender = dl.Sender.URI()
			}
			if m != want[0] || sender != senders[0] {
				t.Fatalf("dead letter %+v from %q, want %+v from %q", m, sender, want[0], senders[0])
			}
			want, senders = want[1:], senders[1:]
		}
	}
}
