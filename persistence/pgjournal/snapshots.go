package pgjournal

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/troupe-go/troupe/persistence"
)

const saveSnapshotSQL = `INSERT INTO troupe_snapshot (persistence_id, sequence_nr, written_at, manifest, checksum, payload)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (persistence_id, sequence_nr) DO UPDATE
SET written_at = EXCLUDED.written_at, manifest = EXCLUDED.manifest, checksum = EXCLUDED.checksum, payload = EXCLUDED.payload`

// loadSnapshotSQL selects the newest snapshot within the bounds: sequence
// numbers $2..$3, timestamps $4..$5.
const loadSnapshotSQL = `SELECT sequence_nr, written_at, manifest, checksum, payload
FROM troupe_snapshot
WHERE persistence_id = $1 AND sequence_nr BETWEEN $2 AND $3 AND written_at BETWEEN $4 AND $5
ORDER BY sequence_nr DESC
LIMIT 1`

const deleteSnapshotsSQL = `DELETE FROM troupe_snapshot
WHERE persistence_id = $1 AND sequence_nr BETWEEN $2 AND $3 AND written_at BETWEEN $4 AND $5`

// SaveSnapshot implements persistence.SnapshotStore, in one transaction of
// its own.
func (s *Store) SaveSnapshot(ctx context.Context, snap persistence.Snapshot) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.leave()
	m := snap.Metadata
	switch {
	case m.PersistenceID == "" || len(m.PersistenceID) > MaxPersistenceIDLen:
		return fmt.Errorf("%w: snapshot with a persistence id of %d bytes, want 1..%d",
			persistence.ErrInvalidWrite, len(m.PersistenceID), MaxPersistenceIDLen)
	case !fitsInt64(m.SequenceNr):
		return fmt.Errorf("%w: snapshot %q: sequence number %d is above PostgreSQL's bigint",
			persistence.ErrInvalidWrite, m.PersistenceID, m.SequenceNr)
	case len(snap.Payload)+len(snap.Manifest) > s.cfg.MaxWriteBytes:
		return fmt.Errorf("%w: snapshot %q #%d of %d bytes, at most %d (Config.MaxWriteBytes)",
			persistence.ErrTooLarge, m.PersistenceID, m.SequenceNr, len(snap.Payload), s.cfg.MaxWriteBytes)
	}
	ts := unixNanos(m.Timestamp, time.Now().UnixNano())
	manifest, payload := []byte(snap.Manifest), snap.Payload
	if payload == nil {
		payload = []byte{}
	}
	var sums checksummer
	sum := sums.snapshot(m.PersistenceID, m.SequenceNr, ts, manifest, payload)
	_, err := s.pool.Exec(ctx, saveSnapshotSQL, []byte(m.PersistenceID), int64(m.SequenceNr), ts, manifest, sum, payload)
	if err != nil {
		return s.callError(fmt.Sprintf("save snapshot %q #%d", m.PersistenceID, m.SequenceNr), err)
	}
	return nil
}

// bounds turns criteria into inclusive column bounds; ok is false when
// nothing can match.
func bounds(c persistence.SnapshotCriteria) (minSeq, maxSeq, minTS, maxTS int64, ok bool) {
	if !fitsInt64(c.MinSequenceNr) {
		return 0, 0, 0, 0, false
	}
	minSeq, maxSeq = int64(c.MinSequenceNr), math.MaxInt64
	if c.MaxSequenceNr != 0 {
		maxSeq = clampInt64(c.MaxSequenceNr)
	}
	minTS, maxTS = math.MinInt64, math.MaxInt64
	if !c.MinTimestamp.IsZero() {
		minTS = c.MinTimestamp.UnixNano()
	}
	if !c.MaxTimestamp.IsZero() {
		maxTS = c.MaxTimestamp.UnixNano()
	}
	return minSeq, maxSeq, minTS, maxTS, minSeq <= maxSeq && minTS <= maxTS
}

// LoadSnapshot implements persistence.SnapshotStore with one query for the
// newest snapshot the criteria select, whose checksum it then checks.
func (s *Store) LoadSnapshot(ctx context.Context, persistenceID string, c persistence.SnapshotCriteria) (persistence.Snapshot, bool, error) {
	if err := s.begin(ctx); err != nil {
		return persistence.Snapshot{}, false, err
	}
	defer s.leave()
	minSeq, maxSeq, minTS, maxTS, ok := bounds(c)
	if !ok || len(persistenceID) > MaxPersistenceIDLen {
		return persistence.Snapshot{}, false, nil
	}
	var seq, ts int64
	var sum int32
	var manifest, payload []byte
	err := s.pool.QueryRow(ctx, loadSnapshotSQL, []byte(persistenceID), minSeq, maxSeq, minTS, maxTS).
		Scan(&seq, &ts, &manifest, &sum, &payload)
	if errors.Is(err, pgx.ErrNoRows) {
		return persistence.Snapshot{}, false, nil
	}
	if err != nil {
		return persistence.Snapshot{}, false, s.callError(fmt.Sprintf("load snapshot of %q", persistenceID), err)
	}
	var sums checksummer
	if sums.snapshot(persistenceID, uint64(seq), ts, manifest, payload) != sum {
		return persistence.Snapshot{}, false, &persistence.CorruptRecordError{
			PersistenceID: persistenceID, SequenceNr: uint64(seq), Snapshot: true, Reason: "checksum mismatch"}
	}
	snap := persistence.Snapshot{
		Metadata: persistence.SnapshotMetadata{PersistenceID: persistenceID, SequenceNr: uint64(seq), Timestamp: time.Unix(0, ts)},
		Manifest: string(manifest),
	}
	if len(payload) > 0 {
		snap.Payload = payload
	}
	return snap, true, nil
}

// DeleteSnapshot implements persistence.SnapshotStore.
func (s *Store) DeleteSnapshot(ctx context.Context, m persistence.SnapshotMetadata) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.leave()
	if len(m.PersistenceID) > MaxPersistenceIDLen || !fitsInt64(m.SequenceNr) {
		return nil
	}
	seq := int64(m.SequenceNr)
	minTS, maxTS := int64(math.MinInt64), int64(math.MaxInt64)
	if !m.Timestamp.IsZero() {
		minTS = m.Timestamp.UnixNano()
		maxTS = minTS
	}
	if _, err := s.pool.Exec(ctx, deleteSnapshotsSQL, []byte(m.PersistenceID), seq, seq, minTS, maxTS); err != nil {
		return s.callError(fmt.Sprintf("delete snapshot %q #%d", m.PersistenceID, m.SequenceNr), err)
	}
	return nil
}

// DeleteSnapshots implements persistence.SnapshotStore with one statement.
func (s *Store) DeleteSnapshots(ctx context.Context, persistenceID string, c persistence.SnapshotCriteria) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.leave()
	minSeq, maxSeq, minTS, maxTS, ok := bounds(c)
	if !ok || len(persistenceID) > MaxPersistenceIDLen {
		return nil
	}
	if _, err := s.pool.Exec(ctx, deleteSnapshotsSQL, []byte(persistenceID), minSeq, maxSeq, minTS, maxTS); err != nil {
		return s.callError(fmt.Sprintf("delete snapshots of %q", persistenceID), err)
	}
	return nil
}
