package persistence_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/badgerjournal"
	"github.com/troupe-go/troupe/persistence/memjournal"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
)

// Events of the sender.
type (
	MsgSent      struct{ Payload string }
	MsgConfirmed struct{ DeliveryID uint64 }
)

// Messages.
type (
	send    struct{ payload string }
	confirm struct{ id uint64 }
	// Deliverable is what the destination receives.
	Deliverable struct {
		ID      uint64
		Payload string
	}
)

type reliableSender struct {
	persistence.AtLeastOnceDelivery
	dest  actor.Ref
	probe actor.Ref
}

func (s *reliableSender) PersistenceID() string { return "reliable" }

func (s *reliableSender) apply(ev any) {
	switch e := ev.(type) {
	case MsgSent:
		_, _ = s.Deliver(s.dest, func(id uint64) any { return Deliverable{ID: id, Payload: e.Payload} })
	case MsgConfirmed:
		s.ConfirmDelivery(e.DeliveryID)
	}
}

func (s *reliableSender) Recover(ctx persistence.Context) { s.apply(ctx.Message()) }

func (s *reliableSender) Receive(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case send:
		_ = persistence.Persist(ctx, MsgSent{Payload: m.payload}, func(ev MsgSent) { s.apply(ev) })
	case confirm:
		_ = persistence.Persist(ctx, MsgConfirmed{DeliveryID: m.id}, func(ev MsgConfirmed) { s.apply(ev) })
	case persistence.UnconfirmedWarning:
		_ = s.probe.Tell(m)
	}
}

func TestAtLeastOnceDeliverySurvivesRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := testkit.NewSystem(t)
		reg := serialization.NewRegistry()
		_ = serialization.Register[MsgSent](reg, "test.MsgSent")
		_ = serialization.Register[MsgConfirmed](reg, "test.MsgConfirmed")
		store := memjournal.New()
		defer func() { _ = store.Close() }()
		if _, err := persistence.Start(sys, persistence.Config{Journal: store, Registry: reg}); err != nil {
			t.Fatal(err)
		}
		dest := testkit.NewProbe(t, sys)
		warnings := testkit.NewProbe(t, sys)
		props := persistence.Props(func() persistence.Entity {
			s := &reliableSender{dest: dest.Ref(), probe: warnings.Ref()}
			s.RedeliverInterval = time.Second
			s.WarnAfter = 3
			return s
		})
		sender, _ := sys.Spawn(props, "sender")
		_ = sender.Tell(send{payload: "a"})
		_ = sender.Tell(send{payload: "b"})
		dest.ExpectMsg(Deliverable{ID: 1, Payload: "a"})
		dest.ExpectMsg(Deliverable{ID: 2, Payload: "b"})

		// Confirm b; a is redelivered every second until a warning after 3 attempts.
		_ = sender.Tell(confirm{id: 2})
		dest.ExpectMsg(Deliverable{ID: 1, Payload: "a"}, 2*time.Second)
		dest.ExpectMsg(Deliverable{ID: 1, Payload: "a"}, 2*time.Second)
		w := testkit.ExpectMsgType[persistence.UnconfirmedWarning](warnings, 5*time.Second)
		if len(w.Unconfirmed) != 1 || w.Unconfirmed[0].DeliveryID != 1 {
			t.Fatalf("warning %+v", w)
		}

		// A new incarnation recovers the unconfirmed delivery and sends it again.
		warnings.Watch(sender)
		sys.Stop(sender)
		warnings.ExpectTerminated(sender)
		synctest.Wait()
		dest.Drain() // redeliveries of the old incarnation
		again, _ := sys.Spawn(props, "sender2")
		dest.ExpectMsg(Deliverable{ID: 1, Payload: "a"}, time.Second)
		_ = again.Tell(confirm{id: 1})
		synctest.Wait()
		dest.ExpectNoMsg(5 * time.Second)
	})
}

// SenderState is a snapshot of snapshottingSender: its delivery state.
type SenderState struct{ Deliveries persistence.DeliverySnapshot }

