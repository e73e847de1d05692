package persistence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/memjournal"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
)

// The seed's counter, event-sourced.
type (
	Incremented  struct{ By int }
	Decremented  struct{ By int }
	CounterState struct{ Value int }
)

type (
	increment      struct{ by int }
	decrement      struct{ by int }
	get            struct{}
	snap           struct{}
	unserialisable struct{}
	deleteTo       struct{ seq uint64 }
)

type counter struct {
	id       string
	value    int
	probe    actor.Ref
	recovery persistence.Recovery
}

func (c *counter) PersistenceID() string          { return c.id }
func (c *counter) Recovery() persistence.Recovery { return c.recovery }

func (c *counter) apply(ev any) {
	switch e := ev.(type) {
	case Incremented:
		c.value += e.By
	case Decremented:
		c.value -= e.By
	}
}

func (c *counter) Recover(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case persistence.SnapshotOffer:
		c.value = m.Snapshot.(CounterState).Value
	case persistence.RecoveryCompleted:
		_ = c.probe.Tell(m)
	default:
		c.apply(m)
	}
}

func (c *counter) Receive(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case increment:
		_ = persistence.Persist(ctx, Incremented{By: m.by}, func(ev Incremented) {
			c.apply(ev)
			ctx.Respond(c.value)
		})
	case decrement:
		_ = persistence.PersistAll(ctx, []Decremented{{By: m.by}, {By: m.by}}, func(ev Decremented) { c.apply(ev) })
	case get:
		ctx.Respond(c.value)
	case snap:
		ctx.SaveSnapshot(CounterState{Value: c.value})
	case unserialisable:
		ctx.Respond(persistence.Persist(ctx, m, func(unserialisable) { panic("handler of a rejected event ran") }))
	case deleteTo:
		ctx.DeleteMessages(m.seq)
	case persistence.SaveSnapshotSuccess, persistence.DeleteMessagesSuccess, persistence.DeleteMessagesFailure:
		_ = c.probe.Tell(m)
	}
}

