// Package persistence provides event sourcing for Troupe: entities that
// store the events that change their state, and rebuild that state by
// replaying them, from the latest snapshot onwards, when they start again on
// any node.
//
// # Starting
//
// Call Start once per system with a Config naming the plug-ins and a
// serialization.Registry; Get returns the running Persistence, whose Stats
// count what was lost or refused. The zero value of every other Config field
// means a documented default.
//
// # Event-sourced actors
//
// An Entity names its history (PersistenceID), applies replayed events and
// snapshots in Recover (each as ctx.Message()), and handles commands in
// Receive. Run one with Props. Recovery (snapshot, then events, then
// RecoveryCompleted) runs before any command.
//
// Commands persist events with the generic functions Persist, PersistAll,
// PersistAsync and PersistAllAsync, whose handlers receive the event with its
// own type, and order work after them with Context.Defer. Persist holds back
// new commands until its handler has run; PersistAsync does not. The events
// persisted while handling one message are written in one journal call, after
// the message; one call per entity is in flight at a time, so events are
// stored and handlers run in order. Inside a handler, LastSequenceNr is that
// handler's event's number, and elsewhere the last event handled, so a
// snapshot (SaveSnapshot) covers exactly the events applied to the state.
//
// An entity answers a command from the persist handler, once the event is stored,
// or with the error Persist returns (ctx.Respond(actor.Failure{Err: err}): an Ask
// fails with it); when the journal then rejects or fails the write, the runtime
// answers the command's sender with actor.Failure, as below. So an Ask of a command
// whose persist failed gets the error at once, not a timeout at its deadline.
//
// A failed write stops the entity, because its state may no longer match its
// journal, and so does a sequence-number conflict (ErrSequenceConflict: another
// incarnation of the entity, on another node after a split brain, has written
// the number, so this one's state lacks its events): the entity writes nothing
// more, the senders of the commands whose handlers will not run receive
// actor.Failure with the error (an Ask fails with it), and the entity still
// receives Stopping and Stopped, where it releases what it holds (its state is
// not to be trusted: a snapshot or delete asked there is refused). An event
// that cannot be serialised is rejected (ErrRejected) and the entity keeps
// running; a write the journal rejects for what it is (too large, invalid) is
// reported as PersistRejected and the entity keeps running (its command's sender
// receives actor.Failure wrapping ErrRejected, unless the entity answers it there);
// a failure during
// recovery stops the entity (an entity receives Stopping and Stopped only once
// its recovery has completed). A snapshot that is corrupt or no longer
// decodes is logged and skipped for the next older one (up to three), or for
// a replay of every event, as Akka does; if the events it covered were
// deleted, the recovery fails rather than start from a wrong state.
// AtLeastOnceDelivery, embedded in an entity, resends messages until they are
// confirmed and survives restarts through the entity's own events and
// snapshots.
//
// Every event carries its writer's id (Record.WriterID): the entity's full
// actor path with its node's address and incarnation uid (actor.Ref.URI), so
// that an operator reading the journal can tell two writers apart.
//
// # Bounded calls and circuit breakers
//
// Every journal and snapshot-store call the runtime makes runs on a goroutine
// of its own and is waited for at most its call timeout (Config.JournalBreaker
// and Config.SnapshotBreaker; a replay at most Config.RecoveryEventTimeout per
// event), so a plug-in that hangs, even one that ignores its context, fails
// the operation with ErrCallTimeout instead of hanging the entity. A circuit
// breaker per plug-in, as in Akka, opens after MaxFailures failed or timed-out
// calls in a row; while open, calls fail at once with ErrCircuitOpen. After
// ResetTimeout (100 ms by default) one trial call goes through: its success
// closes the breaker, its failure opens it again for twice as long, at most
// MaxResetTimeout (500 ms by default). So a store that is down costs one trial
// call per plug-in twice a second, and calls go through again within about
// half a second of its return.
//
// # Metrics
//
// With actor.Config.MeterProvider set, the runtime records histograms of the persist
// latency (from an entity's write to the journal's answer), of the events per journal
// call, and of the recovery time, and reports the counters of Stats (errors and drops
// by kind) and the circuit breakers' states (troupe.persistence.*, listed in
// docs/operations.md). pgjournal takes its own Config.MeterProvider.
//
// # What can be lost, and when
//
// Nothing is dropped silently: in each case below the entity or the caller
// gets an error, a reply or a dead letter (which the actor system publishes and
// logs), and what the runtime drops on its own is logged and counted in Stats.
//
//   - An event that cannot be serialised, or is persisted before recovery has
//     completed or after the entity stopped: Persist returns an error wrapping
//     ErrRejected, which the entity answers its command with (see Persist);
//     nothing is written; warn log; Stats.EventsRejected.
//   - A write the journal rejects (too large, invalid): not stored; the
//     entity receives PersistRejected in the handler's place, and the
//     command's sender receives actor.Failure wrapping ErrRejected and the
//     journal's error unless the entity answers it there; warn log;
//     Stats.EventsRejected. Its sequence number goes to the next event,
//     unless a later write of the same journal call was stored (see
//     PersistRejected).
//   - A write that conflicts (ErrSequenceConflict: another incarnation of
//     the entity wrote the number first): not stored, nor are the entity's
//     writes after it in the same call; the handlers before it run, that one
//     and those after it never do; the entity stops, and the senders of the
//     commands behind them receive actor.Failure wrapping
//     ErrSequenceConflict; error log naming the writer id;
//     Stats.SequenceConflicts and Stats.HandlersDropped. The journal keeps
//     the other incarnation's history, whole.
//   - A journal call that fails as a whole, times out (ErrCallTimeout) or is
//     refused by the open breaker (ErrCircuitOpen): the events are stored or
//     not, as the journal decided (a refused call stored nothing); their
//     handlers never run; the entity stops, and the senders of the commands
//     behind them receive actor.Failure with the error; error log;
//     Stats.WritesFailed and Stats.HandlersDropped (and CallsTimedOut or
//     CallsRejected). A new incarnation waits for that call to return (up to
//     the journal's call timeout) and recovers what was stored.
//   - An entity that stops or restarts (Stop, PoisonPill, a panic) with events
//     persisted whose handlers have not run: the call in flight completes in
//     the journal (stored or not), events queued behind it are not written,
//     and none of those handlers runs, so their replies are never sent: their
//     commands' senders get actor.Failure wrapping actor.ErrRecipientStopped (an
//     Ask fails at once); warn log; Stats.HandlersDropped. Stop an entity with a
//     command handled after its handlers (or after Defer) to avoid this.
//   - Commands that arrive while the entity stashes (recovering, or a Persist
//     waiting) when the stash is full: sent to dead letters (an Ask fails with
//     actor.ErrDeadLetter); rate-limited warn log; Stats.CommandsDropped.
//     Commands stashed or arriving when the entity stops go to dead letters,
//     as for any actor.
//   - A recovery that fails (a corrupt or undecodable event, a stalled or
//     failing journal, the breaker open): the entity stops; error log naming
//     the persistence id and sequence number; Stats.RecoveriesFailed. Nothing
//     is lost from the journal.
//   - SaveSnapshot, DeleteMessages and DeleteSnapshots that fail (no snapshot
//     store: ErrNoSnapshotStore; an unserialisable snapshot: ErrRejected; a
//     store error, ErrCallTimeout, ErrCircuitOpen): the entity receives the
//     Failure reply with the error. A timed-out call may still take effect
//     later in the plug-in.
//   - Replies to those requests when the entity stops or restarts first: the
//     stop waits for them (each bounded by its call timeout) and the entity
//     receives them before Stopping, Restarting or Stopped. Only when it can
//     no longer receive them (it was stopped by a failure, or it made the
//     request from its Restarting or Stopped handler) does the reply go to
//     dead letters, with a rate-limited warn log and
//     Stats.ResultsUndelivered; the snapshot or delete itself is still carried
//     out, and the runtime waits for the store's answer, except when a
//     failure stopped the entity: a request made then (from its Stopping or
//     Stopped handler) is refused with ErrRejected, and its Failure reply
//     goes to dead letters.
//   - Respond inside a persist handler whose command had no sender: the reply
//     goes to dead letters, as actor.Context.Respond does.
//   - At-least-once delivery: Deliver fails with ErrTooManyUnconfirmed beyond
//     MaxUnconfirmed; a message is resent until confirmed and an
//     UnconfirmedWarning reaches the entity after WarnAfter attempts.
//   - Plug-in calls abandoned at their timeout keep running in the plug-in.
//     With Config.CloseOnShutdown the plug-ins are closed once those calls
//     return, or when the shutdown phase's time is up (warn log).
//
// The runtime's internal messages (*persistence.writeDone,
// persistence.opDone, the recovery's messages) can show up in dead letters
// when the entity they were meant for has stopped or restarted; they carry
// nothing the entity had not already received, or lost as listed above.
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
// optional tags (WithTags), a write timestamp and the writer's id. Snapshots
// are stored the same way. Plug-ins never decode payloads.
//
// The unit of atomicity is the AtomicWrite: the events of one persist or
// persist-all call of one entity, stored all or none. One WriteMessages call
// carries many atomic writes, possibly of many persistence ids, and returns a
// result per write. A write rejected for what it is (invalid, too large) does
// not fail the others, and the entity that issued it keeps running. A write
// whose sequence number another writer has used fails with
// ErrSequenceConflict, and so do the later writes of its persistence id in
// the call; the entity that issued them stops. An error of the call as a
// whole means the outcome is unknown, and the entities concerned must stop.
//
// Journals may also implement TagQuerier, to read the events of a tag (see
// WithTags) in the order they were written, resuming from an offset; both
// shipped plug-ins do.
//
// The highest sequence number of a persistence id survives the deletion of
// its events, so a restarted entity never reuses a sequence number.
// Journals reject writes that would: a write whose first sequence number is
// not above the highest fails with ErrSequenceConflict, as above. A stored record that
// fails its integrity check surfaces as a *CorruptRecordError naming its
// persistence id and sequence number.
//
// Every method takes a context and is safe for concurrent use. Plug-ins
// return the sentinel errors of this package, wrapped with detail.
package persistence
