package persistence

import (
	"errors"
	"fmt"
)

// Sentinel errors shared by all plug-ins. Plug-ins wrap them with %w and add
// detail; callers test for them with errors.Is.
var (
	// ErrClosed reports a call on a journal or snapshot store after Close.
	ErrClosed = errors.New("persistence: closed")

	// ErrCorrupt reports a stored record whose bytes fail their integrity
	// check. It is returned inside a *CorruptRecordError, which names the
	// record.
	ErrCorrupt = errors.New("persistence: corrupt record")

	// ErrInvalidWrite rejects an AtomicWrite that breaks the rules listed on
	// AtomicWrite.Validate (empty, mixed persistence ids, sequence numbers
	// that are zero or not consecutive), or that a plug-in cannot store (for
	// example a persistence id longer than it supports).
	ErrInvalidWrite = errors.New("persistence: invalid atomic write")

	// ErrSequenceConflict rejects an AtomicWrite whose first sequence number
	// is not above the highest one already written for its persistence id,
	// and the later writes of that persistence id in the same WriteMessages
	// call. It means that two writers use the same persistence id (two
	// incarnations of one entity, after a split brain): the runtime stops the
	// entity whose write conflicted, and the senders of its pending commands
	// receive an error wrapping it.
	ErrSequenceConflict = errors.New("persistence: sequence number already used")

	// ErrTooLarge rejects an AtomicWrite or a snapshot that exceeds what the
	// plug-in can store in one atomic unit.
	ErrTooLarge = errors.New("persistence: too large")

	// ErrBeyondHighest reports a DeleteMessagesTo whose target lies above the
	// highest sequence number of the persistence id.
	ErrBeyondHighest = errors.New("persistence: delete beyond the highest sequence number")
)

// CorruptRecordError reports a stored event or snapshot whose bytes fail
// their integrity check, and names it. It wraps ErrCorrupt.
type CorruptRecordError struct {
	// PersistenceID is the persistence id of the corrupt record.
	PersistenceID string
	// SequenceNr is the sequence number of the corrupt event or snapshot.
	SequenceNr uint64
	// Snapshot is true when the record is a snapshot, false for an event.
	Snapshot bool
	// Reason says what check failed, for example "checksum mismatch".
	Reason string
}

// Error describes the record and the failed check.
func (e *CorruptRecordError) Error() string {
	kind := "event"
	if e.Snapshot {
		kind = "snapshot"
	}
	return fmt.Sprintf("persistence: corrupt %s: persistence id %q, sequence number %d: %s",
		kind, e.PersistenceID, e.SequenceNr, e.Reason)
}

// Unwrap returns ErrCorrupt.
func (e *CorruptRecordError) Unwrap() error { return ErrCorrupt }
