package sim

import (
	"errors"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/serialization"
)

// The simulation's entity type and its messages: an event-sourced log that stores each
// request it is sent, and reports its lifecycle and recovered history to the Checker.

// Add asks an entity to store request Op; it answers Ack once the event is stored.
type Add struct{ Op uint64 }

// Added is the entity's event: request Op was stored.
type Added struct{ Op uint64 }

// Ack answers Add: the event is stored at Seq.
type Ack struct{ Seq uint64 }

// Get asks an entity how many events it has; it answers Ack with its last Seq.
type Get struct{}

// Stop is the entity's hand-off stop message: a command, so it waits behind the
// commands stashed while an event is written, and the entity never stops with a write
// in flight (PoisonPill would stop it at once, and the write would land after its
// shard's next home had started it again). The entity stores Stopped before it stops,
// as entities that record their passivation do: its shard lets go only once that is
// written, which takes the journal's time.
type Stop struct{}

// Stopped is the event an entity stores when it is handed off.
type Stopped struct{}

func register(reg *serialization.Registry) error {
	return errors.Join(
		serialization.Register[Add](reg, "sim.Add"),
		serialization.Register[Added](reg, "sim.Added"),
		serialization.Register[Ack](reg, "sim.Ack"),
		serialization.Register[Get](reg, "sim.Get"),
		serialization.Register[Stop](reg, "sim.Stop"),
		serialization.Register[Stopped](reg, "sim.Stopped"),
	)
}

// entityType is the sharded type name of the simulation's entities.
const entityType = "SimLog"

// logEntity is the entity: one per id, its history in the shared journal.
type logEntity struct {
	id, incarnation string
	chk             *Checker
	history         []Persisted
	live            bool
}

func (e *logEntity) PersistenceID() string { return "sim-" + e.id }

func (e *logEntity) Recover(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case Added:
		e.history = append(e.history, Persisted{Seq: ctx.LastSequenceNr(), Op: m.Op})
	case Stopped:
		e.history = append(e.history, Persisted{Seq: ctx.LastSequenceNr()})
	case persistence.RecoveryCompleted:
		e.live = true
		e.chk.Started("entity", e.id, e.incarnation)
		e.chk.Recovered(e.PersistenceID(), e.incarnation, e.history)
	}
}

func (e *logEntity) Receive(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case Add:
		err := persistence.Persist(ctx, Added(m), func(ev Added) {
			e.history = append(e.history, Persisted{Seq: ctx.LastSequenceNr(), Op: ev.Op})
			_ = ctx.Respond(Ack{Seq: ctx.LastSequenceNr()})
		})
		if err != nil {
			_ = ctx.Respond(actor.Failure{Err: err})
		}
	case Get:
		_ = ctx.Respond(Ack{Seq: ctx.LastSequenceNr()})
	case Stop:
		err := persistence.Persist(ctx, Stopped{}, func(Stopped) { _ = ctx.Stop(ctx.Self()) })
		if err != nil {
			_ = ctx.Stop(ctx.Self())
		}
	case actor.Stopped:
		if e.live {
			e.chk.Stopped("entity", e.id, e.incarnation)
		}
	}
}

// singletonActor is the simulation's cluster singleton: it only reports its lifecycle.
type singletonActor struct {
	incarnation string
	chk         *Checker
}

func (s *singletonActor) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case actor.Started:
		s.chk.Started("singleton", "sim", s.incarnation)
	case actor.Stopped:
		s.chk.Stopped("singleton", "sim", s.incarnation)
	}
}
