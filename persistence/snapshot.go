package persistence

import (
	"context"
	"time"
)

// SnapshotMetadata identifies a snapshot.
type SnapshotMetadata struct {
	// PersistenceID names the entity the snapshot belongs to.
	PersistenceID string
	// SequenceNr is the sequence number of the last event the snapshot
	// includes.
	SequenceNr uint64
	// Timestamp is when the snapshot was taken. A store sets it to the
	// current time when it is zero; the same range and precision rules as
	// for Record.Timestamp apply.
	Timestamp time.Time
}

// Snapshot is a serialised state of an entity.
type Snapshot struct {
	// Metadata identifies the snapshot.
	Metadata SnapshotMetadata
	// Manifest names the payload's type, as a serialization.Registry does.
	Manifest string
	// Payload is the serialised state.
	Payload []byte
}

// SnapshotCriteria selects snapshots by sequence number and timestamp. All
// bounds are inclusive, and a zero maximum means "no upper bound", so the
// zero value selects every snapshot and LoadSnapshot with it loads the
// latest.
type SnapshotCriteria struct {
	// MaxSequenceNr is the highest sequence number selected; 0 means no
	// limit.
	MaxSequenceNr uint64
	// MaxTimestamp is the latest timestamp selected; the zero time means
	// no limit.
	MaxTimestamp time.Time
	// MinSequenceNr is the lowest sequence number selected.
	MinSequenceNr uint64
	// MinTimestamp is the earliest timestamp selected; the zero time means
	// no limit.
	MinTimestamp time.Time
}

// Matches reports whether the criteria select a snapshot with metadata m
// (the persistence id is not compared).
func (c SnapshotCriteria) Matches(m SnapshotMetadata) bool {
	if m.SequenceNr < c.MinSequenceNr {
		return false
	}
	if c.MaxSequenceNr != 0 && m.SequenceNr > c.MaxSequenceNr {
		return false
	}
	if !c.MinTimestamp.IsZero() && m.Timestamp.Before(c.MinTimestamp) {
		return false
	}
	if !c.MaxTimestamp.IsZero() && m.Timestamp.After(c.MaxTimestamp) {
		return false
	}
	return true
}

// SnapshotStore is the plug-in interface for snapshot storage. A
// persistence id has at most one snapshot per sequence number.
// Implementations must be safe for concurrent use, and must pass
// journaltest.RunSnapshotSuite.
type SnapshotStore interface {
	// SaveSnapshot stores s durably, replacing any snapshot with the same
	// persistence id and sequence number. A snapshot with an empty
	// persistence id is rejected with an error wrapping ErrInvalidWrite.
	SaveSnapshot(ctx context.Context, s Snapshot) error

	// LoadSnapshot returns the snapshot of persistenceID with the highest
	// sequence number among those c selects, and false when there is none.
	// A stored snapshot that fails its integrity check yields a
	// *CorruptRecordError naming it.
	LoadSnapshot(ctx context.Context, persistenceID string, c SnapshotCriteria) (Snapshot, bool, error)

	// DeleteSnapshot deletes the snapshot with m's persistence id and
	// sequence number; when m.Timestamp is not zero, only if its timestamp
	// is equal too. Deleting a snapshot that does not exist succeeds.
	DeleteSnapshot(ctx context.Context, m SnapshotMetadata) error

	// DeleteSnapshots deletes every snapshot of persistenceID that c
	// selects.
	DeleteSnapshots(ctx context.Context, persistenceID string, c SnapshotCriteria) error

	// Close waits for the calls in progress, releases the store's resources
	// and makes later calls fail with ErrClosed. Calling it again returns
	// nil.
	Close() error
}