// snapshottingSender saves its delivery state after every delivery and restores it
// from the snapshot, so that unconfirmed messages come back from a snapshot alone.
type snapshottingSender struct {
	persistence.AtLeastOnceDelivery
	dest  actor.Ref
	probe actor.Ref
}

func (s *snapshottingSender) PersistenceID() string { return "snapshotting-sender" }

func (s *snapshottingSender) Recover(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case persistence.SnapshotOffer:
		s.SetDeliverySnapshot(m.Snapshot.(SenderState).Deliveries)
	case persistence.RecoveryCompleted:
		_ = s.probe.Tell(m)
	}
}

func (s *snapshottingSender) Receive(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case send:
		_ = persistence.Persist(ctx, MsgSent{Payload: m.payload}, func(ev MsgSent) {
			_, _ = s.Deliver(s.dest, func(id uint64) any { return Deliverable{ID: id, Payload: ev.Payload} })
			ctx.SaveSnapshot(SenderState{Deliveries: s.DeliverySnapshot()})
		})
	case persistence.SaveSnapshotSuccess, persistence.SaveSnapshotFailure:
		_ = s.probe.Tell(m)
	}
}

// A delivery snapshot stored in the badger journal restores its unconfirmed messages
// as the registered types they were, with their destinations. They used to come back
// as untyped maps, which the destination could not recognise.
func TestDeliverySnapshotKeepsMessageTypesThroughBadger(t *testing.T) {
	sys := testkit.NewSystem(t)
	reg := serialization.NewRegistry()
	for _, err := range []error{
		serialization.Register[MsgSent](reg, "test.MsgSent"),
		serialization.Register[Deliverable](reg, "test.Deliverable"),
		serialization.Register[SenderState](reg, "test.SenderState"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	store, err := badgerjournal.Open(context.Background(), badgerjournal.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	if _, err := persistence.Start(sys, persistence.Config{Journal: store, Snapshots: store, Registry: reg}); err != nil {
		t.Fatal(err)
	}
	probe := testkit.NewProbe(t, sys)
	dest := testkit.NewProbe(t, sys)
	props := persistence.Props(func() persistence.Entity {
		return &snapshottingSender{dest: dest.Ref(), probe: probe.Ref()}
	})
	ref, _ := sys.Spawn(props, "sender")
	testkit.ExpectMsgType[persistence.RecoveryCompleted](probe)
	_ = ref.Tell(send{payload: "x"})
	dest.ExpectMsg(Deliverable{ID: 1, Payload: "x"})
	testkit.ExpectMsgType[persistence.SaveSnapshotSuccess](probe)
	stopAndWait(sys, probe, ref)

	if _, err := sys.Spawn(props, "sender2"); err != nil {
		t.Fatal(err)
	}
	if rc := testkit.ExpectMsgType[persistence.RecoveryCompleted](probe); rc.HighestSequenceNr != 1 {
		t.Fatalf("recovered to %d", rc.HighestSequenceNr)
	}
	// Redelivered from the snapshot alone (the event after it replays nothing).
	got := testkit.ExpectMsgType[Deliverable](dest)
	if got != (Deliverable{ID: 1, Payload: "x"}) {
		t.Fatalf("redelivered %+v", got)
	}
}

// An UnconfirmedDelivery encodes only inside persistence: elsewhere the registry has
// no way to keep its message's type, and says so instead of losing it.
func TestUnconfirmedDeliveryEncodesOnlyInPersistence(t *testing.T) {
	reg := serialization.NewRegistry()
	_ = serialization.Register[SenderState](reg, "test.SenderState")
	_ = serialization.Register[Deliverable](reg, "test.Deliverable")
	s := SenderState{Deliveries: persistence.DeliverySnapshot{CurrentDeliveryID: 1, Unconfirmed: []persistence.UnconfirmedDelivery{
		{DeliveryID: 1, Message: Deliverable{ID: 1}},
	}}}
	if _, _, err := reg.Marshal(s); !errors.Is(err, serialization.ErrEncode) {
		t.Fatalf("Marshal outside persistence: %v", err)
	}
}
