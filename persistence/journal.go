package persistence

import (
	"context"
	"fmt"
	"math"
	"time"
)

// MaxSequenceNr is the largest sequence number. Pass it as toSeq to replay
// up to the end of a journal.
const MaxSequenceNr uint64 = math.MaxUint64

// Record is one event as a journal stores it: the serialised event and the
// data that places it in its persistence id's history.
type Record struct {
	// PersistenceID names the event-sourced entity the event belongs to.
	PersistenceID string
	// SequenceNr is the event's position in that entity's history,
	// starting at 1.
	SequenceNr uint64
	// Manifest names the payload's type, as a serialization.Registry does.
	Manifest string
	// Payload is the serialised event.
	Payload []byte
	// Tags label the event for queries by tag. Nil and empty are the same.
	Tags []string
	// Timestamp is when the event was written. A journal sets it to the
	// current time when it is zero, and stores it with nanosecond
	// precision as Unix time, so it must lie between the years 1678 and
	// 2262. Replayed timestamps carry no location and no monotonic reading:
	// compare them with time.Time.Equal.
	Timestamp time.Time
	// WriterID identifies the incarnation of the writer, so that a
	// replay can tell events of two writers apart after a split brain. The
	// runtime sets it to the entity's full actor path with its node's
	// address and its incarnation uid (actor.Ref.URI), as in
	// troupe://orders@10.0.0.5:2552/user/cart-17#8071595328311234, which
	// differs between nodes and between incarnations on one node. Journals
	// store it as they get it.
	WriterID string
}

// AtomicWrite is the unit of atomicity of a journal: the events of one
// persist or persist-all call of one persistence id. A journal stores all of
// them or none.
type AtomicWrite struct {
	// PersistenceID is the persistence id of every event in Events.
	PersistenceID string
	// Events are the records to write, with consecutive sequence numbers.
	Events []Record
}

// Validate reports whether w is well formed: a non-empty persistence id, at
// least one event, every event of that persistence id, and sequence numbers
// that start above zero and increase by exactly one. It returns nil or an
// error wrapping ErrInvalidWrite. Journals call it on every write; it does
// not look at what is already stored.
func (w AtomicWrite) Validate() error {
	if w.PersistenceID == "" {
		return fmt.Errorf("%w: empty persistence id", ErrInvalidWrite)
	}
	if len(w.Events) == 0 {
		return fmt.Errorf("%w: %q: no events", ErrInvalidWrite, w.PersistenceID)
	}
	for i, e := range w.Events {
		if e.PersistenceID != w.PersistenceID {
			return fmt.Errorf("%w: event %d has persistence id %q, the write has %q",
				ErrInvalidWrite, i, e.PersistenceID, w.PersistenceID)
		}
		switch {
		case i == 0 && e.SequenceNr == 0:
			return fmt.Errorf("%w: %q: sequence number 0", ErrInvalidWrite, w.PersistenceID)
		case i > 0 && e.SequenceNr != w.Events[i-1].SequenceNr+1:
			return fmt.Errorf("%w: %q: sequence number %d follows %d",
				ErrInvalidWrite, w.PersistenceID, e.SequenceNr, w.Events[i-1].SequenceNr)
		}
	}
	return nil
}

