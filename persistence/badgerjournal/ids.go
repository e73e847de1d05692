package badgerjournal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/dgraph-io/badger/v4"

	"github.com/troupe-go/troupe/persistence"
)

// idRegistry maps persistence ids to the numeric ids that event keys use.
//
// An id is assigned, under the registry's lock, by the first WriteMessages
// call that needs one, and is pending until a transaction holding its
// mapping commits: every write of a pending persistence id carries the
// mapping entries, so whichever of them commits first stores the mapping
// together with its events. Ids are never reused: the next id is one above
// the highest stored at Open, and only grows, so an id whose writes all
// failed is simply skipped.
type idRegistry struct {
	db *badger.DB

	mu      sync.Mutex
	known   map[string]uint64 // committed mappings, a bounded cache
	pending map[string]uint64 // assigned, not yet known to be committed
	next    uint64
	limit   int
}

func newIDRegistry(db *badger.DB, limit int) (*idRegistry, error) {
	r := &idRegistry{db: db, known: map[string]uint64{}, pending: map[string]uint64{}, limit: limit}
	err := db.View(func(txn *badger.Txn) error {
		prefix := []byte{kindPID}
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, Reverse: true})
		defer it.Close()
		it.Seek(appendIDKey(nil, kindPID, ^uint64(0)))
		if it.ValidForPrefix(prefix) {
			key := it.Item().Key()
			if len(key) != 9 {
				return fmt.Errorf("%w: persistence id key of %d bytes", persistence.ErrCorrupt, len(key))
			}
			r.next = binary.BigEndian.Uint64(key[1:])
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("badgerjournal: read the highest persistence id: %w", err)
	}
	r.next++
	return r, nil
}

// lookup returns the id of pid and whether it is pending (its mapping must
// be written with the events). With assign, a persistence id without an id
// gets one; without, it yields 0. Ids longer than MaxPersistenceIDLen yield
// 0.
func (r *idRegistry) lookup(pid string, assign bool) (id uint64, pending bool, err error) {
	if len(pid) > MaxPersistenceIDLen {
		return 0, false, nil // never stored; writes reject such ids before
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if id, ok := r.pending[pid]; ok {
		return id, true, nil
	}
	if id, ok := r.known[pid]; ok {
		return id, false, nil
	}
	id, err = readID(r.db, pid)
	if err != nil {
		return 0, false, err
	}
	if id != 0 {
		if len(r.known) >= r.limit {
			clear(r.known)
		}
		r.known[pid] = id
		return id, false, nil
	}
	if !assign {
		return 0, false, nil
	}
	id = r.next
	r.next++
	r.pending[pid] = id
	return id, true, nil
}

// committed records that the mapping of pid to id is stored.
func (r *idRegistry) committed(pid string, id uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending[pid] != id {
		return
	}
	delete(r.pending, pid)
	if len(r.known) >= r.limit {
		clear(r.known)
	}
	r.known[pid] = id
}

// readID reads the stored id of pid, or 0.
func readID(db *badger.DB, pid string) (uint64, error) {
	var id uint64
	err := db.View(func(txn *badger.Txn) error {
		var err error
		id, err = readIDIn(txn, pid)
		return err
	})
	return id, err
}

// readIDIn reads the stored id of pid in txn, or 0.
func readIDIn(txn *badger.Txn, pid string) (uint64, error) {
	key := appendPrefix(nil, kindID, pid)
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("badgerjournal: id of %q: %w", pid, err)
	}
	var id uint64
	err = item.Value(func(v []byte) error {
		body, err := unseal(key, v)
		if err == nil && len(body) != 8 {
			err = errMalformed
		}
		if err != nil {
			return &persistence.CorruptRecordError{PersistenceID: pid, Reason: "id mapping: " + err.Error()}
		}
		id = binary.BigEndian.Uint64(body)
		return nil
	})
	return id, err
}

// readPIDIn reads the persistence id stored for id in txn.
func readPIDIn(txn *badger.Txn, id uint64) (string, error) {
	key := appendIDKey(nil, kindPID, id)
	item, err := txn.Get(key)
	if err != nil {
		return "", fmt.Errorf("badgerjournal: persistence id of id %d: %w", id, err)
	}
	var pid string
	err = item.Value(func(v []byte) error {
		body, err := unseal(key, v)
		if err != nil {
			return &persistence.CorruptRecordError{Reason: fmt.Sprintf("persistence id of id %d: %v", id, err)}
		}
		pid = string(body)
		return nil
	})
	return pid, err
}

// mappingEntries returns the two entries that store the mapping of pid to
// id, for the transaction of pid's first events.
func mappingEntries(pid string, id uint64) [2]badger.Entry {
	idKey := appendPrefix(nil, kindID, pid)
	pidKey := appendIDKey(nil, kindPID, id)
	return [2]badger.Entry{
		{Key: idKey, Value: sealed(idKey, binary.BigEndian.AppendUint64(nil, id))},
		{Key: pidKey, Value: sealed(pidKey, []byte(pid))},
	}
}
