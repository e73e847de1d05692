package badgerjournal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"go.uber.org/zap"

	"github.com/troupe-go/troupe/internal/stderrlog"
	"github.com/troupe-go/troupe/persistence"
)

// Errors of Open. Every other error is one of package persistence's.
var (
	// ErrLocked reports that another open database, usually in another
	// process, holds the directory.
	ErrLocked = errors.New("badgerjournal: directory is locked by another open database")

	// ErrIncompatibleFormat reports a database written by a version of this
	// package with another storage format.
	ErrIncompatibleFormat = errors.New("badgerjournal: incompatible storage format")

	// ErrDamaged reports a database badger refuses to open because of a damaged
	// file that Open cannot repair without risking acknowledged events. The error
	// names the file and the fix. (Empty log files, which a crash can leave and
	// which hold no data, are repaired: see Open.)
	ErrDamaged = errors.New("badgerjournal: database damaged")
)

// Store is a persistence.Journal and a persistence.SnapshotStore in one
// badger database. Open one per directory and share it; it is safe for
// concurrent use.
type Store struct {
	db     *badger.DB
	log    *zap.Logger
	attach *stderrlog.Attachable // nil when Config.Logger was set

	// mu guards closed; inflight counts the calls in progress, which Close
	// waits for.
	mu       sync.RWMutex
	closed   bool
	inflight sync.WaitGroup

	w   *writer
	ids *idRegistry
	gc  *valueLogGC // nil when turned off
}

var (
	_ persistence.Journal       = (*Store)(nil)
	_ persistence.SnapshotStore = (*Store)(nil)
)

// Open opens (or creates) the database in cfg.Dir and starts its writer.
// It fails with an error wrapping ErrLocked when another open database holds
// the directory, and never panics on a bad directory. ctx bounds the wait
// before badger's own open, which cannot be interrupted: Open returns ctx's
// error, having opened nothing, when ctx ends before that point.
//
// A crash can leave an empty memtable or value-log file, which badger refuses
// to open (badger issue 2207). Such a file holds no data, so Open removes it and
// logs the file at warn level. Any other file badger refuses fails Open with an
// error wrapping ErrDamaged that names the file and the fix.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	s, err := openUnstarted(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s.w.start()
	return s, nil
}

// openUnstarted opens the database and builds the Store with its writer built
// but not started: Open starts it.
func openUnstarted(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("badgerjournal: open %s: %w", cfg.Dir, err)
	}
	cfg, attach := cfg.withDefaults()
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("badgerjournal: %w", err)
	}
	if err := withDirLock(cfg.Dir, func() error { return repairEmptyLogs(cfg.Dir, cfg.Logger) }); err != nil {
		if errors.Is(err, ErrLocked) {
			return nil, fmt.Errorf("%w: %s", err, cfg.Dir)
		}
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("badgerjournal: open %s: %w", cfg.Dir, err)
	}
	bo := badger.DefaultOptions(cfg.Dir).
		WithSyncWrites(cfg.Durability == SyncEachBatch).
		WithLogger(newBadgerLogger(cfg.Logger)).
		WithMetricsEnabled(false).
		// One goroutine writes; reads never conflict with it.
		WithDetectConflicts(false).
		// Payloads are serialised events, often small and already
		// compact; compression would spend the CPU the writer needs.
		// Without compression badger needs no block cache.
		WithCompression(options.None).
		WithBlockCacheSize(0).
		WithMemTableSize(cfg.MemTableSize).
		// Values up to 1 MiB live in the LSM tree, next to their keys, so
		// a replay reads them sequentially; badger requires the threshold
		// to stay below its transaction size (15% of a memtable).
		WithValueThreshold(min(1<<20, cfg.MemTableSize/10))
	db, err := openBadger(bo)
	if err != nil {
		if isLockError(err) {
			return nil, fmt.Errorf("%w: %s: %v", ErrLocked, cfg.Dir, err)
		}
		if derr := explainOpenError(cfg.Dir, err); derr != nil {
			return nil, derr
		}
		return nil, fmt.Errorf("badgerjournal: open %s: %w", cfg.Dir, err)
	}
	if err := checkFormat(db); err != nil {
		_ = db.Close()
		return nil, err
	}
	ids, err := newIDRegistry(db, cfg.HighestCacheSize)
	if err == nil {
		var offset uint64
		if offset, err = readNextOffset(db); err == nil {
			s := &Store{db: db, log: cfg.Logger, attach: attach, ids: ids}
			s.w = newWriter(db, ids, offset, cfg.Logger, cfg.HighestCacheSize)
			if cfg.ValueLogGCInterval > 0 {
				s.gc = startValueLogGC(db, cfg.Logger, cfg.ValueLogGCInterval, cfg.ValueLogGCDiscardRatio)
			}
			return s, nil
		}
	}
	_ = db.Close()
	return nil, err
}

