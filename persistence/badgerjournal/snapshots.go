package badgerjournal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/troupe-go/troupe/persistence"
)

// SaveSnapshot implements persistence.SnapshotStore. The snapshot is
// written in its own transaction, synced as configured by
// Config.Durability.
func (s *Store) SaveSnapshot(ctx context.Context, snap persistence.Snapshot) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	pid := snap.Metadata.PersistenceID
	if pid == "" || len(pid) > MaxPersistenceIDLen {
		return fmt.Errorf("%w: snapshot with a persistence id of %d bytes, want 1..%d",
			persistence.ErrInvalidWrite, len(pid), MaxPersistenceIDLen)
	}
	ts := time.Now().UnixNano()
	if !snap.Metadata.Timestamp.IsZero() {
		ts = snap.Metadata.Timestamp.UnixNano()
	}
	key, value := encodeSnapshot(&snap, ts)
	err := s.db.Update(func(txn *badger.Txn) error {
		return txn.SetEntry(badger.NewEntry(key, value))
	})
	switch {
	case errors.Is(err, badger.ErrTxnTooBig):
		return fmt.Errorf("%w: snapshot %q #%d of %d bytes", persistence.ErrTooLarge, pid, snap.Metadata.SequenceNr, len(snap.Payload))
	case err != nil:
		return fmt.Errorf("badgerjournal: save snapshot %q #%d: %w", pid, snap.Metadata.SequenceNr, err)
	}
	return nil
}

// snapshotVisitor is called for each candidate snapshot, highest sequence
// number first or lowest first; it returns false to stop.
type snapshotVisitor func(seq uint64, key []byte, item *badger.Item) (bool, error)

// scanSnapshots iterates over the snapshots of pid with sequence numbers in
// [minSeq, maxSeq].
func (s *Store) scanSnapshots(txn *badger.Txn, pid string, minSeq, maxSeq uint64, reverse bool, visit snapshotVisitor) error {
	if len(pid) > MaxPersistenceIDLen || minSeq > maxSeq {
		return nil
	}
	prefix := appendPrefix(nil, kindSnapshot, pid)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, Reverse: reverse})
	defer it.Close()
	start := minSeq
	if reverse {
		start = maxSeq
	}
	for it.Seek(binary.BigEndian.AppendUint64(prefix, start)); it.ValidForPrefix(prefix); it.Next() {
		item := it.Item()
		key := item.Key()
		if len(key) != len(prefix)+8 {
			continue
		}
		seq := binary.BigEndian.Uint64(key[len(prefix):])
		if seq < minSeq || seq > maxSeq {
			break
		}
		more, err := visit(seq, key, item)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// readSnapshot decodes the snapshot in item.
func readSnapshot(pid string, seq uint64, key []byte, item *badger.Item) (persistence.Snapshot, error) {
	var snap persistence.Snapshot
	err := item.Value(func(v []byte) error {
		var err error
		snap, err = decodeSnapshot(pid, seq, key, v)
		return err
	})
	if errors.Is(err, errChecksum) || errors.Is(err, errMalformed) {
		return snap, &persistence.CorruptRecordError{PersistenceID: pid, SequenceNr: seq, Snapshot: true, Reason: err.Error()}
	}
	if err != nil {
		return snap, fmt.Errorf("badgerjournal: read snapshot %q #%d: %w", pid, seq, err)
	}
	return snap, nil
}

func seqBounds(c persistence.SnapshotCriteria) (uint64, uint64) {
	maxSeq := c.MaxSequenceNr
	if maxSeq == 0 {
		maxSeq = persistence.MaxSequenceNr
	}
	return c.MinSequenceNr, maxSeq
}

// LoadSnapshot implements persistence.SnapshotStore. It scans the
// snapshots of the persistence id from the highest selected sequence number
// down and returns the first that matches c; a corrupt snapshot met on the
// way is reported, not skipped.
func (s *Store) LoadSnapshot(ctx context.Context, persistenceID string, c persistence.SnapshotCriteria) (persistence.Snapshot, bool, error) {
	if err := ctx.Err(); err != nil {
		return persistence.Snapshot{}, false, err
	}
	if err := s.enter(); err != nil {
		return persistence.Snapshot{}, false, err
	}
	defer s.leave()
	var found persistence.Snapshot
	var ok bool
	minSeq, maxSeq := seqBounds(c)
	err := s.db.View(func(txn *badger.Txn) error {
		return s.scanSnapshots(txn, persistenceID, minSeq, maxSeq, true, func(seq uint64, key []byte, item *badger.Item) (bool, error) {
			snap, err := readSnapshot(persistenceID, seq, key, item)
			if err != nil {
				return false, err
			}
			if c.Matches(snap.Metadata) {
				found, ok = snap, true
				return false, nil
			}
			return ctx.Err() == nil, ctx.Err()
		})
	})
	if err != nil {
		return persistence.Snapshot{}, false, err
	}
	return found, ok, nil
}

// DeleteSnapshot implements persistence.SnapshotStore.
func (s *Store) DeleteSnapshot(ctx context.Context, m persistence.SnapshotMetadata) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if len(m.PersistenceID) > MaxPersistenceIDLen {
		return nil
	}
	key := appendSeqKey(nil, kindSnapshot, m.PersistenceID, m.SequenceNr)
	err := s.db.Update(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if !m.Timestamp.IsZero() {
			snap, err := readSnapshot(m.PersistenceID, m.SequenceNr, key, item)
			if err != nil {
				return err
			}
			if !snap.Metadata.Timestamp.Equal(m.Timestamp) {
				return nil
			}
		}
		return txn.Delete(key)
	})
	var corrupt *persistence.CorruptRecordError
	if err != nil && !errors.As(err, &corrupt) {
		return fmt.Errorf("badgerjournal: delete snapshot %q #%d: %w", m.PersistenceID, m.SequenceNr, err)
	}
	return err
}

// DeleteSnapshots implements persistence.SnapshotStore. Criteria that
// bound timestamps need the snapshots' values, so a corrupt snapshot in the
// range makes them fail; criteria on sequence numbers alone delete corrupt
// snapshots too.
func (s *Store) DeleteSnapshots(ctx context.Context, persistenceID string, c persistence.SnapshotCriteria) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	byTime := !c.MinTimestamp.IsZero() || !c.MaxTimestamp.IsZero()
	minSeq, maxSeq := seqBounds(c)
	var keys [][]byte
	err := s.db.View(func(txn *badger.Txn) error {
		return s.scanSnapshots(txn, persistenceID, minSeq, maxSeq, false, func(seq uint64, key []byte, item *badger.Item) (bool, error) {
			if byTime {
				snap, err := readSnapshot(persistenceID, seq, key, item)
				if err != nil {
					return false, err
				}
				if !c.Matches(snap.Metadata) {
					return true, nil
				}
			}
			keys = append(keys, item.KeyCopy(nil))
			return true, nil
		})
	})
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		return nil
	}
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	for _, k := range keys {
		if err := wb.Delete(k); err != nil {
			return fmt.Errorf("badgerjournal: delete snapshots of %q: %w", persistenceID, err)
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("badgerjournal: delete snapshots of %q: %w", persistenceID, err)
	}
	return nil
}
