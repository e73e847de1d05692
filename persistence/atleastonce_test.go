package persistence_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
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