// registry returns a registry of the counter's types.
func registry(t *testing.T) *serialization.Registry {
	t.Helper()
	reg := serialization.NewRegistry()
	for _, err := range []error{
		serialization.Register[Incremented](reg, "test.Incremented"),
		serialization.Register[Decremented](reg, "test.Decremented"),
		serialization.Register[CounterState](reg, "test.CounterState"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func setup(t *testing.T, sys *actor.System) *memjournal.Store {
	t.Helper()
	reg := registry(t)
	store := memjournal.New()
	t.Cleanup(func() { _ = store.Close() })
	if _, err := persistence.Start(sys, persistence.Config{Journal: store, Snapshots: store, Registry: reg}); err != nil {
		t.Fatal(err)
	}
	return store
}

// stopAndWait stops ref and waits until it has terminated.
func stopAndWait(sys *actor.System, probe *testkit.Probe, ref actor.Ref) {
	probe.Watch(ref)
	sys.Stop(ref)
	probe.ExpectTerminated(ref)
}

func counterProps(id string, probe *testkit.Probe) *actor.Props {
	return persistence.Props(func() persistence.Entity { return &counter{id: id, probe: probe.Ref()} })
}

func TestPersistRecoverAcrossIncarnations(t *testing.T) {
	sys := testkit.NewSystem(t)
	setup(t, sys)
	probe := testkit.NewProbe(t, sys)
	ref, err := sys.Spawn(counterProps("counter-1", probe), "c")
	if err != nil {
		t.Fatal(err)
	}
	probe.ExpectMsg(persistence.RecoveryCompleted{})
	for i := 1; i <= 3; i++ {
		probe.Send(ref, increment{by: 10})
	}
	probe.ExpectMsg(10)
	probe.ExpectMsg(20)
	probe.ExpectMsg(30)
	_ = ref.Tell(decrement{by: 1})
	probe.Send(ref, get{}) // stashed until the PersistAll handlers ran
	probe.ExpectMsg(28)

	stopAndWait(sys, probe, ref)

	again, err := sys.Spawn(counterProps("counter-1", probe), "c2")
	if err != nil {
		t.Fatal(err)
	}
	probe.ExpectMsg(persistence.RecoveryCompleted{HighestSequenceNr: 5})
	probe.Send(again, get{})
	probe.ExpectMsg(28)
}

func TestSnapshotThenRecover(t *testing.T) {
	sys := testkit.NewSystem(t)
	store := setup(t, sys)
	probe := testkit.NewProbe(t, sys)
	ref, _ := sys.Spawn(counterProps("snappy", probe), "c")
	probe.ExpectMsg(persistence.RecoveryCompleted{})
	probe.Send(ref, increment{by: 5})
	probe.ExpectMsg(5)
	_ = ref.Tell(snap{})
	ok := testkit.ExpectMsgType[persistence.SaveSnapshotSuccess](probe)
	if ok.Metadata.SequenceNr != 1 {
		t.Fatalf("snapshot at %d", ok.Metadata.SequenceNr)
	}
	probe.Send(ref, increment{by: 1})
	probe.ExpectMsg(6)
	// Corrupt the event the snapshot covers: recovery must not read it.
	if err := store.CorruptEvent("snappy", 1); err != nil {
		t.Fatal(err)
	}
	stopAndWait(sys, probe, ref)
	again, _ := sys.Spawn(counterProps("snappy", probe), "c2")
	probe.ExpectMsg(persistence.RecoveryCompleted{HighestSequenceNr: 2})
	probe.Send(again, get{})
	probe.ExpectMsg(6)
}

func TestRejectedEventKeepsActorRunning(t *testing.T) {
	sys := testkit.NewSystem(t)
	setup(t, sys)
	probe := testkit.NewProbe(t, sys)
	ref, _ := sys.Spawn(counterProps("rejecting", probe), "c")
	probe.ExpectMsg(persistence.RecoveryCompleted{})
	probe.Send(ref, unserialisable{})
	if err := testkit.ExpectMsgType[error](probe); !errors.Is(err, persistence.ErrRejected) {
		t.Fatalf("Persist of an unregistered type: %v", err)
	}
	probe.Send(ref, increment{by: 2})
	probe.ExpectMsg(2)
}

func TestWriteFailureStopsActor(t *testing.T) {
	sys := testkit.NewSystem(t)
	store := setup(t, sys)
	probe := testkit.NewProbe(t, sys)
	ref, _ := sys.Spawn(counterProps("failing", probe), "c")
	probe.ExpectMsg(persistence.RecoveryCompleted{})
	probe.Watch(ref)
	store.InjectWriteFailure(errors.New("disk on fire"))
	_ = ref.Tell(increment{by: 1})
	probe.ExpectTerminated(ref)
}

func TestCorruptEventStopsRecoveryOfThatEntityOnly(t *testing.T) {
	sys := testkit.NewSystem(t)
	store := setup(t, sys)
	probe := testkit.NewProbe(t, sys)
	for _, id := range []string{"bad", "good"} {
		ref, _ := sys.Spawn(counterProps(id, probe), id)
		probe.ExpectMsg(persistence.RecoveryCompleted{})
		probe.Send(ref, increment{by: 1})
		probe.ExpectMsg(1)
		stopAndWait(sys, probe, ref)
	}
	if err := store.CorruptEvent("bad", 1); err != nil {
		t.Fatal(err)
	}
	bad, _ := sys.Spawn(counterProps("bad", probe), "bad2")
	probe.Watch(bad)
	probe.ExpectTerminated(bad)
	good, _ := sys.Spawn(counterProps("good", probe), "good2")
	probe.ExpectMsg(persistence.RecoveryCompleted{HighestSequenceNr: 1})
	probe.Send(good, get{})
	probe.ExpectMsg(1)
}

func TestSamePersistenceIDTwiceFails(t *testing.T) {
	sys := testkit.NewSystem(t)
	setup(t, sys)
	probe := testkit.NewProbe(t, sys)
	first, _ := sys.Spawn(counterProps("dup", probe), "first")
	probe.ExpectMsg(persistence.RecoveryCompleted{})
	second, _ := sys.Spawn(counterProps("dup", probe), "second")
	probe.Watch(second)
	probe.ExpectTerminated(second)
	probe.Send(first, increment{by: 1})
	probe.ExpectMsg(1)
}

func TestDeleteMessages(t *testing.T) {
	sys := testkit.NewSystem(t)
	setup(t, sys)
	probe := testkit.NewProbe(t, sys)
	ref, _ := sys.Spawn(counterProps("deleting", probe), "c")
	probe.ExpectMsg(persistence.RecoveryCompleted{})
	probe.Send(ref, increment{by: 1})
	probe.ExpectMsg(1)
	_ = ref.Tell(deleteTo{seq: 5})
	if f := testkit.ExpectMsgType[persistence.DeleteMessagesFailure](probe); !errors.Is(f.Err, persistence.ErrBeyondHighest) {
		t.Fatalf("delete beyond highest: %v", f.Err)
	}
	_ = ref.Tell(deleteTo{seq: 1})
	probe.ExpectMsg(persistence.DeleteMessagesSuccess{ToSequenceNr: 1})
}

func TestStartIsRequired(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	ref, _ := sys.Spawn(counterProps("unconfigured", probe), "c")
	probe.Watch(ref)
	probe.ExpectTerminated(ref, 2*time.Second)
}

// An entity that panics while a write is in flight is restarted; the new instance
// recovers and ignores what the old instance's write delivers late.
func TestRestartWhileWriteInFlight(t *testing.T) {
	sys := testkit.NewSystem(t)
	setup(t, sys)
	probe := testkit.NewProbe(t, sys)
	props := persistence.Props(func() persistence.Entity { return &crasher{counter: counter{id: "crasher", probe: probe.Ref()}} })
	ref, _ := sys.Spawn(props, "c")
	probe.ExpectMsg(persistence.RecoveryCompleted{})
	for range 20 {
		_ = ref.Tell("async")
		_ = ref.Tell("crash")
		// The restarted instance recovers whatever was stored and keeps working.
		testkit.ExpectMsgType[persistence.RecoveryCompleted](probe)
	}
	probe.Send(ref, get{})
	n := testkit.ExpectMsgType[int](probe)
	probe.Send(ref, increment{by: 1})
	probe.ExpectMsg(n + 1)
}

// crasher persists asynchronously on "async" and panics on "crash", which arrives
// while the write may still be in flight.
type crasher struct{ counter }

func (c *crasher) Receive(ctx persistence.Context) {
	switch ctx.Message() {
	case "async":
		_ = persistence.PersistAsync(ctx, Incremented{By: 1}, func(ev Incremented) { c.apply(ev) })
	case "crash":
		panic("crash with a write in flight")
	default:
		c.counter.Receive(ctx)
	}
}

type tagged struct{ counter }

func (c *tagged) Receive(ctx persistence.Context) {
	if m, ok := ctx.Message().(increment); ok {
		_ = persistence.Persist(ctx, Incremented{By: m.by}, func(ev Incremented) {
			c.apply(ev)
			ctx.Respond(c.value)
		}, persistence.WithTags("counters", "even"))
		return
	}
	c.counter.Receive(ctx)
}

func TestTaggedEventsStoreTheirTags(t *testing.T) {
	sys := testkit.NewSystem(t)
	store := setup(t, sys)
	probe := testkit.NewProbe(t, sys)
	ref, _ := sys.Spawn(persistence.Props(func() persistence.Entity {
		return &tagged{counter: counter{id: "tagged", probe: probe.Ref()}}
	}), "c")
	probe.ExpectMsg(persistence.RecoveryCompleted{})
	probe.Send(ref, increment{by: 2})
	probe.ExpectMsg(2)
	var tags []string
	err := store.ReplayMessages(context.Background(), "tagged", 1, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
		tags = r.Tags
		return nil
	})
	if err != nil || len(tags) != 2 || tags[0] != "counters" || tags[1] != "even" {
		t.Fatalf("stored tags %v, %v", tags, err)
	}
	// Replay gives the event itself.
	stopAndWait(sys, probe, ref)
	again, _ := sys.Spawn(persistence.Props(func() persistence.Entity {
		return &tagged{counter: counter{id: "tagged", probe: probe.Ref()}}
	}), "c2")
	probe.ExpectMsg(persistence.RecoveryCompleted{HighestSequenceNr: 1})
	probe.Send(again, get{})
	probe.ExpectMsg(2)
}

// gatedJournal holds every write until gate is closed.
type gatedJournal struct {
	persistence.Journal
	gate chan struct{}
}

func (g *gatedJournal) WriteMessages(ctx context.Context, w []persistence.AtomicWrite) ([]error, error) {
	<-g.gate
	return g.Journal.WriteMessages(ctx, w)
}

// The recovery of a restarted entity waits for the write its previous instance left in
// flight, so it sees that event and never reuses its sequence number.
func TestRecoveryWaitsForPreviousInstancesWrite(t *testing.T) {
	sys := testkit.NewSystem(t)
	reg := serialization.NewRegistry()
	_ = serialization.Register[Incremented](reg, "test.Incremented")
	store := memjournal.New()
	defer func() { _ = store.Close() }()
	gated := &gatedJournal{Journal: store, gate: make(chan struct{})}
	if _, err := persistence.Start(sys, persistence.Config{Journal: gated, Registry: reg}); err != nil {
		t.Fatal(err)
	}
	probe := testkit.NewProbe(t, sys)
	ref, _ := sys.Spawn(persistence.Props(func() persistence.Entity {
		return &crasher{counter: counter{id: "gated", probe: probe.Ref()}}
	}), "c")
	probe.ExpectMsg(persistence.RecoveryCompleted{})
	_ = ref.Tell("async") // its write is held in flight
	_ = ref.Tell("crash") // the restarted instance must not recover before it lands
	probe.ExpectNoMsg(100 * time.Millisecond)
	close(gated.gate)
	probe.ExpectMsg(persistence.RecoveryCompleted{HighestSequenceNr: 1})
	probe.Send(ref, increment{by: 1})
	probe.ExpectMsg(2)
}

// Without a snapshot store, SaveSnapshot answers SaveSnapshotFailure wrapping
// ErrNoSnapshotStore, and an unserialisable snapshot one wrapping ErrRejected; the
// entity keeps running.
func TestSnapshotFailuresAreReplies(t *testing.T) {
	t.Run("unserialisable", func(t *testing.T) {
		sys := testkit.NewSystem(t)
		setup(t, sys) // its registry does not know Notes
		probe := testkit.NewProbe(t, sys)
		ref, _ := sys.Spawn(persistence.Props(func() persistence.Entity {
			return &snapStopper{notebook{id: "unserialisable", probe: probe.Ref()}}
		}), "s")
		probe.ExpectMsg([]string(nil))
		_ = ref.Tell("snap")
		if f := testkit.ExpectMsgType[persistence.SaveSnapshotFailure](probe); !errors.Is(f.Err, persistence.ErrRejected) {
			t.Fatalf("unserialisable: %v", f.Err)
		}
		probe.Send(ref, seqQuery{})
		probe.ExpectMsg(uint64(0))
	})
	sys := testkit.NewSystem(t)
	store := memjournal.New()
	t.Cleanup(func() { _ = store.Close() })
	if _, err := persistence.Start(sys, persistence.Config{Journal: store, Registry: notebookRegistry(t)}); err != nil {
		t.Fatal(err)
	}
	probe := testkit.NewProbe(t, sys)
	ref, _ := sys.Spawn(persistence.Props(func() persistence.Entity {
		return &snapStopper{notebook{id: "nostore", probe: probe.Ref()}}
	}), "s")
	probe.ExpectMsg([]string(nil))
	_ = ref.Tell("snap")
	if f := testkit.ExpectMsgType[persistence.SaveSnapshotFailure](probe); !errors.Is(f.Err, persistence.ErrNoSnapshotStore) {
		t.Fatalf("without a store: %v", f.Err)
	}
	probe.Send(ref, note{s: "x"})
	probe.ExpectMsg(uint64(1))
}
