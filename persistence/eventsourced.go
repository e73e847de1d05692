package persistence

import "github.com/troupe-go/troupe/actor"

// Entity is an event-sourced actor: its state is the result of its events, which
// are written to the journal before they are applied and replayed when it starts.
type Entity interface {
	// PersistenceID names the entity's history in the journal. It must be stable
	// across restarts and unique among live actors of the system.
	PersistenceID() string
	// Recover applies ctx.Message(), in order: a SnapshotOffer if a snapshot was
	// found, every event after it, and finally RecoveryCompleted. It runs before any
	// command. Persisting is not possible until recovery has completed; timers and the
	// receive timeout can be set (typically on RecoveryCompleted).
	Recover(ctx Context)
	// Receive handles commands once recovery is complete, and the replies of the
	// persistence operations (SaveSnapshotSuccess, PersistRejected, ...).
	Receive(ctx Context)
}

// Recovery chooses how an entity recovers; implement RecoveryConfigurer to change it.
type Recovery struct {
	// FromSnapshot selects the snapshot to start from; the zero value is the latest.
	FromSnapshot SnapshotCriteria
	// ToSequenceNr stops the replay after that event; 0 means all events.
	ToSequenceNr uint64
	// Disabled skips snapshot and events: the entity starts empty, at sequence
	// number 0, and its new events must not collide with stored ones (a
	// collision is a sequence-number conflict, which stops the entity).
	Disabled bool
	// NoSnapshot replays all events and ignores snapshots.
	NoSnapshot bool
}

// RecoveryConfigurer is implemented by entities that do not recover the default way.
type RecoveryConfigurer interface {
	Recovery() Recovery
}

// Context is the actor.Context of an event-sourced actor, with the persistence
// operations. Persist events with the functions Persist, PersistAll and PersistAsync,
// which keep the event's type. Inside a persist handler (and a deferred call), Sender
// and Respond refer to the sender of the command that persisted the event.
//
// Only the runtime implements Context.
type Context interface {
	actor.Context

	// Defer runs handler after every persist handler (and deferred call) issued
	// before it, and holds commands back until then, as Persist does; it runs at once
	// when none is pending.
	Defer(handler func())
	// LastSequenceNr is the sequence number of the last event handled: inside a
	// persist handler, that handler's event; elsewhere, the last event whose handler
	// has run or that was replayed. Events persisted but not handled yet do not
	// count, so a snapshot taken anywhere covers exactly the events applied so far.
	LastSequenceNr() uint64
	// SaveSnapshot stores snapshot at LastSequenceNr; the entity then receives
	// SaveSnapshotSuccess or SaveSnapshotFailure, even when it stops meanwhile (the
	// reply comes before Stopping, Restarting or Stopped; see "What can be lost" in
	// the package documentation for the one exception).
	SaveSnapshot(snapshot any)
	// DeleteMessages deletes events up to toSeq; the entity then receives
	// DeleteMessagesSuccess or DeleteMessagesFailure (deleting above the highest
	// sequence number fails), delivered as SaveSnapshot's replies are.
	DeleteMessages(toSeq uint64)
	// DeleteSnapshots deletes the snapshots c selects; the entity then receives
	// DeleteSnapshotsSuccess or DeleteSnapshotsFailure, delivered as SaveSnapshot's
	// replies are.
	DeleteSnapshots(c SnapshotCriteria)

	// persist records events (or, when events is nil, the one event single) for the
	// journal call that follows the current message; handler runs with each once it
	// is stored. Persist and its variants call it.
	persist(events []any, single any, handler handler, stashing bool, tags []string) error
}

// SnapshotOffer is given to Recover first when recovery starts from a snapshot.
type SnapshotOffer struct {
	Metadata SnapshotMetadata
	Snapshot any
}

// RecoveryCompleted is given to Recover last, once every event has been applied.
type RecoveryCompleted struct {
	HighestSequenceNr uint64
}

// PersistRejected tells the entity that the journal rejected the write of Event
// (too large, say); its handler did not run, and the entity keeps running. It arrives
// in the handler's place, in order, with Sender and Respond referring to the command
// that persisted the event. A sequence-number conflict (ErrSequenceConflict) is not
// reported this way: another writer has used the number, and the entity stops.
//
// Unless the entity answers the command's sender while handling it (Respond, or Send
// to Sender) or persists or defers there (that handler then answers), the runtime
// answers the sender with actor.Failure wrapping ErrRejected and Err, once per
// write: an Ask of the command fails with it at once. An entity that answered the
// command before (say, before a PersistAsync) and stays silent here lets that
// Failure reach its sender as a second message (for an Ask, a late reply in dead
// letters).
//
// SequenceNr is the number the event had. When the rejected write was the last of its
// journal call, the number is free again: the events persisted since (and the next
// one) move down to take it, and LastSequenceNr does not count it, so the entity's
// history has no gap. Otherwise (a later write of the same call was stored) it is
// used up, as in Akka.
type PersistRejected struct {
	Event      any
	SequenceNr uint64
	Err        error
}

// SaveSnapshotSuccess answers SaveSnapshot.
type SaveSnapshotSuccess struct{ Metadata SnapshotMetadata }

// SaveSnapshotFailure answers SaveSnapshot when the store failed or the snapshot
// could not be serialised.
type SaveSnapshotFailure struct {
	Metadata SnapshotMetadata
	Err      error
}

// DeleteMessagesSuccess answers DeleteMessages.
type DeleteMessagesSuccess struct{ ToSequenceNr uint64 }

// DeleteMessagesFailure answers DeleteMessages when the journal refused or failed.
type DeleteMessagesFailure struct {
	ToSequenceNr uint64
	Err          error
}

// DeleteSnapshotsSuccess answers DeleteSnapshots.
type DeleteSnapshotsSuccess struct{ Criteria SnapshotCriteria }

// DeleteSnapshotsFailure answers DeleteSnapshots when the store failed.
type DeleteSnapshotsFailure struct {
	Criteria SnapshotCriteria
	Err      error
}

// Props returns actor Props that run the entities newEntity creates. Every new
// instance (at start and after a restart) recovers from the journal first.
func Props(newEntity func() Entity) *actor.Props {
	return actor.PropsOf(func() actor.Actor { return &runner{newEntity: newEntity} })
}
