package badgerjournal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/troupe-go/troupe/persistence"
)

var _ persistence.TagQuerier = (*Store)(nil)

// EventsByTag implements persistence.TagQuerier with one forward scan of
// the tag's index entries and a point read of each event, in one read
// transaction. Offsets are assigned in commit order and one transaction is
// committed at a time, so what a read transaction sees of a tag is a prefix
// of its final order.
func (s *Store) EventsByTag(ctx context.Context, tag string, fromOffset, max uint64, fn func(persistence.TaggedRecord) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if len(tag) > MaxTagLen {
		return nil
	}
	txn := s.db.NewTransaction(false)
	defer txn.Discard()
	prefix := appendPrefix(nil, kindTag, tag)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()

	pids := map[uint64]string{} // the persistence ids met so far
	var dec eventDecoder
	var count uint64
	done := ctx.Done()
	eventKey := make([]byte, 0, eventKeyLen)
	for it.Seek(binary.BigEndian.AppendUint64(prefix, fromOffset)); it.ValidForPrefix(prefix); it.Next() {
		select {
		case <-done:
			return ctx.Err()
		default:
		}
		item := it.Item()
		key := item.Key()
		if len(key) != len(prefix)+8 {
			return &persistence.CorruptRecordError{Reason: fmt.Sprintf("tag %q: index key of %d bytes", tag, len(key))}
		}
		offset := binary.BigEndian.Uint64(key[len(prefix):])
		var id, seq uint64
		err := item.Value(func(v []byte) error {
			body, err := unseal(key, v)
			if err == nil && len(body) != 16 {
				err = errMalformed
			}
			if err != nil {
				return &persistence.CorruptRecordError{Reason: fmt.Sprintf("tag %q: index entry at offset %d: %v", tag, offset, err)}
			}
			id, seq = binary.BigEndian.Uint64(body), binary.BigEndian.Uint64(body[8:])
			return nil
		})
		if err != nil {
			return err
		}
		pid, ok := pids[id]
		if !ok {
			if pid, err = readPIDIn(txn, id); err != nil {
				return err
			}
			pids[id] = pid
		}
		eventKey = appendEventKey(eventKey[:0], id, seq)
		ev, err := txn.Get(eventKey)
		if errors.Is(err, badger.ErrKeyNotFound) {
			continue // deleted
		}
		if err != nil {
			return fmt.Errorf("badgerjournal: events by tag %q: %w", tag, err)
		}
		var rec persistence.Record
		err = ev.Value(func(v []byte) error {
			var err error
			rec, err = dec.decode(pid, seq, eventKey, v)
			return err
		})
		if errors.Is(err, errChecksum) || errors.Is(err, errMalformed) {
			return &persistence.CorruptRecordError{PersistenceID: pid, SequenceNr: seq, Reason: err.Error()}
		}
		if err != nil {
			return fmt.Errorf("badgerjournal: events by tag %q: %w", tag, err)
		}
		if err := fn(persistence.TaggedRecord{Offset: offset, Record: rec}); err != nil {
			return err
		}
		count++
		if max != 0 && count == max {
			break
		}
	}
	return ctx.Err()
}