// Journal is the plug-in interface for event storage. Implementations must
// be safe for concurrent use, and must pass journaltest.RunJournalSuite.
//
// Every method honours its context for as long as it waits; a method that
// returns a context error may or may not have had its effect.
type Journal interface {
	// WriteMessages stores a batch of atomic writes, possibly of many
	// persistence ids, and returns when they are as durable as the
	// plug-in's configuration promises. It is meant to be called from a
	// goroutine of its own so that the caller stays responsive; concurrent
	// calls are what lets a journal batch the writes of many entities.
	//
	// Each atomic write is stored entirely or not at all. The first result
	// holds one entry per write, in order: nil when the write is stored, or
	// an error when it is not. Writes of one persistence id within one call
	// are applied in order. Two kinds of error differ in what they mean:
	//
	//   - A conflict: the write's first sequence number is not above the
	//     highest ever written for its persistence id, so another writer (a
	//     second incarnation of the entity, on another node after a split
	//     brain) has used it. The entry wraps ErrSequenceConflict, and so do
	//     the entries of every later write of that persistence id in the
	//     same call, none of which is stored, even one whose numbers are
	//     free: the writer has lost its place in the history. The runtime
	//     stops the entity, as after a failed call.
	//   - A rejection of the write itself (wrapping ErrInvalidWrite or
	//     ErrTooLarge, say): the entity is told (PersistRejected) and keeps
	//     running, and a later write of the same persistence id may still
	//     succeed. A rejection must never wrap ErrSequenceConflict.
	//
	// Either affects only the writes named; the call's other writes are
	// stored or rejected on their own.
	//
	// The second result reports a failure of the call as a whole (ErrClosed,
	// a context error, a storage failure); then the first result is nil and
	// any of the writes may or may not have been stored. An event-sourced
	// entity must stop after such a failure, because its state may no
	// longer match its journal.
	WriteMessages(ctx context.Context, writes []AtomicWrite) ([]error, error)

	// ReplayMessages calls fn for each stored event of persistenceID with
	// a sequence number in [fromSeq, toSeq], in ascending order, and for at
	// most max events (0 means no limit). A fromSeq of 0 is read as 1;
	// deleted events are skipped. fn may keep the record it is given.
	//
	// Replay stops at the first error: an error returned by fn is returned
	// as is; a record that fails its integrity check stops the replay with
	// a *CorruptRecordError after the records before it were delivered.
	// fn must not call Close.
	ReplayMessages(ctx context.Context, persistenceID string, fromSeq, toSeq, max uint64, fn func(Record) error) error

	// HighestSequenceNr returns the highest sequence number ever written
	// for persistenceID, or 0 when none was. Deleting events does not lower
	// it, not even deleting all of them.
	HighestSequenceNr(ctx context.Context, persistenceID string) (uint64, error)

	// DeleteMessagesTo permanently deletes the events of persistenceID with
	// sequence numbers up to and including toSeq. It fails with an error
	// wrapping ErrBeyondHighest, and deletes nothing, when toSeq is above
	// HighestSequenceNr. Deleting what is already deleted succeeds.
	DeleteMessagesTo(ctx context.Context, persistenceID string, toSeq uint64) error

	// Close waits for the calls in progress, releases the journal's
	// resources and makes later calls fail with ErrClosed. Calling it again
	// returns nil.
	Close() error
}

// TaggedRecord is an event read by tag: the record and its offset in the
// tag's order.
type TaggedRecord struct {
	// Offset is the event's position among the tagged events of its
	// journal. Offsets grow in the order events were written; they are not
	// consecutive. Pass Offset+1 as fromOffset to go on after this event.
	Offset uint64
	// Record is the event, as a replay returns it.
	Record Record
}

// TagQuerier is implemented by journals that can read events by tag (the
// tags of Record.Tags, set with WithTags). It is optional: a plug-in that
// implements it must pass the tag part of journaltest.RunJournalSuite.
type TagQuerier interface {
	// EventsByTag calls fn for each stored event tagged with tag whose
	// offset is at least fromOffset, in the order the events were written
	// (ascending offsets), and for at most max events (0 means no limit).
	// The events of one persistence id come in sequence-number order.
	// Deleted events are skipped. Every event is read from one consistent
	// view of the journal: an event written later never gets a lower
	// offset than one already returned, so resuming from the last offset
	// seen plus one misses nothing.
	//
	// It stops at the first error: an error returned by fn is returned as
	// is; a damaged record yields a *CorruptRecordError. fn must not call
	// Close.
	EventsByTag(ctx context.Context, tag string, fromOffset, max uint64, fn func(TaggedRecord) error) error
}
