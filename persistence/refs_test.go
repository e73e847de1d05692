package persistence_test

import (
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/memjournal"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
)

// Subscribed is an event that holds a Ref.
type Subscribed struct{ Who actor.Ref }

// subscribers remembers who subscribed and reports each recovered subscriber.
type subscribers struct {
	probe actor.Ref
	who   []actor.Ref
}

func (s *subscribers) PersistenceID() string { return "subscribers" }

func (s *subscribers) Recover(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case Subscribed:
		s.who = append(s.who, m.Who)
	case persistence.RecoveryCompleted:
		_ = s.probe.Tell(append([]actor.Ref(nil), s.who...))
	}
}

func (s *subscribers) Receive(ctx persistence.Context) {
	if ref, ok := ctx.Message().(actor.Ref); ok {
		_ = persistence.Persist(ctx, Subscribed{Who: ref}, func(Subscribed) { _ = s.probe.Tell("stored") })
	}
}

func TestRefsInEventsRecover(t *testing.T) {
	sys := testkit.NewSystem(t)
	reg := serialization.NewRegistry()
	if err := serialization.Register[Subscribed](reg, "test.Subscribed"); err != nil {
		t.Fatal(err)
	}
	store := memjournal.New()
	t.Cleanup(func() { _ = store.Close() })
	if _, err := persistence.Start(sys, persistence.Config{Journal: store, Registry: reg}); err != nil {
		t.Fatal(err)
	}
	probe := testkit.NewProbe(t, sys)
	alive := testkit.NewProbe(t, sys)
	gone, _ := sys.Spawn(actor.PropsFunc(func(actor.Context) {}), "gone")
	props := persistence.Props(func() persistence.Entity { return &subscribers{probe: probe.Ref()} })

	ref, err := sys.Spawn(props, "subs")
	if err != nil {
		t.Fatal(err)
	}
	testkit.ExpectMsgType[[]actor.Ref](probe)
	for _, who := range []actor.Ref{alive.Ref(), gone} {
		_ = ref.Tell(who)
		probe.ExpectMsg("stored")
	}
	stopAndWait(sys, probe, ref)
	stopAndWait(sys, probe, gone)

	if _, err := sys.Spawn(props, "subs2"); err != nil {
		t.Fatal(err)
	}
	got := testkit.ExpectMsgType[[]actor.Ref](probe)
	if len(got) != 2 || got[0] != alive.Ref() || got[1] != sys.DeadLetters() {
		t.Fatalf("recovered %v, want [%v %v]", got, alive.Ref(), sys.DeadLetters())
	}
}
