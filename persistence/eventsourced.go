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
	// number 0, and its new events must not collide with stored ones.
	Disabled bool
	// NoSnapshot replays all events and ignores snapshots.
	NoSnapshot bool
}

// RecoveryConfigurer is implemented by entities that do not recover the default way.
type RecoveryConfigurer interface {
	Recovery() Recovery
}

// Context is the actor.Context of an event-sourced actor, with the persistence
// operations. Inside a persist handler, Sender and Respond refer to the sender of
// the command that persisted the event.
type Context interface {
	actor.Context

	// Persist writes event and then calls handler with it. Until the handler has run,
	// new commands are stashed, so the entity never sees a command against state its
	// journal does not hold yet. An event that cannot be serialised is rejected with
	// ErrRejected: nothing is written and the entity keeps running.
	Persist(event any, handler func(event any)) error
	// PersistAll writes events atomically (all or none) and calls handler with each.
	PersistAll(events []any, handler func(event any)) error
	// PersistAsync is Persist without stashing: commands keep arriving while the
	// write is in flight; handlers still run in order.
	PersistAsync(event any, handler func(event any)) error
	// Defer runs handler after every persist handler issued before it; at once when
	// none is pending.
	Defer(handler func())
	// LastSequenceNr is the sequence number of the last event persisted or replayed.
	LastSequenceNr() uint64
	// SaveSnapshot stores snapshot at LastSequenceNr; the entity then receives
	// SaveSnapshotSuccess or SaveSnapshotFailure.
	SaveSnapshot(snapshot any)
	// DeleteMessages deletes events up to toSeq; the entity then receives
	// DeleteMessagesSuccess or DeleteMessagesFailure (deleting above the highest
	// sequence number fails).
	DeleteMessages(toSeq uint64)
	// DeleteSnapshots deletes the snapshots c selects; the entity then receives
	// DeleteSnapshotsSuccess or DeleteSnapshotsFailure.
	DeleteSnapshots(c SnapshotCriteria)
}

// Tagged wraps an event to store it with tags, so that a later query can read events
// by tag: ctx.Persist(persistence.Tagged{Event: ev, Tags: []string{"orders"}}, h). The
// handler, and Recover on replay, see the event itself.
type Tagged struct {
	Event any
	Tags  []string
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
// (for example a sequence-number conflict); its handler did not run.
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
