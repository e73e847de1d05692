package ddata

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/serialization"
	"go.uber.org/zap"
)

// durableKeyPrefix prefixes every stored key id (the format's version is in it).
const durableKeyPrefix = "ddata/v1/"

// durableStore is the badger database of durable keys, written by one goroutine
// that takes a batch at a time: while it writes one (a sync write), the replicator
// gathers the next, so that a burst of changes costs one write per batch, and a
// key changed many times during a write is encoded and stored once.
type durableStore struct {
	db   *badger.DB
	log  *zap.Logger
	in   chan []storeItem
	done chan struct{}
	ref  actor.Ref
}

// storeItem is one key's encoded envelope.
type storeItem struct {
	key  string
	data []byte
}

// storeDone reports a batch's outcome to the replicator: the keys that could not
// be stored, with the first error.
type storeDone struct {
	failed map[string]bool
	err    error
}

// storeWaiter is what waits for a key's change to be stored: a WriteLocal update
// (local), a write in progress (op), or another node's write to acknowledge
// (remote: to, id). The zero value waits for nothing.
type storeWaiter struct {
	key    string
	local  writeReplier
	op     uint64
	remote bool
	to     actor.Ref
	id     uint64
}

// openDurable opens (creating) the store in dir and reads every stored envelope.
// It gives up with ctx's error when ctx ends before it opens the database or while
// it reads (badger's open itself cannot be interrupted).
func openDurable(ctx context.Context, dir string, reg *serialization.Registry, log *zap.Logger) (*durableStore, map[string][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("ddata: durable store %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("ddata: durable store: %w", err)
	}
	bo := badger.DefaultOptions(dir).
		WithSyncWrites(true).
		WithLogger(badgerLogger{log.With(zap.String("component", "ddata-durable"))}).
		WithMetricsEnabled(false).
		WithCompression(options.None).
		WithBlockCacheSize(0).
		WithMemTableSize(8 << 20).
		WithValueThreshold(256 << 10).
		WithNumVersionsToKeep(1)
	db, err := openBadger(bo)
	if err != nil {
		return nil, nil, fmt.Errorf("ddata: durable store %s: %w", dir, err)
	}
	loaded := make(map[string][]byte)
	err = db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(durableKeyPrefix), PrefetchValues: true, PrefetchSize: 100})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			item := it.Item()
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			loaded[strings.TrimPrefix(string(item.Key()), durableKeyPrefix)] = v
		}
		return nil
	})
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		_ = db.Close()
		return nil, nil, fmt.Errorf("ddata: durable store %s: reading: %w", dir, err)
	}
	return &durableStore{db: db, log: log, in: make(chan []storeItem, 1), done: make(chan struct{})}, loaded, nil
}

// openBadger opens badger, turning a panic inside it into an error.
func openBadger(bo badger.Options) (db *badger.DB, err error) {
	defer func() {
		if p := recover(); p != nil {
			db, err = nil, fmt.Errorf("badger panicked: %v", p)
		}
	}()
	return badger.Open(bo)
}

// start starts the writer, which reports each batch to ref.
func (s *durableStore) start(ref actor.Ref) {
	s.ref = ref
	go s.run()
}

func (s *durableStore) run() {
	defer close(s.done)
	for batch := range s.in {
		done := storeDone{err: s.write(batch)}
		if done.err != nil && len(batch) > 1 {
			// Find the keys that fail, so that one bad key does not fail the others.
			done.err = nil
			for _, it := range batch {
				if err := s.write([]storeItem{it}); err != nil {
					if done.failed == nil {
						done.failed, done.err = make(map[string]bool), err
					}
					done.failed[it.key] = true
				}
			}
		} else if done.err != nil {
			done.failed = map[string]bool{batch[0].key: true}
		}
		_ = s.ref.Tell(done)
	}
}

// write stores a batch with one synced commit (several, for a batch larger than
// one badger transaction).
func (s *durableStore) write(batch []storeItem) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("badger panicked: %v", p)
		}
	}()
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	for _, it := range batch {
		if err := wb.Set([]byte(durableKeyPrefix+it.key), it.data); err != nil {
			return err
		}
	}
	return wb.Flush()
}

// stopWriter stops the writer after the batch it is writing.
func (s *durableStore) stopWriter() {
	if s.ref.Address() != (actor.Address{}) {
		close(s.in)
		<-s.done
		s.ref = actor.Ref{}
	}
}

// closeDB closes the database; the writer must be stopped.
func (s *durableStore) closeDB() {
	if err := s.db.Close(); err != nil {
		s.log.Error("ddata: closing the durable store", zap.Error(err))
	}
}

// close stops the writer and closes the database.
func (s *durableStore) close() {
	s.stopWriter()
	s.closeDB()
}

