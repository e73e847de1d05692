// Package persistence provides event sourcing for Troupe: entities that
// store the events that change their state, and rebuild that state by
// replaying them, from the latest snapshot onwards, when they start again on
// any node.
//
// # Event-sourced actors
//
// An Entity names its history (PersistenceID), applies replayed events and
// snapshots in Recover (each as ctx.Message()), and handles commands in Receive with a Context that can
// Persist, PersistAll, PersistAsync and Defer, save snapshots and delete events.
// Run one with Props after calling Setup once per system with the plug-ins and a
// serialization.Registry. Recovery (snapshot, then events, then
// RecoveryCompleted) runs before any command; Persist holds back new commands
// until its handler has run. A failed write stops the entity, because its state
// may no longer match its journal; an event that cannot be serialised is
// rejected and the entity keeps running; a failure during recovery stops the
// entity. A snapshot that is corrupt or no longer decodes is logged and skipped
// for the next older one (up to three), or for a replay of every event, as
// Akka does; if the events it covered were deleted, the recovery fails rather
// than start from a wrong state. AtLeastOnceDelivery, embedded in an entity, resends messages until
// they are confirmed and survives restarts through the entity's own events.
//
// # Plug-ins
//
// Storage is pluggable. A Journal stores events, a SnapshotStore stores
// snapshots, and the two are independent interfaces so that a system may keep
// them in different places. Troupe ships two plug-ins:
//
//   - persistence/badgerjournal, the default: an embedded badger database
//     holding both the journal and the snapshots, with group commit (the
//     events of many entities share one write batch and one sync).
//   - persistence/memjournal: an in-memory store for tests.
//
// persistence/journaltest is the conformance suite every plug-in must pass.
//
// Plug-ins deal in bytes. An event reaches the journal as a Record: its
// persistence id, its sequence number, and the event serialised by a
// serialization.Registry (a manifest naming its type plus the payload), with
// optional tags, a write timestamp and the writer's id. Snapshots are stored
// the same way. Plug-ins never decode payloads.
//
// The unit of atomicity is the AtomicWrite: the events of one persist or
// persist-all call of one entity, stored all or none. One WriteMessages call
// carries many atomic writes, possibly of many persistence ids, and returns a
// result per write: a write rejected on its own (invalid, a sequence number
// conflict, too large) does not fail the others, and the entity that issued
// it keeps running. An error of the call as a whole means the outcome is
// unknown, and the entities concerned must stop.
//
// Journals may also implement TagQuerier, to read the events of a tag (see
// Tagged) in the order they were written, resuming from an offset; both
// shipped plug-ins do.
//
// The highest sequence number of a persistence id survives the deletion of
// its events, so a restarted entity never reuses a sequence number.
// Journals reject writes that would: a write whose first sequence number is
// not above the highest fails with ErrSequenceConflict. A stored record that
// fails its integrity check surfaces as a *CorruptRecordError naming its
// persistence id and sequence number.
//
// Every method takes a context and is safe for concurrent use. Plug-ins
// return the sentinel errors of this package, wrapped with detail.
package persistence