// openBadger opens badger, turning a panic inside it into an error: Open
// promises not to panic on a damaged directory.
func openBadger(bo badger.Options) (db *badger.DB, err error) {
	defer func() {
		if p := recover(); p != nil {
			db, err = nil, fmt.Errorf("badger panicked: %v", p)
		}
	}()
	return badger.Open(bo)
}

// isLockError recognises badger's failure to take the directory lock, which
// badger reports as text only.
func isLockError(err error) bool {
	return strings.Contains(err.Error(), "Cannot acquire directory lock") ||
		strings.Contains(err.Error(), "Another process is using this Badger database")
}

// checkFormat stamps a new database with formatVersion and refuses one
// stamped with another version.
func checkFormat(db *badger.DB) error {
	return db.Update(func(txn *badger.Txn) error {
		item, err := txn.Get(metaFormatKey)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return txn.Set(metaFormatKey, []byte{formatVersion})
		}
		if err != nil {
			return fmt.Errorf("badgerjournal: read format: %w", err)
		}
		return item.Value(func(v []byte) error {
			if len(v) != 1 || v[0] != formatVersion {
				return fmt.Errorf("%w: found %x, this version reads %d", ErrIncompatibleFormat, v, formatVersion)
			}
			return nil
		})
	})
}

// enter registers a call in progress, or reports ErrClosed.
func (s *Store) enter() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return persistence.ErrClosed
	}
	s.inflight.Add(1)
	return nil
}

func (s *Store) leave() { s.inflight.Done() }

// Close waits for the calls in progress, stops the writer after it has
// finished the writes queued, and closes the database. Calling it again
// returns nil. It must not be called from a replay callback.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.inflight.Wait()
	if s.gc != nil {
		s.gc.close()
	}
	s.w.stop()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("badgerjournal: close: %w", err)
	}
	return nil
}

// ReplayMessages implements persistence.Journal with one forward iterator
// scan over the persistence id's keys.
func (s *Store) ReplayMessages(ctx context.Context, persistenceID string, fromSeq, toSeq, max uint64, fn func(persistence.Record) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if fromSeq == 0 {
		fromSeq = 1
	}
	if fromSeq > toSeq || len(persistenceID) > MaxPersistenceIDLen {
		return nil
	}
	id, _, err := s.ids.lookup(persistenceID, false)
	if err != nil || id == 0 {
		return err
	}
	prefix := appendIDKey(nil, kindEvent, id)
	txn := s.db.NewTransaction(false)
	defer txn.Discard()
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()

	var dec eventDecoder
	var count uint64
	done := ctx.Done()
	for it.Seek(binary.BigEndian.AppendUint64(prefix, fromSeq)); it.ValidForPrefix(prefix); it.Next() {
		item := it.Item()
		key := item.Key()
		if len(key) != eventKeyLen {
			return &persistence.CorruptRecordError{PersistenceID: persistenceID, Reason: fmt.Sprintf("key of %d bytes", len(key))}
		}
		seq := binary.BigEndian.Uint64(key[len(prefix):])
		if seq > toSeq {
			break
		}
		select {
		case <-done:
			return ctx.Err()
		default:
		}
		var rec persistence.Record
		err := item.Value(func(v []byte) error {
			var err error
			rec, err = dec.decode(persistenceID, seq, key, v)
			return err
		})
		if errors.Is(err, errChecksum) || errors.Is(err, errMalformed) {
			return &persistence.CorruptRecordError{PersistenceID: persistenceID, SequenceNr: seq, Reason: err.Error()}
		}
		if err != nil {
			return fmt.Errorf("badgerjournal: replay %q #%d: %w", persistenceID, seq, err)
		}
		if err := fn(rec); err != nil {
			return err
		}
		count++
		if max != 0 && count == max {
			break
		}
	}
	return ctx.Err()
}