// loadDurable puts the stored envelopes into the replicator before it starts.
func (a *replicator) loadDurable(loaded map[string][]byte) {
	for key, b := range loaded {
		env, err := unmarshalEnvelope(a.reg, b)
		if err != nil {
			a.h.stats.loadFailures.Add(1)
			a.log.Error("ddata: a stored value cannot be read; it is left out", zap.String("key", key), zap.Error(err))
			continue
		}
		e := &entry{envelope: *env, durable: true, stale: true}
		a.entries[key] = e
		a.stale = append(a.stale, key)
	}
	if len(loaded) > 0 {
		a.log.Info("ddata: loaded durable keys", zap.Int("keys", len(a.entries)))
	}
}

// queueStore marks key to be stored with the next batch, with w waiting for it.
func (a *replicator) queueStore(key string, e *entry, w storeWaiter) {
	if !e.storeQueued {
		e.storeQueued = true
		a.storeKeys = append(a.storeKeys, key)
	}
	if w.local != nil || w.op != 0 || w.remote {
		a.waiters = append(a.waiters, w)
	}
	a.storeKick = true
}

// kickStore hands the queued keys to the writer when it is idle.
func (a *replicator) kickStore() {
	a.storeKick = false
	if a.storeBusy || len(a.storeKeys) == 0 || a.store == nil {
		return
	}
	batch, failed := a.encodeStoreBatch()
	waiters := a.waiters
	a.waiters = nil
	var ok []storeWaiter
	for _, w := range waiters {
		if failed[w.key] {
			a.stored(w, false)
		} else {
			ok = append(ok, w)
		}
	}
	if len(batch) == 0 {
		for _, w := range ok {
			a.stored(w, true)
		}
		return
	}
	a.inflight = ok
	a.storeBusy = true
	a.store.in <- batch
}

// encodeStoreBatch encodes the queued keys, and returns those that could not be
// encoded.
func (a *replicator) encodeStoreBatch() ([]storeItem, map[string]bool) {
	batch := make([]storeItem, 0, len(a.storeKeys))
	var failed map[string]bool
	for _, key := range a.storeKeys {
		e := a.entries[key]
		if e == nil {
			continue
		}
		e.storeQueued = false
		b, err := marshalEnvelope(a.reg, &e.envelope)
		if err != nil {
			a.h.stats.storeFailures.Add(1)
			a.log.Error("ddata: cannot encode a durable value", zap.String("key", key), zap.Error(err))
			if failed == nil {
				failed = make(map[string]bool)
			}
			failed[key] = true
			continue
		}
		batch = append(batch, storeItem{key: key, data: b})
	}
	a.storeKeys = a.storeKeys[:0]
	return batch, failed
}

// storeDone completes the batch the writer has written.
func (a *replicator) storeDone(m storeDone) {
	a.storeBusy = false
	if len(m.failed) > 0 {
		a.h.stats.storeFailures.Add(uint64(len(m.failed)))
		a.log.Error("ddata: the durable store failed to write keys; their values stay in memory",
			zap.Int("keys", len(m.failed)), zap.Error(m.err))
	}
	waiters := a.inflight
	a.inflight = nil
	for _, w := range waiters {
		a.stored(w, !m.failed[w.key])
	}
	a.storeKick = true
}

// stored tells a waiter its key's outcome.
func (a *replicator) stored(w storeWaiter, ok bool) {
	switch {
	case w.local != nil:
		if ok {
			w.local.finish(a, nil)
		} else {
			w.local.finish(a, fmt.Errorf("%w: key %q", ErrStoreFailed, w.key))
		}
	case w.op != 0:
		if op := a.writes[w.op]; op != nil {
			if op.agg.LocalStore(ok) != writePending {
				a.finishWrite(op)
			}
		}
	case w.remote:
		kind := replyAck
		if !ok {
			kind = replyNack
		}
		a.send(w.to, &writeReplyMsg{From: a.selfWire(), ID: w.id, Kind: kind})
	}
}

// badgerLogger adapts a *zap.Logger to badger's logger.
type badgerLogger struct{ l *zap.Logger }

func (b badgerLogger) Errorf(f string, args ...any) {
	b.l.Error(strings.TrimRight(fmt.Sprintf(f, args...), "\n"))
}

func (b badgerLogger) Warningf(f string, args ...any) {
	b.l.Warn(strings.TrimRight(fmt.Sprintf(f, args...), "\n"))
}

func (b badgerLogger) Infof(f string, args ...any) {
	if b.l.Core().Enabled(zap.DebugLevel) {
		b.l.Debug(strings.TrimRight(fmt.Sprintf(f, args...), "\n"))
	}
}

func (b badgerLogger) Debugf(f string, args ...any) {
	if b.l.Core().Enabled(zap.DebugLevel) {
		b.l.Debug(strings.TrimRight(fmt.Sprintf(f, args...), "\n"))
	}
}