// HighestSequenceNr implements persistence.Journal.
func (s *Store) HighestSequenceNr(ctx context.Context, persistenceID string) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	id, _, err := s.ids.lookup(persistenceID, false)
	if err != nil || id == 0 {
		return 0, err
	}
	return readHighest(s.db, persistenceID, id)
}

// readHighest returns the larger of the last event's sequence number and the
// number recorded by deletes, for pid and its numeric id.
func readHighest(db *badger.DB, pid string, id uint64) (uint64, error) {
	var highest uint64
	err := db.View(func(txn *badger.Txn) error {
		prefix := appendIDKey(nil, kindEvent, id)
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, Reverse: true})
		defer it.Close()
		it.Seek(binary.BigEndian.AppendUint64(prefix, persistence.MaxSequenceNr))
		if it.ValidForPrefix(prefix) {
			if key := it.Item().Key(); len(key) == len(prefix)+8 {
				highest = binary.BigEndian.Uint64(key[len(prefix):])
			}
		}
		item, err := txn.Get(appendIDKey(nil, kindHighest, id))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			if len(v) != 8 {
				return &persistence.CorruptRecordError{PersistenceID: pid, Reason: "highest sequence number record of " + fmt.Sprint(len(v)) + " bytes"}
			}
			highest = max(highest, binary.BigEndian.Uint64(v))
			return nil
		})
	})
	if err != nil {
		var corrupt *persistence.CorruptRecordError
		if errors.As(err, &corrupt) {
			return 0, err
		}
		return 0, fmt.Errorf("badgerjournal: highest sequence number of %q: %w", pid, err)
	}
	return highest, nil
}

// DeleteMessagesTo implements persistence.Journal. It first records the
// highest sequence number under its own key, so that it survives the
// deletion, then deletes the events in write batches, lowest first: an
// interrupted delete leaves a suffix of the events, never a gap.
func (s *Store) DeleteMessagesTo(ctx context.Context, persistenceID string, toSeq uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	id, _, err := s.ids.lookup(persistenceID, false)
	if err != nil {
		return err
	}
	var highest uint64
	if id != 0 {
		if highest, err = readHighest(s.db, persistenceID, id); err != nil {
			return err
		}
	}
	if toSeq > highest {
		return fmt.Errorf("%w: %q: delete to %d, highest is %d", persistence.ErrBeyondHighest, persistenceID, toSeq, highest)
	}
	if toSeq == 0 {
		return nil
	}
	err = s.db.Update(func(txn *badger.Txn) error {
		return txn.Set(appendIDKey(nil, kindHighest, id), binary.BigEndian.AppendUint64(nil, highest))
	})
	if err != nil {
		return fmt.Errorf("badgerjournal: delete %q to %d: %w", persistenceID, toSeq, err)
	}

	prefix := appendIDKey(nil, kindEvent, id)
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	err = s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
			key := it.Item().KeyCopy(nil)
			if len(key) == len(prefix)+8 && binary.BigEndian.Uint64(key[len(prefix):]) > toSeq {
				break
			}
			if err := wb.Delete(key); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = wb.Flush()
	}
	if err != nil {
		return fmt.Errorf("badgerjournal: delete %q to %d: %w", persistenceID, toSeq, err)
	}
	return nil
}

// readNextOffset reads the offset the next tagged event gets.
func readNextOffset(db *badger.DB) (uint64, error) {
	next := uint64(1)
	err := db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(metaOffsetKey)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			if len(v) != 8 {
				return fmt.Errorf("%w: next tag offset of %d bytes", persistence.ErrCorrupt, len(v))
			}
			next = binary.BigEndian.Uint64(v)
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("badgerjournal: read the next tag offset: %w", err)
	}
	return next, nil
}

// UseSystemLogger sends the store's log lines, and badger's, to l from now on when
// Config.Logger was not set; persistence.Start calls it with the logger of the
// actor system the store is attached to (the first, when several share the store).
// With Config.Logger set it does nothing.
func (s *Store) UseSystemLogger(l *zap.Logger) {
	if s.attach != nil {
		s.attach.Attach(l)
	}
}
